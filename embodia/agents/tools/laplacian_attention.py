"""Tool ``laplacian_attention_check``: LaplacianFormer attention's error against the exact kernel, and its
time against torch's ``scaled_dot_product_attention``, at one size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from embodia.agents.tools.registry import Progress, no_progress, tool


@dataclass
class LaplacianAttentionCheckArgs:
    """Arguments of ``laplacian_attention_check``."""

    tokens: Annotated[int, Field(ge=2, le=8192)] = 1024
    """Sequence length N (capped at 8192: the exact reference and softmax attention hold an N x N matrix)."""
    dim: Annotated[int, Field(ge=1, le=256)] = 64
    """Feature dimension of queries, keys and values (one head, batch 1)."""
    landmarks: Annotated[int, Field(ge=1, le=1024)] = 64
    """Number m of Nystrom landmarks (average-pooled segments of queries and keys)."""
    iterations: Annotated[int, Field(ge=0, le=50)] = 6
    """Newton-Schulz iterations for the landmark matrix inverse."""
    lam: Annotated[float, Field(gt=0, le=1000)] = 4.0
    """Kernel width lambda in exp(-||q - k||_1 / lambda)."""
    ridge: Annotated[float, Field(ge=0, le=10)] = 0.01
    """Ridge added to the landmark matrix before the Newton-Schulz inverse (the authors': 0.01)."""
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    """Seed of the random queries, keys and values."""


@tool("laplacian_attention_check")
def laplacian_attention_check(args: LaplacianAttentionCheckArgs, progress: Progress = no_progress) -> dict:
    """LaplacianFormer attention check at one size: relative error (Frobenius) of the Nystrom + Newton-Schulz
    output (row-normalised, so that it approximates kernel smoothing) against the exact Laplacian-kernel
    attention, and the median forward time of it, of the exact kernel and of torch's softmax
    ``scaled_dot_product_attention`` (random inputs, one head, CPU or whatever torch runs on). The error is
    null where the iteration overflowed (the authors' start can diverge after many iterations when W is not
    symmetric; see the LaplacianFormer page)."""
    import statistics
    import time

    import torch
    import torch.nn.functional as F

    from embodia.nn.laplacian_attention import laplacian_attention, laplacian_attention_exact

    gen = torch.Generator().manual_seed(args.seed)
    shape = (1, 1, args.tokens, args.dim)
    q, k, v = (torch.randn(shape, generator=gen) * args.dim**-0.5 for _ in range(3))
    fns = {
        "laplacian": lambda: laplacian_attention(
            q, k, v, args.landmarks, args.iterations, args.lam, ridge=args.ridge, normalization="rows"
        ),
        "exact_kernel": lambda: laplacian_attention_exact(q, k, v, args.lam),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v),
    }
    times: dict[str, list[float]] = {name: [] for name in fns}
    outputs = {}
    with torch.no_grad():
        for rep in range(3):
            for name, fn in fns.items():
                start = time.perf_counter()
                outputs[name] = fn()
                times[name].append(time.perf_counter() - start)
            progress(rep + 1, 3, "timing")
    approx, exact = outputs["laplacian"], outputs["exact_kernel"]
    seconds = {name: statistics.median(t) for name, t in times.items()}
    return {
        "tokens": args.tokens,
        "dim": args.dim,
        "landmarks": args.landmarks,
        "iterations": args.iterations,
        "ridge": args.ridge,
        "relative_error": float((approx - exact).norm() / exact.norm()),
        "seconds": seconds,
        "speedup_vs_sdpa": seconds["sdpa"] / seconds["laplacian"],
        "speedup_vs_exact_kernel": seconds["exact_kernel"] / seconds["laplacian"],
    }
