"""Synthetic networks with known exposure mechanisms, so that every unit's true direct and peer effect is
known exactly; and the metrics (PEHE, exposure correlation, t-intervals over seeds).

Generators (``n`` units, average degree about 6; seeded):

- ``er``: Erdos-Renyi G(n, 6 / (n - 1)) — few triangles;
- ``ba``: Barabasi-Albert, 3 edges per new unit — hubs, few triangles;
- ``sbm``: stochastic block model, 4 equal blocks, expected 6 neighbours inside the block and 1.5 outside;
  features shifted by a per-block mean (homophily);
- ``plc``: Holme-Kim power-law cluster graph (3 edges per unit, triangle probability 0.5) — hubs and
  triangles;
- ``lesmis``: the co-appearance network of Les Miserables bundled with networkx (77 characters, 254
  edges, clustering 0.57), ``round(n / 77)`` disjoint copies (at least one) with fresh features per copy.

Units have 4 standard-normal features x; every edge two uniform [0, 1] features (a tie strength and an
attribute no mechanism uses). With t_j the treatment of neighbour j of unit i and c_i = sum_j t_j:

========== ==================================================== ================================================
mechanism  true exposure e_i (0 for a unit with no weighted peer)  the peer weight
========== ==================================================== ================================================
count      min(c_i, 8) / 8                                       every peer, saturating at 8 treated
fraction   c_i / |N(i)|                                          every peer
triangle   sum_j w_ij t_j / sum_j w_ij                           w_ij = |N(i) & N(j)|, the friends i and j share
similarity sum_j w_ij t_j / sum_j w_ij                           w_ij = max(0, cos(x_i, x_j))
edge       sum_j w_ij t_j / sum_j w_ij                           w_ij = s_ij if the tie strength s_ij > 0.5 else 0
========== ==================================================== ================================================

Treatment t_i ~ Bernoulli(sigmoid(0.75 (x_0 + x_1))) (confounded through x_0 and x_1), and

    y_i = x_0 + sin(x_1) + 0.5 x_2 x_3  +  tau(x_i) t_i  +  gamma(x_i) e_i  +  N(0, 0.3^2)
    tau(x) = 1 + 0.5 x_1,    gamma(x) = 2 + tanh(x_2)

so the true direct effect is tau(x_i) and the true peer effect (all peers treated vs none, own treatment
fixed) is gamma(x_i) (e_i(1) - e_i(0)) = gamma(x_i) e_i(1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.agents.methods.egonet_gnn.inputs import Network, PeerEffectsError, as_network

GENERATORS = ("er", "ba", "sbm", "plc", "lesmis")
MECHANISMS = ("count", "fraction", "triangle", "similarity", "edge")
COUNT_CAP = 8
"""The count mechanism saturates at this many treated neighbours."""
FEATURES = 4
NOISE = 0.3
LESMIS_UNITS = 77


def make_graph(generator: str, n: int, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """A graph over units ``0..n'-1`` (n' = n except for ``lesmis``) and each unit's group (block or copy)."""
    import networkx as nx

    if generator not in GENERATORS:
        raise PeerEffectsError(f"unknown generator {generator!r}; known: {', '.join(GENERATORS)}")
    if n < 8:
        raise PeerEffectsError(f"a synthetic network needs n >= 8 units, got {n}")
    seed = int(rng.integers(2**31 - 1))
    if generator == "er":
        graph = nx.gnp_random_graph(n, min(1.0, 6.0 / (n - 1)), seed=seed)
        groups = np.zeros(n, dtype=np.int64)
    elif generator == "ba":
        graph = nx.barabasi_albert_graph(n, 3, seed=seed)
        groups = np.zeros(n, dtype=np.int64)
    elif generator == "plc":
        graph = nx.powerlaw_cluster_graph(n, 3, 0.5, seed=seed)
        groups = np.zeros(n, dtype=np.int64)
    elif generator == "sbm":
        sizes = [n // 4 + (1 if b < n % 4 else 0) for b in range(4)]
        p_in = [min(1.0, 6.0 / max(s - 1, 1)) for s in sizes]
        p_out = min(1.0, 1.5 / max(n - min(sizes), 1))
        probs = [[p_in[a] if a == b else p_out for b in range(4)] for a in range(4)]
        graph = nx.stochastic_block_model(sizes, probs, seed=seed)
        groups = np.repeat(np.arange(4), sizes)
    else:
        base = nx.convert_node_labels_to_integers(nx.les_miserables_graph())
        copies = max(1, round(n / LESMIS_UNITS))
        graph = nx.disjoint_union_all([base] * copies)
        groups = np.repeat(np.arange(copies), LESMIS_UNITS)
    plain = nx.Graph()
    plain.add_nodes_from(range(graph.number_of_nodes()))
    plain.add_edges_from(graph.edges)
    return plain, groups


def peer_weights(mechanism: str, network: Network, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed pairs ``(2E, 2)`` (unit i, its neighbour j) and the weight of j in i's exposure."""
    pairs = np.concatenate([network.edges, network.edges[:, ::-1]])
    rows = np.concatenate([np.arange(len(network.edges))] * 2)
    i, j = pairs[:, 0], pairs[:, 1]
    if mechanism in ("count", "fraction"):
        w = np.ones(len(pairs))
    elif mechanism == "triangle":
        neighbours = [set(a.tolist()) for a in network.neighbours()]
        w = np.array([len(neighbours[a] & neighbours[b]) for a, b in pairs], dtype=np.float64)
    elif mechanism == "similarity":
        norms = np.linalg.norm(features, axis=1) + 1e-12
        cos = (features[i] * features[j]).sum(1) / (norms[i] * norms[j])
        w = np.maximum(cos, 0.0)
    elif mechanism == "edge":
        if network.edge_features.shape[1] < 1:
            raise PeerEffectsError("the edge mechanism needs an edge feature (the tie strength)")
        strength = network.edge_features[rows, 0]
        w = np.where(strength > 0.5, strength, 0.0)
    else:
        raise PeerEffectsError(f"unknown mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}")
    return pairs, w


def true_exposure(
    mechanism: str, network: Network, features: np.ndarray, treatment: np.ndarray
) -> np.ndarray:
    """The mechanism's exposure e_i for the treatment vector ``treatment`` (module table), ``(n,)``."""
    pairs, w = peer_weights(mechanism, network, np.asarray(features, dtype=np.float64))
    t = np.asarray(treatment, dtype=np.float64)
    treated = np.bincount(pairs[:, 0], weights=w * t[pairs[:, 1]], minlength=network.n)
    if mechanism == "count":
        return np.minimum(treated, COUNT_CAP) / COUNT_CAP
    total = np.bincount(pairs[:, 0], weights=w, minlength=network.n)
    return np.divide(treated, total, out=np.zeros(network.n), where=total > 0)


def direct_effect(x: np.ndarray) -> np.ndarray:
    """tau(x) = 1 + 0.5 x_1."""
    return 1.0 + 0.5 * x[:, 1]


def peer_scale(x: np.ndarray) -> np.ndarray:
    """gamma(x) = 2 + tanh(x_2)."""
    return 2.0 + np.tanh(x[:, 2])


@dataclass(frozen=True)
class SyntheticNetwork:
    """One synthetic data set, with the truth."""

    generator: str
    mechanism: str
    graph: Any
    """networkx graph over ``0..n-1``."""
    features: np.ndarray
    """``(n, 4)``."""
    edge_features: np.ndarray
    """``(E, 2)`` aligned with ``list(graph.edges)``: tie strength, unused attribute."""
    treatment: np.ndarray
    outcome: np.ndarray
    exposure: np.ndarray
    """True exposure under the observed treatments."""
    direct: np.ndarray
    """True individual direct effects."""
    peer: np.ndarray
    """True individual peer effects (all peers treated vs none)."""

    @property
    def n(self) -> int:
        return len(self.features)


def synthetic_network(generator: str, mechanism: str, n: int = 300, seed: int = 0) -> SyntheticNetwork:
    """A seeded synthetic data set (module docstring); the same arguments give the same data."""
    if mechanism not in MECHANISMS:
        raise PeerEffectsError(f"unknown mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}")
    rng = np.random.default_rng([seed, GENERATORS.index(generator) if generator in GENERATORS else 0])
    graph, groups = make_graph(generator, n, rng)
    units = graph.number_of_nodes()
    x = rng.normal(size=(units, FEATURES))
    if generator == "sbm":
        x += rng.normal(size=(int(groups.max()) + 1, FEATURES))[groups]
    edge_features = rng.uniform(size=(graph.number_of_edges(), 2))
    network = as_network(graph, units, edge_features)
    t = (rng.uniform(size=units) < 1.0 / (1.0 + np.exp(-0.75 * (x[:, 0] + x[:, 1])))).astype(np.float64)
    exposure = true_exposure(mechanism, network, x, t)
    tau, gamma = direct_effect(x), peer_scale(x)
    base = x[:, 0] + np.sin(x[:, 1]) + 0.5 * x[:, 2] * x[:, 3]
    y = base + tau * t + gamma * exposure + rng.normal(scale=NOISE, size=units)
    everyone = true_exposure(mechanism, network, x, np.ones(units))
    nobody = true_exposure(mechanism, network, x, np.zeros(units))
    return SyntheticNetwork(
        generator=generator,
        mechanism=mechanism,
        graph=graph,
        features=x,
        edge_features=edge_features,
        treatment=t,
        outcome=y,
        exposure=exposure,
        direct=tau,
        peer=gamma * (everyone - nobody),
    )


# ---------------------------------------------------------------------------------------------- metrics
def pehe(estimate: Any, truth: Any) -> float:
    """Precision in estimating heterogeneous effects: sqrt(mean_i (estimate_i - truth_i)^2)."""
    a, b = np.asarray(estimate, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        raise PeerEffectsError(
            f"pehe: estimate {a.shape} and truth {b.shape} must have the same, non-empty shape"
        )
    return float(np.sqrt(np.mean((a - b) ** 2)))


def exposure_correlation(learned: Any, truth: Any) -> dict[str, float | None]:
    """How well the learned exposure (``(n,)`` or ``(n, d)``) tracks the true one.

    ``pearson``: the multiple correlation R, the Pearson correlation between the truth and its least-squares
    fit from the learned dimensions (= |Pearson| for d = 1); ``spearman``: the rank correlation between the
    same fit and the truth. None where either side is constant.
    """
    from scipy.stats import spearmanr

    e = np.asarray(learned, dtype=np.float64)
    e = e.reshape(len(e), -1)
    y = np.asarray(truth, dtype=np.float64)
    if y.std() < 1e-12 or (e.std(0) < 1e-12).all():
        return {"pearson": None, "spearman": None}
    design = np.column_stack([np.ones(len(e)), e])
    fitted = design @ np.linalg.lstsq(design, y, rcond=None)[0]
    if fitted.std() < 1e-12:
        return {"pearson": None, "spearman": None}
    pearson = float(np.corrcoef(fitted, y)[0, 1])
    spearman = float(spearmanr(fitted, y).statistic)
    return {"pearson": pearson, "spearman": None if math.isnan(spearman) else spearman}


def t_interval(values: Any, level: float = 0.95) -> tuple[float, float | None]:
    """Mean and half-width of the two-sided Student-t interval over seeds (None for fewer than 2 values)."""
    from scipy.stats import t as student

    v = np.asarray([a for a in values if a is not None], dtype=np.float64)
    if len(v) == 0:
        return float("nan"), None
    if len(v) < 2:
        return float(v.mean()), None
    half = student.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean()), float(half)


def evaluate(effects: Any, data: SyntheticNetwork) -> dict[str, Any]:
    """PEHE of the direct and peer effects and the exposure correlation of a fit (``PeerEffects``) on ``data``."""
    return {
        "pehe_direct": pehe(effects.direct, data.direct),
        "pehe_peer": pehe(effects.peer, data.peer),
        "exposure": exposure_correlation(effects.exposure, data.exposure),
        "true_average_direct": float(data.direct.mean()),
        "true_average_peer": float(data.peer.mean()),
    }
