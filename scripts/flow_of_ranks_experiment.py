"""Flow-of-ranks on a 6-block patch time-series transformer trained here: the paper's protocol (pretraining
with Q/K/V widths that grow with depth), the authors' post-hoc comparison (per-matrix singular-value
threshold on the attention projections), and embodia's own post-hoc variant.

1. Pretraining (the paper's protocol, ``flow_of_ranks/pretrain.py``): the same forecaster trained from scratch
   with per-head Q/K/V widths ``d_kv(l) = nearest_power_of_two(base (l + 1)^beta, d_model / heads)`` (the
   authors' rounding), against a dense model (``d_kv = d_model / heads`` everywhere), a uniform-width model
   with the same attention parameters, and the power law reversed (widths falling with depth, same
   parameters); same seeds, steps and data for every arm.
2. The authors' post-hoc comparison (``flow_of_ranks/threshold.py``) on the dense models: each attention
   projection truncated at ``#{i : s_i / s_1 >= epsilon}``, over the authors' epsilons.
3. embodia's own variant (``compress_transformer``): every in-block linear (MLPs too), activation-aware,
   ranks from a schedule under a parameter budget, with a short fine-tune; on the seed-0 dense model.

Synthetic series (seasonal, trend, AR, random walk, square wave); MASE against the seasonal naive scale
(lag 24), on held-out series (the same for every arm). Intervals: mean and 95 % Student-t interval over
seeds. Latency: median forward time of a batch of 256 series; the ratio against the dense model is the
median over interleaved rounds in one process (seed 0). Memory (``flow_of_ranks/model.py``, torch profiler
with ``profile_memory=True``, the running sum of the allocations and frees in time order, maximum; what the
allocator was asked for, not RSS; deterministic): ``peak inference`` = one no-grad forward of that batch;
``training activations`` = one forward of it with autograd recording (the activations saved for the
backward pass); weights = bytes of all parameters.

    .venv/bin/python scripts/flow_of_ranks_experiment.py                 # ~10 min on a loaded 2-core machine
    .venv/bin/python scripts/flow_of_ranks_experiment.py --quick         # seconds (tests)
    .venv/bin/python scripts/flow_of_ranks_experiment.py --save runs/agents/flow_of_ranks_model

Writes ``results/methods/flow_of_ranks.json`` (tables ``setup``, ``pretraining``, ``ranks``,
``threshold``, ``embodia_variant``; a ``--quick`` run writes under ``runs/quick-results/``, ``--results
PATH`` elsewhere) and the raw numbers (per seed, ranks of every truncated matrix) to ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
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
    training_memory,
    training_pool,
    weight_bytes,
)
from embodia.agents.methods.flow_of_ranks.pretrain import attention_params, depth_power_law, uniform_widths
from embodia.agents.methods.flow_of_ranks.spectra import depth_profile, effective_rank, singular_values
from embodia.agents.methods.flow_of_ranks.threshold import AUTHORS_EPSILONS, truncate_attention
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results

ARMS = ("dense", "power law", "uniform", "reversed")
ARM_LABELS = {
    "dense": "dense",
    "power law": "power law (flow-of-ranks)",
    "uniform": "uniform, same size",
    "reversed": "power law reversed, same size",
}


def mean_interval(values: list[float]) -> dict[str, float]:
    """Mean and 95 % Student-t interval of the mean (one value: a point)."""
    n, mean = len(values), sum(values) / len(values)
    if n == 1:
        return interval(mean, mean, mean)
    from scipy import stats

    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return interval(mean, mean - half, mean + half)


def plot(profile: list[dict[str, float]], embed_rank: float, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from pathlib import Path

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    depth = list(range(1, len(profile) + 1))
    ax.plot([0], [embed_rank], "ks", label="patch embedding")
    for key, style in (("hidden", "k-o"), ("q", "C0-^"), ("k", "C1-v"), ("v", "C2-d")):
        label = key if key != "hidden" else "hidden state (block input)"
        ax.plot(depth, [p[key] for p in profile], style, label=label)
    ax.set_xlabel("depth (0 = embedding, d = block d)")
    ax.set_ylabel("effective rank on calibration series")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
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


def arm_widths(arm: str, config: ForecasterConfig, base: float, beta: float) -> tuple[int, ...]:
    """Per-head Q/K/V widths of one arm of the pretraining comparison."""
    full = config.d_model // config.heads
    law = depth_power_law(config.layers, base, beta, full)
    return {
        "dense": (full,) * config.layers,
        "power law": law,
        "uniform": uniform_widths(law),
        "reversed": tuple(reversed(law)),
    }[arm]


def pretraining(args, config, seeds, steps, test, batch, update) -> tuple[list[dict], dict]:
    """Train every arm on every seed; returns per-arm summaries and the dense models by seed."""
    runs: dict[str, list[dict]] = {}
    models: dict[str, dict[int, torch.nn.Module]] = {}
    pools: dict[int, torch.Tensor] = {}  # one pool of training series per seed, shared by the arms
    for arm in args.arms:
        widths = arm_widths(arm, config, args.base, args.beta)
        arm_config = dataclasses.replace(config, kv_dims=widths)
        for seed in seeds:
            if seed not in pools:
                pools[seed] = training_pool(config, steps, seed)
            start = time.perf_counter()
            model = train_forecaster(arm_config, steps, seed, log=update, pool=pools[seed])
            seconds = time.perf_counter() - start
            models.setdefault(arm, {})[seed] = model
            runs.setdefault(arm, []).append(
                {"seed": seed, "mase": evaluate(model, test, config), "step_ms": 1000 * seconds / steps}
            )
    dense0 = models["dense"][seeds[0]]
    rows = []
    for arm in args.arms:
        widths = arm_widths(arm, config, args.base, args.beta)
        model = models[arm][seeds[0]]
        _, ratio = paired_latency(dense0, model, batch, args.rounds) if arm != "dense" else (0.0, 1.0)
        rows.append(
            {
                "arm": arm,
                "widths": list(widths),
                "params": sum(p.numel() for p in model.parameters()),
                "attention_params": attention_params(config.d_model, config.heads, widths),
                "runs": runs[arm],
                "mase_change": [
                    r["mase"] / d["mase"] - 1 for r, d in zip(runs[arm], runs["dense"], strict=True)
                ],
                "latency_ratio": ratio,
                "weight_bytes": weight_bytes(model),
                "peak_inference_bytes": inference_memory(model, batch),
                "training_activation_bytes": training_memory(model, batch),
            }
        )
    return rows, models["dense"]


def threshold_sweep(args, dense: dict[int, torch.nn.Module], config, test, batch) -> list[dict]:
    """The authors' post-hoc truncation of the attention projections of every dense model, per epsilon."""
    seeds = sorted(dense)
    base = {s: evaluate(dense[s], test, config) for s in seeds}
    rows = []
    for eps in args.epsilons:
        per_seed = []
        for s in seeds:
            small, rep = truncate_attention(dense[s], eps)
            per_seed.append((small, rep, evaluate(small, test, config)))
        small0, rep0, _ = per_seed[0]
        _, ratio = paired_latency(dense[seeds[0]], small0, batch, args.rounds)
        rows.append(
            {
                "epsilon": eps,
                "mean_rank": [sum(r.ranks.values()) / len(r.ranks) for _, r, _ in per_seed],
                "full_rank": sum(rep0.full_ranks.values()) / len(rep0.full_ranks),
                "attention_kept": [
                    r.attention_params_after / r.attention_params_before for _, r, _ in per_seed
                ],
                "params_fewer": [1 - r.params_after / r.params_before for _, r, _ in per_seed],
                "mase": [m for _, _, m in per_seed],
                "mase_change": [m / base[s] - 1 for (_, _, m), s in zip(per_seed, seeds, strict=True)],
                "latency_ratio": ratio,
                "peak_inference_bytes": inference_memory(small0, batch),
                "ranks_seed0": rep0.ranks,
            }
        )
    return rows


