"""EgoNetGNN, the whole method in one file: ego networks, the learned exposure mapping, TARNet / CFR heads,
training, and the individual direct and peer effects (equations: the package docstring).

Read top to bottom: :class:`EgoNetConfig`, :func:`ego_networks` (PyTorch Geometric's ``k_hop_subgraph``
per unit, the unit removed), :class:`AlterConv` + :class:`ExposureNet` (message passing inside each ego
network, bounded readouts), :func:`baseline_exposure` (count / fraction of treated neighbours),
:class:`OutcomeModel` (representation and two heads), the IPM terms, :func:`fit`, :func:`estimate_peer_effects`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import k_hop_subgraph, scatter

from embodia.agents.methods.egonet_gnn.inputs import (
    HEADS,
    MODELS,
    Network,
    PeerEffectsError,
    as_network,
    check_units,
)
from embodia.core.validation import validate

FRACTION_EPS = 1.0
"""The fraction-like readout's never-treated pseudo-peer: an ego whose weights are all ~0 has exposure ~0."""


@dataclass
class EgoNetConfig:
    """Settings of :func:`estimate_peer_effects`; the defaults are what ``scripts/peer_effects_experiment.py``
    runs."""

    model: Literal[MODELS] = "egonet"
    """Exposure mapping: ``egonet`` (learned over each ego network), ``mpgnn`` (learned by a plain
    message-passing GNN on the whole network, the paper's naive baseline), or the fixed baselines ``count``
    (number of treated neighbours, divided by the mean degree) and ``fraction`` (share of treated
    neighbours)."""
    head: Literal[HEADS] = "tarnet"
    """Outcome heads: ``tarnet`` (factual loss only) or ``cfr`` (plus an IPM between the representations of
    treated and control units)."""
    hidden: Annotated[int, Field(ge=2, le=1024)] = 32
    """Width of every hidden layer."""
    channels: Annotated[int, Field(ge=1, le=16)] = 1
    """K, the learned peer-weight channels; the exposure has 2K dimensions (a fraction-like and a count-like
    readout per channel)."""
    layers: Annotated[int, Field(ge=0, le=4)] = 1
    """Message-passing rounds among the alters of each ego network (0: alters do not see each other, so
    triangles cannot be counted)."""
    gnn_layers: Annotated[int, Field(ge=1, le=4)] = 2
    """Rounds of message passing on the whole network for ``mpgnn`` (ignored by the other mappings)."""
    coverage_weight: Annotated[float, Field(ge=0, le=100)] = 0.0
    """beta, the weight of the coverage prior on the learned exposure (:func:`coverage_loss`; 0: off;
    ignored by the fixed mappings)."""
    epochs: Annotated[int, Field(ge=1, le=100_000)] = 200
    """Full-batch Adam steps."""
    lr: Annotated[float, Field(gt=0, le=1)] = 1e-2
    """Adam learning rate."""
    weight_decay: Annotated[float, Field(ge=0, le=1)] = 1e-3
    """L2 penalty on every parameter (Adam's ``weight_decay``)."""
    ipm: Literal["wasserstein", "mmd"] = "wasserstein"
    """CFR's distance between treated and control representations: entropic Wasserstein-1 (Sinkhorn) or
    linear MMD (squared distance of the means)."""
    ipm_weight: Annotated[float, Field(ge=0, le=100)] = 0.1
    """alpha, the IPM's weight in the CFR loss (ignored by ``tarnet``)."""
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    """Seed of the initialisation."""
    threads: Annotated[int, Field(ge=0, le=256)] = 1
    """Torch intra-op threads while fitting (restored afterwards; 0: leave torch's setting). Graphs of a few
    thousand units are fastest on one; more threads on a busy machine can be many times slower."""


def make_config(config: EgoNetConfig | dict[str, Any] | None = None, **overrides: Any) -> EgoNetConfig:
    """A validated :class:`EgoNetConfig` from a config or a dict, then ``overrides``."""
    values = dict(vars(config)) if isinstance(config, EgoNetConfig) else dict(config or {})
    values.update(overrides)
    return validate(EgoNetConfig, values, where="egonet config", error=PeerEffectsError)


# ---------------------------------------------------------------------------------------------- ego networks
@dataclass(frozen=True)
class EgoNets:
    """Every unit's ego network, batched: one *alter copy* per (ego, neighbour) pair."""

    ego: Tensor
    """``(A,)`` the ego of each copy (A = 2E)."""
    alter: Tensor
    """``(A,)`` which unit the copy is."""
    edge: Tensor
    """``(A,)`` the row of the ego-alter edge in ``Network.edges`` (for its edge features)."""
    inner: Tensor
    """``(2, M)`` edges between copies of the same ego (the edges among its neighbours), both directions."""


