"""GateSkip on a small decoder trained from scratch: accuracy vs compute saved on associative recall with filler.

For each seed: a 4-layer, width-64 decoder learns associative recall (3 key-value pairs among filler tokens,
then a query) without gates; a copy is fine-tuned with the GateSkip paper recipe (gates, L2 sparsity, skipping
ramped 0 -> 20 % in training), another copy with the same steps and no gates (the control); then answer accuracy
at per-branch skip budgets of 15-50 %: learned-gate ranking, random ranking on the GateSkip model, random
skipping of the ungated model. Means over seeds with 95 % t-intervals go to
``results/methods/gateskip_recall.json``.

    .venv/bin/python scripts/gateskip_recall_experiment.py            # 3 seeds, ~10 minutes on a loaded 2-core CPU
    .venv/bin/python scripts/gateskip_recall_experiment.py --quick    # seconds (what the test runs)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace

import torch

from embodia.agents.methods.gateskip_recall import RecallConfig, RecallRun, quick_config, run_recall
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results

NAME = "methods/gateskip_recall"
#: the paper's bar: a budget "keeps" the model when accuracy stays at or above this share of the ungated model's
KEEP = 0.9


def mean_interval(values: list[float]) -> dict[str, float] | float:
    """Mean with its 95 % Student-t interval over seeds (the mean alone for one value)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    mean = sum(finite) / len(finite)
    if len(finite) < 2:
        return mean
    from scipy.stats import t

    std = math.sqrt(sum((v - mean) ** 2 for v in finite) / (len(finite) - 1))
    half = float(t.ppf(0.975, len(finite) - 1)) * std / math.sqrt(len(finite))
    return interval(mean, mean - half, mean + half)


def _rows(runs: list[RecallRun]) -> list[tuple[str, str, float]]:
    return list(dict.fromkeys((p.model, p.ranking, p.budget) for p in runs[0].points))


def skipping_table(runs: list[RecallRun]) -> Table:
    """Accuracy (and accuracy relative to the ungated model) at each budget, mean over seeds."""
    table = Table(
        [
            Column("model", "model"),
            Column("ranking", "token ranking"),
            Column("budget", "skip budget", ".0%"),
            Column("skipped", "branch computations skipped", ".1%"),
            Column("accuracy", "answer accuracy", ".1%"),
            Column("relative", "accuracy / ungated model's", ".1%"),
            Column("filler_share", "filler share of skipped", ".1%"),
        ]
    )
    table.add(
        model="ungated",
        ranking="none",
        budget=0.0,
        skipped=0.0,
        accuracy=mean_interval([r.ungated_accuracy for r in runs]),
        relative=1.0,
        filler_share=None,
    )
    for model, ranking, budget in _rows(runs):
        points = [
            next(p for p in r.points if (p.model, p.ranking, p.budget) == (model, ranking, budget))
            for r in runs
        ]
        share = mean_interval([p.filler_share for p in points])
        table.add(
            model="GateSkip" if model == "gateskip" else model,
            ranking=ranking,
            budget=budget,
            skipped=sum(p.skipped_fraction for p in points) / len(points),
            accuracy=mean_interval([p.accuracy for p in points]),
            relative=mean_interval([p.accuracy / r.ungated_accuracy for p, r in zip(points, runs)]),
            filler_share=None if isinstance(share, float) and math.isnan(share) else share,
        )
    return table


def saving_table(runs: list[RecallRun]) -> Table:
    """Largest measured budget at which accuracy stays >= 90 % of the ungated model's, per seed and mean."""
    table = Table(
        [
            Column("model", "model"),
            Column("ranking", "token ranking"),
            Column("saved", "compute saved at >= 90 % of the ungated accuracy", ".0%"),
            Column("per_seed", "per seed", ".0%"),
        ]
    )
    for model, ranking in dict.fromkeys((m, k) for m, k, _ in _rows(runs)):
        per_seed = []
        for run in runs:
            kept = [
                p.skipped_fraction
                for p in run.points
                if (p.model, p.ranking) == (model, ranking) and p.accuracy >= KEEP * run.ungated_accuracy
            ]
            per_seed.append(round(max(kept, default=0.0), 4))
        table.add(
            model="GateSkip" if model == "gateskip" else model,
            ranking=ranking,
            saved=mean_interval(per_seed),
            per_seed=per_seed,
        )
    return table


def training_table(runs: list[RecallRun], seconds: list[float]) -> Table:
    """Per seed: accuracy before / after fine-tuning, the mean gate and the skipping during GateSkip training."""
    table = Table(
        [
            Column("seed", "seed"),
            Column("pretrained", "ungated, after pretraining", ".1%"),
            Column("ungated", "ungated, after the control fine-tuning", ".1%"),
            Column("gateskip", "GateSkip, full compute", ".1%"),
            Column("gate_first", "mean gate, first step", ".3f"),
            Column("gate_last", "mean gate, last step", ".3f"),
            Column("last_skipped", "skipped at the last step", ".1%"),
            Column("seconds", "wall time (s)", ",.0f"),
        ]
    )
    for run, secs in zip(runs, seconds):
        full = next(p for p in run.points if (p.model, p.ranking, p.budget) == ("gateskip", "gate", 0.0))
        table.add(
            seed=run.seed,
            pretrained=run.pretrained_accuracy,
            ungated=run.ungated_accuracy,
            gateskip=full.accuracy,
            gate_first=run.history[0]["gate_mean"],
            gate_last=run.history[-1]["gate_mean"],
            last_skipped=run.history[-1]["skipped_fraction"],
            seconds=secs,
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds (tests)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.15, 0.25, 0.35, 0.5])
    parser.add_argument("--pretrain-steps", type=int, help="ungated training steps (default 700)")
    parser.add_argument("--finetune-steps", type=int, help="GateSkip fine-tuning steps (default 350)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a busy machine)"
    )
    parser.add_argument("--out", default="runs/agents/gateskip_recall.json", help="raw JSON output")
    parser.add_argument("--results", help="results file (default: results/methods/gateskip_recall.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    base = RecallConfig()
    if args.quick:
        base = quick_config(base)
    overrides = {"pretrain_steps": args.pretrain_steps, "finetune_steps": args.finetune_steps}
    base = replace(base, **{k: v for k, v in overrides.items() if v is not None})
    runs, seconds = [], []
    for seed in args.seeds:
        started = time.perf_counter()
        with progress_bar(f"gateskip recall, seed {seed}", not args.quiet) as update:
            runs.append(run_recall(replace(base, seed=seed), budgets=args.budgets, progress=update))
        seconds.append(time.perf_counter() - started)

    tables = {
        "skipping": skipping_table(runs),
        "saving": saving_table(runs),
        "training": training_table(runs, seconds),
    }
    for table in tables.values():
        print(table.markdown(), end="\n\n")
    save_json(args.out, {"config": base, "seeds": args.seeds, "budgets": args.budgets, "runs": runs})
    path = write_results(
        args.results or default_results_path(NAME, quick=args.quick),
        tables,
        name=NAME,
        title="GateSkip on a 4-layer decoder trained from scratch: associative recall with filler tokens",
        seeds=args.seeds,
        data={
            "config": base,
            "budgets": args.budgets,
            "filler_fraction": runs[0].filler_fraction,
            "history": {str(r.seed): r.history[:: max(1, len(r.history) // 50)] for r in runs},
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
