"""The paper's protocol: pretrain a model whose attention inner width per head grows with depth.

Flow-of-ranks says the rank of the representation grows with depth, so a model pretrained from scratch
can give its early attention layers fewer Q/K/V dimensions than its late ones. The authors' T5 variant
(``amazon-science/TSFM-Compression``, ``T5-variants/modeling_t5_dense_flowofranks.py``, ``T5Attention.__init__``)
sets, for the self-attention of block ``l`` (0-based; ``effective_k = l + 1``),

    n_heads(l) = nearest_power_of_two(base_n_heads * (l + 1) ** alpha, base_n_heads)
    d_kv(l)    = nearest_power_of_two(base_tilde_d * (l + 1) ** beta, d_model // n_heads(l))

with ``nearest_power_of_two(x, xmax) = min(max(2 ** int(round(log2 x)), 1), xmax)``: the power of two
nearest in log scale (Python's ``round``, halves to even), at least 1, capped at the dense head width.
Q, K and V are ``d_model -> n_heads * d_kv`` and O maps back; the MLP keeps its width. Their Chronos
configurations (``configs/chronos-t5-*.yaml``) keep ``alpha = 0`` (the default, so ``n_heads`` is constant)
and use ``(base_tilde_d, beta)`` = (7, 0.40), (5, 0.35), (3, 0.27) for 25 %, 15 % and 7.5 %.
(In their cross-attention ``effective_k = encoder_layers + l + 1``; the forecaster here is encoder-only.)

The comparison this module serves (``scripts/flow_of_ranks_experiment.py``): the power-law model against a
dense one and against a uniform-width one with the same number of attention parameters.
"""

from __future__ import annotations

import math


def nearest_power_of_two(x: float, xmax: float) -> int:
    """``min(max(2 ** round(log2 x), 1), xmax)`` (the authors' rounding: nearest power of two in log scale)."""
    if x <= 0:
        raise ValueError(f"x must be positive, got {x}")
    return int(min(max(2 ** int(round(math.log2(x))), 1), xmax))


def depth_power_law(layers: int, base: float, beta: float, cap: int) -> tuple[int, ...]:
    """Per-head Q/K/V widths ``d_kv(l) = nearest_power_of_two(base (l + 1) ** beta, cap)``, l = 0 .. layers-1."""
    if layers < 1:
        raise ValueError(f"layers must be >= 1, got {layers}")
    return tuple(nearest_power_of_two(base * (layer + 1) ** beta, cap) for layer in range(layers))


def attention_params(d_model: int, heads: int, kv_dims: tuple[int, ...], bias: bool = True) -> int:
    """Parameters of the Q/K/V/O projections of blocks with per-head widths ``kv_dims``."""
    total = 0
    for kv in kv_dims:
        inner = heads * kv
        total += 4 * d_model * inner + (3 * inner + d_model if bias else 0)
    return total


def uniform_widths(kv_dims: tuple[int, ...]) -> tuple[int, ...]:
    """One width for every block with the same total as ``kv_dims`` (hence the same attention parameters);
    refuses a total that does not divide evenly rather than compare models of different size."""
    total, layers = sum(kv_dims), len(kv_dims)
    if total % layers:
        raise ValueError(
            f"widths {kv_dims} sum to {total}, not a multiple of {layers}: no uniform model has the same size"
        )
    return (total // layers,) * layers