def ego_networks(network: Network) -> EgoNets:
    """The ego networks: for unit i, its neighbours and the edges among them, i itself removed.

    In it, alter j's degree is |N(i) & N(j)|, the triangles through the edge (i, j), which message passing
    inside the ego network can count; message passing on the whole graph cannot.
    """
    n, edges = network.n, torch.from_numpy(network.edges)
    both = torch.cat([edges, edges.flip(1)]).T.contiguous()  # (2, 2E), both directions
    edge_id = torch.arange(len(edges)).repeat(2)
    egos, alters, edge_rows, inner = [], [], [], []
    offset = 0
    for i in range(n):
        _, sub_edges, _, mask = k_hop_subgraph(i, 1, both, relabel_nodes=False, num_nodes=n)
        from_ego = mask & (both[0] == i)
        neighbours, order = both[1, from_ego].sort()
        egos.append(torch.full_like(neighbours, i))
        alters.append(neighbours)
        edge_rows.append(edge_id[from_ego][order])
        among = sub_edges[:, (sub_edges != i).all(0)]  # the ego removed
        inner.append(offset + torch.searchsorted(neighbours, among))
        offset += len(neighbours)
    cat = lambda parts, empty: torch.cat(parts, -1) if parts else empty  # noqa: E731
    return EgoNets(
        ego=cat(egos, torch.zeros(0, dtype=torch.long)),
        alter=cat(alters, torch.zeros(0, dtype=torch.long)),
        edge=cat(edge_rows, torch.zeros(0, dtype=torch.long)),
        inner=cat(inner, torch.zeros(2, 0, dtype=torch.long)),
    )


# ---------------------------------------------------------------------------------------------- exposure
def _mlp(*sizes: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ELU()]
    return nn.Sequential(*layers)


class AlterConv(MessagePassing):
    """One round of messages among the alters of an ego network: u_j <- U([u_j, sum_k M(u_k)])."""

    def __init__(self, hidden: int) -> None:
        super().__init__(aggr="add")  # a sum, so the number of alter neighbours (triangles) stays visible
        self.message_mlp = _mlp(hidden, hidden)
        self.update_mlp = _mlp(2 * hidden, hidden)

    def forward(self, u: Tensor, inner: Tensor) -> Tensor:
        return self.update_mlp(torch.cat([u, self.propagate(inner, u=u)], dim=-1))

    def message(self, u_j: Tensor) -> Tensor:
        return self.message_mlp(u_j)


class ExposureNet(nn.Module):
    """The learned exposure mapping: per-alter weights w_ij >= 0, bounded readouts, e_i in [0, 1]^(2K)."""

    def __init__(self, features: int, edge_features: int, hidden: int, channels: int, layers: int) -> None:
        super().__init__()
        self.embed = _mlp(4 * features + 1 + edge_features, hidden, hidden)
        self.convs = nn.ModuleList(AlterConv(hidden) for _ in range(layers))
        self.weight = nn.Linear(hidden, channels)
        nn.init.constant_(self.weight.bias, math.log(math.e - 1))  # softplus(bias) = 1: every peer counts

    def forward(self, x: Tensor, t: Tensor, edge_attr: Tensor, egos: EgoNets) -> Tensor:
        xi, xj, tj = x[egos.ego], x[egos.alter], t[egos.alter, None]
        z = torch.cat([xj, xi, xi * xj, (xi - xj).abs(), tj, edge_attr[egos.edge]], dim=-1)
        u = self.embed(z)
        for conv in self.convs:
            u = conv(u, egos.inner)
        w = F.softplus(self.weight(u))  # (A, K)
        n = len(x)
        treated = scatter(tj * w, egos.ego, dim=0, dim_size=n, reduce="sum")
        total = scatter(w, egos.ego, dim=0, dim_size=n, reduce="sum")
        fraction_like = treated / (total + FRACTION_EPS)
        count_like = 1.0 - torch.exp(-treated)
        return torch.cat([fraction_like, count_like], dim=-1)


