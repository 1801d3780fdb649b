"""Flow-of-ranks on a patch time-series transformer trained here: spectra, rank vs depth, and low-rank
compression with depth-increasing vs uniform rank schedules at several parameter budgets.

Synthetic series (seasonal, trend, AR, random walk, square wave); MASE against the seasonal naive scale
(lag 24). Latency: median forward time of a batch of 256 series; the ratio compressed / dense is the median over
interleaved rounds in the same process.

Memory, per model: ``weight_bytes`` = bytes of all parameters and buffers (``numel * element_size``, exact;
float32, so 4 x parameters); ``peak_inference_bytes`` = peak CPU memory allocated by one forward pass of the
same 256-series batch under ``torch.no_grad()`` (``inference_memory`` in ``flow_of_ranks/model.py``: torch
profiler with ``profile_memory=True``, the running sum of the pass's allocations and frees in time order,
maximum). It counts activations, temporaries and the output, not the weights or the input batch, and is what
torch's allocator was asked for (not RSS: no allocator caching); it is deterministic, two runs give the same
bytes. A fine-tuned model has the shapes, hence the memory, of the compressed one.

    .venv/bin/python scripts/flow_of_ranks_experiment.py                 # ~2 min on one core
    .venv/bin/python scripts/flow_of_ranks_experiment.py --quick         # seconds (tests)
    .venv/bin/python scripts/flow_of_ranks_experiment.py --save runs/agents/flow_of_ranks_model

Writes the results file ``results/methods/flow_of_ranks.json`` (tables ``setup``: the seasonal-naive MASE and
the patch embedding's effective rank, ``ranks``: effective rank per block, ``compression``: one row per
model; a ``--quick`` run writes under ``runs/quick-results/``, ``--results PATH`` elsewhere) and the raw
numbers (ranks of every replaced layer, seconds) to ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time

import torch

from embodia.agents.methods.flow_of_ranks.compress import SCHEDULES, compress_transformer
from embodia.agents.methods.flow_of_ranks.model import (
    ForecasterConfig,
    evaluate,
    inference_memory,
    latency,
    make_series,
    mase,
    profile_modules,
    save_forecaster,
    seasonal_naive,
    split,
    train_forecaster,
    weight_bytes,
)
from embodia.agents.methods.flow_of_ranks.spectra import depth_profile, effective_rank, singular_values
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, write_results


def plot(profile: list[dict[str, float]], embed_rank: float, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    depth = list(range(1, len(profile) + 1))
    ax.plot([0], [embed_rank], "ks", label="patch embedding")
    for key, style in (("hidden", "k-o"), ("q", "C0-^"), ("k", "C1-v"), ("v", "C2-d")):
        ax.plot(
            depth,
            [p[key] for p in profile],
            style,
            label=key if key != "hidden" else "hidden state (block input)",
        )
    ax.set_xlabel("depth (0 = embedding, d = block d)")
    ax.set_ylabel("effective rank on calibration series")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def paired_latency(
    dense: torch.nn.Module, small: torch.nn.Module, batch: torch.Tensor, rounds: int = 9
) -> tuple[float, float]:
    """Median seconds of ``small`` and median ratio small / dense over interleaved rounds (load drifts cancel)."""
    times, ratios = [], []
    for _ in range(rounds):
        d, s = latency(dense, batch, 10), latency(small, batch, 10)
        times.append(s)
        ratios.append(s / d)
    return sorted(times)[rounds // 2], sorted(ratios)[rounds // 2]


def result_tables(
    rows: list[dict], profile: list[dict], naive: float, embed_rank: float, n: int, width: int
) -> dict[str, Table]:
    """The three tables of the results file: setup, rank per block, one row per compressed model."""
    setup = Table(
        [
            Column("series", "held-out series"),
            Column("naive_mase", "seasonal naive MASE", ".3f"),
            Column("embedding_rank", "patch-embedding effective rank", ".1f"),
            Column("width", "model width d"),
        ]
    )
    setup.add(series=n, naive_mase=naive, embedding_rank=embed_rank, width=width)
    ranks = Table(
        [
            Column("block", "block"),
            Column("hidden", "hidden (block input)", ".1f"),
            *(Column(k, k.upper(), ".1f") for k in ("q", "k", "v")),
        ]
    )
    for block, p in enumerate(profile):
        ranks.add(block=block, **{k: p[k] for k in ("hidden", "q", "k", "v")})
    dense = rows[0]
    compression = Table(
        [
            Column("model", "model"),
            Column("budget", "kept of in-block weights", ".0%"),
            Column("params", "parameters"),
            Column("params_fewer", "fewer parameters", ".0%"),
            Column("mase", "MASE", ".3f"),
            Column("mase_change", "MASE vs dense", "+.1%"),
            Column("latency_ratio", "latency (× dense)", ".2f"),
            Column("weights_kib", "weights KiB", ".1f"),
            Column("weights_less", "weights: less", ".0%"),
            Column("peak_kib", "peak inference KiB", ".1f"),
            Column("peak_less", "peak inference: less", ".0%"),
        ]
    )
    for r in rows:
        compression.add(
            model=r["schedule"] + (" + fine-tune" if r["finetuned"] else ""),
            budget=r["budget"],
            params=r["params"],
            params_fewer=1 - r["params"] / dense["params"],
            mase=r["mase"],
            mase_change=r["mase"] / dense["mase"] - 1,
            latency_ratio=r["latency_ratio"],
            weights_kib=r["weight_bytes"] / 1024,
            weights_less=1 - r["weight_bytes"] / dense["weight_bytes"],
            peak_kib=r["peak_inference_bytes"] / 1024,
            peak_less=1 - r["peak_inference_bytes"] / dense["peak_inference_bytes"],
        )
    return {"setup": setup, "ranks": ranks, "compression": compression}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--steps", type=int, default=3000, help="training steps")
    parser.add_argument(
        "--finetune", type=int, default=300, help="fine-tuning steps after compression (0: none)"
    )
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.5, 0.35, 0.25])
    parser.add_argument(
        "--schedules", nargs="+", choices=SCHEDULES, default=["uniform", "increasing", "measured"]
    )
    parser.add_argument("--eval", type=int, default=1024, help="held-out series")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", default=None, help="folder for the dense model")
    parser.add_argument("--plot", default="runs/agents/flow_of_ranks.png")
    parser.add_argument("--out", default="runs/agents/flow_of_ranks.json", help="raw numbers (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/flow_of_ranks.json)"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config, steps, finetune, budgets, n = (
        ForecasterConfig(),
        args.steps,
        args.finetune,
        args.budgets,
        args.eval,
    )
    if args.quick:
        config = ForecasterConfig(d_model=32, mlp=64, layers=2)
        steps, finetune, budgets, n = 100, 20, budgets[:1], 128
        args.schedules = args.schedules[:2]
    start = time.perf_counter()
    with progress_bar("flow-of-ranks forecaster", not args.quiet) as update:
        model = train_forecaster(config, steps, args.seed, log=update)
    train_s = time.perf_counter() - start
    if args.save:
        save_forecaster(model, args.save)
    g = torch.Generator().manual_seed(777 + args.seed)
    calib = split(make_series(256, config.context + config.horizon, g), config)[0]
    test = make_series(n, config.context + config.horizon, g)
    ctx, tgt = split(test, config)
    naive = mase(seasonal_naive(ctx, config.horizon, config.season), tgt, ctx, config.season)
    profile = depth_profile(model, calib, profile_modules(config))
    embed_rank = effective_rank(
        singular_values(model.embed(calib.unfold(1, config.patch, config.patch)).detach())
    )
    plot(profile, embed_rank, args.plot, f"rank vs depth, d={config.d_model}, {config.layers} blocks")
    batch = ctx[:256]
    dense_mase, dense_lat = evaluate(model, test, config), latency(model, batch)
    rows = [
        {
            "schedule": "dense",
            "budget": 1.0,
            "finetuned": False,
            "params": sum(p.numel() for p in model.parameters()),
            "mase": dense_mase,
            "latency_s": dense_lat,
            "latency_ratio": 1.0,
            "weight_bytes": weight_bytes(model),
            "peak_inference_bytes": inference_memory(model, batch),
            "ranks": {},
        }
    ]
    for budget in budgets:
        for schedule in args.schedules:
            small, rep = compress_transformer(model, calib, schedule, budget, activation_aware=True)
            row = {
                "schedule": schedule,
                "budget": budget,
                "params": rep.params_after,
                "weight_bytes": weight_bytes(small),
                "peak_inference_bytes": inference_memory(small, batch),
                "ranks": rep.ranks,
            }
            lat, ratio = paired_latency(model, small, batch, 3 if args.quick else 9)
            rows.append(
                {
                    **row,
                    "finetuned": False,
                    "mase": evaluate(small, test, config),
                    "latency_s": lat,
                    "latency_ratio": ratio,
                }
            )
            if finetune:
                tuned = train_forecaster(config, finetune, args.seed + 1, lr=3e-4, model=copy.deepcopy(small))
                rows.append(
                    {
                        **row,
                        "finetuned": True,
                        "mase": evaluate(tuned, test, config),
                        "latency_s": lat,
                        "latency_ratio": ratio,
                    }
                )
    tables = result_tables(rows, profile, naive, embed_rank, n, config.d_model)
    print(
        f"{steps} steps ({train_s:.0f} s), {n} held-out series, seasonal naive MASE {naive:.3f}, "
        f"patch-embedding effective rank {embed_rank:.1f} of {config.d_model}"
    )
    print(tables["ranks"].markdown())
    print(tables["compression"].markdown())
    raw = {
        "config": config.__dict__,
        "steps": steps,
        "finetune": finetune,
        "train_s": train_s,
        "seasonal_naive_mase": naive,
        "embedding_effective_rank": embed_rank,
        "rank_profile": profile,
        "rows": rows,
    }
    save_json(args.out, raw)
    written = write_results(
        args.results or default_results_path("methods/flow_of_ranks", quick=args.quick),
        tables,
        title="Flow-of-ranks: effective rank per block and low-rank compression of a patch forecaster",
        seeds=[args.seed],
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
