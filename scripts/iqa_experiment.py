"""Embodied-IQA at CPU scale: how well do IQA methods predict each level of what a distortion does to an agent?

    python scripts/iqa_experiment.py            # results/perception/iqa.json
    python scripts/iqa_experiment.py --quick    # seconds: the pipeline runs (the tests run it)

1. A pixel policy for ``embodia/Visual-CubeSingle-v0`` (``--policy FOLDER``, or behaviour cloning with a CNN
   from scripted-expert demonstrations, as in the VER experiment; reused from ``--out`` when there).
2. The database (:mod:`embodia.perception.iqa.database`): reference observations from the policy's clean
   episodes that it solved, the 30 distortion types of 7 families (:mod:`~embodia.perception.iqa.distortions`)
   at ``--levels``, scored at the four levels of the paper — perception (the policy's encoder features),
   cognition (answers of a visual question answerer trained on the simulator's ground truth, against its
   answers about the reference: :mod:`~embodia.perception.iqa.cognition`), decision (the policy's first
   action), execution (success of rollouts from the reference state with every observation distorted).
3. Language models at the cognition level (:mod:`~embodia.perception.iqa.answerers`): SmolLM2 reading the
   answerer's captions and, with ``--endpoint URL#MODEL``, an OpenAI-compatible vision endpoint on the images.
4. The benchmark: SRCC / PLCC of every IQA method (PSNR, SSIM, MS-SSIM, VIF from torchmetrics, the encoder
   feature distance, and a full-reference CNN trained on each level) with each level on held-out references
   and held-out distortion types, mean and 95 % t-interval over ``--seeds`` split seeds.

Writes the results file (``--results``) that docs/guides/perception.md renders, and prints its tables.
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
from embodia.core.results import Column, Table, default_results_path, interval, write_results
from embodia.perception.iqa import (
    CLASS_NAMES,
    FAMILY_OF,
    IQADatabaseConfig,
    IQAModelConfig,
    baseline_scores,
    build_database,
    correlations,
    level_correlations,
    predict,
    save_database,
    save_iqa_model,
    splits,
    t_interval,
    train_iqa,
)
from embodia.perception.iqa.answerers import (
    caption,
    changed_share,
    endpoint_answers,
    language_model_answers,
)
from embodia.perception.iqa.cognition import (
    QUESTIONS,
    AnswererConfig,
    accuracy,
    add_cognition,
    answer_probabilities,
    ground_truth,
    train_answerer,
)

ENV = "embodia/Visual-CubeSingle-v0"
FAST = {"shadow_size": 0, "multisamples": 0}
LEVEL_NAMES = ("perception", "cognition", "decision", "execution")
"""The paper's four levels, the columns of the benchmark tables."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that everything runs")
    parser.add_argument("--out", default="runs/perception/iqa", help="output folder")
    parser.add_argument("--policy", help="a pixel policy folder (default: train one with behaviour cloning)")
    parser.add_argument("--demos", type=int, default=60, help="demonstrations for the default policy")
    parser.add_argument("--policy-steps", type=int, default=1500, help="gradient steps of the default policy")
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 3, 5], help="distortion levels (1..5)")
    parser.add_argument("--rollouts", type=int, default=1, help="execution rollouts per distorted image")
    parser.add_argument("--horizon", type=int, default=40, help="steps of an execution rollout")
    parser.add_argument(
        "--reference-episodes",
        type=int,
        default=8,
        help="clean episodes to draw references from (solved ones)",
    )
    parser.add_argument("--iqa-steps", type=int, default=300, help="steps of each learned IQA model")
    parser.add_argument("--answerer-steps", type=int, default=400, help="steps of the question answerer")
    parser.add_argument("--seeds", type=int, default=3, help="split and model seeds")
    parser.add_argument(
        "--workers", type=int, default=2, help="references scored in parallel on Ray (1: no Ray)"
    )
    parser.add_argument(
        "--language-model", default="smollm2", help="local LM reading captions ('none': skip)"
    )
    parser.add_argument("--endpoint", help="an OpenAI-compatible vision endpoint, URL#MODEL (default: none)")
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


