"""Tool ``parallel_decode``: Learn2PD decoding of a small masked-diffusion LM, one strategy vs one token per pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from embodia.agents.tools.registry import InputPath, Progress, no_progress, tool


@dataclass
class ParallelDecodeArgs:
    """Arguments of ``parallel_decode``."""

    task: Literal["copy", "reverse", "sort", "shuffle"] = "shuffle"
    """Task the model answers (ignored with ``model``, which knows its task)."""
    n: Annotated[int, Field(ge=1, le=500)] = 100
    """Held-out prompts to decode."""
    strategy: Literal["threshold", "filter", "filter+eotp"] = "filter+eotp"
    """Parallel strategy compared with one token per forward pass."""
    threshold: Annotated[float, Field(ge=0.0, le=1.5)] = 0.9
    """Confidence threshold tau (``threshold``) or filter acceptance rho (``filter`` strategies)."""
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    """Seed of the prompts (and of the on-the-fly model)."""
    model: InputPath | None = None
    """Folder written by ``scripts/learn2pd_experiment.py --save`` (LM + filter); without it a tiny model is
    trained on the fly (a few seconds, so it answers poorly)."""
    train_steps: Annotated[int, Field(ge=10, le=300)] = 150
    """LM training steps of the on-the-fly model."""


@tool("parallel_decode")
def parallel_decode(args: ParallelDecodeArgs, progress: Progress = no_progress) -> dict:
    """Learn2PD: decode prompts of a masked-diffusion LM one token per forward pass and with a parallel
    strategy (confidence threshold, learned acceptance filter, filter + End-of-Text Prediction); report
    accuracy, mean forward passes and the speed-up in forward passes."""
    import torch

    from embodia.agents.methods.learn2pd.pipeline import build, compare, load

    torch.set_num_threads(1)
    if args.model is not None:
        trained = load(args.model)
    else:
        trained = build(
            args.task, args.train_steps, args.seed, trace_prompts=128, log=lambda d, t, m: progress(d, t, m)
        )
    task = trained.model.config.task
    rows = compare(
        trained, task, args.n, args.seed, thresholds=(args.threshold,), filter_thresholds=(args.threshold,)
    )
    base = rows[0]
    chosen = next(r for r in rows[1:] if r["strategy"].split(" ")[0] == args.strategy)
    return {
        "task": task,
        "strategy": args.strategy,
        "threshold": args.threshold,
        "n": args.n,
        "accuracy": chosen["accuracy"],
        "forward_passes": chosen["passes"],
        "one_token_accuracy": base["accuracy"],
        "one_token_forward_passes": base["passes"],
        "speedup": chosen["speedup"],
    }
