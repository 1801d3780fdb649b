"""The Video Fourier Field: sampling shapes, the PSF factor and its learned constant, the authors' nearest-voxel
lookup and nearest skip on hand-made grids, the analytic single-basis field, save/load."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

import pytest
import torch
from safetensors.torch import save_file

from embodia.perception.vff import (
    AUTHORS_PSF_K,
    BOX_PSF_K,
    FieldConfig,
    VFFError,
    VideoFourierField,
    load_field,
    psf_factor,
    sample_field,
    save_field,
)
from embodia.perception.vff.model import nearest_voxel, upsample_input, voxel_phase

torch.set_num_threads(1)


def save_config(model: VideoFourierField) -> dict:
    return asdict(model.config)


def _small() -> VideoFourierField:
    return VideoFourierField(FieldConfig(bases=6, width=8, depth=2), seed=3)


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 7.0])
def test_field_samples_any_points_at_any_scale(scale):
    model = _small()
    video = torch.rand(2, 3, 4, 5, 7)
    coords = torch.rand(2, 37, 3) * torch.tensor([7.0, 5.0, 3.0])  # arbitrary (x, y, t), not on the grid
    out = model(video, coords, scale)
    assert out.shape == (2, 37, 3) and torch.isfinite(out).all()
    frames = model.render(video[:1], (11, 13), torch.tensor([0.0, 0.4, 2.9]))
    assert frames.shape == (3, 3, 11, 13) and frames.min() >= 0 and frames.max() <= 1


def test_psf_damps_high_frequencies_more_at_small_scales_and_vanishes_at_large_scales():
    omegas = torch.tensor([[0.5, 0.0, 3.0], [2.0, 1.0, 0.0], [4.0, -3.0, 1.0]])  # increasing |omega_xy|
    for scale in (0.5, 1.0, 2.0, 4.0):
        g = psf_factor(omegas, scale, BOX_PSF_K)
        assert (g[1:] < g[:-1]).all() and (g <= 1).all() and (g > 0).all()
    small, large = psf_factor(omegas, 1.0, BOX_PSF_K), psf_factor(omegas, 4.0, BOX_PSF_K)
    assert (small < large).all()
    assert torch.allclose(psf_factor(omegas, 1e6, BOX_PSF_K), torch.ones(3), atol=1e-9)
    # time frequency alone is never damped; the value is the documented Gaussian
    assert psf_factor(torch.tensor([[0.0, 0.0, 5.0]]), 0.1, BOX_PSF_K).item() == 1.0
    assert math.isclose(psf_factor(omegas[2:], 2.0, BOX_PSF_K).item(), math.exp(-25 / 24 / 4), rel_tol=1e-6)


@pytest.mark.parametrize("interpolation", ["nearest", "trilinear"])
def test_single_basis_field_is_the_known_sine_video(interpolation):
    """One frequency, constant (voxel-local) phase and weights: the rendered frames at the training scale are the
    analytic sine (times its PSF factor) plus the skip of a constant grey input. The frequency is a multiple of
    2 pi per voxel in x, y and t, so every voxel's local sinusoid is the same global one."""
    model = VideoFourierField(FieldConfig(bases=1, width=4, depth=1, interpolation=interpolation))
    omega = torch.tensor([2 * math.pi, -2 * math.pi, 2 * math.pi])
    phase, weights = 0.4, torch.tensor([0.3, -0.2, 0.1])
    with torch.no_grad():
        model.frequencies.copy_(omega[None])
        model.head.weight.zero_()
        model.head.bias.copy_(torch.cat([torch.tensor([phase]), weights]))
    video = torch.full((1, 3, 3, 4, 5), 0.5)
    scale, times = 2.0, torch.tensor([0.0, 0.5, 1.25, 2.0])
    frames = model.render(video, (8, 10), times)  # 2x the 4x5 input: scale 2
    ys, xs = (torch.arange(8) + 0.5) / 2, (torch.arange(10) + 0.5) / 2
    tt, yy, xx = torch.meshgrid(times, ys, xs, indexing="ij")
    damping = math.exp(-8 * math.pi**2 * AUTHORS_PSF_K / scale**2)
    wave = torch.sin(omega[0] * xx + omega[1] * yy + omega[2] * tt + phase) * damping
    expected = 0.5 + weights.view(1, 3, 1, 1) * wave[:, None]
    assert torch.allclose(frames, expected, atol=1e-4)