def cognition_level(db, frames: list, args: argparse.Namespace) -> tuple[dict, dict]:
    """Train the question answerer on the reference episodes' clean frames (the first three quarters; the
    last quarter measures its accuracy), score the database's cognition level, and ask the language models.
    Returns the answerer's summary and the per-image cognition scores of every answerer."""
    images = np.stack([f[0] for f in frames])
    truth = np.stack([f[1] for f in frames])
    cut = max(1, int(0.75 * len(images)))
    model, losses = train_answerer(
        images[:cut],
        truth[:cut],
        AnswererConfig(steps=args.answerer_steps, batch_size=32 if args.quick else 64),
    )
    held_out = accuracy(model, images[cut:], truth[cut:]) if cut < len(images) else {}
    changed = add_cognition(db, model)
    scores = {"answerer (probability moved)": db.cognition, "answerer (answers changed)": changed}
    ref_answers = np.stack([p.argmax(axis=1) for p in answer_probabilities(model, db.references)], axis=1)
    img_answers = np.stack([p.argmax(axis=1) for p in answer_probabilities(model, db.images)], axis=1)
    reading = {}
    if args.language_model != "none":
        from embodia.agents.llm import load_local_lm

        lm = load_local_lm(args.language_model)
        ref_lm = language_model_answers(lm, [caption(a) for a in ref_answers])
        img_lm = language_model_answers(lm, [caption(a) for a in img_answers])
        name = f"{args.language_model} on the answerer's caption"
        scores[name] = changed_share(ref_lm[db.ref_index], img_lm)
        reading[name] = float(
            (np.concatenate([ref_lm, img_lm]) == np.concatenate([ref_answers, img_answers])).mean()
        )
    if args.endpoint:
        from embodia.agents.llm import load_lm

        endpoint = load_lm(args.endpoint)
        ref_ep = endpoint_answers(endpoint, db.references)
        img_ep = endpoint_answers(endpoint, db.images)
        name = f"endpoint {args.endpoint} on the image"
        scores[name] = changed_share(ref_ep[db.ref_index], img_ep)
        reading[name] = float((ref_ep == ref_answers).mean())
    summary = {
        "frames": len(images),
        "train_frames": cut,
        "held_out_accuracy": held_out,
        "truth_share_yes": truth.mean(axis=0).tolist(),
        "final_loss": float(np.mean(losses[-20:])),
        "reading_agreement": reading,
    }
    return summary, scores


def benchmark(db, args: argparse.Namespace, out: Path) -> dict:
    """SRCC / PLCC of every method with every level on held-out splits, per split seed."""
    levels = {name: getattr(db, name) for name in LEVEL_NAMES}
    fidelity = baseline_scores(db, extended=True)  # per image: the split only picks the rows
    per: dict = {}
    for kind in ("references", "classes"):
        for seed in range(args.seeds):
            train_rows, test_rows = splits(db, kind, seed=seed)
            methods = {
                "PSNR": None,
                "SSIM": None,
                "MS-SSIM": None,
                "VIF": None,
                "encoder feature distance": db.perception[test_rows],
            }
            for key, name in (("psnr", "PSNR"), ("ssim", "SSIM"), ("ms_ssim", "MS-SSIM"), ("vif", "VIF")):
                methods[name] = fidelity[key][test_rows]
            learned = {}
            for level in LEVEL_NAMES:
                if np.isfinite(levels[level][train_rows]).sum() < 2:
                    continue
                model, _ = train_iqa(
                    db, train_rows, IQAModelConfig(steps=args.iqa_steps, seed=seed, target=level)
                )
                learned[level] = predict(model, db.images[test_rows], db.reference_images(test_rows))
                if kind == "references" and seed == 0 and level == "execution":
                    save_iqa_model(model, out / "iqa_model")
            for name, values in methods.items():
                for level in LEVEL_NAMES:
                    c = correlations(values, levels[level][test_rows])
                    per.setdefault((kind, name), {}).setdefault(level, []).append((c["srcc"], c["plcc"]))
            for trained_on, values in learned.items():
                c = correlations(values, levels[trained_on][test_rows])
                name = "IQA CNN trained on the level"
                per.setdefault((kind, name), {}).setdefault(trained_on, []).append((c["srcc"], c["plcc"]))
    return per


def _cell(values: list[float]):
    mean, low, high = t_interval(values)
    return interval(mean, low, high) if np.isfinite(mean) else None


