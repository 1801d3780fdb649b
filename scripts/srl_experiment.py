"""SRL experiment: object discovery on rendered multi-object videos with and without the SRL losses.

Trains three variants at the same budget on ``render_videos("movi-lite", N, seed=0)`` and evaluates video
FG-ARI and mBO on held-out videos (seed=1), several seeds each:

- ``base``: feature reconstruction + slot-slot contrast across time (SlotContrast-style);
- ``reg``:  + the slot regulariser over the first 10 % of the steps;
- ``srl``:  + deblurring and denoising after 20 % of the steps (full SRL, the authors' schedule).

The frozen features come from a backbone trained here on the training videos (``--backbone``:
``autoencoder``, a ConvEncoder frame autoencoder, or ``geometry``, the geometry teacher's network trained
on the rendered depth; see ``embodia/perception/srl/backbones.py``), once (seed 0) and shared by every run,
so the variants differ only in the slot model's losses and seeds; ``--encoder`` uses a saved encoder folder
instead, or ``hf:DIR`` a user's DINOv2 saved with transformers (the authors' backbone). ``--pool`` averages
the token grid (2: 16x16 -> 8x8 patches). The reference table holds k-means on the same frozen features
(per video, K clusters): what the features alone give. Prints the tables, writes the results file
(``--results``; tables ``variants`` and ``reference``) that docs/guides/video.md renders, the raw runs
(``--out``) and a mask picture (frames, ground truth, k-means, each variant's decoder masks).

    python scripts/srl_experiment.py            # full run: 512 videos, 10k steps, 3 variants x 3 seeds
    # (~95 min on two cores in two parts, see below; the first table's budget: --train 32 --steps 1000)
    python scripts/srl_experiment.py --quick    # tiny preset, a few steps, 1 seed
    python scripts/srl_experiment.py --encoder hf:/path/to/dinov2-small   # a local DINOv2 (slow on CPU)

A table can be run in parts, e.g. one process per core: ``--variants base reg`` in one and ``--variants srl
--merge`` in another with the same ``--out`` (``--merge`` on both is fine): each part adds its runs to the raw
runs already in ``--out`` (a run of the same variant and seed replaces the old one; a part with other settings
is refused), and the results file and the picture are written from all of them. The seed-0 masks of each
variant for the picture are kept next to ``--out`` (``.masks.npz``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import torch

from embodia.core.results import Column, Table, default_results_path, interval, provenance, write_results
from embodia.perception.encoder_io import load_encoder
from embodia.perception.metrics import fg_ari, mbo, upsample_labels
from embodia.perception.srl import (
    VARIANTS,
    SRLConfig,
    evaluate,
    predict_masks,
    pretrain_encoder,
    train_srl,
    variant_config,
)
from embodia.perception.srl.backbones import (
    GeometryBackboneConfig,
    PooledEncoder,
    encoder_tokens,
    kmeans_labels,
    train_geometry_backbone,
)
from embodia.perception.video import render_videos
from embodia.policies.networks import cpu_has_bfloat16

PICTURE = Path("docs/images/perception/srl_masks.png")
TRAIN_VIDEOS, STEPS, BATCH, LR, POOL = 512, 10_000, 32, 1e-3, 2
"""The full run's budget: training videos, optimiser steps, clips per step, peak learning rate, token pooling."""
CHECKPOINTS, PRECISION = (1000, 2500, 5000, 7500), "bfloat16"
"""The full run's held-out evaluations along the way (table ``curve``) and its matrix-product precision."""
SLOT_DIM, DECODER_HIDDEN = 32, 64
"""The slot model's widths in the full run (the authors': 64 and 1024, on 384-wide DINOv2 features)."""
PALETTE = np.array(
    [[40, 40, 40], [230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48], [145, 30, 180],
     [70, 240, 240], [240, 50, 230], [210, 245, 60], [250, 190, 190], [0, 128, 128], [170, 110, 40]],
    dtype=np.uint8,
)  # fmt: skip


