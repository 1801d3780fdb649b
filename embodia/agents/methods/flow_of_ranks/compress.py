"""``compress_transformer``: embodia's own post-hoc variant, not the paper's protocol. It replaces every
linear layer inside the blocks (attention and MLP) by a low-rank factorisation, activation-aware on request,
at ranks from a schedule under one parameter budget. The authors' post-hoc comparison is
:func:`~.threshold.truncate_attention` (attention projections only, a per-matrix singular-value threshold),
and their compressed models are pretrained with depth-increasing widths (:mod:`.pretrain`).

Targets: every ``nn.Linear`` inside a numbered block (``layers.3.attn.q``, ``encoder.layer.0.attention.self
.query``, ...), optionally filtered by name patterns; its depth is the block number. A schedule gives each
target a relative weight g_i; its rank is ``r_i = clip(floor(c g_i r_full_i), 1, r_full_i)`` with the one
scale c (found by bisection, remainders filled greedily) that keeps ``budget`` of the targets' weight parameters, where a rank whose
factorisation would not save parameters keeps the layer dense.

- ``uniform``: g_i = 1 (every layer the same fraction of its full rank);
- ``increasing``: g_i = 1 + slope (2 d / (D - 1) - 1), from 1 - slope at the first block to 1 + slope at the
  last (flow-of-ranks: nonlinear mixing raises the rank with depth);
- ``measured``: g_i = effective rank of the layer's input on the calibration data / its dimension;
- a list of ints: the rank of every target in block d is ``schedule[d]`` (no budget fitting).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from embodia.agents.methods.flow_of_ranks.factorize import factorize_linear, lowrank_params
from embodia.agents.methods.flow_of_ranks.spectra import analyse, capture_inputs

SCHEDULES = ("increasing", "uniform", "measured")
_DEPTH = re.compile(r"(?:^|\.)(\d+)(?:\.|$)")


@dataclass
class Target:
    """One compressible linear layer."""

    name: str
    depth: int
    in_features: int
    out_features: int

    @property
    def dense(self) -> int:
        return self.in_features * self.out_features

    @property
    def full_rank(self) -> int:
        return min(self.in_features, self.out_features)

    def cost(self, rank: int) -> int:
        """Weight parameters at ``rank`` (dense when factorising would not save any)."""
        return min(self.dense, lowrank_params(self.in_features, self.out_features, rank))


@dataclass
class Compression:
    """What :func:`compress_transformer` did."""

    schedule: str
    budget: float
    ranks: dict[str, int]
    params_before: int
    params_after: int
    target_params_before: int
    target_params_after: int
    analysis: dict[str, dict] = field(default_factory=dict)


def find_targets(
    model: nn.Module, patterns: tuple[str, ...] | None = None, min_features: int = 8
) -> list[Target]:
    """Linear layers inside numbered blocks whose name matches one of ``patterns`` (regexes; all if None)."""
    out = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear) or min(module.in_features, module.out_features) < min_features:
            continue
        m = _DEPTH.search(name)
        if m is None or (patterns and not any(re.search(p, name) for p in patterns)):
            continue
        out.append(Target(name, int(m.group(1)), module.in_features, module.out_features))
    return out


def _real_ranks(targets: list[Target], weights: list[float], scale: float) -> list[float]:
    return [
        min(float(t.full_rank), max(1.0, scale * g * t.full_rank))
        for t, g in zip(targets, weights, strict=True)
    ]


def fit_ranks(targets: list[Target], weights: list[float], budget: float) -> list[int]:
    """Ranks ``floor(c g_i r_full_i)`` (clipped to [1, r_full]) with the largest c keeping at most ``budget``
    of the targets' weight parameters, then one greedy pass adding 1 to the largest remainders (deeper first
    on ties) while the budget allows."""
    if not 0.0 < budget <= 1.0:
        raise ValueError(f"budget must be in (0, 1], got {budget}")
    goal = budget * sum(t.dense for t in targets)

    def spent(ranks: list[int]) -> int:
        return sum(t.cost(r) for t, r in zip(targets, ranks, strict=True))

    lo, hi = 0.0, 4.0 / max(min(weights), 1e-6)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (
            (mid, hi) if spent([int(r) for r in _real_ranks(targets, weights, mid)]) <= goal else (lo, mid)
        )
    real = _real_ranks(targets, weights, lo)
    ranks = [int(r) for r in real]
    total = spent(ranks)
    order = sorted(range(len(targets)), key=lambda i: (real[i] - ranks[i], targets[i].depth), reverse=True)
    for i in order:
        if ranks[i] < targets[i].full_rank:
            extra = targets[i].cost(ranks[i] + 1) - targets[i].cost(ranks[i])
            if total + extra <= goal:
                ranks[i] += 1
                total += extra
    return ranks


def schedule_weights(
    targets: list[Target], schedule: str, slope: float = 0.6, analysis: dict[str, dict] | None = None
) -> list[float]:
    """Relative weights g_i of a named schedule (see the module docstring)."""
    if schedule == "uniform":
        return [1.0] * len(targets)
    if schedule == "increasing":
        depths = sorted({t.depth for t in targets})
        last = max(len(depths) - 1, 1)
        pos = {d: i / last for i, d in enumerate(depths)}
        return [1.0 + slope * (2 * pos[t.depth] - 1) for t in targets]
    if schedule == "measured":
        if not analysis:
            raise ValueError("schedule 'measured' needs calibration_data")
        return [max(analysis[t.name]["input"]["effective_rank"] / t.in_features, 1e-3) for t in targets]
    raise ValueError(
        f"unknown schedule {schedule!r}; expected one of {SCHEDULES} or a list of ranks per block"
    )


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def compress_transformer(
    model: nn.Module,
    calibration_data: Any = None,
    schedule: str | list[int] = "increasing",
    budget: float = 0.5,
    patterns: tuple[str, ...] | None = None,
    slope: float = 0.6,
    activation_aware: bool = False,
    inplace: bool = False,
) -> tuple[nn.Module, Compression]:
    """Compress ``model`` (a plain torch or Hugging Face transformer; a copy unless ``inplace``).

        ``calibration_data``: inputs of one forward pass (a tensor, a tuple of tensors, or a mapping of keyword
        inputs); with it the report holds the spectra of every target's weight and input. ``budget``: fraction
        of the targets' weight parameters kept. ``activation_aware``: truncate the SVD of each weight scaled by
    its calibration inputs (needs ``calibration_data``) instead of the plain SVD. Returns the compressed model and a :class:`Compression`.
    """
    targets = find_targets(model, patterns)
    if not targets:
        raise ValueError("no linear layers inside numbered blocks found to compress")
    before = count_params(model)
    was_training = model.training
    model.eval()
    names = [t.name for t in targets]
    analysis = analyse(model, calibration_data, names) if calibration_data is not None else {}
    if activation_aware and calibration_data is None:
        raise ValueError("activation_aware needs calibration_data")
    inputs = capture_inputs(model, calibration_data, names) if activation_aware else {}
    model.train(was_training)
    if isinstance(schedule, str):
        ranks = fit_ranks(targets, schedule_weights(targets, schedule, slope, analysis), budget)
        label = schedule
    else:
        depths = sorted({t.depth for t in targets})
        if len(schedule) != len(depths):
            raise ValueError(f"a rank list needs one rank per block ({len(depths)}), got {len(schedule)}")
        per = dict(zip(depths, schedule, strict=True))
        ranks = [max(1, min(t.full_rank, int(per[t.depth]))) for t in targets]
        label = "list"
    out = model if inplace else copy.deepcopy(model)
    kept = {}
    for t, r in zip(targets, ranks, strict=True):
        if lowrank_params(t.in_features, t.out_features, r) < t.dense:
            _set(out, t.name, factorize_linear(out.get_submodule(t.name), r, inputs.get(t.name)))
            kept[t.name] = r
        else:
            kept[t.name] = t.full_rank
    dense = sum(t.dense for t in targets)
    return out, Compression(
        schedule=label,
        budget=budget,
        ranks=kept,
        params_before=before,
        params_after=count_params(out),
        target_params_before=dense,
        target_params_after=sum(t.cost(kept[t.name]) for t in targets),
        analysis=analysis,
    )
