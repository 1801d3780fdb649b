"""VFF (Video Fourier Field, arXiv:2509.26325) vs trilinear and bicubic + linear interpolation on rendered clips.

Trains one field on ``movi-lite`` clips (seed 0) at space factors {2, 4} and time factors {2, 4}; evaluates on
held-out clips rendered with another seed: PSNR / SSIM / time per output frame at x2 and x4 in space and time,
and the PSF ablation when sampling *below* the input resolution (downscaling, where point sampling aliases).
Saves a side-by-side frame (input nearest, bicubic, VFF, ground truth) and, with ``--save``, the model folder.
Writes the results file (``--results``; tables ``training``, ``upscaling``, ``psf``) that docs/guides/video.md
renders, and the raw numbers (``--out``).

    python scripts/vff_experiment.py                  # the full run (~10 minutes on 2 CPU cores)
    python scripts/vff_experiment.py --quick          # tiny clips, a few steps (a test runs this)
    python scripts/vff_experiment.py --save runs/perception/vff_model
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from embodia.core.results import Column, Table, default_results_path, write_results  # noqa: E402

#: output sizes of the PSF ablation (x the input size) and their labels
PSF_SCALES = {2.0: "2x (training scale)", 1.0: "1x", 0.5: "0.5x", 0.25: "0.25x"}


def _table(title: str, rows: dict[str, dict[str, float]]) -> str:
    lines = [f"**{title}**", "", "| method | PSNR (dB) | SSIM | ms / output frame |", "|---|---:|---:|---:|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['psnr']:.2f} | {r['ssim']:.4f} | {1000 * r['seconds_per_frame']:.2f} |")
    return "\n".join(lines)


def _side_by_side(model, videos: np.ndarray, path: Path, space: int = 4, time_factor: int = 2) -> None:
    from PIL import Image, ImageDraw

    from embodia.perception.vff import make_lowres, output_times, upscale_clip
    from embodia.perception.vff.train import to_tensor

    low, target = make_lowres(to_tensor(videos[:1]), space, time_factor)
    times = output_times(low.shape[2], time_factor)
    index = min(time_factor * (low.shape[2] // 2) - 1, len(times) - 1)  # an interpolated frame
    size = tuple(target.shape[-2:])
    nearest_frame = low[0][:, round(float(times[index]))][None]
    nearest = torch.nn.functional.interpolate(nearest_frame, size=size, mode="nearest")[0]
    bicubic = upscale_clip("bicubic+linear", low[0], size, times[index : index + 1])[0]
    vff = upscale_clip("vff", low[0], size, times[index : index + 1], model)[0]
    truth = target[0][:, index]
    panels = [nearest, bicubic, vff, truth]
    names = [f"input x{space} nearest", "bicubic + linear", "VFF", "ground truth"]
    zoom = max(1, 256 // size[1])
    tiles = [
        Image.fromarray((p.permute(1, 2, 0).numpy() * 255 + 0.5).clip(0, 255).astype(np.uint8)).resize(
            (size[1] * zoom, size[0] * zoom), Image.NEAREST
        )
        for p in panels
    ]
    w, h = tiles[0].size
    canvas = Image.new("RGB", (4 * w + 30, h + 20), "white")
    draw = ImageDraw.Draw(canvas)
    for i, (tile, name) in enumerate(zip(tiles, names)):
        canvas.paste(tile, (i * (w + 10), 20))
        draw.text((i * (w + 10) + 2, 4), name, fill="black")
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny clips, a few steps")
    parser.add_argument(
        "--out", default=None, help="results JSON (default runs/perception/vff_experiment.json)"
    )
    parser.add_argument("--save", default=None, help="save the trained model folder here")
    parser.add_argument("--image", default=None, help="side-by-side PNG (default docs/images/perception/...)")
    parser.add_argument("--train-videos", type=int, default=None)
    parser.add_argument("--test-videos", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--results", default=None, help="results file (default: results/perception/vff.json)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from embodia.perception.vff import (
        FieldConfig,
        VFFTrainConfig,
        evaluate,
        save_field,
        standard_methods,
        train_field,
    )
    from embodia.perception.video import render_videos

    if args.quick:
        preset, n_train, n_test, steps = "tiny", 4, 2, 15
        field = FieldConfig(bases=8, width=8, depth=2)
        crop, batch = 16, 2
    else:
        preset, n_train, n_test, steps = "movi-lite", 48, 16, 1500
        field = FieldConfig()
        crop, batch = 32, 4
    n_train = args.train_videos or n_train
    n_test = args.test_videos or n_test
    steps = args.steps or steps
    out = Path(
        args.out or ROOT / "runs" / "perception" / ("vff_quick.json" if args.quick else "vff_experiment.json")
    )
    image = (
        Path(args.image)
        if args.image
        else (
            out.with_suffix(".png")
            if args.quick
            else ROOT / "docs" / "images" / "perception" / "vff_frame.png"
        )
    )

    start = time.perf_counter()
    train = render_videos(preset, count=n_train, seed=0).rgb
    test = render_videos(preset, count=n_test, seed=1).rgb
    render_seconds = time.perf_counter() - start
    print(
        f"rendered {n_train} train + {n_test} held-out {preset} clips {train.shape[1:]} in {render_seconds:.0f} s"
    )

    config = VFFTrainConfig(field=field, steps=steps, batch=batch, crop=crop)
    start = time.perf_counter()
    model, losses = train_field(
        train, config, log=lambda s, loss: print(f"step {s}: L1 {loss:.4f}") if s % 250 == 0 else None
    )
    train_seconds = time.perf_counter() - start
    k = max(1, len(losses) // 10)
    print(
        f"trained {steps} steps in {train_seconds:.0f} s: L1 {np.mean(losses[:k]):.4f} -> {np.mean(losses[-k:]):.4f}"
    )

    results: dict = {
        "preset": preset,
        "train_videos": n_train,
        "test_videos": n_test,
        "steps": steps,
        "train_seconds": train_seconds,
        "loss_first": float(np.mean(losses[:k])),
        "loss_last": float(np.mean(losses[-k:])),
        "upscaling": {},
        "psf": {},
    }
    methods = standard_methods(model)
    for space in (2, 4):
        for time_factor in (2, 4):
            rows = evaluate(test, space, time_factor, methods)
            results["upscaling"][f"space x{space}, time x{time_factor}"] = rows
            print("\n" + _table(f"space x{space}, time x{time_factor}", rows))

    from embodia.perception.vff import upscale_clip

    def vff(psf: bool):
        return lambda low, size, times: upscale_clip("vff", low, size, times, model, psf=psf)

    ablation = {
        "VFF with PSF": vff(True),
        "VFF without PSF": vff(False),
        "area (baseline)": methods["trilinear"],
    }
    for out_space in PSF_SCALES:
        rows = evaluate(test, 2, 2, ablation, out_space=out_space)
        label = f"input x2 down, output at {out_space:g} x input size ({'training scale' if out_space == 2 else 'below training scale'})"
        if out_space == 2:
            rows.pop("area (baseline)")
        results["psf"][label] = rows
        print("\n" + _table(label, rows))

    _side_by_side(model, test, image)
    print(f"\nside-by-side frame -> {image}")
    if args.save:
        save_field(
            model,
            args.save,
            {"trained_on": preset, "steps": steps, "space_factors": [2, 4], "time_factors": [2, 4]},
        )
        print(f"model -> {args.save}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    tables = results_tables(results)
    for key, table in tables.items():
        print(f"\n{key}\n\n{table.markdown()}")
    path = write_results(
        args.results or default_results_path("perception/vff", quick=args.quick),
        tables,
        name="perception/vff",
        title="VFF space-time super-resolution against interpolation on rendered clips",
        seeds=[config.seed],
        data={**results, "render_seeds": {"train": 0, "heldout": 1}},
    )
    print(f"raw numbers -> {out}, results -> {path}")
    return 0


def results_tables(results: dict) -> dict[str, Table]:
    """The results file's tables: the training run, PSNR / SSIM / time per frame of VFF and the
    interpolators at every factor, and the PSF ablation at and below the training scale."""
    training = Table(
        [
            Column("clips", "training clips"),
            Column("heldout", "held-out clips"),
            Column("steps", "steps"),
            Column("train_s", "train s (one thread)", ".0f"),
        ]
    )
    training.add(
        clips=results["train_videos"],
        heldout=results["test_videos"],
        steps=results["steps"],
        train_s=results["train_seconds"],
    )
    upscaling = Table(
        [
            Column("space", "space"),
            Column("time", "time"),
            Column("vff_psnr", "VFF PSNR", ".2f"),
            Column("vff_ssim", "VFF SSIM", ".4f"),
            Column("bicubic_psnr", "bicubic + linear PSNR", ".2f"),
            Column("bicubic_ssim", "bicubic + linear SSIM", ".4f"),
            Column("trilinear_psnr", "trilinear PSNR", ".2f"),
            Column("trilinear_ssim", "trilinear SSIM", ".4f"),
            Column("gain", "VFF − bicubic (dB)", "+.2f"),
            Column("vff_ms", "VFF ms / frame", ".2f"),
        ]
    )
    for space in (2, 4):
        for time_factor in (2, 4):
            rows = results["upscaling"][f"space x{space}, time x{time_factor}"]
            vff, bicubic, trilinear = rows["vff"], rows["bicubic+linear"], rows["trilinear"]
            upscaling.add(
                space=f"x{space}",
                time=f"x{time_factor}",
                vff_psnr=vff["psnr"],
                vff_ssim=vff["ssim"],
                bicubic_psnr=bicubic["psnr"],
                bicubic_ssim=bicubic["ssim"],
                trilinear_psnr=trilinear["psnr"],
                trilinear_ssim=trilinear["ssim"],
                gain=vff["psnr"] - bicubic["psnr"],
                vff_ms=1000 * vff["seconds_per_frame"],
            )
    psf = Table(
        [
            Column("output", "output size (x input)"),
            Column("with_psf", "VFF with PSF", ".2f"),
            Column("without_psf", "VFF without PSF", ".2f"),
            Column("psf_gain", "PSF gain (dB)", "+.2f"),
            Column("area", "area downsampling", ".2f"),
        ]
    )
    for rows, output in zip(results["psf"].values(), PSF_SCALES.values(), strict=True):
        with_psf, without = rows["VFF with PSF"]["psnr"], rows["VFF without PSF"]["psnr"]
        area = rows.get("area (baseline)")
        psf.add(
            output=output,
            with_psf=with_psf,
            without_psf=without,
            psf_gain=with_psf - without,
            area=area["psnr"] if area else None,
        )
    return {"training": training, "upscaling": upscaling, "psf": psf}


if __name__ == "__main__":
    sys.exit(main())