def embodia_variant(args, model, config, calib, test, batch, finetune: int, seed: int) -> list[dict]:
    """embodia's own post-hoc variant (all in-block linears, activation-aware, schedule + budget)."""
    rows = []
    for budget in args.budgets:
        for schedule in args.schedules:
            small, rep = compress_transformer(model, calib, schedule, budget, activation_aware=True)
            _, ratio = paired_latency(model, small, batch, args.rounds)
            row = {
                "schedule": schedule,
                "budget": budget,
                "params_fewer": 1 - rep.params_after / rep.params_before,
                "latency_ratio": ratio,
                "peak_inference_bytes": inference_memory(small, batch),
                "ranks": rep.ranks,
            }
            rows.append({**row, "finetuned": False, "mase": evaluate(small, test, config)})
            if finetune:
                tuned = train_forecaster(config, finetune, seed + 1, lr=3e-4, model=copy.deepcopy(small))
                rows.append({**row, "finetuned": True, "mase": evaluate(tuned, test, config)})
    return rows


def result_tables(raw: dict) -> dict[str, Table]:
    """The tables of the results file, from the raw numbers."""
    setup = Table(
        [
            Column("series", "held-out series"),
            Column("naive_mase", "seasonal naive MASE", ".3f"),
            Column("embedding_rank", "patch-embedding effective rank", ".1f"),
            Column("width", "model width d"),
            Column("blocks", "blocks"),
            Column("steps", "training steps"),
            Column("seeds", "seeds"),
        ]
    )
    setup.add(
        series=raw["eval_series"],
        naive_mase=raw["seasonal_naive_mase"],
        embedding_rank=raw["embedding_effective_rank"],
        width=raw["config"]["d_model"],
        blocks=raw["config"]["layers"],
        steps=raw["steps"],
        seeds=len(raw["seeds"]),
    )
    pre = Table(
        [
            Column("model", "model"),
            Column("widths", "Q/K/V width per head, by block"),
            Column("params", "parameters"),
            Column("attention_params", "attention parameters"),
            Column("mase", "MASE", ".3f"),
            Column("mase_change", "MASE vs dense", "+.1%"),
            Column("step_ms", "training ms / step", ".1f"),
            Column("latency_ratio", "inference latency (× dense)", ".2f"),
            Column("peak_kib", "peak inference KiB", ".0f"),
            Column("activation_kib", "training activations KiB", ".0f"),
            Column("activation_less", "training activations: less", ".0%"),
            Column("weights_less", "weights: less", ".0%"),
        ]
    )
    dense = raw["pretraining"][0]
    for r in raw["pretraining"]:
        pre.add(
            model=ARM_LABELS[r["arm"]],
            widths="-".join(str(w) for w in r["widths"]),
            params=r["params"],
            attention_params=r["attention_params"],
            mase=mean_interval([x["mase"] for x in r["runs"]]),
            mase_change=mean_interval(r["mase_change"]),
            step_ms=sum(x["step_ms"] for x in r["runs"]) / len(r["runs"]),
            latency_ratio=r["latency_ratio"],
            peak_kib=r["peak_inference_bytes"] / 1024,
            activation_kib=r["training_activation_bytes"] / 1024,
            activation_less=1 - r["training_activation_bytes"] / dense["training_activation_bytes"],
            weights_less=1 - r["weight_bytes"] / dense["weight_bytes"],
        )
    ranks = Table(
        [
            Column("block", "block"),
            Column("hidden", "hidden (block input)", ".1f"),
            *(Column(k, k.upper(), ".1f") for k in ("q", "k", "v")),
        ]
    )
    for block, p in enumerate(raw["rank_profile"]):
        ranks.add(block=block, **{k: p[k] for k in ("hidden", "q", "k", "v")})
    thr = Table(
        [
            Column("epsilon", "epsilon", ".4g"),
            Column("mean_rank", "mean rank of Q/K/V/O", ".1f"),
            Column("rank_kept", "rank kept (of full)", ".0%"),
            Column("attention_kept", "attention weights kept", ".0%"),
            Column("params_fewer", "fewer parameters (model)", ".0%"),
            Column("mase_change", "MASE vs dense", "+.1%"),
            Column("latency_ratio", "inference latency (× dense)", ".2f"),
            Column("peak_less", "peak inference: less", ".0%"),
        ]
    )
    dense_peak = dense["peak_inference_bytes"]
    for r in raw["threshold"]:
        thr.add(
            epsilon=r["epsilon"],
            mean_rank=sum(r["mean_rank"]) / len(r["mean_rank"]),
            rank_kept=sum(r["mean_rank"]) / len(r["mean_rank"]) / r["full_rank"],
            attention_kept=sum(r["attention_kept"]) / len(r["attention_kept"]),
            params_fewer=sum(r["params_fewer"]) / len(r["params_fewer"]),
            mase_change=mean_interval(r["mase_change"]),
            latency_ratio=r["latency_ratio"],
            peak_less=1 - r["peak_inference_bytes"] / dense_peak,
        )
    own = Table(
        [
            Column("model", "model"),
            Column("budget", "kept of in-block weights", ".0%"),
            Column("params_fewer", "fewer parameters (model)", ".0%"),
            Column("mase_change", "MASE vs dense", "+.1%"),
            Column("latency_ratio", "inference latency (× dense)", ".2f"),
            Column("peak_less", "peak inference: less", ".0%"),
        ]
    )
    dense_mase = dense["runs"][0]["mase"]
    for r in raw["embodia_variant"]:
        own.add(
            model=r["schedule"] + (" + fine-tune" if r["finetuned"] else ""),
            budget=r["budget"],
            params_fewer=r["params_fewer"],
            mase_change=r["mase"] / dense_mase - 1,
            latency_ratio=r["latency_ratio"],
            peak_less=1 - r["peak_inference_bytes"] / dense_peak,
        )
    return {"setup": setup, "pretraining": pre, "ranks": ranks, "threshold": thr, "embodia_variant": own}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--steps", type=int, default=600, help="pretraining steps of every model")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--layers", type=int, default=6, help="blocks")
    parser.add_argument("--base", type=float, default=2.0, help="power law: d_kv(0) before rounding")
    parser.add_argument("--beta", type=float, default=0.7, help="power law: exponent of (l + 1)")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS), help="pretrained models")
    parser.add_argument(
        "--epsilons",
        type=float,
        nargs="+",
        default=list(AUTHORS_EPSILONS),
        help="the authors' post-hoc thresholds s_i / s_1 >= epsilon (attention projections only)",
    )
    parser.add_argument(
        "--budgets",
        type=float,
        nargs="+",
        default=[0.5, 0.25],
        help="embodia's own variant (all in-block linears, activation-aware): kept fractions",
    )
    parser.add_argument(
        "--schedules",
        nargs="+",
        choices=SCHEDULES,
        default=["uniform", "increasing"],
        help="embodia's own variant: rank schedules",
    )
    parser.add_argument(
        "--finetune", type=int, default=150, help="embodia's own variant: fine-tuning steps (0: none)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved latency rounds")
    parser.add_argument("--eval", type=int, default=1024, help="held-out series")
    parser.add_argument("--save", default=None, help="folder for the seed-0 dense model")
    parser.add_argument("--plot", default="runs/agents/flow_of_ranks.png")
    parser.add_argument("--out", default="runs/agents/flow_of_ranks.json", help="raw numbers (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/flow_of_ranks.json)"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if "dense" not in args.arms:
        args.arms = ["dense", *args.arms]
    config = ForecasterConfig(layers=args.layers)
    steps, finetune, n, seeds = args.steps, args.finetune, args.eval, args.seeds
    if args.quick:
        config = ForecasterConfig(d_model=32, mlp=64, layers=2)
        steps, finetune, n, seeds, args.rounds = 40, 20, 128, seeds[:1], 1
        args.epsilons, args.budgets, args.schedules = args.epsilons[-2:], args.budgets[:1], args.schedules[:1]
    g = torch.Generator().manual_seed(777)
    calib = split(make_series(256, config.context + config.horizon, g), config)[0]
    test = make_series(n, config.context + config.horizon, g)
    ctx, tgt = split(test, config)
    batch = ctx[:256]
    start = time.perf_counter()
    with progress_bar("flow-of-ranks pretraining", not args.quiet) as update:
        pre_rows, dense = pretraining(args, config, seeds, steps, test, batch, update)
    pre_s = time.perf_counter() - start
    model = dense[seeds[0]]
    if args.save:
        save_forecaster(model, args.save)
    naive = mase(seasonal_naive(ctx, config.horizon, config.season), tgt, ctx, config.season)
    profile = depth_profile(model, calib, profile_modules(config))
    embed_rank = effective_rank(
        singular_values(model.embed(calib.unfold(1, config.patch, config.patch)).detach())
    )
    plot(profile, embed_rank, args.plot, f"rank vs depth, d={config.d_model}, {config.layers} blocks")
    thr_rows = threshold_sweep(args, dense, config, test, batch)
    own_rows = embodia_variant(args, model, config, calib, test, batch, finetune, seeds[0])
    raw = {
        "config": {**config.__dict__},
        "steps": steps,
        "seeds": seeds,
        "base": args.base,
        "beta": args.beta,
        "finetune": finetune,
        "eval_series": n,
        "pretraining_s": pre_s,
        "total_s": time.perf_counter() - start,
        "seasonal_naive_mase": naive,
        "embedding_effective_rank": embed_rank,
        "rank_profile": profile,
        "pretraining": pre_rows,
        "threshold": thr_rows,
        "embodia_variant": own_rows,
    }
    tables = result_tables(raw)
    print(
        f"{steps} steps x {len(args.arms)} models x {len(seeds)} seeds ({pre_s:.0f} s), naive MASE {naive:.3f}"
    )
    for key in ("pretraining", "ranks", "threshold", "embodia_variant"):
        print(tables[key].markdown())
    save_json(args.out, raw)
    written = write_results(
        args.results or default_results_path("methods/flow_of_ranks", quick=args.quick),
        tables,
        title="Flow-of-ranks: pretraining with depth-increasing Q/K/V widths, the authors' post-hoc "
        "threshold truncation, and embodia's own post-hoc variant, on a patch forecaster",
        seeds=seeds,
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
