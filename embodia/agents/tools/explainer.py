"""Tool ``explain_features``: feature attributions of a model trained here, by the amortised explainer or a
Captum prior method, with a faithfulness summary (deletion / insertion AUC, faithfulness correlation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from embodia.agents.methods.amortized_explainer import DATASETS, METHODS
from embodia.agents.tools.registry import (
    InputPath,
    OutputPath,
    Progress,
    ToolArgumentError,
    no_progress,
    tool,
)

TOP_FEATURES = 5


@dataclass
class ExplainFeaturesArgs:
    """Arguments of ``explain_features``."""

    dataset: Literal[DATASETS] = "breast_cancer"
    """A scikit-learn bundled data set: three tables (breast_cancer, wine, iris) or the 8x8 digit images."""
    csv: InputPath | None = None
    """A CSV table to use instead of ``dataset`` (header row, numeric feature columns, a target column); under
    `embodia mcp`, inside its workspace."""
    target_column: str = "target"
    """The CSV's class column."""
    method: Literal[METHODS] = "amortized"
    """``amortized`` (the trained explainer: one forward pass) or a Captum prior method."""
    indices: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1, max_length=1000)] | None = None
    """Test-split inputs to explain (by position); default the first ``count``."""
    count: Annotated[int, Field(ge=1, le=1000)] = 5
    """How many test inputs to explain when ``indices`` is not given."""
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    """Seeds the split, the model and the explainer."""
    model_epochs: Annotated[int, Field(ge=1, le=1000)] | None = None
    """Epochs of the explained model (default 60 for tables, 15 for digits)."""
    epochs: Annotated[int, Field(ge=1, le=1000)] = 40
    """Epochs of the explainer."""
    alpha_mode: Literal["dynamic", "prior_only", "faith_only"] = "dynamic"
    """Loss weighting: ``dynamic`` (priors first, faithfulness after L_prior plateaus), or an ablation."""
    prior_samples: Annotated[int, Field(ge=1, le=5000)] = 256
    """Training inputs the prior methods explain to supervise the explainer."""
    report: bool = True
    """Also measure every method's faithfulness on ``report_samples`` test inputs."""
    report_samples: Annotated[int, Field(ge=2, le=2000)] = 50
    """Test inputs of the faithfulness summary."""
    explainer_dir: InputPath | None = None
    """A folder saved by ``save_to`` (explainer + the model it explains) to use instead of training; the
    data set, seed and CSV must be those it was trained with."""
    save_to: OutputPath | None = None
    """Save the trained explainer and the model into this folder (a new one, or one saved here before)."""
    out: OutputPath | None = None
    """Write the attributions to this file: CSV (one row per input) when it ends in ``.csv``, else JSON."""


def _task_metadata(args: ExplainFeaturesArgs, task: Any, epochs: int) -> dict[str, Any]:
    return {
        "task": task.name,
        "source": "csv" if args.csv else "bundled",
        "seed": args.seed,
        "target_column": args.target_column if args.csv else None,
        "model_epochs": epochs,
        "shape": list(task.shape),
        "num_classes": task.num_classes,
    }