@pytest.mark.parametrize(
    "interpolation, local", [("nearest", True), ("nearest", False), ("trilinear", True), ("trilinear", False)]
)
def test_sample_field_on_hand_made_grids_is_the_analytic_sine(interpolation, local):
    """Any frequency: global phase phi0 (local phase phi0 + omega . c_v), unit weight, no PSF -> sin(omega.p + phi0);
    with the PSF the same sine times exp(-|omega_xy|^2 k / s^2)."""
    omega, phi0 = torch.tensor([1.3, -0.7, 0.9]), 0.4
    size = (3, 4, 5)
    phases = torch.full((1, 1, *size), phi0)
    if local:
        phases = phases + voxel_phase(omega[None], size)[None]
    coords = torch.tensor([[[0.3, 1.7, 0.2], [4.9, 0.1, 1.9], [2.5, 2.5, 1.0]]])
    truth = torch.sin(coords[0] @ omega + phi0)[:, None].expand(3, 3)
    ones = torch.ones(1, 3, *size)
    bare = sample_field(omega[None], phases, ones, coords, 1.0, None, local, interpolation)
    assert torch.allclose(bare[0], truth, atol=1e-5)
    damped = sample_field(omega[None], phases, ones, coords, 0.5, BOX_PSF_K, local, interpolation)
    assert torch.allclose(damped[0], truth * math.exp(-(1.3**2 + 0.7**2) / 24 / 0.25), atol=1e-5)


def test_nearest_lookup_reads_the_voxel_whose_centre_is_nearest():
    """The authors' lookup on a 2-frame, 2 x 3 grid: voxel (t, y, x) holds weight 100 t + 10 y + x + 1 and phase
    0.01 times that; omega = (1, 0, 2), so the field is W_v sin((x - x_v) + 2 (t - t_v) + phi_v), hand-computed."""
    size = (2, 2, 3)
    t, y, x = torch.meshgrid(torch.arange(2.0), torch.arange(2.0), torch.arange(3.0), indexing="ij")
    weights = (100 * t + 10 * y + x + 1)[None, None]  # (1, C=1, 2, 2, 3)
    phases = 0.01 * weights
    coords = torch.tensor([[[1.2, 0.7, 0.4], [2.9, 1.1, 0.5], [-0.5, 3.0, 1.7]]])
    # (1.2, 0.7, 0.4): pixel x 1 (centre 1.5), y 0, frame 0 -> relative (-0.3, 0.2, 0.4)
    # (2.9, 1.1, 0.5): x 2 (centre 2.5), y 1, halfway between frames: the earlier, 0 -> relative (0.4, -0.4, 0.5)
    # (-0.5, 3.0, 1.7): clamped to x 0, y 1, frame 1 -> relative (-1.0, 1.5, 0.7)
    index, centres = nearest_voxel(coords, size)
    assert index.tolist() == [[1, 5, 9]]
    assert torch.allclose(centres[0], torch.tensor([[1.5, 0.5, 0.0], [2.5, 1.5, 0.0], [0.5, 1.5, 1.0]]))
    expected = torch.tensor(
        [2 * math.sin(-0.3 + 0.8 + 0.02), 13 * math.sin(0.4 + 1.0 + 0.13), 111 * math.sin(-1.0 + 1.4 + 1.11)]
    )
    omega = torch.tensor([[1.0, 0.0, 2.0]])
    out = sample_field(omega, phases, weights, coords, 1.0, None, True, "nearest")
    assert out.shape == (1, 3, 1) and torch.allclose(out[0, :, 0], expected, atol=1e-5)


