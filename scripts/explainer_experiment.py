"""Amortised explainer vs its Captum priors: deletion / insertion AUC, faithfulness correlation, time.

For each data set (scikit-learn's breast_cancer, wine, iris tables and the 8x8 digit images) and seed, a
classifier is trained here (an MLP on standardised features, a small CNN on the digits), the four prior
methods (saliency, integrated gradients, occlusion / feature ablation, Kernel SHAP) explain
``prior_samples`` training inputs, and three explainers are trained on the same priors: the dynamic
alpha schedule, alpha fixed at 1 (priors only) and alpha fixed at 0 (faithfulness loss only). Every method
is then measured on the test split (the explained class is the model's prediction; the score its
probability): deletion AUC (lower is better), insertion AUC and faithfulness correlation (higher is
better), and the median wall-clock time of explaining one input alone. Values are means over the seeds
with a 95 % t-interval over the per-seed means (one seed: over the test inputs).

    .venv/bin/python scripts/explainer_experiment.py           # 4 data sets x 3 seeds (minutes, 1 thread)
    .venv/bin/python scripts/explainer_experiment.py --quick   # iris + digits, 1 seed, tiny (tests)
    .venv/bin/python scripts/explainer_experiment.py --datasets wine iris --seeds 5
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
import torch

from embodia.agents.methods.amortized_explainer import DATASETS, PRIOR_METHODS
from embodia.agents.methods.amortized_explainer.data import load_task, predict, train_target_model
from embodia.agents.methods.amortized_explainer.explainer import (
    ExplainerConfig,
    compute_priors,
    faithfulness_report,
    train_explainer,
)
from embodia.agents.methods.amortized_explainer.metrics import mean_interval
from embodia.agents.methods.report import markdown_table, progress_bar, save_json

VARIANTS = {
    "amortized (dynamic alpha)": "dynamic",
    "amortized (alpha = 1, priors only)": "prior_only",
    "amortized (alpha = 0, faithfulness only)": "faith_only",
}
ROWS = [*VARIANTS, *PRIOR_METHODS, "random"]
METRICS = ("deletion_auc", "insertion_auc", "faithfulness_correlation")


def _settings(kind: str, quick: bool) -> dict[str, Any]:
    """Sizes per kind of data: the digits' L_faith queries a CNN, so they get fewer epochs and subsets."""
    if quick:
        return {"epochs": 3, "faith_subsets": 8, "prior_samples": 24, "test": 12, "train": 160, "timing": 4}
    if kind == "image":
        return {
            "epochs": 15,
            "faith_subsets": 16,
            "prior_samples": 256,
            "test": 150,
            "train": None,
            "timing": 20,
        }
    return {
        "epochs": 40,
        "faith_subsets": 32,
        "prior_samples": 256,
        "test": None,
        "train": None,
        "timing": 20,
    }


def run_one(dataset: str, seed: int, quick: bool, update: Any) -> dict[str, Any]:
    """One data set and seed: the model, the shared priors, three explainers, the report."""
    task = load_task(dataset, seed=seed)
    size = _settings(task.kind, quick)
    model, training = train_target_model(task, seed=seed, epochs=2 if quick else None)
    x_train = task.x_train[: size["train"]]
    x_test = task.x_test[: size["test"]]
    update(0, None, f"{dataset} seed {seed}: priors")
    started = time.perf_counter()
    n_prior = min(size["prior_samples"], len(x_train))
    priors = compute_priors(
        model, x_train[:n_prior], predict(model, x_train[:n_prior]), task.baseline, list(PRIOR_METHODS), seed
    )
    prior_seconds = time.perf_counter() - started
    explainers, logs = {}, {}
    for name, mode in VARIANTS.items():
        update(0, None, f"{dataset} seed {seed}: {name}")
        config = ExplainerConfig(
            epochs=size["epochs"],
            faith_subsets=size["faith_subsets"],
            prior_samples=size["prior_samples"],
            alpha_mode=mode,
            seed=seed,
        )
        explainers[name], logs[name] = train_explainer(
            model,
            x_train,
            task.baseline,
            task.num_classes,
            config,
            priors=None if mode == "faith_only" else priors,
        )
    update(0, None, f"{dataset} seed {seed}: measuring")
    main, *others = VARIANTS
    report = faithfulness_report(
        model,
        explainers[main],
        x_test,
        methods=("amortized", *PRIOR_METHODS),
        timing_samples=size["timing"],
        seed=seed,
        explainers={k: explainers[k] for k in others},
    )
    report["methods"][main] = report["methods"].pop("amortized")
    report["values"][main] = report["values"].pop("amortized")
    selection = logs[main].selection
    return {
        "dataset": dataset,
        "seed": seed,
        "kind": task.kind,
        "features": task.num_features,
        "train": len(x_train),
        "test": len(x_test),
        "model": {"test_accuracy": training.test_accuracy, "epochs": training.epochs},
        "prior_seconds": prior_seconds,
        "explainer_seconds": {k: log.seconds for k, log in logs.items()},
        "kept_priors": selection.weights,
        "dropped_priors": selection.dropped,
        "prior_faithfulness": selection.faithfulness,
        "plateau_epoch": logs[main].plateau_epoch,
        "alpha": logs[main].alpha,
        "report": report,
    }


