"""VER teachers: render labelled frames of the pixel cube task and train the three small vision teachers.

Renders ``--frames-episodes`` noisy-expert episodes of ``embodia/Visual-CubeSingle-v0`` with depth,
segmentation and state labels (saved as ``OUT/frames.zarr``), trains the geometry (depth + segmentation),
contrastive (SimCLR, arXiv:2002.05709) and state teachers on the first 90 % of the frames, saves each as an
encoder folder ``OUT/<name>`` (``embodia.perception.encoder_io``), measures how much they disagree (linear
CKA between their pooled features on the held-out 10 %, arXiv:1905.00414) and writes ``OUT/teachers.json``
and the results file (``--results``: tables ``teachers``, ``heldout``, ``cka``, ``run``) that
docs/guides/perception.md renders; prints its tables.

    python scripts/ver_teachers.py            # full run (~4.5 min on 2 shared CPU cores)
    python scripts/ver_teachers.py --quick    # 3 short episodes, 20 steps per teacher (< 40 s)
    python scripts/ver_teachers.py --frames runs/perception/ver_teachers/frames.zarr --out OTHER  # no render
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.perception.datasets import (
    CLASSES,
    FrameDatasetConfig,
    LabelledFrames,
    load_frames,
    render_labelled_frames,
    save_frames,
)
from embodia.perception.encoder_io import save_encoder
from embodia.perception.encoders import prepare
from embodia.perception.teachers import (
    OBJECTIVES,
    TEACHERS,
    TeacherTrainConfig,
    linear_cka,
    pooled_features,
    split_frames,
    train_teacher,
)

#: the held-out metrics the tables show: teacher -> (metric key, label)
HEADLINE = {
    "geometry": (
        ("depth_l1_m", "depth L1 (m)"),
        ("seg_pixel_acc", "segmentation pixel accuracy"),
        ("cube_pixel_recall", "cube pixel recall"),
    ),
    "contrastive": (("retrieval_top1", "two-view retrieval top-1"),),
    "state": (("state_r2", "state R² (mean over targets)"), ("phase_acc", "phase accuracy")),
}


def _forward_ms(model: torch.nn.Module, rgb: np.ndarray, repeats: int = 3) -> float:
    x = prepare(rgb, model)
    with torch.no_grad():
        model(x)
        start = time.perf_counter()
        for _ in range(repeats):
            model(x)
    return 1000.0 * (time.perf_counter() - start) / (repeats * len(x))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames-episodes", type=int, default=None, help="episodes to render (full: 40)")
    parser.add_argument("--steps", type=int, default=None, help="training steps per teacher (full: 600)")
    parser.add_argument("--out", type=Path, default=Path("runs/perception/ver_teachers"))
    parser.add_argument("--quick", action="store_true", help="tiny run for tests (< 40 s)")
    parser.add_argument("--frames", type=Path, default=None, help="use this saved frame store, do not render")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="results file (default: results/perception/ver_teachers.json)",
    )
    args = parser.parse_args(argv)
    args.results = args.results or default_results_path("perception/ver_teachers", quick=args.quick)
    torch.set_num_threads(1)

    if args.quick:
        frame_config = FrameDatasetConfig(
            episodes=args.frames_episodes or 3, max_steps=30, every=3, seed=args.seed
        )
        train_config = TeacherTrainConfig(steps=args.steps or 20, batch_size=16, log_every=5, seed=args.seed)
    else:
        frame_config = FrameDatasetConfig(
            episodes=args.frames_episodes or 40, max_steps=80, every=2, seed=args.seed
        )
        train_config = TeacherTrainConfig(steps=args.steps or 600, seed=args.seed)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    if args.frames is not None:
        frames = load_frames(args.frames)
        frame_config = frames.config
        render_seconds, fps = float("nan"), float("nan")
    else:
        frames = render_labelled_frames(frame_config, progress=not args.quick)
        render_seconds = time.perf_counter() - start
        save_frames(frames, out / "frames.zarr")
        fps = len(frames) / render_seconds
        print(f"rendered {len(frames)} frames in {render_seconds:.1f} s ({fps:.1f} frames/s)", flush=True)
    phase_counts = np.bincount(frames.phase.astype(int), minlength=4).tolist()
    class_share = [float((frames.segmentation == c).mean()) for c in range(4)]

    _, heldout = split_frames(frames)
    results: dict[str, dict] = {}
    features: dict[str, np.ndarray] = {}
    for kind in TEACHERS:
        teacher, history = train_teacher(kind, frames, train_config)
        folder = save_encoder(teacher, out / kind)
        features[kind] = pooled_features(teacher, heldout.rgb)
        results[kind] = {
            "kind": teacher.kind,
            "folder": str(folder),
            "objective": OBJECTIVES[kind],
            "params": int(sum(p.numel() for p in teacher.parameters())),
            "grid": int(teacher.grid),
            "dim": int(teacher.dim),
            "heldout": history[-1]["heldout"],
            "train_seconds": float(history[-1]["seconds"]),
            "ms_per_image": _forward_ms(teacher, heldout.rgb[:64]),
            "first_loss": history[0]["loss"],
            "last_loss": history[-1]["loss"],
            "history": history,
        }
        print(f"{kind}: loss {history[0]['loss']:.3f} -> {history[-1]['loss']:.3f}, "
              f"held-out {history[-1]['heldout']}, {history[-1]['seconds']:.1f} s", flush=True)  # fmt: skip
    cka = {a: {b: linear_cka(features[a], features[b]) for b in TEACHERS} for a in TEACHERS}

    summary = {
        "frames": {
            "count": len(frames),
            "heldout": len(heldout),
            "render_seconds": render_seconds,
            "frames_per_second": fps,
            "phase_counts": phase_counts,
            "class_share": class_share,
            "config": {k: v for k, v in vars(frame_config).items()},
        },
        "train_config": vars(train_config),
        "teachers": results,
        "cka": cka,
        "total_seconds": time.perf_counter() - start,
    }
    (out / "teachers.json").write_text(json.dumps(summary, indent=2) + "\n")

    tables = results_tables(summary, heldout)
    for key, table in tables.items():
        print(f"\n{key}\n\n{table.markdown()}")
    path = write_results(
        args.results,
        tables,
        name="perception/ver_teachers",
        title="VER's teachers: three small CNNs trained on labelled frames of Visual-CubeSingle",
        seeds=[args.seed],
        data={k: v for k, v in summary.items() if k != "teachers"}
        | {"teachers": {k: {f: v for f, v in r.items() if f != "history"} for k, r in results.items()}},
    )
    print(f"\nwrote {out / 'teachers.json'} and {path} ({summary['total_seconds']:.1f} s)")
    return 0


def results_tables(summary: dict, heldout: LabelledFrames) -> dict[str, Table]:
    """The results file's tables: the teachers, their held-out metrics (with the trivial baseline where
    there is one), the linear CKA of each pair, and the run (frames, minutes)."""
    results, cka = summary["teachers"], summary["cka"]
    teachers = Table(
        [
            Column("teacher", "teacher"),
            Column("objective", "objective"),
            Column("grid", "token grid"),
            Column("params", "params", ","),
            Column("train_s", "train s", ".0f"),
        ]
    )
    for kind, r in results.items():
        grid = f"{r['grid']}x{r['grid']}"
        teachers.add(
            teacher=kind, objective=r["objective"], grid=grid, params=r["params"], train_s=r["train_seconds"]
        )
    metrics = Table(
        [
            Column("teacher", "teacher"),
            Column("metric", "held-out metric"),
            Column("value", "value", ".3g"),
            Column("baseline", "baseline", ".2g"),
            Column("baseline_is", "baseline is"),
        ]
    )
    floor = float((heldout.segmentation == CLASSES.index("floor")).mean())  # calling every pixel floor
    baselines = {
        "seg_pixel_acc": (floor, "floor everywhere"),
        "retrieval_top1": (results.get("contrastive", {}).get("heldout", {}).get("chance"), "chance"),
    }
    for kind, r in results.items():
        for key, label in HEADLINE[kind]:
            baseline, what = baselines.get(key, (None, None))
            metrics.add(
                teacher=kind, metric=label, value=r["heldout"][key], baseline=baseline, baseline_is=what
            )
    pairs = Table([Column("pair", "teachers"), Column("cka", "linear CKA", ".2f")])
    names = list(cka)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pairs.add(pair=f"{a}-{b}", cka=cka[a][b])
    run = Table([Column("frames", "labelled frames", ","), Column("minutes", "minutes", ".1f")])
    run.add(frames=summary["frames"]["count"], minutes=summary["total_seconds"] / 60)
    return {"teachers": teachers, "heldout": metrics, "cka": pairs, "run": run}


if __name__ == "__main__":
    raise SystemExit(main())
