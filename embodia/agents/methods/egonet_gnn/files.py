"""A network and its unit table from files, and per-unit effects to a CSV file.

- the network: an edge list (CSV / TSV / text with a header row: a source and a target column, optionally
  edge-feature columns; the delimiter is sniffed, tab for ``.tsv``) or a GraphML / GML file read by networkx
  (GML nodes are named by their ``label``; edge features are edge attributes). Edges are undirected; an
  edge given twice (also once in each direction) is refused.
- the unit table: CSV / TSV with a header; a node-id column (matching the network's node names), a
  treatment column (0/1), an outcome column and feature columns (default: every other column). Units of the
  table without edges are kept as isolated units; a network node missing from the table is an error.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embodia.agents.methods.egonet_gnn.inputs import PeerEffectsError

EFFECTS_HEADER = ("node", "treatment", "direct_effect", "peer_effect")
"""The first columns of an effects CSV (exposure columns follow)."""


@dataclass(frozen=True)
class UnitData:
    """What :func:`read_network` returns: arrays for :func:`estimate_peer_effects` and the unit names."""

    nodes: list[str]
    edges: np.ndarray
    """``(E, 2)`` indices into ``nodes``."""
    edge_features: np.ndarray | None
    features: np.ndarray
    treatment: np.ndarray
    outcome: np.ndarray
    feature_columns: list[str]


def _table(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a delimited text file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise PeerEffectsError(f"{path}: cannot be read ({type(error).__name__})") from None
    if not text.strip():
        raise PeerEffectsError(f"{path}: the file is empty")
    if path.suffix.lower() in (".tsv", ".tab"):
        delimiter = "\t"
    else:
        try:
            delimiter = csv.Sniffer().sniff(text[:4096], delimiters=",\t; ").delimiter
        except csv.Error:
            delimiter = ","
    rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in row)]
    header = [c.strip() for c in rows[0]]
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise PeerEffectsError(f"{path}:{number}: {len(row)} fields, the header has {len(header)}")
    return header, [[c.strip() for c in row] for row in rows[1:]]


def _column(path: Path, header: list[str], name: str, what: str) -> int:
    if name not in header:
        raise PeerEffectsError(f"{path}: no {what} column {name!r}; the columns are {', '.join(header)}")
    return header.index(name)


def _number(path: Path, row: int, column: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise PeerEffectsError(f"{path}:{row}: column {column!r} is not a number: {value!r}") from None


def _edges_from_file(
    path: Path, source: str, target: str, edge_columns: list[str]
) -> tuple[list[tuple[str, str]], list[list[float]], list[str]]:
    """Edges (node names), their features, and the file's nodes without edges."""
    suffix = path.suffix.lower()
    if suffix in (".graphml", ".gml"):
        import networkx as nx

        try:
            graph = nx.read_graphml(path) if suffix == ".graphml" else nx.read_gml(path)
        except Exception as error:  # networkx raises many types for malformed files
            raise PeerEffectsError(f"{path}: not a readable {suffix[1:]} file ({error})") from None
        if graph.is_multigraph():
            raise PeerEffectsError(f"{path}: a multigraph (parallel edges) is not supported")
        pairs, feats = [], []
        for u, v, attributes in graph.edges(data=True):
            missing = [c for c in edge_columns if c not in attributes]
            if missing:
                raise PeerEffectsError(f"{path}: edge ({u}, {v}) has no attribute {missing[0]!r}")
            pairs.append((str(u), str(v)))
            feats.append([_number(path, 0, c, str(attributes[c])) for c in edge_columns])
        return pairs, feats, [str(v) for v in graph.nodes if graph.degree(v) == 0]
    header, rows = _table(path)
    s, t = _column(path, header, source, "source"), _column(path, header, target, "target")
    columns = [_column(path, header, c, "edge-feature") for c in edge_columns]
    pairs = [(row[s], row[t]) for row in rows]
    feats = [[_number(path, i + 2, header[c], row[c]) for c in columns] for i, row in enumerate(rows)]
    return pairs, feats, []