def test_nearest_skip_is_the_nearest_upsampled_input():
    """A field whose weights are zero renders its skip: in the authors' variant the input repeated 2 x 2 in space,
    and at t = 0.5 the earlier frame; in embodia's the trilinear interpolation (a mean between frames)."""
    video = torch.arange(24, dtype=torch.float32).view(1, 3, 2, 2, 2) / 24  # (B, C, T, H, W)
    coords = torch.tensor([[[0.2, 1.9, 0.0], [1.6, 0.3, 0.5], [1.0, 1.0, 0.51]]])
    picked = upsample_input(video, coords, "nearest")[0]
    assert torch.equal(picked, video[0, :, [0, 0, 1], [1, 0, 1], [0, 1, 1]].T)
    for interpolation in ("nearest", "trilinear"):
        model = VideoFourierField(FieldConfig(bases=2, width=4, depth=1, interpolation=interpolation))
        with torch.no_grad():
            model.head.weight.zero_()
            model.head.bias.zero_()
        frames = model.render(video, (4, 4), torch.tensor([0.0, 0.5, 1.0]))  # (3, 3, 4, 4)
        up = video[0].repeat_interleave(2, dim=-1).repeat_interleave(2, dim=-2).transpose(0, 1)
        if interpolation == "nearest":
            assert torch.equal(frames, torch.stack([up[0], up[0], up[1]]))
        else:
            assert torch.allclose(frames[1].mean(), (video[0, :, 0].mean() + video[0, :, 1].mean()) / 2)
            assert not torch.equal(frames[1], up[0])


def test_psf_constant_is_a_learned_parameter_starting_at_the_authors_value():
    model = _small()
    assert math.isclose(AUTHORS_PSF_K, 0.0596483, rel_tol=1e-5)  # sqrt(ln 4) / (2 pi^2)
    assert isinstance(model.psf_k, torch.nn.Parameter)
    assert float(model.psf_k.detach()) == pytest.approx(AUTHORS_PSF_K, rel=1e-6)
    assert any(p is model.psf_k for p in model.parameters())
    video, coords = torch.rand(1, 3, 3, 4, 4), torch.rand(1, 20, 3) * 3
    model(video, coords, 2.0).square().sum().backward()
    assert model.psf_k.grad is not None and model.psf_k.grad.abs() > 0
    fixed = VideoFourierField(FieldConfig(bases=6, width=8, depth=2, psf_k=BOX_PSF_K, learn_psf_k=False))
    assert all(p is not fixed.psf_k for p in fixed.parameters())
    assert float(fixed.psf_k) == pytest.approx(1 / 24)
    with pytest.raises(VFFError, match="interpolation must be one of"):
        FieldConfig(interpolation="cubic")


def test_save_and_load_round_trip(tmp_path):
    model = _small()
    save_field(model, tmp_path / "m")
    loaded = load_field(str(tmp_path / "m"))
    video, coords = torch.rand(1, 3, 3, 4, 4), torch.rand(1, 9, 3) * 3
    with torch.no_grad():
        assert torch.equal(model(video, coords, 2.0), loaded(video, coords, 2.0))
    with pytest.raises(VFFError, match="no config.json"):
        load_field(str(tmp_path / "missing"))
    # a folder saved before the authors' variant existed: trilinear, fixed k = 1/24, no psf_k in the weights
    legacy = {k: v for k, v in model.state_dict().items() if k != "psf_k"}
    field = {
        k: v for k, v in save_config(model).items() if k not in ("interpolation", "psf_k", "learn_psf_k")
    }
    (tmp_path / "m" / "config.json").write_text(json.dumps({"method": "vff", "field": field}))
    save_file(legacy, str(tmp_path / "m" / "model.safetensors"))
    old = load_field(str(tmp_path / "m"))
    assert old.config.interpolation == "trilinear" and float(old.psf_k) == pytest.approx(1 / 24)
    (tmp_path / "m" / "config.json").write_text('{"method": "other"}')
    with pytest.raises(VFFError, match="is not a VFF model"):
        load_field(str(tmp_path / "m"))
