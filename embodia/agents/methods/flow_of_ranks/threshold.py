"""Post-hoc compression as the authors compare it: truncated SVD of the attention projections, the rank of
each matrix chosen by a relative singular-value threshold.

From ``amazon-science/TSFM-Compression`` (``evaluation-scripts/evaluate.py`` and
``comparison/compress_chronos.py``, ``low_rank_approximation`` / ``apply_svd_to_t5_attention``): for every
attention module's ``q``, ``k``, ``v`` and ``o`` weight ``W = U diag(s) V^T`` (SVD in float32),

    r = #{ i : s_i / s_1 >= epsilon }

and ``W`` is replaced by ``U_r diag(s_r) V_r^T``; MLPs, embeddings and heads are untouched. The authors
sweep ``epsilon`` over 0, 1e-3, 10^-2.5, 1e-2, 10^-1.5, 1e-1, 10^-0.75, 10^-0.5 (their README's example
evaluation uses 0.01). They write the truncated product back into the dense weight (it measures accuracy
against rank, not speed); here a matrix whose rank-r factors ``(U_r sqrt s_r)(sqrt s_r V_r^T)`` are
smaller than ``W`` becomes a :class:`~.factorize.LowRankLinear` (the same product), so that latency and
memory can be measured too, and one whose factors would not be smaller keeps the truncated dense weight.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from embodia.agents.methods.flow_of_ranks.compress import _set, count_params, find_targets
from embodia.agents.methods.flow_of_ranks.factorize import factorize_linear, lowrank_params

#: the attention projections of embodia's forecaster (``layers.3.attn.q``) and of T5 (``SelfAttention.q``)
ATTENTION = (r"attn\.(q|k|v|o)$", r"Attention\.(q|k|v|o)$")
#: the authors' sweep (``comparison/compress_chronos.py``), without 0 (no truncation)
AUTHORS_EPSILONS = (1e-3, 10**-2.5, 1e-2, 10**-1.5, 1e-1, 10**-0.75, 10**-0.5)


def threshold_rank(s: torch.Tensor, epsilon: float) -> int:
    """``#{i : s_i / s_1 >= epsilon}`` for descending singular values ``s`` (0 for a zero matrix)."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    if s.numel() == 0 or float(s[0]) == 0.0:
        return 0
    return int((s / s[0] >= epsilon).sum())


@dataclass
class ThresholdCompression:
    """What :func:`truncate_attention` did."""

    epsilon: float
    ranks: dict[str, int]
    full_ranks: dict[str, int]
    params_before: int
    params_after: int
    attention_params_before: int
    attention_params_after: int


def truncate_attention(
    model: nn.Module,
    epsilon: float,
    patterns: tuple[str, ...] = ATTENTION,
    factorize: bool = True,
    inplace: bool = False,
) -> tuple[nn.Module, ThresholdCompression]:
    """Truncate every attention projection of ``model`` (a copy unless ``inplace``) at its threshold rank.

    ``factorize``: a matrix whose rank-r factors are smaller becomes a ``LowRankLinear``; otherwise (and
    always when False, as in the authors' scripts) the weight is overwritten by its truncated product.
    ``attention_params_after`` counts the factors where factorised, the dense weight elsewhere.
    """
    targets = find_targets(model, patterns, min_features=1)
    if not targets:
        raise ValueError("no attention projections (q/k/v/o) inside numbered blocks found")
    before = count_params(model)
    out = model if inplace else copy.deepcopy(model)
    ranks, full, spent = {}, {}, 0
    for t in targets:
        linear = out.get_submodule(t.name)
        w = linear.weight.detach().to(torch.float32)
        u, s, vh = torch.linalg.svd(w, full_matrices=False)
        r = threshold_rank(s, epsilon)
        ranks[t.name], full[t.name] = r, t.full_rank
        if r >= t.full_rank:
            spent += t.dense
        elif factorize and r >= 1 and lowrank_params(t.in_features, t.out_features, r) < t.dense:
            _set(out, t.name, factorize_linear(linear, r))
            spent += lowrank_params(t.in_features, t.out_features, r)
        else:
            with torch.no_grad():
                linear.weight.copy_(((u[:, :r] * s[:r]) @ vh[:r]).to(linear.weight.dtype))
            spent += t.dense
    return out, ThresholdCompression(
        epsilon=epsilon,
        ranks=ranks,
        full_ranks=full,
        params_before=before,
        params_after=count_params(out),
        attention_params_before=sum(t.dense for t in targets),
        attention_params_after=spent,
    )
