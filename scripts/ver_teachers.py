"""VER teachers: render labelled frames of the pixel cube task and train the three small vision teachers.

Renders ``--frames-episodes`` noisy-expert episodes of ``embodia/Visual-CubeSingle-v0`` with depth,
segmentation and state labels (saved as ``OUT/frames.zarr``), trains the geometry (depth + segmentation),
contrastive (SimCLR, arXiv:2002.05709) and state teachers on the first 90 % of the frames, saves each as an
encoder folder ``OUT/<name>`` (``embodia.perception.encoder_io``), measures how much they disagree (linear
CKA between their pooled features on the held-out 10 %, arXiv:1905.00414) and writes ``OUT/teachers.json``;
prints a markdown table.

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

from embodia.perception.datasets import FrameDatasetConfig, load_frames, render_labelled_frames, save_frames
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

HEADLINE = {
    "geometry": ("depth_l1_m", "seg_pixel_acc"),
    "contrastive": ("retrieval_top1", "retrieval_top1_near"),
    "state": ("state_r2", "phase_acc"),
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
    args = parser.parse_args(argv)
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

    print("\n| teacher | objective | params | held-out metric | train s | ms / image |")
    print("|---|---|---|---|---|---|")
    for kind, r in results.items():
        metric = ", ".join(f"{k} {r['heldout'][k]:.3f}" for k in HEADLINE[kind])
        print(f"| {r['kind']} | {r['objective']} | {r['params']:,} | {metric} | {r['train_seconds']:.1f} "
              f"| {r['ms_per_image']:.2f} |")  # fmt: skip
    print("\nlinear CKA of pooled features (held-out frames)\n")
    print("| | " + " | ".join(TEACHERS) + " |")
    print("|---" * (len(TEACHERS) + 1) + "|")
    for a in TEACHERS:
        print(f"| {a} | " + " | ".join(f"{cka[a][b]:.3f}" for b in TEACHERS) + " |")
    print(f"\nwrote {out / 'teachers.json'} ({summary['total_seconds']:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
