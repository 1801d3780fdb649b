"""Tool ``peer_effects``: individual direct and peer effects on a network (EgoNetGNN or a fixed-exposure
baseline), from the user's files or from a synthetic network whose true effects are known."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from embodia.agents.methods.egonet_gnn.inputs import HEADS, MODELS
from embodia.agents.methods.egonet_gnn.synthetic import GENERATORS, MECHANISMS
from embodia.agents.tools.registry import (
    InputPath,
    OutputPath,
    Progress,
    ToolArgumentError,
    no_progress,
    tool,
)


@dataclass
class SyntheticSpec:
    """A synthetic network with a known exposure mechanism (instead of files)."""

    generator: Literal[GENERATORS] = "sbm"
    """Graph generator: ``er`` (Erdos-Renyi), ``ba`` (Barabasi-Albert), ``sbm`` (stochastic block model),
    ``plc`` (power-law cluster), ``lesmis`` (copies of networkx's Les Miserables network)."""
    mechanism: Literal[MECHANISMS] = "triangle"
    """How peers expose a unit: ``count`` (treated neighbours, saturating at 8), ``fraction``, ``triangle``
    (weighted by shared friends), ``similarity`` (by feature similarity), ``edge`` (by tie strength)."""
    n: Annotated[int, Field(ge=10, le=5000)] = 300
    """Number of units (``lesmis``: rounded to whole copies of its 77 units)."""
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    """Seed of the graph, features, treatments and noise."""


@dataclass
class PeerEffectsArgs:
    """Arguments of ``peer_effects``."""

    graph: InputPath | None = None
    """Network file: an edge list (CSV / TSV with a header holding the source and target columns, optionally
    edge-feature columns) or a .graphml / .gml file; under `embodia mcp`, inside its workspace. Edges are
    undirected."""
    nodes: InputPath | None = None
    """Unit table (CSV / TSV with a header): node id, treatment (0/1), outcome and feature columns; under
    `embodia mcp`, inside its workspace."""
    node_column: str = "id"
    """Column of the unit table naming each node as the network file does."""
    treatment_column: str = "treatment"
    """Column of the unit table holding the binary treatment."""
    outcome_column: str = "outcome"
    """Column of the unit table holding the observed outcome."""
    feature_columns: list[str] | None = None
    """Feature columns of the unit table (default: every column but id, treatment and outcome)."""
    source_column: str = "source"
    """Edge-list column of the first endpoint."""
    target_column: str = "target"
    """Edge-list column of the second endpoint."""
    edge_feature_columns: list[str] | None = None
    """Edge-list columns (or GraphML / GML edge attributes) used as edge features."""
    synthetic: SyntheticSpec | None = None
    """Use a synthetic network instead of files; the result then also has the PEHE against the true effects."""
    model: Literal[MODELS] = "egonet"
    """Exposure mapping: ``egonet`` (learned over ego networks), ``mpgnn`` (learned by a plain message-passing
    GNN, the paper's naive baseline), ``count`` or ``fraction`` of treated neighbours (fixed baselines)."""
    head: Literal[HEADS] = "tarnet"
    """Outcome heads: ``tarnet``, or ``cfr`` (with a Wasserstein balancing term)."""
    epochs: Annotated[int, Field(ge=1, le=20000)] = 200
    """Full-batch training steps."""
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    """Seed of the model's initialisation."""
    effects_out: OutputPath | None = None
    """CSV file for the per-unit effects (node, treatment, direct_effect, peer_effect, exposure_k); under
    `embodia mcp`, inside its workspace. An existing file is replaced only if it is such a table."""


@tool("peer_effects")
def peer_effects(args: PeerEffectsArgs, progress: Progress = no_progress) -> dict:
    """Heterogeneous peer effects on a network with EgoNetGNN (a learned exposure mapping over each unit's ego
    network, TARNet or CFR heads) or a count / fraction-of-treated-neighbours baseline: every unit's direct
    effect (own treatment on vs off) and peer effect (all neighbours treated vs none), summarised as
    averages; from an edge list or GraphML / GML file plus a unit table, or from a synthetic network (then
    with PEHE and the learned-vs-true exposure correlation)."""
    from embodia.agents.methods.egonet_gnn.files import read_network, write_effects
    from embodia.agents.methods.egonet_gnn.model import estimate_peer_effects
    from embodia.agents.methods.egonet_gnn.synthetic import evaluate, synthetic_network

    from_files = args.graph is not None or args.nodes is not None
    if from_files == (args.synthetic is not None) or (
        from_files and (args.graph is None or args.nodes is None)
    ):
        raise ToolArgumentError("peer_effects: give either both graph and nodes, or synthetic (not both)")
    config = {"model": args.model, "head": args.head, "epochs": args.epochs, "seed": args.seed}
    report = lambda done, total, message: progress(done, total, message)  # noqa: E731
    truth = None
    if args.synthetic is not None:
        spec = args.synthetic
        truth = synthetic_network(spec.generator, spec.mechanism, n=spec.n, seed=spec.seed)
        effects = estimate_peer_effects(
            truth.graph,
            truth.features,
            truth.edge_features,
            truth.treatment,
            truth.outcome,
            config,
            progress=report,
        )
        source = {"synthetic": vars(spec), "edges": truth.graph.number_of_edges()}
    else:
        data = read_network(
            args.graph,
            args.nodes,
            node_column=args.node_column,
            treatment_column=args.treatment_column,
            outcome_column=args.outcome_column,
            feature_columns=args.feature_columns,
            source_column=args.source_column,
            target_column=args.target_column,
            edge_feature_columns=args.edge_feature_columns,
        )
        effects = estimate_peer_effects(
            data.edges,
            data.features,
            data.edge_features,
            data.treatment,
            data.outcome,
            config,
            progress=report,
        )
        effects.nodes = data.nodes
        source = {"graph": args.graph, "nodes": args.nodes, "edges": len(data.edges)}
        source["feature_columns"] = data.feature_columns
    result = {**source, **effects.summary()}
    if truth is not None:
        scores = evaluate(effects, truth)
        result.update(
            pehe_direct=scores["pehe_direct"],
            pehe_peer=scores["pehe_peer"],
            exposure_pearson=scores["exposure"]["pearson"],
            exposure_spearman=scores["exposure"]["spearman"],
            true_average_direct_effect=scores["true_average_direct"],
            true_average_peer_effect=scores["true_average_peer"],
        )
    if args.effects_out is not None:
        result["effects_out"] = str(write_effects(args.effects_out, effects))
    return result
