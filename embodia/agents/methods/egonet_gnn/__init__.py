"""EgoNetGNN: heterogeneous peer effects with an exposure mapping learned over each unit's ego network.

Paper: S. Adhikari, S. Medya and E. Zheleva, "Learning Exposure Mapping Functions for Inferring
Heterogeneous Peer Effects", ICLR 2026, arXiv:2503.01722.

Under interference a unit's outcome depends on its own treatment t_i and on its peers' treatments through
an *exposure mapping* e_i = E(t_N(i), G, X). Estimators usually fix it (the count or the fraction of treated
neighbours); when the true mechanism weighs peers differently (by shared friends, similarity, tie
strength) the fixed mapping is misspecified and the effects are biased. EgoNetGNN learns the mapping.

Ego network. For unit i, G_i is the subgraph induced by its neighbours N(i) with i removed; alter j's degree
in G_i is |N(i) & N(j)|, the triangles through (i, j), which message passing inside G_i can count (a
message-passing GNN on G itself cannot). One copy of j per ego i, with input

    z_ij = [x_j, x_i, x_i * x_j, |x_i - x_j|, t_j, a_ij]           (a_ij: the edge's features)
    u_ij = MLP(z_ij);   u_ij <- U([u_ij, sum_{k in N(i) & N(j)} M(u_ik)])   (``layers`` rounds, in G_i)
    w_ij = softplus(W u_ij + b)  in  R_{>=0}^K                      (peer weights, K = ``channels``)

Bounded readouts (a fraction-like and a count-like one per channel) give the exposure in [0, 1]^(2K):

    e_i = [ sum_j t_j w_ij / (1 + sum_j w_ij) ,  1 - exp(-sum_j t_j w_ij) ]        (e_i = 0 if N(i) is empty)

Only treated peers add exposure (t_j multiplies the weight), so "no peer treated" is exposure 0 whatever the
weights, as for the fixed mappings; the weights may depend on everything else in the ego network. The 1 in
the fraction-like readout is a never-treated pseudo-peer: large weights give the weighted fraction of
treated peers, and a unit whose peers all get weight ~0 (no shared friends, dissimilar, weak ties) has
exposure ~0 rather than an arbitrary fraction of near-zero weights.

Outcome model (TARNet / CFR, Shalit, Johansson and Sontag, ICML 2017): a representation h_i = Phi(x_i) and
one head per own treatment, y_hat_i = f_{t_i}([h_i, e_i]). Trained end to end on the factual outcomes:

    L = mean_i (f_{t_i}(h_i, e_i) - y_i)^2  [+ alpha * IPM({h_i : t_i = 1}, {h_i : t_i = 0})   (CFR)]
                                           [+ beta * C(e)                                   (coverage)]

with the IPM an entropic Wasserstein-1 distance (Sinkhorn plan, no gradient through it) or linear MMD, and
L2 weight decay. The coverage prior C keeps every exposure dimension spread over [0, 1]: with e_(k),d the
k-th smallest of the n units' exposures in dimension d,

    C(e) = mean_d mean_k (e_(k),d - (k - 1/2) / n)^2            (squared distance to Uniform(0, 1) quantiles)

The paper trains with "balance and coverage priors"; its exact coverage term could not be read for this
reimplementation, so C is embodia's reading of it (off by default: ``coverage_weight`` 0).

Effects (outcome units). The paper defines a peer effect as the difference between a unit's counterfactual
outcomes at two levels of peer exposure with its own treatment fixed. Here the two levels are the extreme
ones, every neighbour treated (e_i(1): exposure recomputed with t_N(i) = 1) and none (e_i(0)), at the
unit's observed treatment; the direct effect changes the own treatment at the observed exposure:

    direct_i = f_1(h_i, e_i) - f_0(h_i, e_i)
    peer_i   = f_{t_i}(h_i, e_i(1)) - f_{t_i}(h_i, e_i(0))                (0 for a unit without neighbours)

The baselines run the same code path: ``mpgnn``, the paper's naive learner, a plain message-passing GNN on
the network itself (h_i = MLP(x_i), then ``gnn_layers`` rounds h_i <- U([h_i, sum_j M([h_j, t_j, a_ij])]),
e_i = sigmoid(W h_i) in [0, 1]^(2K); it cannot count triangles), or a fixed one-dimensional exposure:
``count`` (treated neighbours / mean degree) or ``fraction`` (treated neighbours / degree).

Metrics (:mod:`.synthetic`): PEHE = sqrt(mean_i (effect_hat_i - effect_i)^2) for the direct and the peer
effect, and the correlation between learned and true exposure (multiple correlation R and a rank
correlation of the least-squares fit, since the learned exposure is 2K-dimensional and defined only up to
an invertible transformation).

Not implemented: the paper's semi-synthetic BlogCatalog / Flickr data and its motif-based baselines; the
ego networks are 1-hop.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> submodule; imported on first use, so that the light parts (inputs, synthetic data, the
#: choices a tool declares) do not pull in torch
_EXPORTS = {
    "HEADS": "inputs",
    "MODELS": "inputs",
    "Network": "inputs",
    "PeerEffectsError": "inputs",
    "as_network": "inputs",
    "check_units": "inputs",
    "EgoNetConfig": "model",
    "EgoNets": "model",
    "PeerEffects": "model",
    "baseline_exposure": "model",
    "coverage_loss": "model",
    "ego_networks": "model",
    "estimate_peer_effects": "model",
    "make_config": "model",
    "GENERATORS": "synthetic",
    "MECHANISMS": "synthetic",
    "SyntheticNetwork": "synthetic",
    "evaluate": "synthetic",
    "exposure_correlation": "synthetic",
    "pehe": "synthetic",
    "synthetic_network": "synthetic",
    "t_interval": "synthetic",
    "true_exposure": "synthetic",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
