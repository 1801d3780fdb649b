"""VER end to end at CPU scale: teachers -> distilled expert library -> pixel policies, against baselines.

    python scripts/ver_experiment.py            # results/perception/ver.json (~60 min on 2 cores)
    python scripts/ver_experiment.py --quick    # seconds: the pipeline runs (the tests run it)

1. Labelled frames from ``embodia/Visual-CubeSingle-v0`` and three teachers with different objectives
   (geometry, contrastive, state; :mod:`embodia.perception.teachers`) — reused from ``--teachers DIR``
   when ``scripts/ver_teachers.py`` wrote them there.
2. Distil the teachers into the VER expert library (:mod:`embodia.perception.ver.distill`).
3. Behaviour cloning from scripted-expert demonstrations with each encoder, same data and gradient steps
   (:mod:`embodia.policies.pixel_comparison`): a CNN from scratch, each frozen teacher, VER's frozen library
   with a trained patch-wise router with and without Curriculum Top-K Annealing (and, as an ablation,
   annealed with the distillation's router noise). Success over evaluation
   episodes, action error on held-out demonstrations, expert-usage entropy over training, ms per image.

Writes the results file (``--results``; tables ``encoders``, ``usage_entropy``, ``distillation``) that
docs/guides/perception.md renders, and prints its tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

import embodia
from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.perception.datasets import FrameDatasetConfig, load_frames, render_labelled_frames, save_frames
from embodia.perception.encoder_io import load_encoder, save_encoder
from embodia.perception.teachers import TEACHERS, TeacherTrainConfig, train_teacher
from embodia.perception.ver.distill import DistillConfig, distill, load_library, save_library
from embodia.perception.ver.encoder import VEREncoder
from embodia.perception.ver.model import VERConfig, VisionExpertLibrary
from embodia.policies.pixel_comparison import (
    PixelArm,
    PixelComparisonConfig,
    comparison_table,
    markdown,
    run_pixel_comparison,
)

ENV = "embodia/Visual-CubeSingle-v0"
FAST = {"shadow_size": 0, "multisamples": 0}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that everything runs")
    parser.add_argument("--out", default="runs/perception/ver", help="output folder")
    parser.add_argument("--teachers", default="runs/perception/ver_teachers", help="ver_teachers.py output")
    parser.add_argument("--frame-episodes", type=int, default=40, help="episodes of labelled frames")
    parser.add_argument("--teacher-steps", type=int, default=600)
    parser.add_argument("--distill-steps", type=int, default=1500)
    parser.add_argument("--demos", type=int, default=60, help="training demonstrations")
    parser.add_argument("--heldout", type=int, default=10, help="held-out demonstrations")
    parser.add_argument("--steps", type=int, default=1500, help="gradient steps of every policy")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--max-episode-steps", type=int, default=100, help="evaluation episode length")
    parser.add_argument("--workers", type=int, default=2, help="parallel runs on Ray (1: no Ray)")
    parser.add_argument("--results", default=None, help="results file (default: results/perception/ver.json)")
    args = parser.parse_args(argv)
    args.results = args.results or default_results_path("perception/ver", quick=args.quick)
    return args


def teachers_and_frames(args: argparse.Namespace, out: Path) -> tuple[dict, object, dict]:
    """The teachers and the frames they were trained on (reused from ``--teachers`` when complete)."""
    source = Path(args.teachers)
    if not args.quick and (source / "teachers.json").is_file() and (source / "frames.zarr").is_dir():
        frames = load_frames(source / "frames.zarr")
        teachers = {name: load_encoder(source / name) for name in TEACHERS}
        return teachers, frames, json.loads((source / "teachers.json").read_text())
    frames = render_labelled_frames(
        FrameDatasetConfig(
            episodes=2 if args.quick else args.frame_episodes, max_steps=20 if args.quick else 80
        )
    )
    save_frames(frames, out / "frames.zarr")
    teachers, report = {}, {}
    for name in TEACHERS:
        steps = 5 if args.quick else args.teacher_steps
        teacher, history = train_teacher(
            name, frames, TeacherTrainConfig(steps=steps, batch_size=16 if args.quick else 64)
        )
        save_encoder(teacher, out / "teachers" / name)
        teachers[name] = teacher
        report[name] = history[-1]
    return teachers, frames, report


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    torch.set_num_threads(1)
    if args.quick:
        args.demos, args.heldout, args.steps, args.seeds = 2, 1, 6, 1
        args.eval_episodes, args.max_episode_steps, args.distill_steps, args.workers = 1, 8, 5, 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    teachers, frames, teacher_report = teachers_and_frames(args, out)
    library_config = VERConfig(dim=32 if args.quick else 64, expert_hidden=64 if args.quick else 128, depth=4)
    history_file = out / "library" / "history.json"
    if not args.quick and history_file.is_file():  # a finished distillation is reused
        library, history = load_library(out / "library"), json.loads(history_file.read_text())
    else:
        library, history = distill(
            teachers,
            frames.rgb,
            library_config,
            DistillConfig(steps=args.distill_steps, batch_size=8 if args.quick else 32, seed=0),
            log_every=max(1, args.distill_steps // 10),
        )
        save_library(library, out / "library")
        history_file.write_text(json.dumps(history))
    anneal_steps = max(1, args.steps // 2)
    arms = [PixelArm("cnn", "cnn", label="CNN, trained from scratch")]
    for name in TEACHERS:
        folder = Path(args.teachers) / name
        if not (folder / "config.json").is_file() or args.quick:
            folder = out / "teachers" / name
        arms.append(
            PixelArm(f"teacher-{name}", str(folder), freeze_encoder=True, label=f"teacher {name} (frozen)")
        )
    for name, anneal, noise in (
        ("ver-anneal", True, 0.0),
        ("ver-fixed-k", False, 0.0),
        ("ver-anneal-noisy", True, 1.0),
    ):
        encoder = VEREncoder(
            library, router_k_min=1, anneal_steps=anneal_steps, anneal=anneal, router_noise=noise
        )
        save_encoder(encoder, out / "encoders" / name)
        schedule = (
            f"K annealed {encoder.experts} -> 1 over {anneal_steps} steps" if anneal else "K = 1 throughout"
        )
        label = f"VER library + router, {schedule}" + (", noisy router (scale 1)" if noise else "")
        arms.append(PixelArm(name, str(out / "encoders" / name), label=label))

    # diagnostic: the frozen library read through the state teacher's distillation router (no routing trained)
    frozen = VisionExpertLibrary(
        **{**library.encoder_config(), "default_router": "state"}
    )  # top-K as distilled
    frozen.load_state_dict(library.state_dict())
    save_encoder(frozen, out / "encoders" / "ver-library-state-router")
    arms.append(
        PixelArm(
            "ver-library-state-router",
            str(out / "encoders" / "ver-library-state-router"),
            freeze_encoder=True,
            label=f"VER library via the state teacher's router, K = {frozen.default_k} (frozen)",
        )
    )

    for name, count, seed in (("demos", args.demos, 0), ("heldout", args.heldout, 50_000)):
        path = out / f"{name}.zarr"
        if not (path / "zarr.json").is_file():
            embodia.rollout(
                ENV, "expert", episodes=count, seed=seed, record=path, env_kwargs=FAST, max_steps=80
            )
    config = PixelComparisonConfig(
        env_id=ENV,
        dataset=str(out / "demos.zarr"),
        heldout=str(out / "heldout.zarr"),
        out=str(out / "comparison"),
        env_kwargs={**FAST, "max_episode_steps": args.max_episode_steps},
        steps=args.steps,
        batch_size=16 if args.quick else 64,
        hidden=(32,) if args.quick else (256, 256),
        seeds=tuple(range(args.seeds)),
        eval_episodes=args.eval_episodes,
    )
    summary = run_pixel_comparison(arms, config, workers=args.workers)
    summary["distillation"] = {"first": history[0], "last": history[-1], "config": library_config.to_dict()}
    summary["teachers"] = teacher_report
    summary["minutes"] = (time.perf_counter() - started) / 60
    (out / "results.json").write_text(json.dumps(summary, indent=2, default=str))
    tables = {
        "encoders": comparison_table(summary),
        "usage_entropy": usage_table(summary),
        "distillation": distillation_table(history),
    }
    print(markdown(summary))
    print(tables["usage_entropy"].markdown() + "\n")
    print(tables["distillation"].markdown() + "\n")
    last = history[-1]
    print(f"distillation: loss {history[0]['loss']:.3f} -> {last['loss']:.3f}, MI {last['mi']:.3f} nats")
    path = write_results(
        args.results,
        tables,
        name="perception/ver",
        title="VER: pixel policies with each image encoder on Visual-CubeSingle",
        seeds=config.seeds,
        data={
            "config": summary["config"],
            "distillation": summary["distillation"],
            "teachers": teacher_report,
            "rows": summary["rows"],
            "minutes": summary["minutes"],
        },
    )
    print(f"results -> {path}")
    return 0


def usage_table(summary: dict) -> Table:
    """Expert-usage entropy (nats) of the VER routers at the first log, the middle and the end of training,
    averaged over seeds."""
    table = Table(
        [
            Column("encoder", "encoder"),
            Column("first", "usage entropy: first log", ".3f"),
            Column("middle", "middle", ".3f"),
            Column("last", "last", ".3f"),
        ]
    )
    for row in summary["rows"]:
        traces = [t for t in row["usage_entropy"] if t]
        if not traces:
            continue
        mean = [sum(t[i][1] for t in traces) / len(traces) for i in range(len(traces[0]))]
        table.add(encoder=row["label"], first=mean[0], middle=mean[len(mean) // 2], last=mean[-1])
    return table


def distillation_table(history: list[dict]) -> Table:
    """Each teacher's distillation loss (cosine + smooth-L1 on patches and pooled vector) at the last log."""
    table = Table([Column("teacher", "teacher"), Column("final_loss", "final distillation loss", ".2f")])
    for key, value in history[-1].items():
        if key.startswith("loss/"):
            table.add(teacher=key.removeprefix("loss/"), final_loss=value)
    return table


if __name__ == "__main__":
    raise SystemExit(main())