@tool("explain_features")
def explain_features(args: ExplainFeaturesArgs, progress: Progress = no_progress) -> dict:
    """Explain a classifier trained here on a bundled data set (or a CSV table): per-feature attributions of
    chosen test inputs from the amortised, faithfulness-trained explainer (one forward pass) or a Captum
    prior method (saliency, integrated gradients, occlusion, Kernel SHAP), and a faithfulness summary of
    all methods (deletion / insertion AUC, faithfulness correlation, time per explanation)."""
    import torch

    from embodia.agents.methods.amortized_explainer.data import (
        ExplainerError,
        load_task,
        make_target_model,
        train_target_model,
    )
    from embodia.agents.methods.amortized_explainer.explainer import (
        ExplainerConfig,
        explain,
        faithfulness_report,
        load_explainer,
        save_explainer,
        train_explainer,
    )

    if args.explainer_dir is not None and args.save_to is not None:
        raise ToolArgumentError(
            "explain_features: give explainer_dir (load) or save_to (train and save), not both"
        )
    task = load_task(args.dataset, csv_path=args.csv, target_column=args.target_column, seed=args.seed)
    n_test = len(task.x_test)
    indices = list(args.indices) if args.indices is not None else list(range(min(args.count, n_test)))
    if max(indices) >= n_test:
        raise ToolArgumentError(f"explain_features: indices must be < {n_test} (the test split's size)")
    progress(0, None, "training the model")
    result: dict[str, Any] = {"dataset": task.name, "method": args.method, "baseline": task.baseline_kind}
    explainer, log = None, None
    if args.explainer_dir is not None:
        model = make_target_model(task)
        explainer, metadata = load_explainer(args.explainer_dir, model)
        expected = _task_metadata(args, task, metadata.get("model_epochs"))
        if metadata != expected:
            raise ExplainerError(
                f"explainer_dir {args.explainer_dir!r} was trained for {metadata}, not for {expected}"
            )
        result["model"] = {"loaded_from": args.explainer_dir}
    else:
        model, training = train_target_model(task, seed=args.seed, epochs=args.model_epochs)
        result["model"] = {"test_accuracy": training.test_accuracy, "epochs": training.epochs}
        if args.method == "amortized" or args.report or args.save_to is not None:
            config = ExplainerConfig(
                epochs=args.epochs,
                alpha_mode=args.alpha_mode,
                prior_samples=args.prior_samples,
                seed=args.seed,
            )
            explainer, log = train_explainer(
                model,
                task.x_train,
                task.baseline,
                task.num_classes,
                config,
                progress=lambda d, t, m: progress(d, t, f"training the explainer: {m}"),
            )
            if args.save_to is not None:
                save_explainer(args.save_to, explainer, _task_metadata(args, task, training.epochs), model)
                result["saved_to"] = args.save_to
    if log is not None:
        selection = log.selection
        result["explainer"] = {
            "seconds": log.seconds,
            "prior_seconds": log.prior_seconds,
            "kept_priors": selection.weights if selection else {},
            "dropped_priors": selection.dropped if selection else {},
            "plateau_epoch": log.plateau_epoch,
            "final_alpha": log.alpha[-1],
        }
    x = task.x_test[indices]
    attributions = explain(model, x, explainer=explainer, method=args.method, baseline=task.baseline)
    with torch.no_grad():
        probabilities = torch.softmax(model(x), dim=-1)
    samples = []
    for row, index in enumerate(indices):
        target = int(probabilities[row].argmax())
        flat = attributions[row].flatten()
        top = torch.argsort(-flat.abs(), stable=True)[:TOP_FEATURES]
        samples.append(
            {
                "index": index,
                "label": task.class_names[int(task.y_test[index])],
                "predicted": task.class_names[target],
                "probability": float(probabilities[row, target]),
                "attribution": flat.tolist(),
                "top_features": [
                    {"feature": task.feature_names[i], "attribution": float(flat[i])} for i in top
                ],
            }
        )
    result["feature_names"] = task.feature_names
    result["samples"] = samples
    if args.report and explainer is not None:
        progress(0, None, "measuring faithfulness")
        report = faithfulness_report(model, explainer, task.x_test[: args.report_samples], seed=args.seed)
        result["report"] = {
            name: {
                "deletion_auc": entry["deletion_auc"]["mean"],
                "insertion_auc": entry["insertion_auc"]["mean"],
                "faithfulness_correlation": entry["faithfulness_correlation"]["mean"],
                "seconds_per_explanation": entry["seconds_per_explanation"],
            }
            for name, entry in report["methods"].items()
        }
        result["report_samples"] = report["n"]
    if args.out is not None:
        _write(args.out, result)
        result["out"] = args.out
    return result


def _write(path: str, result: dict[str, Any]) -> None:
    import csv
    import json
    from pathlib import Path

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix.lower() == ".csv":
        with target.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["index", "label", "predicted", "probability", *result["feature_names"]])
            for s in result["samples"]:
                writer.writerow([s["index"], s["label"], s["predicted"], s["probability"], *s["attribution"]])
    else:
        keep = ("dataset", "method", "baseline", "feature_names", "samples")
        target.write_text(json.dumps({k: result[k] for k in keep}, indent=2) + "\n")