class PeerConv(MessagePassing):
    """One round of a plain message-passing GNN on the whole network (the naive exposure learner):
    h_i <- U([h_i, sum_{j in N(i)} M([h_j, t_j, a_ij])])."""

    def __init__(self, hidden: int, edge_features: int) -> None:
        super().__init__(aggr="add")
        self.message_mlp = _mlp(hidden + 1 + edge_features, hidden)
        self.update_mlp = _mlp(2 * hidden, hidden)

    def forward(self, h: Tensor, t: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        messages = self.propagate(edge_index, h=h, t=t[:, None], edge_attr=edge_attr)
        return self.update_mlp(torch.cat([h, messages], dim=-1))

    def message(self, h_j: Tensor, t_j: Tensor, edge_attr: Tensor) -> Tensor:
        return self.message_mlp(torch.cat([h_j, t_j, edge_attr], dim=-1))


class MPGNNExposure(nn.Module):
    """The paper's naive learner: node states from the features, ``gnn_layers`` rounds of :class:`PeerConv`
    over the network itself (peer treatments and edge features in the messages), e_i = sigmoid(W h_i) in
    [0, 1]^(2K). It sees no ego network, so it cannot count the triangles through an edge; after two rounds
    a unit's own treatment comes back to it through its neighbours, as in any plain GNN on the graph."""

    def __init__(self, features: int, edge_features: int, hidden: int, channels: int, layers: int) -> None:
        super().__init__()
        self.embed = _mlp(features, hidden, hidden)
        self.convs = nn.ModuleList(PeerConv(hidden, edge_features) for _ in range(layers))
        self.out = nn.Linear(hidden, 2 * channels)

    def forward(self, x: Tensor, t: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        h = self.embed(x)
        for conv in self.convs:
            h = conv(h, t, edge_index, edge_attr)
        return torch.sigmoid(self.out(h))


def coverage_loss(exposure: Tensor) -> Tensor:
    """The coverage prior: each exposure dimension should spread over its range [0, 1] rather than collapse.

    The squared 1-Wasserstein-2 distance between the sorted exposures of the n units and the quantiles of
    Uniform(0, 1): mean_d mean_k (e_(k),d - (k - 1/2) / n)^2 (a sort, so differentiable almost everywhere).
    An exposure that is informative up to an invertible transformation loses nothing by being spread.
    """
    n = exposure.shape[0]
    if n == 0:
        return exposure.sum()
    quantiles = (torch.arange(n, dtype=exposure.dtype) + 0.5) / n
    ranked = exposure.sort(dim=0).values
    return ((ranked - quantiles[:, None]) ** 2).mean()


def baseline_exposure(kind: str, network: Network, treatment: np.ndarray) -> np.ndarray:
    """The fixed exposure mappings: ``count`` = treated neighbours / mean degree, ``fraction`` = treated
    neighbours / degree (0 for an isolated unit). Shape ``(n,)``."""
    both = np.concatenate([network.edges, network.edges[:, ::-1]])
    treated = np.bincount(both[:, 0], weights=np.asarray(treatment, float)[both[:, 1]], minlength=network.n)
    degree = network.degree()
    if kind == "count":
        return treated / max(float(degree.mean()), 1e-12)
    if kind == "fraction":
        return np.divide(treated, degree, out=np.zeros(network.n), where=degree > 0)
    raise PeerEffectsError(f"unknown baseline exposure {kind!r}; known: count, fraction")


# ---------------------------------------------------------------------------------------------- outcome model
class OutcomeModel(nn.Module):
    """TARNet: a shared representation h = Phi(x), one head per own treatment, f_t([h, e])."""

    def __init__(self, features: int, exposure_dim: int, hidden: int) -> None:
        super().__init__()
        self.phi = _mlp(features, hidden, hidden)
        self.heads = nn.ModuleList(
            nn.Sequential(_mlp(hidden + exposure_dim, hidden), nn.Linear(hidden, 1)) for _ in range(2)
        )

    def forward(self, h: Tensor, e: Tensor, own: Tensor) -> Tensor:
        """f_{own_i}(h_i, e_i) for every unit."""
        both = torch.stack([head(torch.cat([h, e], dim=-1)).squeeze(-1) for head in self.heads], dim=-1)
        return both.gather(1, own.long()[:, None]).squeeze(1)


def linear_mmd(a: Tensor, b: Tensor) -> Tensor:
    """Squared distance between the means of two samples (CFR's linear MMD)."""
    return ((a.mean(0) - b.mean(0)) ** 2).sum()


def sinkhorn_wasserstein(a: Tensor, b: Tensor, iterations: int = 10, blur: float = 0.05) -> Tensor:
    """Entropic Wasserstein-1 between two uniform samples: the plan by log-domain Sinkhorn (no gradient),
    the value sum(P * C) differentiable through the costs, as in CFR."""
    squared = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    cost = squared.clamp_min(0.0).add(1e-9).sqrt()
    with torch.no_grad():
        eps = blur * float(cost.mean()) + 1e-9
        log_mu = torch.full((len(a),), -math.log(len(a)))
        log_nu = torch.full((len(b),), -math.log(len(b)))
        f, g = torch.zeros(len(a)), torch.zeros(len(b))
        for _ in range(iterations):
            f = eps * (log_mu - torch.logsumexp((g[None, :] - cost) / eps, dim=1))
            g = eps * (log_nu - torch.logsumexp((f[:, None] - cost) / eps, dim=0))
        plan = torch.exp((f[:, None] + g[None, :] - cost) / eps)
    return (plan * cost).sum()


# ---------------------------------------------------------------------------------------------- training
@dataclass
class _Data:
    """The standardised tensors one fit uses."""

    x: Tensor
    edge_attr: Tensor
    t: Tensor
    y: Tensor
    egos: EgoNets | None
    network: Network
    edge_index: Tensor | None = None
    """``(2, 2E)`` the network's edges in both directions (``mpgnn``)."""
    edge_attr_both: Tensor | None = None
    """``(2E, q)`` the edge features aligned with ``edge_index``."""


class EgoNetGNN(nn.Module):
    """Exposure mapping (learned, or a fixed baseline) + TARNet heads."""

    def __init__(self, config: EgoNetConfig, features: int, edge_features: int) -> None:
        super().__init__()
        self.kind = config.model
        self.exposure_net: nn.Module | None = None
        if config.model == "egonet":
            self.exposure_net = ExposureNet(
                features, edge_features, config.hidden, config.channels, config.layers
            )
        elif config.model == "mpgnn":
            self.exposure_net = MPGNNExposure(
                features, edge_features, config.hidden, config.channels, config.gnn_layers
            )
        dim = 2 * config.channels if self.exposure_net is not None else 1
        self.outcome = OutcomeModel(features, dim, config.hidden)

    def exposure(self, data: _Data, t: Tensor) -> Tensor:
        """e_i for the treatment vector ``t`` (only the neighbours' entries matter)."""
        if self.kind == "mpgnn":
            return self.exposure_net(data.x, t, data.edge_index, data.edge_attr_both)
        if self.exposure_net is not None:
            return self.exposure_net(data.x, t, data.edge_attr, data.egos)
        fixed = baseline_exposure(self.kind, data.network, t.numpy())
        return torch.as_tensor(fixed, dtype=torch.float32)[:, None]


def _standardise(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = a.mean(0) if len(a) else np.zeros(a.shape[1:])
    std = a.std(0) if len(a) else np.ones(a.shape[1:])
    std = np.where(std > 1e-12, std, 1.0)
    return (a - mean) / std, mean, std


def fit(
    network: Network,
    x: np.ndarray,
    t: np.ndarray,
    y_standardised: np.ndarray,
    config: EgoNetConfig,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[EgoNetGNN, _Data, list[float]]:
    """Train on the factual outcomes (already standardised); returns the model, its data and the losses."""
    torch.manual_seed(config.seed)
    as_float = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    edge_attr = as_float(_standardise(network.edge_features)[0])
    edges = torch.from_numpy(network.edges)
    data = _Data(
        x=as_float(_standardise(x)[0]),
        edge_attr=edge_attr,
        t=as_float(t),
        y=as_float(y_standardised),
        egos=ego_networks(network) if config.model == "egonet" else None,
        network=network,
        edge_index=torch.cat([edges, edges.flip(1)]).T.contiguous(),
        edge_attr_both=torch.cat([edge_attr, edge_attr]),
    )
    model = EgoNetGNN(config, x.shape[1], network.edge_features.shape[1])
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    treated, control = data.t > 0.5, data.t < 0.5
    fixed_e = None if model.exposure_net is not None else model.exposure(data, data.t)
    losses: list[float] = []
    every = max(1, config.epochs // 50)
    for epoch in range(config.epochs):
        optimiser.zero_grad()
        h = model.outcome.phi(data.x)
        e = fixed_e if fixed_e is not None else model.exposure(data, data.t)
        loss = F.mse_loss(model.outcome(h, e, data.t), data.y)
        if fixed_e is None and config.coverage_weight > 0:
            loss = loss + config.coverage_weight * coverage_loss(e)
        if config.head == "cfr" and config.ipm_weight > 0:
            ipm = sinkhorn_wasserstein if config.ipm == "wasserstein" else linear_mmd
            loss = loss + config.ipm_weight * ipm(h[treated], h[control])
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
        if progress is not None and ((epoch + 1) % every == 0 or epoch + 1 == config.epochs):
            progress(epoch + 1, config.epochs, f"loss {losses[-1]:.4f}")
    return model, data, losses


@dataclass
class PeerEffects:
    """What :func:`estimate_peer_effects` returns: per-unit effects in outcome units, and the exposures."""

    nodes: list[Hashable]
    """Unit labels, in the order of every array here."""
    direct: np.ndarray
    """Individual direct effects f_1(h_i, e_i) - f_0(h_i, e_i), ``(n,)``."""
    peer: np.ndarray
    """Individual peer effects f_{t_i}(h_i, e_i(all peers treated)) - f_{t_i}(h_i, e_i(none)), ``(n,)``."""
    exposure: np.ndarray
    """Exposure under the observed treatments, ``(n, d)`` (d = 2K learned, 1 for a baseline)."""
    exposure_all: np.ndarray
    """Exposure with every neighbour treated, ``(n, d)``."""
    exposure_none: np.ndarray
    """Exposure with no neighbour treated, ``(n, d)``."""
    treatment: np.ndarray
    """The observed treatments, ``(n,)``."""
    config: EgoNetConfig
    losses: list[float] = field(default_factory=list)
    """Training loss per epoch (standardised outcome units)."""

    @property
    def average_direct(self) -> float:
        return float(self.direct.mean())

    @property
    def average_peer(self) -> float:
        return float(self.peer.mean())

    def summary(self) -> dict[str, Any]:
        return {
            "n": len(self.nodes),
            "model": self.config.model,
            "head": self.config.head,
            "average_direct_effect": self.average_direct,
            "average_peer_effect": self.average_peer,
            "direct_effect_sd": float(self.direct.std()),
            "peer_effect_sd": float(self.peer.std()),
            "exposure_dims": int(self.exposure.shape[1]),
            "final_loss": self.losses[-1] if self.losses else None,
        }


def estimate_peer_effects(
    graph: Any,
    features: Any,
    edge_features: Any,
    treatment: Any,
    outcome: Any,
    config: EgoNetConfig | dict[str, Any] | None = None,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    **overrides: Any,
) -> PeerEffects:
    """Fit EgoNetGNN (or a baseline) on one observed network and return every unit's direct and peer effect.

    Args:
        graph: a networkx graph (units in ``list(graph.nodes)`` order) or an ``(E, 2)`` edge list over
            ``0..n-1``; undirected.
        features: ``(n, p)`` unit features (a 1-D array is one feature).
        edge_features: ``(E, q)`` aligned with ``list(graph.edges)`` / the edge list's rows, or None.
        treatment: ``(n,)`` in {0, 1}, both groups present.
        outcome: ``(n,)`` observed outcomes.
        config: an :class:`EgoNetConfig` or a dict of its fields; ``overrides`` are applied on top.

    Raises:
        PeerEffectsError: mismatched lengths, NaN / inf, non-binary treatment, a malformed graph or config.
    """
    config = make_config(config, **overrides)
    x, t, y = check_units(features, treatment, outcome)
    network = as_network(graph, len(x), edge_features)
    threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    try:
        return _estimate(network, x, t, y, config, progress)
    finally:
        torch.set_num_threads(threads)


def _estimate(
    network: Network,
    x: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    config: EgoNetConfig,
    progress: Callable[[int, int, str], None] | None,
) -> PeerEffects:
    y_mean = float(y.mean())
    y_std = float(y.std()) if y.std() > 1e-12 else 1.0
    model, data, losses = fit(network, x, t, (y - y_mean) / y_std, config, progress)
    model.eval()
    with torch.no_grad():
        h = model.outcome.phi(data.x)
        observed = model.exposure(data, data.t)
        everyone = model.exposure(data, torch.ones_like(data.t))
        nobody = model.exposure(data, torch.zeros_like(data.t))
        zeros, ones = torch.zeros_like(data.t), torch.ones_like(data.t)
        direct = model.outcome(h, observed, ones) - model.outcome(h, observed, zeros)
        peer = model.outcome(h, everyone, data.t) - model.outcome(h, nobody, data.t)
    isolated = network.degree() == 0
    peer_np = peer.numpy().astype(np.float64) * y_std
    peer_np[isolated] = 0.0  # no peers, no peer effect (the learned exposures agree: both are 0)
    return PeerEffects(
        nodes=network.nodes,
        direct=direct.numpy().astype(np.float64) * y_std,
        peer=peer_np,
        exposure=observed.numpy().astype(np.float64),
        exposure_all=everyone.numpy().astype(np.float64),
        exposure_none=nobody.numpy().astype(np.float64),
        treatment=t,
        config=config,
        losses=losses,
    )
