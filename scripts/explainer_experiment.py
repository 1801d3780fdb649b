"""DeepFaith (the authors' losses, per-input prior filtering, 8-method pool, alpha schedule) against its priors,
on metrics the explainer was neither trained nor filtered on.

For each data set (scikit-learn's breast_cancer table and the 8x8 digit images) and seed, a
classifier is trained here (an MLP on standardised features, a small CNN on the digits); the authors' eight
prior methods (Captum: integrated gradients, GradientSHAP, DeepLIFT, saliency, occlusion, feature ablation,
LIME, Kernel SHAP) explain ``prior_samples`` training inputs, are de-duplicated and filtered per input, and
three explainers are trained on the same (input, prior) pairs: DeepFaith as the authors' code has it (masks
that keep the features they mark), the same with the mask's sign flipped (masks mark removed features: the
faithfulness-correlation sign), and the priors alone (alpha = 1). Every method is measured on the test split
(the explained class is the model's prediction; the score its probability) on four held-out metrics:
deletion AUC (lower is better), insertion AUC, infidelity (Captum; lower is better) and region perturbation
AOPC (higher is better); also faithfulness correlation, one of the two filter metrics and close to the
faithfulness loss, and the median time of explaining one input alone. Values are means over the seeds with
a 95 % t-interval over the per-seed means (one seed: over the test inputs).

    .venv/bin/python scripts/explainer_experiment.py           # 2 data sets x 3 seeds (minutes, 1 thread)
    .venv/bin/python scripts/explainer_experiment.py --quick   # iris + digits, 1 seed, tiny (tests)

Writes ``results/methods/explainer_deepfaith.json`` (a ``--quick`` run writes under ``runs/quick-results/``,
``--results PATH`` elsewhere) with three tables: ``methods`` (every method's metrics and time), ``ranks``
(each method's rank among all rows per held-out metric, averaged over the metrics and seeds, as the
authors' ``eval_explainer`` ranks them) and ``setup`` (the data, the model, the priors kept per input, the
alpha trigger, the cost); the raw numbers of every run go to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np
import torch

from embodia.agents.methods.amortized_explainer import DATASETS, PRIOR_METHODS
from embodia.agents.methods.amortized_explainer.data import load_task, predict, train_target_model
from embodia.agents.methods.amortized_explainer.explainer import (
    ExplainerConfig,
    faithfulness_report,
    train_explainer,
)
from embodia.agents.methods.amortized_explainer.metrics import mean_interval
from embodia.agents.methods.amortized_explainer.priors import compute_priors, select_priors
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results

#: explainer rows -> (alpha mode, mask keeps the features it marks)
VARIANTS = {
    "DeepFaith (authors' loss: mask keeps)": ("dynamic", True),
    "DeepFaith, mask removes (sign ablation)": ("dynamic", False),
    "priors only (alpha = 1)": ("prior_only", True),
}
ROWS = [*VARIANTS, *PRIOR_METHODS, "random"]
HELD_OUT = {"deletion_auc": False, "insertion_auc": True, "infidelity": False, "region_perturbation": True}
"""The held-out metrics -> higher is better."""
METRICS = (*HELD_OUT, "faithfulness_correlation")
DEFAULT_DATASETS = ["breast_cancer", "digits"]


def _settings(kind: str, quick: bool) -> dict[str, Any]:
    """Sizes per kind of data. L_faith queries the model R times per input and step: the digits' CNN gets
    the authors' training-script R (10), the tables the loss's default (100)."""
    if quick:
        return {"epochs": 4, "runs": 10, "prior_samples": 12, "test": 8, "train": 160, "timing": 2}
    if kind == "image":
        return {"epochs": 30, "runs": 10, "prior_samples": 64, "test": 60, "train": None, "timing": 10}
    return {"epochs": 40, "runs": 100, "prior_samples": 96, "test": 100, "train": None, "timing": 10}


def run_one(dataset: str, seed: int, quick: bool, update: Any) -> dict[str, Any]:
    """One data set and seed: the model, the shared priors and their selection, three explainers, the report."""
    task = load_task(dataset, seed=seed)
    size = _settings(task.kind, quick)
    model, training = train_target_model(task, seed=seed, epochs=2 if quick else None)
    x_train = task.x_train[: size["train"]]
    x_test = task.x_test[: size["test"]]
    update(0, None, f"{dataset} seed {seed}: priors")
    started = time.perf_counter()
    n_prior = min(size["prior_samples"], len(x_train))
    x_prior = x_train[:n_prior]
    targets = predict(model, x_prior)
    priors = compute_priors(model, x_prior, targets, task.baseline, list(PRIOR_METHODS), seed)
    selection = select_priors(model, x_prior, targets, priors, task.baseline, seed=seed)
    prior_seconds = time.perf_counter() - started
    explainers, logs = {}, {}
    for name, (mode, keeps) in VARIANTS.items():
        update(0, None, f"{dataset} seed {seed}: {name}")
        config = ExplainerConfig(
            epochs=size["epochs"],
            faith_runs=size["runs"],
            prior_samples=n_prior,
            alpha_mode=mode,
            mask_keeps=keeps,
            seed=seed,
        )
        explainers[name], logs[name] = train_explainer(
            model, x_train, task.baseline, task.num_classes, config, priors=priors, selection=selection
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
        low=task.x_train.min(0).values,
        high=task.x_train.max(0).values,
    )
    report["methods"][main] = report["methods"].pop("amortized")
    report["values"][main] = report["values"].pop("amortized")
    keep = selection.keep
    return {
        "dataset": dataset,
        "seed": seed,
        "kind": task.kind,
        "features": task.num_features,
        "prior_inputs": n_prior,
        "test": len(x_test),
        "faith_runs": size["runs"],
        "epochs": size["epochs"],
        "model": {"test_accuracy": training.test_accuracy, "epochs": training.epochs},
        "prior_seconds": prior_seconds,
        "explainer_seconds": {k: log.seconds for k, log in logs.items()},
        "pairs": logs[main].pairs,
        "priors_per_input": float(keep.sum(1).float().mean()),
        "kept_share": selection.weights,
        "duplicate_share": {
            m: float(selection.duplicate[:, j].float().mean()) for j, m in enumerate(selection.methods)
        },
        "filtered_share": {
            m: float(selection.filtered[:, j].float().mean()) for j, m in enumerate(selection.methods)
        },
        "prior_filter_metrics": selection.faithfulness,
        "triggers": {k: log.triggers for k, log in logs.items()},
        "alpha": {k: log.alpha for k, log in logs.items()},
        "prior_loss": {k: log.prior_loss for k, log in logs.items()},
        "faith_loss": {k: log.faith_loss for k, log in logs.items()},
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
        entry["rank"] = float(np.mean([ranks(r)[row]["mean"] for r in runs]))
        entry["rank_per_metric"] = {m: float(np.mean([ranks(r)[row][m] for r in runs])) for m in HELD_OUT}
        out[row] = entry
    return out


def ranks(run: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each row's rank (1 = best, ties averaged) per held-out metric in one run, and their mean."""
    methods = run["report"]["methods"]
    out: dict[str, dict[str, float]] = {row: {} for row in ROWS}
    for metric, higher in HELD_OUT.items():
        values = np.array([methods[row][metric]["mean"] for row in ROWS])
        keyed = -values if higher else values
        order = keyed.argsort(kind="stable")
        rank = np.empty(len(ROWS))
        rank[order] = np.arange(1, len(ROWS) + 1)
        for v in np.unique(keyed):  # ties share their mean rank
            rank[keyed == v] = rank[keyed == v].mean()
        for row, r in zip(ROWS, rank, strict=True):
            out[row][metric] = float(r)
    for row in ROWS:
        out[row]["mean"] = float(np.mean([out[row][m] for m in HELD_OUT]))
    return out


