"""Embodied-IQA at CPU scale: does pixel fidelity predict what a distortion does to a robot policy?

    python scripts/iqa_experiment.py            # results/perception/iqa.json (~10 min on 2 cores)
    python scripts/iqa_experiment.py --quick    # seconds: the pipeline runs (the tests run it)

1. A pixel policy for ``embodia/Visual-CubeSingle-v0`` (``--policy FOLDER``, or behaviour cloning with a CNN
   from scripted-expert demonstrations, as in the VER experiment).
2. The database (:mod:`embodia.perception.iqa.database`): reference observations from the policy's clean
   episodes that it solved, 7 distortion classes x 5 levels each, scored at three levels — perception (the policy's own
   encoder features), decision (its first action), execution (success of rollouts from the reference
   state with every observation distorted, minus the clean success).
3. IQA models (full-reference CNN) trained on the execution score; SRCC / PLCC with it on held-out
   references and held-out distortion classes, against PSNR, SSIM (torchmetrics) and the encoder-feature
   distance; the correlations between the three levels; a picture of every class with its scores.

Writes the results file (``--results``; tables ``database``, ``correlations``, ``levels``, ``classes``) that
docs/guides/perception.md renders, and prints its tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

import embodia
from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.perception.iqa import (
    IQADatabaseConfig,
    IQAModelConfig,
    baseline_scores,
    build_database,
    correlations,
    level_correlations,
    load_database,
    predict,
    save_database,
    save_iqa_model,
    splits,
    train_iqa,
)

ENV = "embodia/Visual-CubeSingle-v0"
FAST = {"shadow_size": 0, "multisamples": 0}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that everything runs")
    parser.add_argument("--out", default="runs/perception/iqa", help="output folder")
    parser.add_argument("--policy", help="a pixel policy folder (default: train one with behaviour cloning)")
    parser.add_argument("--demos", type=int, default=60, help="demonstrations for the default policy")
    parser.add_argument("--policy-steps", type=int, default=1500, help="gradient steps of the default policy")
    parser.add_argument("--references", type=int, default=12)
    parser.add_argument("--rollouts", type=int, default=1, help="execution rollouts per distorted image")
    parser.add_argument("--horizon", type=int, default=80, help="steps of an execution rollout")
    parser.add_argument(
        "--reference-episodes",
        type=int,
        default=24,
        help="clean episodes to draw references from (solved ones)",
    )
    parser.add_argument("--iqa-steps", type=int, default=600)
    parser.add_argument("--seeds", type=int, default=3, help="split and model seeds")
    parser.add_argument(
        "--workers", type=int, default=2, help="references scored in parallel on Ray (1: no Ray)"
    )
    parser.add_argument("--figure", default="docs/images/iqa/distortions.png", help="picture of the classes")
    parser.add_argument("--results", default=None, help="results file (default: results/perception/iqa.json)")
    args = parser.parse_args(argv)
    args.results = args.results or default_results_path("perception/iqa", quick=args.quick)
    return args


def pixel_policy(args: argparse.Namespace, out: Path) -> Path:
    """The policy folder: ``--policy``, else behaviour cloning with a CNN on expert demonstrations."""
    if args.policy:
        return Path(args.policy)
    from embodia.policies.train import TrainConfig, train

    run = out / "policy_run"
    if (run / "policy" / "config.json").is_file() and not args.quick:
        return run / "policy"
    demos = out / "demos.zarr"
    if not (demos / "zarr.json").is_file():
        embodia.rollout(
            ENV, "expert", episodes=args.demos, seed=0, record=demos, env_kwargs=FAST, max_steps=80
        )
    train(
        TrainConfig(
            method="pixel_bc",
            dataset=str(demos),
            out=str(run),
            steps=args.policy_steps,
            batch_size=16 if args.quick else 64,
            eval_every=0,
            eval_episodes=0,
            method_config={"hidden": [32] if args.quick else [256, 256]},
        )
    )
    return run / "policy"


def evaluate(db, args: argparse.Namespace, out: Path) -> dict:
    """SRCC / PLCC with the execution score on held-out splits: the IQA model vs PSNR, SSIM, features."""
    results: dict[str, dict[str, list[float]]] = {}
    encoder_distance = db.perception  # 1 - cos of the policy encoder's pooled features
    for kind in ("references", "classes"):
        per_method: dict[str, list[tuple[float, float]]] = {}
        for seed in range(args.seeds):
            train_rows, test_rows = splits(db, kind, seed=seed)
            target = db.execution[test_rows]
            model, _ = train_iqa(db, train_rows, IQAModelConfig(steps=args.iqa_steps, seed=seed))
            scores = {
                "IQA model (trained on execution)": predict(
                    model, db.images[test_rows], db.reference_images(test_rows)
                ),
                **{f"{k} (torchmetrics)": v for k, v in baseline_scores(db, test_rows).items()},
                "encoder feature distance": encoder_distance[test_rows],
            }
            for name, values in scores.items():
                c = correlations(values, target)
                per_method.setdefault(name, []).append((c["srcc"], c["plcc"]))
            if kind == "references" and seed == 0:
                save_iqa_model(model, out / "iqa_model")
        results[kind] = {
            name: {
                "srcc": _nan_stat(np.nanmean, [v[0] for v in values]),
                "srcc_sd": _nan_stat(np.nanstd, [v[0] for v in values]),
                "plcc": _nan_stat(np.nanmean, [v[1] for v in values]),
                "plcc_sd": _nan_stat(np.nanstd, [v[1] for v in values]),
                "finite_seeds": int(np.isfinite([v[0] for v in values]).sum()),
            }
            for name, values in per_method.items()
        }
    return results


def _nan_stat(stat, values: list[float]) -> float:
    """``stat`` over the finite values; NaN when there are none (e.g. a constant execution score)."""
    finite = [v for v in values if np.isfinite(v)]
    return float(stat(finite)) if finite else float("nan")


def tables(db, results: dict, levels: dict, workers: int, build_minutes: float | None) -> dict[str, Table]:
    """The results file's tables: the database, the correlations with the execution score on held-out
    splits (mean and sd over split seeds), the correlations between levels, and the mean scores per class."""
    clean = float(np.nanmean(db.clean_success))
    database = Table(
        [
            Column("references", "references"),
            Column("classes", "classes"),
            Column("levels", "levels"),
            Column("images", "images"),
            Column("clean_success", "clean success from the references", ".0%"),
            Column("workers", "workers"),
            Column("build_minutes", "build minutes", ".1f"),
        ]
    )
    database.add(
        references=len(db.references),
        classes=len(db.class_names),
        levels=len(set(db.level.tolist())),
        images=len(db.images),
        clean_success=clean,
        workers=workers,
        build_minutes=build_minutes,
    )
    correlation = Table(
        [
            Column("held_out", "held out"),
            Column("score", "score"),
            Column("srcc", "SRCC with execution", "+.3f"),
            Column("srcc_sd", "± sd", ".3f"),
            Column("plcc", "PLCC with execution", "+.3f"),
            Column("plcc_sd", "± sd", ".3f"),
        ]
    )
    for kind, rows in results.items():
        for name, r in rows.items():
            correlation.add(
                held_out=kind,
                score=name,
                srcc=r["srcc"],
                srcc_sd=r["srcc_sd"],
                plcc=r["plcc"],
                plcc_sd=r["plcc_sd"],
            )
    between = Table([Column("levels", "levels"), Column("srcc", "SRCC over all images", "+.3f")])
    for pair, value in levels.items():
        between.add(levels=pair, srcc=value)
    classes = Table(
        [
            Column("class", "class"),
            Column("psnr", "PSNR (dB)", ".1f"),
            Column("ssim", "SSIM", ".2f"),
            Column("perception", "perception", ".3f"),
            Column("decision", "decision", ".3f"),
            Column("execution_drop", "execution drop", "+.2f"),
            Column("success", "success", ".0%"),
        ]
    )
    fidelity = baseline_scores(db)  # damage-oriented: -PSNR, 1 - SSIM
    for c, name in enumerate(db.class_names):
        rows = db.class_index == c
        classes.add(
            **{"class": name},
            psnr=-float(fidelity["psnr"][rows].mean()),
            ssim=1 - float(fidelity["ssim"][rows].mean()),
            perception=float(db.perception[rows].mean()),
            decision=float(db.decision[rows].mean()),
            execution_drop=float(np.nanmean(db.execution[rows])),
            success=float(np.nanmean(db.success[rows])),
        )
    return {"database": database, "correlations": correlation, "levels": between, "classes": classes}


def figure(db, path: Path, level: int = 4) -> None:
    """One reference, every class at ``level``, each titled with its three scores and the class's mean
    execution drop at that level over all references."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at_level = db.level == level
    spread = [np.nanstd(db.execution[at_level & (db.ref_index == r)]) for r in range(len(db.references))]
    ref = int(np.nanargmax(spread))  # the reference where the classes differ most in what they break
    columns = len(db.class_names) + 1
    fig, axes = plt.subplots(1, columns, figsize=(1.9 * columns, 2.4))
    axes[0].imshow(db.references[ref])
    axes[0].set_title("reference", fontsize=8)
    for c, name in enumerate(db.class_names):
        rows = np.flatnonzero((db.ref_index == ref) & (db.class_index == c) & (db.level == level))
        ax = axes[c + 1]
        if len(rows):
            i = rows[0]
            ax.imshow(db.images[i])
            mean = np.nanmean(db.execution[(db.class_index == c) & (db.level == level)])
            ax.set_title(
                f"{name} L{level}\nP {db.perception[i]:.2f} D {db.decision[i]:.2f} E {db.execution[i]:+.0f}\n"
                f"E over all refs {mean:+.2f}",
                fontsize=7,
            )
    for ax in axes:
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    torch.set_num_threads(1)
    if args.quick:
        args.demos, args.policy_steps, args.references, args.rollouts = 1, 4, 2, 1
        args.horizon, args.iqa_steps, args.seeds, args.workers = 4, 20, 1, 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    policy_folder = pixel_policy(args, out)
    policy = embodia.load_policy(policy_folder)
    config = IQADatabaseConfig(
        env_id=ENV,
        env_kwargs=FAST,
        references=args.references,
        reference_episodes=2 if args.quick else args.reference_episodes,
        reference_steps=6 if args.quick else 100,
        snapshots=2 if args.quick else 4,
        successful_only=not args.quick,
        classes=("blur", "noise", "occlusion") if args.quick else IQADatabaseConfig().classes,
        levels=(1, 5) if args.quick else IQADatabaseConfig().levels,
        rollouts=args.rollouts,
        horizon=args.horizon,
    )
    database = out / "database.zarr"
    build_minutes = None  # not measured when the database is reused
    if (database / "zarr.json").is_file() and not args.quick:
        db = load_database(database)
    else:
        tic = time.perf_counter()
        db = build_database(
            config, policy, policy.actor.observations.encoder, progress=not args.quick, workers=args.workers
        )
        build_minutes = (time.perf_counter() - tic) / 60
        save_database(db, database)
    results = evaluate(db, args, out)
    levels = level_correlations(db)
    result_tables = tables(db, results, levels, args.workers, build_minutes)
    text = "\n\n".join(table.markdown() for table in result_tables.values()) + "\n"
    if not args.quick:
        figure(db, Path(args.figure))
    summary = {
        "policy": str(policy_folder),
        "results": results,
        "level_correlations": levels,
        "images": len(db.images),
        "clean_success": float(np.nanmean(db.clean_success)),
        "build_minutes": build_minutes,
        "minutes": (time.perf_counter() - started) / 60,
    }
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    (out / "results.md").write_text(text)
    print(text)
    path = write_results(
        args.results,
        result_tables,
        name="perception/iqa",
        title="Embodied-IQA: what predicts the damage a distortion does to a pixel policy",
        seeds=range(args.seeds),
        data={**summary, "config": config, "split_seeds": args.seeds, "iqa_steps": args.iqa_steps},
    )
    print(f"results -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