def tables(db, per: dict, levels: dict, answerer: dict, cognition: dict, meta: dict) -> dict[str, Table]:
    """The results file's tables (module docstring)."""
    database = Table(
        [
            Column("references", "references"),
            Column("types", "distortion types"),
            Column("families", "families"),
            Column("levels", "levels"),
            Column("images", "images"),
            Column("clean_success", "clean success from the references", ".0%"),
            Column("horizon", "rollout steps"),
            Column("build_minutes", "build minutes", ".1f"),
            Column("minutes", "total minutes", ".1f"),
        ]
    )
    database.add(
        references=len(db.references),
        types=len(db.class_names),
        families=len({FAMILY_OF[n] for n in db.class_names}),
        levels=len(set(db.level.tolist())),
        images=len(db.images),
        clean_success=float(np.nanmean(db.clean_success)),
        horizon=db.config.horizon,
        build_minutes=meta["build_minutes"],
        minutes=meta["minutes"],
    )
    out = {"database": database}
    for metric, index in (("srcc", 0), ("plcc", 1)):
        table = Table(
            [Column("held_out", "held out"), Column("method", "method")]
            + [Column(level, level, "+.3f") for level in LEVEL_NAMES]
        )
        for (kind, name), by_level in per.items():
            table.add(
                held_out=kind,
                method=name,
                **{level: _cell([v[index] for v in by_level.get(level, [])]) for level in LEVEL_NAMES},
            )
        out[metric] = table
    between = Table([Column("levels", "levels"), Column("srcc", "SRCC over all images", "+.3f")])
    for pair, value in levels.items():
        between.add(levels=pair, srcc=value)
    out["levels"] = between
    families = Table(
        [Column("family", "family"), Column("types", "types")]
        + [
            Column(k, label, f)
            for k, label, f in (
                ("psnr", "PSNR (dB)", ".1f"),
                ("ssim", "SSIM", ".2f"),
                ("perception", "perception", ".3f"),
                ("cognition", "cognition", ".3f"),
                ("decision", "decision", ".3f"),
                ("execution_drop", "execution drop", "+.2f"),
            )
        ]
    )
    fidelity = baseline_scores(db)
    family_index = np.array([FAMILY_OF[db.class_names[c]] for c in db.class_index])
    for family in dict.fromkeys(FAMILY_OF[n] for n in db.class_names):
        rows = family_index == family
        families.add(
            family=family,
            types=", ".join(n for n in db.class_names if FAMILY_OF[n] == family),
            psnr=-float(fidelity["psnr"][rows].mean()),
            ssim=1 - float(fidelity["ssim"][rows].mean()),
            perception=float(db.perception[rows].mean()),
            cognition=float(np.nanmean(db.cognition[rows])),
            decision=float(db.decision[rows].mean()),
            execution_drop=float(np.nanmean(db.execution[rows]))
            if np.isfinite(db.execution[rows]).any()
            else None,
        )
    out["families"] = families
    questions = Table(
        [
            Column("question", "question"),
            Column("yes", "share 'yes' (ground truth)", ".0%"),
            Column("accuracy", "answerer accuracy, held-out clean frames", ".0%"),
        ]
    )
    for q, question in enumerate(QUESTIONS):
        questions.add(
            question=question.text,
            yes=answerer["truth_share_yes"][q],
            accuracy=answerer["held_out_accuracy"].get(question.key),
        )
    out["questions"] = questions
    answerers = Table(
        [
            Column("answerer", "cognition from"),
            Column("reads", "agreement with the answerer's answers", ".0%"),
            Column("with_answerer", "SRCC with the answerer's cognition", "+.3f"),
            Column("with_decision", "SRCC with decision", "+.3f"),
            Column("with_execution", "SRCC with execution", "+.3f"),
        ]
    )
    for name, values in cognition.items():
        answerers.add(
            answerer=name,
            reads=answerer["reading_agreement"].get(name),
            with_answerer=correlations(values, db.cognition)["srcc"],
            with_decision=correlations(values, db.decision)["srcc"],
            with_execution=correlations(values, db.execution)["srcc"],
        )
    out["answerers"] = answerers
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    torch.set_num_threads(1)
    if args.quick:
        args.demos, args.policy_steps, args.references, args.rollouts = 1, 4, 2, 1
        args.horizon, args.iqa_steps, args.seeds, args.workers = 4, 10, 1, 1
        args.answerer_steps, args.levels, args.language_model = 10, [1, 5], "none"
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
        classes=("blur", "noise", "occlusion") if args.quick else CLASS_NAMES,
        levels=tuple(args.levels),
        rollouts=args.rollouts,
        horizon=args.horizon,
    )
    frames: list = []
    tic = time.perf_counter()
    db = build_database(
        config,
        policy,
        policy.actor.observations.encoder,
        progress=not args.quick,
        workers=args.workers,
        observe=lambda image, info: frames.append((np.array(image), ground_truth(info))),
    )
    build_minutes = (time.perf_counter() - tic) / 60
    answerer, cognition = cognition_level(db, frames, args)
    save_database(db, out / "database.zarr")
    per = benchmark(db, args, out)
    levels = level_correlations(db)
    meta = {"build_minutes": build_minutes, "minutes": (time.perf_counter() - started) / 60}
    result_tables = tables(db, per, levels, answerer, cognition, meta)
    text = "\n\n".join(table.markdown() for table in result_tables.values()) + "\n"
    summary = {
        "policy": str(policy_folder),
        "answerer": answerer,
        "level_correlations": levels,
        "images": len(db.images),
        "clean_success": float(np.nanmean(db.clean_success)),
        **meta,
    }
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    (out / "results.md").write_text(text)
    print(text)
    path = write_results(
        args.results,
        result_tables,
        name="perception/iqa",
        title="Embodied-IQA: how well IQA methods predict each level of the damage a distortion does to an agent",
        seeds=range(args.seeds),
        data={**summary, "config": config, "split_seeds": args.seeds, "iqa_steps": args.iqa_steps},
    )
    print(f"results -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