def _cell(value: dict[str, float]) -> Any:
    """A metric's mean with its interval (a plain number where the interval is a point)."""
    if value["n"] == 1 or value["low"] == value["high"]:
        return value["mean"]
    return interval(value["mean"], value["low"], value["high"])


def methods_table(results: dict[str, dict[str, Any]]) -> Table:
    table = Table(
        [
            Column("dataset", "data set"),
            Column("method", "method"),
            Column("deletion_auc", "deletion AUC (lower)", ".3f"),
            Column("insertion_auc", "insertion AUC", ".3f"),
            Column("infidelity", "infidelity (lower)", ".2e"),
            Column("region_perturbation", "region perturbation AOPC", ".3f"),
            Column("faithfulness_correlation", "faithfulness corr. (filter metric)", ".3f"),
            Column("ms_per_input", "ms / input", ".3f"),
            Column("time_vs_amortized", "time / DeepFaith (×)", ".0f"),
        ]
    )
    for dataset, rows in results.items():
        for row, entry in rows.items():
            table.add(
                dataset=dataset,
                method=row,
                **{m: _cell(entry[m]) for m in METRICS},
                ms_per_input=1000 * entry["seconds_per_explanation"],
                time_vs_amortized=entry["time_vs_amortized"] if row in PRIOR_METHODS else None,
            )
    return table


