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
    .venv/bin/python scripts/explainer_experiment.py --datasets wine iris --seeds 5 --results runs/wine_iris.json

Writes the results file ``results/methods/explainer.json`` (a ``--quick`` run writes under
``runs/quick-results/``, ``--results PATH`` elsewhere) with four tables: ``methods`` (every method's
metrics and time), ``setup`` (the data, the model, the priors kept, the plateau, the training cost and the
break-even count of explanations), ``per_seed`` (each method's faithfulness correlation per seed: the
paired comparison) and ``saturation`` (how certain the trained models are); the raw numbers of every run
go to ``--out``.
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
from embodia.agents.methods.amortized_explainer.data import (
    class_probability,
    load_task,
    predict,
    train_target_model,
)
from embodia.agents.methods.amortized_explainer.explainer import (
    ExplainerConfig,
    compute_priors,
    faithfulness_report,
    train_explainer,
)
from embodia.agents.methods.amortized_explainer.metrics import mean_interval, random_subsets
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results

VARIANTS = {
    "amortized (dynamic alpha)": "dynamic",
    "amortized (alpha = 1, priors only)": "prior_only",
    "amortized (alpha = 0, faithfulness only)": "faith_only",
}
ROWS = [*VARIANTS, *PRIOR_METHODS, "random"]
METRICS = ("deletion_auc", "insertion_auc", "faithfulness_correlation")
#: the per-seed table's column keys (the method names are too long for column keys)
SHORT = dict(zip(ROWS, ["dynamic", "prior_only", "faith_only", *PRIOR_METHODS, "random"], strict=True))
#: saturation: the inputs looked at, the probability called certain, the change called none
SATURATION = {"inputs": 100, "certain": 0.999, "unchanged": 0.001, "subsets": 50, "fraction": 0.25}


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


def saturation(
    model: torch.nn.Module, x: torch.Tensor, baseline: torch.Tensor, seed: int
) -> dict[str, float]:
    """How certain the model is on ``x``: the share of predictions with probability above 0.999, and the
    share of random subsets of a quarter of the features (50 per input, replaced by the baseline, as in the
    faithfulness correlation) whose removal changes that probability by less than 0.001."""
    score = class_probability(model)
    targets = predict(model, x)
    n, d = len(x), int(np.prod(x.shape[1:]))
    size = min(d, max(1, round(SATURATION["fraction"] * d)))
    masks = random_subsets(n, d, SATURATION["subsets"], size, torch.Generator().manual_seed(seed))
    flat = x.reshape(n, 1, d).float()
    base = baseline.reshape(1, 1, d).float()
    removed = torch.where(masks, base, flat).reshape(n * SATURATION["subsets"], *x.shape[1:])
    with torch.no_grad():
        full = score(x, targets)
        after = score(removed, targets.repeat_interleave(SATURATION["subsets"])).view(n, -1)
    return {
        "certain": float((full > SATURATION["certain"]).float().mean()),
        "unchanged": float(((full[:, None] - after).abs() < SATURATION["unchanged"]).float().mean()),
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
        "saturation": saturation(model, task.x_test[: SATURATION["inputs"]], task.baseline, seed),
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
            Column("faithfulness_correlation", "faithfulness corr.", ".3f"),
            Column("ms_per_input", "ms / input", ".3f"),
            Column("time_vs_amortized", "time / amortized (×)", ".0f"),
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


def _break_even(training: float, prior: float, amortized: float) -> float | None:
    """How many explanations repay the explainer's training: its cost over the time saved per input."""
    return training / (prior - amortized) if prior > amortized else None


def setup_table(runs: dict[str, list[dict[str, Any]]], results: dict[str, dict[str, Any]]) -> Table:
    """The data, the model, the priors, the plateau and the cost of training against the time it saves."""
    table = Table(
        [
            Column("dataset", "data set"),
            Column("features", "features"),
            Column("train", "train"),
            Column("test", "test"),
            Column("model_accuracy", "model test acc.", ".3f"),
            Column("priors_kept", "priors kept (any seed)"),
            Column("priors_dropped", "priors dropped (any seed)"),
            Column("plateau_epoch", "plateau epoch per seed"),
            Column("prior_s", "prior run s", ".1f"),
            Column("explainer_s", "explainer training s (priors excluded)", ".1f"),
            Column("break_even_ig", "break-even vs integrated gradients (explanations)", ",.0f"),
            Column("break_even_shap", "break-even vs Kernel SHAP (explanations)", ",.0f"),
        ]
    )
    for dataset, dataset_runs in runs.items():
        first = dataset_runs[0]
        training = float(
            np.mean([r["prior_seconds"] + r["explainer_seconds"][ROWS[0]] for r in dataset_runs])
        )
        seconds = {row: entry["seconds_per_explanation"] for row, entry in results[dataset].items()}
        table.add(
            dataset=dataset,
            features=first["features"],
            train=first["train"],
            test=first["test"],
            model_accuracy=float(np.mean([r["model"]["test_accuracy"] for r in dataset_runs])),
            priors_kept=sorted({k for r in dataset_runs for k in r["kept_priors"]}),
            priors_dropped=sorted({k for r in dataset_runs for k in r["dropped_priors"]}) or None,
            plateau_epoch=[r["plateau_epoch"] for r in dataset_runs],
            prior_s=float(np.mean([r["prior_seconds"] for r in dataset_runs])),
            explainer_s=float(np.mean([r["explainer_seconds"][ROWS[0]] for r in dataset_runs])),
            break_even_ig=_break_even(training, seconds["integrated_gradients"], seconds[ROWS[0]]),
            break_even_shap=_break_even(training, seconds["kernel_shap"], seconds[ROWS[0]]),
        )
    return table


def per_seed_table(runs: dict[str, list[dict[str, Any]]]) -> Table:
    """Each method's mean faithfulness correlation per seed: the paired comparison (same model, inputs)."""
    table = Table(
        [Column("dataset", "data set"), Column("seed", "seed")]
        + [Column(SHORT[row], row, ".3f") for row in ROWS]
    )
    for dataset, dataset_runs in runs.items():
        for r in dataset_runs:
            methods = r["report"]["methods"]
            table.add(
                dataset=dataset,
                seed=r["seed"],
                **{SHORT[row]: methods[row]["faithfulness_correlation"]["mean"] for row in ROWS},
            )
    return table


def saturation_table(runs: dict[str, list[dict[str, Any]]]) -> Table:
    table = Table(
        [
            Column("dataset", "data set"),
            Column("seed", "seed"),
            Column("certain", "predictions with probability > 0.999", ".0%"),
            Column("unchanged", "random quarters whose removal changes it < 0.001", ".0%"),
        ]
    )
    for dataset, dataset_runs in runs.items():
        for r in dataset_runs:
            table.add(dataset=dataset, seed=r["seed"], **r["saturation"])
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests: iris + digits, one seed")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=None)
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 3; --quick 1)")
    parser.add_argument("--out", default="runs/agents/explainer.json", help="raw numbers of every run (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/explainer.json)"
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
    datasets = args.datasets or (["iris", "digits"] if args.quick else list(DATASETS))
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
        "setup": setup_table(runs, results),
        "per_seed": per_seed_table(runs),
        "saturation": saturation_table(runs),
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
        args.results or default_results_path("methods/explainer", quick=args.quick),
        tables,
        title="Faithfulness-guided amortised explainer against its Captum priors",
        seeds=seeds,
        data={"seconds": elapsed, "threads": args.threads, "load_average": load, "saturation": SATURATION},
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
