"""Tool ``compress_transformer``: flow-of-ranks post-hoc low-rank compression of a small time-series transformer
(the authors' per-matrix threshold on the attention projections, or embodia's own schedule variant)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from embodia.agents.tools.registry import InputPath, Progress, no_progress, tool


@dataclass
class CompressTransformerArgs:
    """Arguments of ``compress_transformer``."""

    method: Literal["threshold", "schedule"] = "threshold"
    """``threshold``: the authors' post-hoc comparison, each attention projection (Q/K/V/O) truncated to the
    singular values with ``s_i / s_1 >= epsilon``. ``schedule``: embodia's own variant (not the paper's):
    every in-block linear, MLPs too, at ranks from ``schedule`` under ``budget``, activation-aware by
    default."""
    epsilon: Annotated[float, Field(ge=0.0, le=1.0)] = 0.01
    """``threshold`` only: relative singular-value threshold (the authors' README example: 0.01)."""
    schedule: Literal["increasing", "uniform", "measured"] = "increasing"
    """``schedule`` only (embodia's variant): ranks growing with depth, the same fraction of full rank
    everywhere, or weighted by the effective rank each layer's input has on the calibration series."""
    budget: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    """``schedule`` only (embodia's variant): fraction of the in-block linear weight parameters kept."""
    activation_aware: bool = True
    """``schedule`` only (embodia's variant): truncate the SVD of each weight scaled by its calibration
    inputs instead of the plain SVD."""
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
    """Flow-of-ranks post-hoc compression of a patch forecaster: by default the authors' comparison (each
    attention projection truncated at a relative singular-value threshold ``epsilon``), or embodia's own
    variant (``method: schedule``: every in-block linear at ranks from a schedule under a parameter budget).
    Reports parameters, ranks, the effective rank of every compressed layer's input on calibration series,
    and MASE (vs seasonal naive) before and after."""
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
    from embodia.agents.methods.flow_of_ranks.spectra import analyse
    from embodia.agents.methods.flow_of_ranks.threshold import truncate_attention

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
    if args.method == "threshold":
        small, rep = truncate_attention(model, args.epsilon)
        analysis = analyse(model, calib, list(rep.ranks))
        settings = {"method": "threshold", "epsilon": args.epsilon}
        compressible = (rep.attention_params_before, rep.attention_params_after)
    else:
        small, rep = compress(
            model, calib, args.schedule, args.budget, activation_aware=args.activation_aware
        )
        analysis = rep.analysis
        settings = {
            "method": "schedule (embodia's variant)",
            "schedule": args.schedule,
            "budget": args.budget,
        }
        compressible = (rep.target_params_before, rep.target_params_after)
    ctx, tgt = split(test, config)
    return {
        **settings,
        "params_before": rep.params_before,
        "params_after": rep.params_after,
        "compressible_params_before": compressible[0],
        "compressible_params_after": compressible[1],
        "mase_before": evaluate(model, test, config),
        "mase_after": evaluate(small, test, config),
        "mase_seasonal_naive": mase(
            seasonal_naive(ctx, config.horizon, config.season), tgt, ctx, config.season
        ),
        "ranks": rep.ranks,
        "input_effective_ranks": {k: round(v["input"]["effective_rank"], 2) for k, v in analysis.items()},
    }
