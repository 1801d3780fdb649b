"""The Video Fourier Field: sampling shapes, the PSF factor, the analytic single-basis field, save/load."""

from __future__ import annotations

import math

import pytest
import torch

from embodia.perception.vff import (
    PSF_K,
    FieldConfig,
    VFFError,
    VideoFourierField,
    load_field,
    psf_factor,
    sample_field,
    save_field,
)
from embodia.perception.vff.model import voxel_phase

torch.set_num_threads(1)


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
        g = psf_factor(omegas, scale)
        assert (g[1:] < g[:-1]).all() and (g <= 1).all() and (g > 0).all()
    small, large = psf_factor(omegas, 1.0), psf_factor(omegas, 4.0)
    assert (small < large).all()
    assert torch.allclose(psf_factor(omegas, 1e6), torch.ones(3), atol=1e-9)
    # time frequency alone is never damped; the value is the documented Gaussian
    assert psf_factor(torch.tensor([[0.0, 0.0, 5.0]]), 0.1).item() == 1.0
    assert math.isclose(psf_factor(omegas[2:], 2.0).item(), math.exp(-25 * PSF_K / 4), rel_tol=1e-6)


def test_single_basis_field_is_the_known_sine_video():
    """One frequency, constant (voxel-local) phase and weights: the rendered frames at the training scale are the
    analytic sine (times its PSF factor) plus the skip of a constant grey input. The frequency is a multiple of
    2 pi per voxel in x, y and t, so every voxel's local sinusoid is the same global one."""
    model = VideoFourierField(FieldConfig(bases=1, width=4, depth=1))
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
    damping = math.exp(-8 * math.pi**2 * PSF_K / scale**2)
    wave = torch.sin(omega[0] * xx + omega[1] * yy + omega[2] * tt + phase) * damping
    expected = 0.5 + weights.view(1, 3, 1, 1) * wave[:, None]
    assert torch.allclose(frames, expected, atol=1e-4)


@pytest.mark.parametrize("local", [True, False])
def test_sample_field_on_hand_made_grids_is_the_analytic_sine(local):
    """Any frequency: global phase phi0 (local phase phi0 + omega . c_v), unit weight, no PSF -> sin(omega.p + phi0);
    with the PSF the same sine times exp(-|omega_xy|^2 k / s^2)."""
    omega, phi0 = torch.tensor([1.3, -0.7, 0.9]), 0.4
    size = (3, 4, 5)
    phases = torch.full((1, 1, *size), phi0)
    if local:
        phases = phases + voxel_phase(omega[None], size)[None]
    coords = torch.tensor([[[0.3, 1.7, 0.2], [4.9, 0.1, 1.9], [2.5, 2.5, 1.0]]])
    truth = torch.sin(coords[0] @ omega + phi0)[:, None].expand(3, 3)
    bare = sample_field(omega[None], phases, torch.ones(1, 3, *size), coords, 1.0, psf=False, local=local)
    assert torch.allclose(bare[0], truth, atol=1e-5)
    damped = sample_field(omega[None], phases, torch.ones(1, 3, *size), coords, 0.5, psf=True, local=local)
    assert torch.allclose(damped[0], truth * math.exp(-(1.3**2 + 0.7**2) * PSF_K / 0.25), atol=1e-5)


def test_save_and_load_round_trip(tmp_path):
    model = _small()
    save_field(model, tmp_path / "m")
    loaded = load_field(str(tmp_path / "m"))
    video, coords = torch.rand(1, 3, 3, 4, 4), torch.rand(1, 9, 3) * 3
    with torch.no_grad():
        assert torch.equal(model(video, coords, 2.0), loaded(video, coords, 2.0))
    with pytest.raises(VFFError, match="no config.json"):
        load_field(str(tmp_path / "missing"))
    (tmp_path / "m" / "config.json").write_text('{"method": "other"}')
    with pytest.raises(VFFError, match="is not a VFF model"):
        load_field(str(tmp_path / "m"))
