"""VFF (Video Fourier Field, arXiv:2509.26325): the authors' nearest-voxel field against embodia's trilinear blend,
a learned against a fixed PSF constant, and the interpolators, on rendered clips, over seeds.

Variants (:data:`VARIANTS`), each trained once per seed on ``movi-lite`` clips (render seed 0) at space factors
{2, 4} and time factors {2, 4} and evaluated on held-out clips (render seed 1):

- ``authors``: the nearest voxel's coefficients, coordinates relative to its centre, the nearest-upsampled input
  as skip, the PSF constant ``k`` learned from sqrt(ln 4) / (2 pi^2) (the authors' code, cdadashovkhandan/v3vsr);
- ``trilinear``: the 8 neighbouring voxels' local fields blended trilinearly and a trilinear skip (embodia's
  variant), ``k`` learned likewise;
- ``authors, fixed k``: the authors' lookup with ``k`` fixed at 1/24 (embodia's former constant); only with
  ``--variants`` (three variants do not fit the ~12-minute budget on the loaded 2-core machine).

Tables: training (time, the learned ``k``, the final loss), PSNR / SSIM / time per frame at x2 and x4 in space
and time (mean and 95 % Student-t interval over seeds), the baselines, and the PSF ablation at and below the
training scale. Runs are independent tasks on Ray (``--workers``; 1: in this process). Saves a side-by-side
frame (input nearest, bicubic, VFF, ground truth) of the first seed's default variant and, with ``--save``,
that model's folder. Writes the results file (``--results``) that docs/guides/video.md renders and the raw
numbers (``--out``).

    python scripts/vff_experiment.py                  # the full run (~12 minutes on 2 loaded CPU cores)
    python scripts/vff_experiment.py --quick          # tiny clips, a few steps, one seed (a test runs this)
    python scripts/vff_experiment.py --save runs/perception/vff_model
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from embodia.core.results import (  # noqa: E402
    Column,
    Table,
    default_results_path,
    interval,
    write_results,
)

#: variant name -> (label on the page, FieldConfig fields); the first is the default variant
VARIANTS: dict[str, tuple[str, dict]] = {
    "authors": ("nearest voxel + nearest skip, learned k (the authors')", {"interpolation": "nearest"}),
    "trilinear": ("8 voxels blended trilinearly + trilinear skip, learned k", {"interpolation": "trilinear"}),
    "authors, fixed k": (
        "nearest voxel + nearest skip, fixed k = 1/24",
        {"interpolation": "nearest", "psf_k": 1.0 / 24.0, "learn_psf_k": False},
    ),
}
#: the variants a run trains by default (``--variants`` adds ``"authors, fixed k"``; it did not fit the budget)
DEFAULT_VARIANTS = ("authors", "trilinear")
#: (space, time) factors of the upscaling table
FACTORS = ((2, 2), (2, 4), (4, 2), (4, 4))
#: output sizes of the PSF ablation (x the input size) and their labels
PSF_SCALES = {2.0: "2x (training scale)", 1.0: "1x", 0.5: "0.5x", 0.25: "0.25x"}
BASELINES = ("nearest", "trilinear", "bicubic+linear")


def mean_interval(values: list[float]) -> dict[str, float]:
    """Mean and 95 % Student-t interval of the mean over seeds (one value: a point)."""
    n, mean = len(values), float(np.mean(values))
    if n < 2:
        return interval(mean, mean, mean)
    from scipy.stats import t

    half = float(t.ppf(0.975, n - 1)) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return interval(mean, mean - half, mean + half)


def clips(preset: str, count: int, seed: int) -> np.ndarray:
    from embodia.perception.video import render_videos

    return render_videos(preset, count=count, seed=seed).rgb


def run_variant(variant: str, seed: int, setting: dict, keep_model: bool) -> dict:
    """Train one variant with one seed and evaluate it: the numbers, and the weights when ``keep_model``."""
    from embodia.perception.vff import FieldConfig, VFFTrainConfig, evaluate, train_field, upscale_clip

    torch.set_num_threads(setting["threads"])
    train = clips(setting["preset"], setting["train_videos"], 0)
    test = clips(setting["preset"], setting["test_videos"], 1)
    field = FieldConfig(**setting["field"], **VARIANTS[variant][1])
    config = VFFTrainConfig(
        field=field, steps=setting["steps"], batch=setting["batch"], crop=setting["crop"], seed=seed
    )
    start = time.perf_counter()
    model, losses = train_field(train, config)
    train_seconds = time.perf_counter() - start
    tail = max(1, len(losses) // 10)

    def vff(psf: bool):
        return lambda low, size, times: upscale_clip("vff", low, size, times, model, psf=psf)

    upscaling = {
        f"{space},{time_factor}": evaluate(test, space, time_factor, {"vff": vff(True)})["vff"]
        for space, time_factor in FACTORS
    }
    psf = {}
    for out_space in PSF_SCALES:
        methods = {"without": vff(False)} if out_space == 2.0 else {"with": vff(True), "without": vff(False)}
        rows = {name: r["psnr"] for name, r in evaluate(test, 2, 2, methods, out_space=out_space).items()}
        rows.setdefault("with", upscaling["2,2"]["psnr"])  # at the training scale: the upscaling number
        psf[str(out_space)] = rows
    return {
        "variant": variant,
        "seed": seed,
        "train_seconds": train_seconds,
        "loss_first": float(np.mean(losses[:tail])),
        "loss_last": float(np.mean(losses[-tail:])),
        "psf_k": float(model.psf_k.detach()),
        "upscaling": upscaling,
        "psf": psf,
        "state": {k: v.detach().clone() for k, v in model.state_dict().items()} if keep_model else None,
    }


def _side_by_side(model, videos: np.ndarray, path: Path, space: int = 4, time_factor: int = 2) -> None:
    from PIL import Image, ImageDraw

    from embodia.perception.vff import make_lowres, output_times, upscale_clip
    from embodia.perception.vff.train import to_tensor

    low, target = make_lowres(to_tensor(videos[:1]), space, time_factor)
    times = output_times(low.shape[2], time_factor)
    index = min(time_factor * (low.shape[2] // 2) - 1, len(times) - 1)  # an interpolated frame
    size = tuple(target.shape[-2:])
    span = times[index : index + 1]
    panels = [
        upscale_clip(method, low[0], size, span, model)[0] for method in ("nearest", "bicubic+linear", "vff")
    ]
    panels.append(target[0][:, index])
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
    parser.add_argument("--quick", action="store_true", help="tiny clips, a few steps, one seed")
    parser.add_argument(
        "--out", default=None, help="raw numbers JSON (default runs/perception/vff_experiment.json)"
    )
    parser.add_argument(
        "--save", default=None, help="save the first seed's default-variant model folder here"
    )
    parser.add_argument("--image", default=None, help="side-by-side PNG (default docs/images/perception/...)")
    parser.add_argument("--train-videos", type=int, default=None)
    parser.add_argument("--test-videos", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="training seeds (default 0 1 2)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--workers", type=int, default=None, help="runs in parallel on Ray (1: no Ray)")
    parser.add_argument("--results", default=None, help="results file (default: results/perception/vff.json)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from embodia.perception.vff import FieldConfig, evaluate, save_field, standard_methods

    if args.quick:
        setting = {"preset": "tiny", "train_videos": 4, "test_videos": 2, "steps": 6, "crop": 16, "batch": 2}
        setting["field"] = {"bases": 8, "width": 8, "depth": 2}
        seeds, workers = [0], 1
    else:
        setting = {"preset": "movi-lite", "train_videos": 24, "test_videos": 6, "steps": 150, "crop": 24}
        setting.update(batch=4, field={})
        seeds, workers = [0, 1, 2], 2
    setting["train_videos"] = args.train_videos or setting["train_videos"]
    setting["test_videos"] = args.test_videos or setting["test_videos"]
    setting["steps"] = args.steps or setting["steps"]
    setting["threads"] = args.threads
    seeds = args.seeds if args.seeds is not None else seeds
    workers = args.workers or workers
    variants = args.variants or list(DEFAULT_VARIANTS)
    out = Path(
        args.out or ROOT / "runs" / "perception" / ("vff_quick.json" if args.quick else "vff_experiment.json")
    )
    default_image = ROOT / "docs" / "images" / "perception" / "vff_frame.png"
    image = Path(args.image) if args.image else (out.with_suffix(".png") if args.quick else default_image)

    first = variants[0]
    tasks = [(v, s, setting, v == first and s == seeds[0]) for s in seeds for v in variants]
    tasks.sort(key=lambda task: task[0] != "trilinear")  # the slowest runs first
    start = time.perf_counter()
    if workers > 1:
        import os

        from embodia.runner.parallel import map_tasks

        # Ray renices its workers to 15; the runs go at normal priority, as interactive work does
        os.environ.setdefault("RAY_worker_niceness", "0")

        def report(_: int, r: dict) -> None:
            psnr = r["upscaling"]["2,2"]["psnr"]
            print(
                f"{r['variant']} seed {r['seed']}: trained in {r['train_seconds']:.0f} s, x2/x2 {psnr:.2f} dB"
            )

        runs = map_tasks(run_variant, tasks, workers, on_result=report)
    else:
        runs = [run_variant(*task) for task in tasks]
    wall = time.perf_counter() - start
    print(f"{len(runs)} runs in {wall:.0f} s wall")

    test = clips(setting["preset"], setting["test_videos"], 1)
    baselines = {}
    for space, time_factor in FACTORS:
        baselines[f"{space},{time_factor}"] = evaluate(test, space, time_factor, standard_methods(None))
    area_method = {
        "area": standard_methods(None)["trilinear"]
    }  # the interpolators filter by area when shrinking
    area = {
        str(s): evaluate(test, 2, 2, area_method, out_space=s)["area"]["psnr"] for s in PSF_SCALES if s < 2.0
    }

    kept = next(r for r in runs if r["state"] is not None)
    from embodia.perception.vff import VideoFourierField

    model = VideoFourierField(FieldConfig(**setting["field"], **VARIANTS[first][1]))
    model.load_state_dict(kept["state"])
    model.eval()
    _side_by_side(model, test, image)
    print(f"side-by-side frame -> {image}")
    if args.save:
        save_field(
            model,
            args.save,
            {
                "trained_on": setting["preset"],
                "steps": setting["steps"],
                "space_factors": [2, 4],
                "time_factors": [2, 4],
            },
        )
        print(f"model -> {args.save}")

    results = {
        "setting": setting,
        "seeds": seeds,
        "variants": variants,
        "workers": workers,
        "wall_seconds": wall,
        "runs": [{k: v for k, v in r.items() if k != "state"} for r in runs],
        "baselines": baselines,
        "area": area,
        "render_seeds": {"train": 0, "heldout": 1},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    tables = results_tables(results)
    for key, table in tables.items():
        print(f"\n{key}\n\n{table.markdown()}")
    path = write_results(
        args.results or default_results_path("perception/vff", quick=args.quick),
        tables,
        name=None
        if args.results
        else "perception/vff",  # a --results file under results/ is named by its path
        title="VFF space-time super-resolution: the authors' nearest-voxel field, embodia's trilinear blend and "
        "interpolation on rendered clips",
        seeds=seeds,
        data=results,
    )
    print(f"raw numbers -> {out}, results -> {path}")
    return 0


def results_tables(results: dict) -> dict[str, Table]:
    """The results file's tables: training per variant, VFF per variant and factor, the baselines per factor,
    and the PSF ablation per variant at and below the training scale (mean [95 % interval] over seeds)."""
    runs: dict[str, list[dict]] = {}
    for r in results["runs"]:
        runs.setdefault(r["variant"], []).append(r)
    order = [v for v in results["variants"] if v in runs]
    training = Table(
        [
            Column("variant", "variant"),
            Column("setting", "lookup, skip, PSF constant"),
            Column("steps", "steps"),
            Column("train_s", "train s per run (one thread)", ".0f"),
            Column("psf_k", "k after training", ".3f"),
            Column("loss", "L1 at the end", ".4f"),
        ]
    )
    for variant in order:
        rs = runs[variant]
        training.add(
            variant=variant,
            setting=VARIANTS[variant][0],
            steps=results["setting"]["steps"],
            train_s=float(np.mean([r["train_seconds"] for r in rs])),
            psf_k=mean_interval([r["psf_k"] for r in rs]),
            loss=mean_interval([r["loss_last"] for r in rs]),
        )
    upscaling = Table(
        [
            Column("variant", "variant"),
            Column("space", "space"),
            Column("time", "time"),
            Column("vff_psnr", "VFF PSNR", ".2f"),
            Column("vff_ssim", "VFF SSIM", ".4f"),
            Column("gain", "VFF − bicubic (dB)", "+.2f"),
            Column("vff_ms", "VFF ms / frame", ".1f"),
        ]
    )
    for variant in order:
        for space, time_factor in FACTORS:
            key = f"{space},{time_factor}"
            bicubic = results["baselines"][key]["bicubic+linear"]["psnr"]
            rows = [r["upscaling"][key] for r in runs[variant]]
            upscaling.add(
                variant=variant,
                space=f"x{space}",
                time=f"x{time_factor}",
                vff_psnr=mean_interval([r["psnr"] for r in rows]),
                vff_ssim=mean_interval([r["ssim"] for r in rows]),
                gain=mean_interval([r["psnr"] - bicubic for r in rows]),
                vff_ms=1000 * float(np.mean([r["seconds_per_frame"] for r in rows])),
            )
    baselines = Table(
        [Column("space", "space"), Column("time", "time")]
        + [
            Column(f"{m}_{q}", f"{m.replace('+', ' + ')} {q.upper()}", fmt)
            for m in BASELINES
            for q, fmt in (("psnr", ".2f"), ("ssim", ".4f"))
        ]
    )
    for space, time_factor in FACTORS:
        rows = results["baselines"][f"{space},{time_factor}"]
        cells = {f"{m}_{q}": rows[m][q] for m in BASELINES for q in ("psnr", "ssim")}
        baselines.add(space=f"x{space}", time=f"x{time_factor}", **cells)
    psf = Table(
        [
            Column("variant", "variant"),
            Column("output", "output size (x input)"),
            Column("with_psf", "VFF with PSF", ".2f"),
            Column("without_psf", "VFF without PSF", ".2f"),
            Column("psf_gain", "PSF gain (dB)", "+.2f"),
            Column("area", "area downsampling", ".2f"),
        ]
    )
    for variant in order:
        for out_space, label in PSF_SCALES.items():
            rows = [r["psf"][str(out_space)] for r in runs[variant]]
            psf.add(
                variant=variant,
                output=label,
                with_psf=mean_interval([r["with"] for r in rows]),
                without_psf=mean_interval([r["without"] for r in rows]),
                psf_gain=mean_interval([r["with"] - r["without"] for r in rows]),
                area=results["area"].get(str(out_space)),
            )
    return {"training": training, "upscaling": upscaling, "baselines": baselines, "psf": psf}


if __name__ == "__main__":
    sys.exit(main())
