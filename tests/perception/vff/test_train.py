"""Low-res inputs, training (the loss falls, the PSF constant is trained), the baselines, evaluation and the
experiment's quick run."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import torch

from embodia.core.results import layout_differences, read_results
from embodia.perception.vff import (
    AUTHORS_PSF_K,
    FieldConfig,
    VFFError,
    VFFTrainConfig,
    evaluate,
    make_lowres,
    output_times,
    standard_methods,
    train_field,
    upscale_clip,
)
from embodia.perception.vff.train import to_tensor
from embodia.perception.video import render_videos
from tests.conftest import ROOT

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def clips() -> np.ndarray:
    return render_videos("tiny", count=4, seed=0).rgb


def test_lowres_is_area_filtered_and_frame_skipped(clips):
    video = to_tensor(clips)
    low, target = make_lowres(video, 4, 2)
    assert low.shape == (4, 3, 3, 8, 8) and target.shape == (4, 3, 5, 32, 32)
    assert torch.allclose(low[0, :, 1, 0, 0], video[0, :, 2, :4, :4].mean(dim=(-1, -2)), atol=1e-6)
    assert torch.equal(output_times(3, 2), torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0]))
    with pytest.raises(VFFError, match="too short"):
        make_lowres(video[:, :, :2], 2, 4)


def test_baselines_reproduce_input_frames_and_interpolate_linearly(clips):
    low, _ = make_lowres(to_tensor(clips[:1]), 2, 2)
    size, times = (16, 16), output_times(low.shape[2], 2)
    for method in ("nearest", "trilinear", "bicubic+linear"):
        out = upscale_clip(method, low[0], size, times)
        assert torch.allclose(out[0::2], low[0].permute(1, 0, 2, 3), atol=1e-6)  # same size, input times
        halfway = out[0] if method == "nearest" else (out[0] + out[2]) / 2  # nearest: the earlier frame
        assert torch.allclose(out[1], halfway, atol=1e-6)
    with pytest.raises(VFFError, match="unknown method"):
        upscale_clip("lanczos", low[0], size, times)


def test_loss_falls_on_a_tiny_configuration(clips):
    # one scale, every clip, whole frames: the loss is the same objective at every step (the authors' nearest
    # lookup: the cheaper variant; both are trained by the experiment's quick run)
    def config(skip: bool) -> VFFTrainConfig:
        return VFFTrainConfig(
            field=FieldConfig(bases=8, width=8, depth=2, skip=skip, interpolation="nearest"),
            steps=40,
            batch=4,
            crop=32,
            crop_frames=5,
            lr=1e-2,
            space_factors=(4.0,),
            time_factors=(2,),
        )

    _, alone = train_field(clips, config(skip=False))  # the Fourier field alone must learn the frames
    assert np.mean(alone[-5:]) < 0.6 * alone[0]
    model, losses = train_field(clips, config(skip=True))  # the residual over the nearest-upsampled input
    assert np.mean(losses[-5:]) < 0.9 * losses[0]
    assert abs(float(model.psf_k.detach()) - AUTHORS_PSF_K) > 1e-3  # the optimiser trains the PSF constant
    rows = evaluate(clips[:2], 2, 2, standard_methods(model))
    assert set(rows) == {"vff", "nearest", "trilinear", "bicubic+linear"}
    assert all(np.isfinite(r["psnr"]) and 0 < r["ssim"] <= 1 for r in rows.values())


def test_experiment_quick_run(tmp_path):
    spec = importlib.util.spec_from_file_location("_vff_experiment", ROOT / "scripts" / "vff_experiment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out, written = tmp_path / "r.json", tmp_path / "vff.json"
    argv = ["--quick", "--out", str(out), "--save", str(tmp_path / "model"), "--results", str(written)]
    assert module.main(argv) == 0
    results = json.loads(out.read_text())
    assert [r["variant"] for r in results["runs"]] == ["trilinear", "authors"]  # the slowest first
    assert all(len(r["upscaling"]) == 4 and len(r["psf"]) == 4 for r in results["runs"])
    # the committed results file (docs/guides/video.md) has the layout this script writes
    committed = read_results(ROOT / "results" / "perception" / "vff.json")
    assert layout_differences(read_results(written), committed) == []
    assert (tmp_path / "model" / "model.safetensors").is_file() and out.with_suffix(".png").is_file()
