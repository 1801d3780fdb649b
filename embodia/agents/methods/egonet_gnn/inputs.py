"""A user's network as the arrays EgoNetGNN runs on, with one-line errors for inputs that cannot be right.

A network is a networkx graph or an edge list (an ``(E, 2)`` array of unit indices ``0..n-1``); the unit
arrays (features, treatment, outcome) are aligned with ``list(graph.nodes)`` for a graph and with the index
for an edge list, and edge features with ``list(graph.edges)`` or the edge list's rows. Edges are
undirected; self-loops and repeated edges are refused (their edge features would be ambiguous).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError

MODELS = ("egonet", "mpgnn", "count", "fraction")
"""Exposure mappings: learned over ego networks, learned by a plain message-passing GNN on the whole network
(the paper's naive baseline), or the fixed count / fraction of treated neighbours."""
HEADS = ("tarnet", "cfr")
"""Outcome heads: TARNet, or CFR (TARNet plus a balancing IPM term)."""


class PeerEffectsError(EmbodiaError, ValueError):
    """A network or unit data EgoNetGNN cannot use (mismatched lengths, NaN, non-binary treatment, ...)."""


@dataclass(frozen=True)
class Network:
    """An undirected network of ``n`` units, checked."""

    n: int
    """Number of units."""
    edges: np.ndarray
    """``(E, 2)`` int64 unit indices, each undirected edge once, no self-loops."""
    edge_features: np.ndarray
    """``(E, q)`` float64 (``q`` may be 0), row ``k`` belongs to ``edges[k]``."""
    nodes: list[Hashable]
    """Unit labels (the graph's nodes, or ``0..n-1`` for an edge list)."""

    def neighbours(self) -> list[np.ndarray]:
        """Each unit's neighbours, sorted."""
        both = np.concatenate([self.edges, self.edges[:, ::-1]])
        order = np.lexsort((both[:, 1], both[:, 0]))
        both = both[order]
        starts = np.searchsorted(both[:, 0], np.arange(self.n + 1))
        return [both[starts[i] : starts[i + 1], 1] for i in range(self.n)]

    def degree(self) -> np.ndarray:
        return np.bincount(self.edges.ravel(), minlength=self.n).astype(np.float64)


def _finite(name: str, values: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise PeerEffectsError(f"{name} must be numeric") from None
    if len(shape) == 2 and array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != len(shape) or any(s is not None and a != s for a, s in zip(array.shape, shape)):
        want = (
            "("
            + ", ".join("?" if s is None else str(s) for s in shape)
            + ("," if len(shape) == 1 else "")
            + ")"
        )
        raise PeerEffectsError(f"{name} has shape {array.shape}, expected {want}")
    if not np.isfinite(array).all():
        bad = int((~np.isfinite(array)).any(axis=tuple(range(1, array.ndim))).sum())
        raise PeerEffectsError(f"{name} holds NaN or infinite values ({bad} row(s))")
    return array


def as_network(graph: Any, n: int, edge_features: Any = None) -> Network:
    """``graph`` (a networkx graph or an ``(E, 2)`` edge list over ``0..n-1``) as a checked :class:`Network`.

    Raises :class:`PeerEffectsError` naming the problem: a graph whose node count is not ``n``, a directed
    or multi-graph, an index out of range, a self-loop, a repeated edge, edge features of the wrong length.
    """
    import networkx as nx

    if isinstance(graph, nx.Graph):
        if graph.is_directed() or graph.is_multigraph():
            raise PeerEffectsError(
                "the graph is directed or a multigraph; pass nx.Graph(graph.to_undirected()) (edges are "
                "undirected here)"
            )
        nodes = list(graph.nodes)
        if len(nodes) != n:
            raise PeerEffectsError(f"the graph has {len(nodes)} nodes but the unit arrays have {n} rows")
        index = {node: i for i, node in enumerate(nodes)}
        edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
    else:
        nodes = list(range(n))
        raw = np.asarray(graph)
        if raw.ndim != 2 or raw.shape[1] != 2 or raw.dtype.kind not in "iuf":
            raise PeerEffectsError(
                f"an edge list must be an (E, 2) array of unit indices, got shape {raw.shape}, dtype {raw.dtype}"
            )
        if raw.dtype.kind == "f" and not (np.isfinite(raw).all() and (raw == np.round(raw)).all()):
            raise PeerEffectsError("the edge list holds non-integer unit indices")
        edges = raw.astype(np.int64)
        if len(edges) and (edges.min() < 0 or edges.max() >= n):
            raise PeerEffectsError(
                f"the edge list names unit {int(edges.min() if edges.min() < 0 else edges.max())}, "
                f"outside 0..{n - 1} (the unit arrays have {n} rows)"
            )
    loops = edges[:, 0] == edges[:, 1]
    if loops.any():
        raise PeerEffectsError(f"self-loop at unit {nodes[int(edges[loops][0, 0])]!r}; remove self-loops")
    key = np.sort(edges, axis=1)
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        u, v = key[first[np.argmax(counts > 1)]]
        raise PeerEffectsError(f"edge ({nodes[u]!r}, {nodes[v]!r}) appears more than once")
    if edge_features is None:
        features = np.zeros((len(edges), 0))
    else:
        features = _finite("edge_features", edge_features, (len(edges), None))
    return Network(n=n, edges=edges, edge_features=features, nodes=nodes)


def check_units(features: Any, treatment: Any, outcome: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features ``(n, p)``, treatment ``(n,)`` in {0, 1} with both groups present, outcome ``(n,)``."""
    x = _finite("features", features, (None, None))
    n = len(x)
    if n < 2:
        raise PeerEffectsError(f"need at least 2 units, got {n}")
    t = _finite("treatment", treatment, (n,))
    if not np.isin(t, (0.0, 1.0)).all():
        bad = t[~np.isin(t, (0.0, 1.0))][0]
        raise PeerEffectsError(f"treatment must be binary (0 or 1), got {bad:g}")
    if t.min() == t.max():
        raise PeerEffectsError(f"every unit has treatment {int(t[0])}; both groups are needed")
    y = _finite("outcome", outcome, (n,))
    return x, t, y
