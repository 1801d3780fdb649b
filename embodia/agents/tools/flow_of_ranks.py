"""Tool ``compress_transformer``: flow-of-ranks low-rank compression of a small time-series transformer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from embodia.agents.tools.registry import InputPath, Progress, no_progress, tool


@dataclass
class CompressTransformerArgs:
    """Arguments of ``compress_transformer``."""

    schedule: Literal["increasing", "uniform", "measured"] = "increasing"
    """Rank schedule: growing with depth, the same fraction of full rank everywhere, or weighted by the
    effective rank each layer's input has on the calibration series."""
    budget: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    """Fraction of the compressible (in-block linear) weight parameters kept."""
    activation_aware: bool = True
    """Truncate the SVD of each weight scaled by its calibration inputs instead of the plain SVD."""
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    """Seed of the synthetic series (and of the on-the-fly model)."""
    model: InputPath | None = None
    """Folder written by ``scripts/flow_of_ranks_experiment.py --save`` (``config.json`` +
    ``model.safetensors``); without it a tiny forecaster is trained on the fly (seconds, so it is weak)."""
    train_steps: Annotated[int, Field(ge=20, le=1000)] = 150
    """Training steps of the on-the-fly model."""
    eval_series: Annotated[int, Field(ge=16, le=2048)] = 256
    """Held-out synthetic series for MASE (half as many serve as calibration data)."""


@tool("compress_transformer")
def compress_transformer(args: CompressTransformerArgs, progress: Progress = no_progress) -> dict:
    """Flow-of-ranks: measure the effective rank of every attention / MLP projection's input on calibration
    series, replace the projections by truncated-SVD low-rank factorisations at ranks from a schedule under a
    parameter budget, and report parameters, ranks and MASE (vs seasonal naive) before and after."""
    import torch

    from embodia.agents.methods.flow_of_ranks.compress import compress_transformer as compress
    from embodia.agents.methods.flow_of_ranks.model import (
        ForecasterConfig,
        evaluate,
        load_forecaster,
        make_series,
        mase,
        seasonal_naive,
        split,
        train_forecaster,
    )

    torch.set_num_threads(1)
    if args.model is not None:
        model = load_forecaster(args.model)
    else:
        config = ForecasterConfig(d_model=32, mlp=64, layers=2)
        model = train_forecaster(config, args.train_steps, args.seed, log=lambda d, t, m: progress(d, t, m))
    config = model.config
    g = torch.Generator().manual_seed(1_000_000 + args.seed)
    calib = split(make_series(max(args.eval_series // 2, 8), config.context + config.horizon, g), config)[0]
    test = make_series(args.eval_series, config.context + config.horizon, g)
    small, report = compress(model, calib, args.schedule, args.budget, activation_aware=args.activation_aware)
    ctx, tgt = split(test, config)
    return {
        "schedule": args.schedule,
        "budget": args.budget,
        "params_before": report.params_before,
        "params_after": report.params_after,
        "compressible_params_before": report.target_params_before,
        "compressible_params_after": report.target_params_after,
        "mase_before": evaluate(model, test, config),
        "mase_after": evaluate(small, test, config),
        "mase_seasonal_naive": mase(
            seasonal_naive(ctx, config.horizon, config.season), tgt, ctx, config.season
        ),
        "ranks": report.ranks,
        "input_effective_ranks": {
            k: round(v["input"]["effective_rank"], 2) for k, v in report.analysis.items()
        },
    }