def ranks_table(results: dict[str, dict[str, Any]]) -> Table:
    """Mean rank among the 12 rows per held-out metric and over them (1 = best), averaged over seeds."""
    table = Table(
        [Column("dataset", "data set"), Column("method", "method")]
        + [Column(m, f"rank: {m.replace('_', ' ')}", ".1f") for m in HELD_OUT]
        + [Column("rank", "mean rank (4 held-out metrics)", ".2f")]
    )
    for dataset, rows in results.items():
        for row in sorted(rows, key=lambda r: rows[r]["rank"]):
            entry = rows[row]
            table.add(dataset=dataset, method=row, rank=entry["rank"], **entry["rank_per_metric"])
    return table


def setup_table(runs: dict[str, list[dict[str, Any]]]) -> Table:
    """The data, the model, the per-input prior selection, the alpha trigger and the training cost."""
    main = ROWS[0]
    table = Table(
        [
            Column("dataset", "data set"),
            Column("features", "features"),
            Column("prior_inputs", "prior inputs"),
            Column("test", "test inputs"),
            Column("model_accuracy", "model test acc.", ".3f"),
            Column("priors_per_input", "priors kept per input (of 8)", ".2f"),
            Column("pairs", "training pairs", ".0f"),
            Column("never_kept", "priors kept on no input (any seed)"),
            Column("trigger_epoch", "alpha trigger epochs per seed"),
            Column("final_alpha", "final alpha per seed"),
            Column("faith_runs", "L_faith masks per input"),
            Column("epochs", "epochs"),
            Column("prior_s", "priors + selection s", ".1f"),
            Column("explainer_s", "DeepFaith training s (priors excluded)", ".1f"),
        ]
    )
    for dataset, dataset_runs in runs.items():
        first = dataset_runs[0]
        table.add(
            dataset=dataset,
            features=first["features"],
            prior_inputs=first["prior_inputs"],
            test=first["test"],
            model_accuracy=float(np.mean([r["model"]["test_accuracy"] for r in dataset_runs])),
            priors_per_input=float(np.mean([r["priors_per_input"] for r in dataset_runs])),
            pairs=float(np.mean([r["pairs"] for r in dataset_runs])),
            never_kept=sorted({m for r in dataset_runs for m in PRIOR_METHODS if m not in r["kept_share"]})
            or None,
            trigger_epoch=[r["triggers"][main][0] if r["triggers"][main] else None for r in dataset_runs],
            final_alpha=[round(r["alpha"][main][-1], 2) for r in dataset_runs],
            faith_runs=first["faith_runs"],
            epochs=first["epochs"],
            prior_s=float(np.mean([r["prior_seconds"] for r in dataset_runs])),
            explainer_s=float(np.mean([r["explainer_seconds"][main] for r in dataset_runs])),
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests: iris + digits, one seed")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=None)
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 3; --quick 1)")
    parser.add_argument("--out", default="runs/agents/explainer.json", help="raw numbers of every run (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/explainer_deepfaith.json)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a busy machine a second thread makes small parallel ops wait for "
        "a core, which inflates the priors' times per input by up to ~100x)",
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    datasets = args.datasets or (["iris", "digits"] if args.quick else DEFAULT_DATASETS)
    seeds = range(args.seeds if args.seeds is not None else (1 if args.quick else 3))
    if len(seeds) < 1 or args.threads < 1:
        parser.error("--seeds and --threads must be >= 1")
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    started, load_before = time.perf_counter(), os.getloadavg()  # timings depend on what else runs
    runs: dict[str, list[dict[str, Any]]] = {}
    with progress_bar("explainer", not args.quiet) as update:
        for dataset in datasets:
            runs[dataset] = [run_one(dataset, seed, args.quick, update) for seed in seeds]
    results = {d: aggregate(r) for d, r in runs.items()}
    tables = {
        "methods": methods_table(results),
        "ranks": ranks_table(results),
        "setup": setup_table(runs),
    }
    for name, table in tables.items():
        print(f"\n{name}\n\n{table.markdown()}")
    elapsed = time.perf_counter() - started
    torch.set_num_threads(threads)
    load = {"before": load_before, "after": os.getloadavg()}
    print(
        f"\n{len(seeds)} seed(s), {args.threads} thread(s), {elapsed:.0f} s; load average (1, 5, 15 min) "
        f"before {load['before'][0]:.1f}, {load['before'][1]:.1f}, {load['before'][2]:.1f}, after "
        f"{load['after'][0]:.1f}, {load['after'][1]:.1f}, {load['after'][2]:.1f}"
    )
    payload = {
        "results": results,
        "runs": runs,
        "seconds": elapsed,
        "threads": args.threads,
        "quick": args.quick,
    }
    save_json(args.out, payload)
    written = write_results(
        args.results or default_results_path("methods/explainer_deepfaith", quick=args.quick),
        tables,
        title="DeepFaith against its eight Captum priors on held-out faithfulness metrics",
        seeds=seeds,
        data={"seconds": elapsed, "threads": args.threads, "load_average": load},
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