def colour(labels: np.ndarray) -> np.ndarray:
    return PALETTE[np.asarray(labels) % len(PALETTE)]


def save_picture(path: Path, rgb: np.ndarray, true: np.ndarray, preds: dict[str, np.ndarray]) -> None:
    """Rows: frames, ground truth, one row per variant; columns: a few frames of the first two videos."""
    from PIL import Image, ImageDraw

    t = rgb.shape[1]
    times = sorted({0, t // 3, 2 * t // 3, t - 1})
    videos = range(min(2, len(rgb)))

    def row(images: np.ndarray) -> np.ndarray:
        return np.concatenate([images[v, s] for v in videos for s in times], axis=1)

    rows = [row(rgb), row(colour(true))] + [row(colour(p)) for p in preds.values()]
    names = ["frames", "ground truth", *preds]
    scale, margin = 3, 110
    grid = np.concatenate(rows, axis=0)
    image = Image.fromarray(grid).resize((grid.shape[1] * scale, grid.shape[0] * scale), Image.NEAREST)
    canvas = Image.new("RGB", (image.width + margin, image.height), "white")
    canvas.paste(image, (margin, 0))
    draw = ImageDraw.Draw(canvas)
    h = rgb.shape[2] * scale
    for i, name in enumerate(names):
        draw.text((6, i * h + h // 2 - 6), name, fill="black")
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(path)


def summarise(runs: list[dict]) -> list[dict]:
    rows = []
    for variant in VARIANTS:
        mine = [r for r in runs if r["variant"] == variant]
        if not mine:
            continue
        row = {"variant": variant, "seeds": len(mine)}
        for key in ("fg_ari", "mbo", "fg_ari_attn", "slot_similarity", "mask_confidence", "train_s"):
            values = np.array([r[key] for r in mine])
            row[key] = {"mean": float(values.mean()), "min": float(values.min()), "max": float(values.max())}
        rows.append(row)
    return rows


def table(rows: list[dict]) -> Table:
    """FG-ARI and mBO (x100) as mean [min, max] over seeds, per variant."""

    def cell(stat: dict, scale: float = 100.0) -> dict[str, float]:
        return interval(stat["mean"] * scale, stat["min"] * scale, stat["max"] * scale)

    result = Table(
        [
            Column("variant", "variant"),
            Column("seeds", "seeds"),
            Column("fg_ari", "FG-ARI (decoder masks)", ".1f"),
            Column("mbo", "mBO (decoder masks)", ".1f"),
            Column("fg_ari_attn", "FG-ARI (attention masks)", ".1f"),
            Column("slot_similarity", "slot cosine", ".2f"),
            Column("mask_confidence", "decoder mask max", ".2f"),
            Column("train_s", "train s", ".0f"),
        ]
    )
    for r in rows:
        result.add(
            variant=r["variant"],
            seeds=r["seeds"],
            fg_ari=cell(r["fg_ari"]),
            mbo=cell(r["mbo"]),
            fg_ari_attn=cell(r["fg_ari_attn"]),
            slot_similarity=cell(r["slot_similarity"], 1.0),
            mask_confidence=cell(r["mask_confidence"], 1.0),
            train_s=r["train_s"]["mean"],
        )
    return result


CURVE_COLUMNS = [
    Column("variant", "variant"),
    Column("seed", "seed"),
    Column("steps", "steps"),
    Column("fg_ari", "FG-ARI (decoder masks)", ".1f"),
    Column("mbo", "mBO (decoder masks)", ".1f"),
    Column("fg_ari_attn", "FG-ARI (attention masks)", ".1f"),
    Column("slot_similarity", "slot cosine", ".2f"),
    Column("mask_confidence", "decoder mask max", ".2f"),
]
"""Held-out scores (x100; the two diagnostics as they are) during training, at ``--checkpoints``."""


def percent(scores: dict[str, float]) -> dict[str, float]:
    """Scores for a table: FG-ARI and mBO x100, the diagnostics (a cosine, a mask value) as they are."""
    return {k: v if k in ("slot_similarity", "mask_confidence") else 100 * v for k, v in scores.items()}


def reference_table(name: str, scores: dict[str, float], seconds: float) -> Table:
    """k-means on the frozen features (x100): what the backbone alone gives."""
    result = Table(
        [
            Column("features", "frozen features"),
            Column("fg_ari", "FG-ARI (k-means)", ".1f"),
            Column("mbo", "mBO (k-means)", ".1f"),
            Column("backbone_s", "backbone training s", ".0f"),
        ]
    )
    result.add(features=name, fg_ari=100 * scores["fg_ari"], mbo=100 * scores["mbo"], backbone_s=seconds)
    return result


def build_backbone(args: argparse.Namespace, train, config: SRLConfig, quick: bool):
    """(encoder, its description, training log) from ``--encoder`` or ``--backbone`` (+ ``--pool``)."""
    log: list[dict] = []
    if args.encoder:
        encoder, name = load_encoder(args.encoder).requires_grad_(False), f"encoder {args.encoder}"
    elif args.backbone == "geometry":
        steps = 5 if quick else args.backbone_steps
        encoder, log = train_geometry_backbone(train.rgb, train.depth, GeometryBackboneConfig(steps=steps))
        name = f"geometry teacher network, {steps} steps on depth + frames"
    else:
        encoder = pretrain_encoder(train.rgb, config, log)
        name = f"ConvEncoder autoencoder, {config.pretrain_steps} steps"
    if args.pool > 1:
        encoder = PooledEncoder(encoder, args.pool)
        name += f", tokens average-pooled {args.pool}x{args.pool}"
    return encoder, f"{name} ({encoder.grid}x{encoder.grid} patches of {encoder.dim})", log


MERGE_KEYS = ("preset", "train_videos", "test_videos", "steps", "backbone", "config")
"""What must agree between the parts of a merged table."""


def previous_part(
    out: Path, result: dict
) -> tuple[list[dict], list[dict], list[str], dict[str, np.ndarray]] | None:
    """The runs, curve rows, commands and seed-0 masks of the earlier parts in ``out`` (none: empty ones);
    ``None`` when its settings differ from ``result``'s or it is corrupt (the message is printed)."""
    if not out.exists():
        return [], [], [], {}
    try:
        earlier = json.loads(out.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {out} is not a readable runs file of this script ({exc}); remove it or choose --out",
              file=sys.stderr)  # fmt: skip
        return None
    differ = [
        k
        for k in MERGE_KEYS
        if json.dumps(earlier.get(k), sort_keys=True) != json.dumps(result[k], sort_keys=True)
    ]
    if differ:
        print(f"error: --merge: {out} holds runs with other settings ({', '.join(differ)}); "
              "use another --out or the same settings", file=sys.stderr)  # fmt: skip
        return None
    masks_path = out.with_suffix(".masks.npz")
    try:
        masks = dict(np.load(masks_path)) if masks_path.exists() else {}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"error: {masks_path} is corrupt ({exc}); remove it (the picture loses the earlier parts' rows)",
              file=sys.stderr)  # fmt: skip
        return None
    return earlier.get("runs", []), earlier.get("curve", []), earlier.get("commands", []), masks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny preset, a few steps, 1 seed")
    parser.add_argument("--train", type=int, default=TRAIN_VIDEOS, help="training videos (seed 0)")
    parser.add_argument("--test", type=int, default=16, help="held-out videos (seed 1)")
    parser.add_argument("--steps", type=int, default=STEPS, help="optimiser steps per run")
    parser.add_argument("--batch", type=int, default=BATCH, help="clips per step")
    parser.add_argument("--lr", type=float, default=LR, help="peak learning rate of the slot model")
    parser.add_argument("--slot-dim", type=int, default=SLOT_DIM, help="width of slots (the authors: 64)")
    parser.add_argument("--decoder-hidden", type=int, default=DECODER_HIDDEN,
                        help="hidden width of the MLP decoder (the authors: 1024)")  # fmt: skip
    parser.add_argument("--matmul-precision", choices=("float32", "bfloat16"), default=PRECISION,
                        help="bfloat16: autocast the training steps' matrix products (faster where the CPU "
                             "has AVX512-BF16 or AMX; elsewhere emulated and slower: use float32)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=3, help="seeds per variant")
    parser.add_argument("--backbone", choices=("autoencoder", "geometry"), default="autoencoder",
                        help="frozen backbone trained here on the training videos")  # fmt: skip
    parser.add_argument("--backbone-steps", type=int, default=300, help="training steps of the backbone")
    parser.add_argument("--pool", type=int, default=POOL, help="average-pool the token grid by this factor")
    parser.add_argument("--encoder", default=None,
                        help="a saved encoder folder, or hf:DIR for a local DINOv2 (replaces --backbone)")  # fmt: skip
    parser.add_argument(
        "--variants",
        nargs="*",
        choices=VARIANTS,
        default=list(VARIANTS),
        help="variants to train (none: only the k-means reference of the backbone)",
    )
    parser.add_argument("--checkpoints", type=int, nargs="*", default=list(CHECKPOINTS),
                        help="also evaluate on the held-out videos after these step counts (table 'curve')")  # fmt: skip
    parser.add_argument("--out", default="runs/perception/srl.json", help="raw runs (JSON)")
    parser.add_argument("--merge", action="store_true",
                        help="add this part's runs to those already in --out (same settings), see above")  # fmt: skip
    parser.add_argument("--results", default=None, help="results file (default: results/perception/srl.json)")
    parser.add_argument(
        "--picture", default=None, help=f"mask picture (default {PICTURE}; next to --out with --quick)"
    )
    args = parser.parse_args(argv)
    if args.matmul_precision == "bfloat16" and cpu_has_bfloat16() is False:
        print(
            "note: this CPU has no bfloat16 instructions; --matmul-precision float32 is faster here",
            file=sys.stderr,
        )
    torch.set_num_threads(1)
    os.environ.setdefault("MUJOCO_GL", "egl")
    out = Path(args.out)
    preset = "tiny" if args.quick else "movi-lite"
    n_train, n_test, steps, seeds = (
        (4, 2, 6, 1) if args.quick else (args.train, args.test, args.steps, args.seeds)
    )
    # --quick evaluates once half-way, so its results file has the full run's tables
    checkpoints = (steps // 2,) if args.quick else tuple(args.checkpoints)
    picture = Path(args.picture) if args.picture else (out.with_suffix(".png") if args.quick else PICTURE)
    config = SRLConfig(
        steps=steps,
        batch_size=args.batch,
        lr=args.lr,
        slot_dim=args.slot_dim,
        proj_dim=args.slot_dim,
        decoder_hidden=args.decoder_hidden,
        matmul_precision=args.matmul_precision,
        standardize=True,
        num_slots=4 if args.quick else 7,
        pretrain_steps=5 if args.quick else 200,
    )

    start = time.perf_counter()
    train = render_videos(preset, n_train, seed=0)
    test = render_videos(preset, n_test, seed=1)
    print(
        f"rendered {n_train} + {n_test} {preset} videos {train.rgb.shape[1:]} in {time.perf_counter() - start:.0f}s"
    )
    tic = time.perf_counter()
    encoder, backbone, backbone_log = build_backbone(args, train, config, args.quick)
    backbone_s = time.perf_counter() - tic
    kmeans = upsample_labels(
        kmeans_labels(encoder_tokens(encoder, test.rgb), config.num_slots), test.rgb.shape[2:4]
    )
    reference = {"fg_ari": fg_ari(test.masks, kmeans), "mbo": mbo(test.masks, kmeans)}
    print(
        f"{backbone} in {backbone_s:.0f}s; k-means FG-ARI {reference['fg_ari']:.3f} mBO {reference['mbo']:.3f}"
    )

    settings = {"preset": preset, "train_videos": n_train, "test_videos": n_test, "steps": steps,
                "backbone": backbone, "config": {k: v for k, v in vars(config).items()}}  # fmt: skip
    settings = json.loads(json.dumps(settings))
    if args.merge and previous_part(out, settings) is None:  # refused before training, read again at the end
        return 2
    runs, pictures, curve = [], {"k-means": kmeans[:2]}, Table(CURVE_COLUMNS)
    for variant in args.variants:
        for seed in range(seeds):
            cfg = variant_config(config, variant)
            cfg.seed = seed

            def checkpoint(done: int, model, variant=variant, seed=seed) -> dict[str, float]:
                scores = evaluate(model, encoder, test.rgb, test.masks)
                curve.add(variant=variant, seed=seed, steps=done, **percent(scores))
                print(
                    f"  {variant} seed {seed} after {done} steps: FG-ARI {scores['fg_ari']:.3f}", flush=True
                )
                return scores

            tic = time.perf_counter()
            model, _, log = train_srl(train.rgb, cfg, encoder, checkpoint, checkpoints)
            train_s = time.perf_counter() - tic
            metrics = evaluate(model, encoder, test.rgb, test.masks)
            runs.append({"variant": variant, "seed": seed, "train_s": train_s, **metrics, "log": log})
            print(
                f"{variant} seed {seed}: "
                + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items())
                + f" ({train_s:.0f}s)",
                flush=True,
            )
            if seed == 0:
                pictures[variant] = predict_masks(model, encoder, test.rgb[:2])

    earlier = previous_part(out, settings) if args.merge else ([], [], [], {})
    if earlier is None:
        return 2
    earlier_runs, earlier_curve, earlier_commands, earlier_masks = earlier
    mine = {(r["variant"], r["seed"]) for r in runs}
    runs = [r for r in earlier_runs if (r["variant"], r["seed"]) not in mine] + runs
    for row in earlier_curve:
        if (row["variant"], row["seed"]) not in mine:
            curve.add(**row)
    masks = {k: v for k, v in earlier_masks.items() if k not in pictures} | {
        k: v for k, v in pictures.items() if k != "k-means"
    }
    pictures = {"k-means": kmeans[:2]} | {v: masks[v] for v in VARIANTS if v in masks}
    seeds = len({r["seed"] for r in runs})
    commands = [*earlier_commands, provenance()["command"]]
    rows = summarise(runs)
    variants = table(rows)
    references = reference_table(backbone, reference, backbone_s)
    text = variants.markdown()
    print(
        f"\n{n_train} training / {n_test} held-out videos, {steps} steps, {seeds} seed(s) (x100; mean [min, max])\n"
    )
    print(text + "\n\n" + references.markdown())
    save_picture(picture, test.rgb, test.masks, pictures)
    result = {
        **settings,
        "seeds": seeds,
        "commands": commands,
        "backbone_log": backbone_log,
        "encoder_pretrain_s": backbone_s,
        "kmeans": reference,
        "total_s": time.perf_counter() - start,
        "summary": rows,
        "runs": runs,
        "table": text,
        "picture": str(picture),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result | {"curve": curve.rows}, indent=1))
    np.savez_compressed(out.with_suffix(".masks.npz"), **masks)
    path = write_results(
        args.results or default_results_path("perception/srl", quick=args.quick),
        {"variants": variants, "reference": references} | ({"curve": curve} if len(curve.rows) else {}),
        name=None if args.results else "perception/srl",
        title="SRL: object discovery on movi-lite videos with and without the SRL losses",
        command=" ; ".join(commands),
        seeds=sorted({r["seed"] for r in runs}),
        data={k: v for k, v in result.items() if k not in ("runs", "table")}
        | {"runs": [{k: v for k, v in r.items() if k != "log"} for r in runs]},
    )
    print(f"\nwrote {out}, {path} and {picture} ({result['total_s']:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