def read_network(
    graph: str | Path,
    nodes: str | Path,
    *,
    node_column: str = "id",
    treatment_column: str = "treatment",
    outcome_column: str = "outcome",
    feature_columns: list[str] | None = None,
    source_column: str = "source",
    target_column: str = "target",
    edge_feature_columns: list[str] | None = None,
) -> UnitData:
    """The network file and the unit table as arrays (module docstring); :class:`PeerEffectsError` names
    the file, line and column of a problem."""
    graph_path, nodes_path = Path(graph), Path(nodes)
    edge_columns = list(edge_feature_columns or [])
    header, rows = _table(nodes_path)
    id_col = _column(nodes_path, header, node_column, "node-id")
    t_col = _column(nodes_path, header, treatment_column, "treatment")
    y_col = _column(nodes_path, header, outcome_column, "outcome")
    if feature_columns is None:
        feature_columns = [c for c in header if c not in (node_column, treatment_column, outcome_column)]
    if not feature_columns:
        raise PeerEffectsError(f"{nodes_path}: no feature columns (only id, treatment and outcome)")
    f_cols = [_column(nodes_path, header, c, "feature") for c in feature_columns]
    names = [row[id_col] for row in rows]
    index: dict[str, int] = {}
    for number, name in enumerate(names, start=2):
        if name in index:
            raise PeerEffectsError(f"{nodes_path}:{number}: node {name!r} appears twice")
        index[name] = len(index)
    number = lambda i, c: _number(nodes_path, i + 2, header[c], rows[i][c])  # noqa: E731
    features = np.array([[number(i, c) for c in f_cols] for i in range(len(rows))], dtype=np.float64)
    treatment = np.array([number(i, t_col) for i in range(len(rows))])
    outcome = np.array([number(i, y_col) for i in range(len(rows))])
    pairs, feats, lone = _edges_from_file(graph_path, source_column, target_column, edge_columns)
    for name in [*lone, *(name for pair in pairs for name in pair)]:
        if name not in index:
            raise PeerEffectsError(f"{graph_path}: node {name!r} is not in the unit table {nodes_path.name}")
    edges, edge_feats, seen = [], [], {}
    for (u, v), f in zip(pairs, feats):
        if u == v:
            raise PeerEffectsError(f"{graph_path}: self-loop at node {u!r}; remove self-loops")
        key = (min(index[u], index[v]), max(index[u], index[v]))
        if key in seen:
            raise PeerEffectsError(f"{graph_path}: edge ({u!r}, {v!r}) appears more than once")
        seen[key] = True
        edges.append((index[u], index[v]))
        edge_feats.append(f)
    return UnitData(
        nodes=names,
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        edge_features=np.array(edge_feats, dtype=np.float64).reshape(len(edges), len(edge_columns))
        if edge_columns
        else None,
        features=features,
        treatment=treatment,
        outcome=outcome,
        feature_columns=list(feature_columns),
    )


def write_effects(path: str | Path, effects: Any) -> Path:
    """Write ``effects`` (a ``PeerEffects``) as CSV: node, treatment, direct_effect, peer_effect, exposure_k.

    An existing file is replaced only if it is such a table (never someone else's file).
    """
    path = Path(path)
    if path.is_symlink() or path.is_dir():
        raise PeerEffectsError(f"{path}: is a folder or a symlink; name a new .csv file")
    if path.exists():
        with path.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip().split(",")
        if tuple(first[: len(EFFECTS_HEADER)]) != EFFECTS_HEADER:
            raise PeerEffectsError(
                f"{path}: exists and is not a peer-effects table; embodia does not overwrite what it did not "
                "write: choose another file"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    dims = effects.exposure.shape[1]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*EFFECTS_HEADER, *(f"exposure_{k}" for k in range(dims))])
        for i, node in enumerate(effects.nodes):
            writer.writerow(
                [
                    node,
                    int(effects.treatment[i]),
                    f"{effects.direct[i]:.6g}",
                    f"{effects.peer[i]:.6g}",
                    *(f"{v:.6g}" for v in effects.exposure[i]),
                ]
            )
    return path