def aggregate(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method: each metric's mean and 95 % interval (over seeds; one seed: over inputs), and time."""
    out: dict[str, dict[str, Any]] = {}
    for row in ROWS:
        entry: dict[str, Any] = {}
        for metric in METRICS:
            if len(runs) > 1:
                entry[metric] = mean_interval([r["report"]["methods"][row][metric]["mean"] for r in runs])
            else:
                entry[metric] = runs[0]["report"]["methods"][row][metric]
        seconds = [r["report"]["methods"][row]["seconds_per_explanation"] for r in runs]
        ratios = [
            r["report"]["methods"][row]["seconds_per_explanation"]
            / r["report"]["methods"][ROWS[0]]["seconds_per_explanation"]
            for r in runs
        ]
        entry["seconds_per_explanation"] = float(np.mean(seconds))
        entry["time_vs_amortized"] = float(np.mean(ratios))
        out[row] = entry
    return out


def _cell(value: dict[str, float]) -> str:
    if value["n"] == 1 or value["low"] == value["high"]:
        return f"{value['mean']:.3f}"
    return f"{value['mean']:.3f} [{value['low']:.3f}, {value['high']:.3f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests: iris + digits, one seed")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=None)
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 3; --quick 1)")
    parser.add_argument("--out", default="runs/agents/explainer.json")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a busy machine a second thread makes small parallel ops wait for "
        "a core, which inflates the priors' times per input by up to ~100x)",
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    datasets = args.datasets or (["iris", "digits"] if args.quick else list(DATASETS))
    seeds = range(args.seeds if args.seeds is not None else (1 if args.quick else 3))
    if len(seeds) < 1 or args.threads < 1:
        parser.error("--seeds and --threads must be >= 1")
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {}
    with progress_bar("explainer", not args.quiet) as update:
        for dataset in datasets:
            runs[dataset] = [run_one(dataset, seed, args.quick, update) for seed in seeds]
    results = {d: aggregate(r) for d, r in runs.items()}
    rows = []
    for dataset, table in results.items():
        for row, entry in table.items():
            rows.append(
                [
                    dataset,
                    row,
                    *(_cell(entry[m]) for m in METRICS),
                    f"{1000 * entry['seconds_per_explanation']:.3f}",
                    f"{entry['time_vs_amortized']:.0f}x" if row in PRIOR_METHODS else "-",
                ]
            )
    header = [
        "data set",
        "method",
        "deletion AUC (lower)",
        "insertion AUC",
        "faithfulness corr.",
        "ms / input",
    ]
    print(markdown_table([*header, "time / amortized"], rows))
    setup = []
    for dataset, dataset_runs in runs.items():
        first = dataset_runs[0]
        kept = sorted({k for r in dataset_runs for k in r["kept_priors"]})
        dropped = sorted({k for r in dataset_runs for k in r["dropped_priors"]})
        setup.append(
            [
                dataset,
                f"{first['features']} / {first['train']} / {first['test']}",
                f"{np.mean([r['model']['test_accuracy'] for r in dataset_runs]):.3f}",
                ", ".join(kept) + (f" (dropped: {', '.join(dropped)})" if dropped else ""),
                ", ".join(str(r["plateau_epoch"]) for r in dataset_runs),
                f"{np.mean([r['prior_seconds'] for r in dataset_runs]):.1f}",
                f"{np.mean([r['explainer_seconds'][ROWS[0]] for r in dataset_runs]):.1f}",
            ]
        )
    print()
    print(
        markdown_table(
            [
                "data set",
                "features / train / test",
                "model test acc.",
                "priors kept (ever dropped)",
                "plateau epoch per seed",
                "prior run s",
                "explainer training s (priors excluded)",
            ],
            setup,
        )
    )
    elapsed = time.perf_counter() - started
    torch.set_num_threads(threads)
    print(f"\n{len(seeds)} seed(s), {args.threads} thread(s), {elapsed:.0f} s")
    payload = {
        "results": results,
        "runs": runs,
        "seconds": elapsed,
        "threads": args.threads,
        "quick": args.quick,
    }
    save_json(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
