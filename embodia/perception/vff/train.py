"""Training and evaluation of the Video Fourier Field (arXiv:2509.26325) on rendered clips, and the baselines.

Low-resolution inputs are made from high-resolution clips ``(N, T, H, W, 3)`` by

- space: area (box) filtering by the space factor ``s`` (``F.interpolate(mode="area")``);
- time: frame skipping by the time factor ``f``: input frame ``j`` is frame ``j f``; frames after the last
  kept one are dropped (no extrapolation), so the targets are frames ``0 .. (T' - 1) f`` at ``t = i / f``.

Training: per step a batch of clips, a space factor and a time factor drawn from the configured sets, a random
query crop (``crop x crop`` output pixels on ``crop_frames`` random target frames), and the L1 loss

    L = mean |V(x, y, t; s) - I_HR(x, y, t)|

over the crop, ``V`` sampled at the output pixel centres with the PSF factor for scale ``s``.

Baselines: *nearest* (the nearest input pixel of the nearest input frame: the skip of the authors' ``"nearest"``
variant), *trilinear* (bilinear in space, linear in time: the skip of the ``"trilinear"`` variant) and *bicubic +
linear* (bicubic in space, clamped to [0, 1], then linear interpolation between the two nearest input frames).
Quality: PSNR and SSIM (torchmetrics, data range 1) over every target frame, averaged over clips.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from embodia.perception.vff.model import FieldConfig, VFFError, VideoFourierField

METHODS = ("vff", "nearest", "trilinear", "bicubic+linear")
"""What :func:`upscale_clip` can do."""


@dataclass
class VFFTrainConfig:
    """How to train a field."""

    field: FieldConfig = field(default_factory=FieldConfig)
    """The model's shape."""
    steps: int = 600
    """Optimiser steps."""
    batch: int = 4
    """Clips per step."""
    lr: float = 2e-3
    """Adam learning rate (cosine-decayed to 5 %)."""
    space_factors: tuple[float, ...] = (2.0, 4.0)
    """Space factors drawn per step (one model serves every scale)."""
    time_factors: tuple[int, ...] = (2, 4)
    """Time factors drawn per step."""
    crop: int = 32
    """Side of the random output crop, pixels (clipped to the frame)."""
    crop_frames: int = 3
    """Target frames in the crop (random, among those the input covers)."""
    clip: float = 1.0
    """Gradient-norm clipping (the field's products of weights and sines can blow up at high learning rates)."""
    seed: int = 0
    """Seed of the model's initialisation and the sampling of batches."""


def to_tensor(frames: np.ndarray) -> torch.Tensor:
    """uint8 ``(N, T, H, W, 3)`` -> float ``(N, 3, T, H, W)`` in [0, 1]."""
    return (
        torch.from_numpy(np.ascontiguousarray(frames)).float().div(255.0).permute(0, 4, 1, 2, 3).contiguous()
    )


def output_size(height: int, width: int, space: float) -> tuple[int, int]:
    """Output frame size for a space factor: ``(round(H s), round(W s))``, at least 1."""
    return max(1, round(height * space)), max(1, round(width * space))


def output_times(frames: int, time_factor: float) -> torch.Tensor:
    """Output times in input frames: ``i / f`` for ``i = 0 .. floor((T - 1) f)`` (endpoints kept)."""
    count = math.floor((frames - 1) * time_factor + 1e-6) + 1
    return torch.arange(count, dtype=torch.float32) / time_factor


def make_lowres(video: torch.Tensor, space: float, time_factor: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(N, 3, T, H, W)`` -> (low-res input ``(N, 3, T', h, w)``, the targets ``(N, 3, (T'-1) f + 1, H, W)``)."""
    frames = video.shape[2]
    kept = (frames - 1) // time_factor + 1
    if kept < 2:
        raise VFFError(f"a clip of {frames} frames is too short for time factor {time_factor}")
    target = video[:, :, : (kept - 1) * time_factor + 1]
    low = target[:, :, ::time_factor]
    n, c, t, h, w = low.shape
    small = output_size(h, w, 1.0 / space)
    flat = low.permute(0, 2, 1, 3, 4).reshape(n * t, c, h, w)
    flat = F.interpolate(flat, size=small, mode="area")
    return flat.reshape(n, t, c, *small).permute(0, 2, 1, 3, 4).contiguous(), target


def _temporal_linear(frames: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
    """``frames`` ``(T, C, H, W)`` at fractional ``times`` -> ``(len(times), C, H, W)`` (linear, clamped)."""
    last = frames.shape[0] - 1
    t = times.clamp(0, last)
    j0 = t.floor().long().clamp(max=max(last - 1, 0))
    j1 = (j0 + 1).clamp(max=last)
    w = (t - j0).view(-1, 1, 1, 1)
    return frames[j0] * (1 - w) + frames[j1] * w


def upscale_clip(
    method: str,
    low: torch.Tensor,
    size: tuple[int, int],
    times: torch.Tensor,
    model: VideoFourierField | None = None,
    psf: bool | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """One clip ``(3, T', h, w)`` -> ``(len(times), 3, *size)`` in [0, 1] by ``method`` (see :data:`METHODS`)."""
    if method == "vff":
        if model is None:
            raise VFFError("method 'vff' needs a model")
        with torch.no_grad():
            return model.render(low[None], size, times, scale=scale, psf=psf)
    if method not in METHODS:
        raise VFFError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    frames = low.permute(1, 0, 2, 3)  # (T', 3, h, w)
    if method == "nearest":  # halfway between two frames: the earlier one (as the field's nearest lookup)
        nearest = torch.ceil(times - 0.5).clamp(0, frames.shape[0] - 1).long()
        return F.interpolate(frames[nearest], size=size, mode="nearest-exact")
    mode = "bilinear" if method == "trilinear" else "bicubic"
    if size[0] < frames.shape[-2]:  # downscaling: 'area' for the baselines (what they would use)
        spatial = F.interpolate(frames, size=size, mode="area")
    else:
        spatial = F.interpolate(frames, size=size, mode=mode, align_corners=False)
    return _temporal_linear(spatial.clamp(0.0, 1.0), times)


def _query(
    target: torch.Tensor,
    space: float,
    time_factor: int,
    crop: int,
    crop_frames: int,
    rng: np.random.Generator,
):
    """A random crop: coords ``(B, Q, 3)`` in input units and the target colours ``(B, Q, 3)``."""
    n, _, frames, height, width = target.shape
    ch, cw = min(crop, height), min(crop, width)
    coords, colours = [], []
    for b in range(n):
        top, left = rng.integers(0, height - ch + 1), rng.integers(0, width - cw + 1)
        picked = torch.from_numpy(np.sort(rng.choice(frames, size=min(crop_frames, frames), replace=False)))
        ys = torch.arange(top, top + ch, dtype=torch.float32)
        xs = torch.arange(left, left + cw, dtype=torch.float32)
        tt, yy, xx = torch.meshgrid(picked.float(), ys, xs, indexing="ij")
        coords.append(
            torch.stack([(xx + 0.5) / space, (yy + 0.5) / space, tt / time_factor], -1).reshape(-1, 3)
        )
        patch = target[b][:, picked][:, :, top : top + ch, left : left + cw]  # (3, f, ch, cw)
        colours.append(patch.permute(1, 2, 3, 0).reshape(-1, 3))
    return torch.stack(coords), torch.stack(colours)


def train_field(
    videos: np.ndarray,
    config: VFFTrainConfig | None = None,
    log: Callable[[int, float], None] | None = None,
) -> tuple[VideoFourierField, list[float]]:
    """Train a field on uint8 clips ``(N, T, H, W, 3)``; returns the model (eval mode) and the loss per step."""
    config = config or VFFTrainConfig()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    data = to_tensor(videos)
    model = VideoFourierField(config.field, seed=config.seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / max(config.steps, 1)))
    )
    losses: list[float] = []
    model.train()
    for step in range(config.steps):
        space = float(rng.choice(config.space_factors))
        time_factor = int(rng.choice(config.time_factors))
        index = rng.choice(len(data), size=min(config.batch, len(data)), replace=False)
        low, target = make_lowres(data[torch.from_numpy(index)], space, time_factor)
        coords, colours = _query(target, space, time_factor, config.crop, config.crop_frames, rng)
        loss = (model(low, coords, space) - colours).abs().mean()
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimiser.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if log is not None:
            log(step, losses[-1])
    return model.eval(), losses


def evaluate(
    videos: np.ndarray,
    space: float,
    time_factor: int,
    methods: dict[str, Callable[[torch.Tensor, tuple[int, int], torch.Tensor], torch.Tensor]],
    out_space: float | None = None,
) -> dict[str, dict[str, float]]:
    """PSNR, SSIM and seconds per output frame of each method on uint8 clips ``(N, T, H, W, 3)``.

    Each method maps (low clip ``(3, T', h, w)``, output size, times) to ``(len(times), 3, *size)``. The inputs
    are made with ``space``; outputs are produced at ``out_space`` times the input size (default ``space``: back
    to the original resolution) and compared with the original frames area-filtered to that size."""
    from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

    data = to_tensor(videos)
    low, target = make_lowres(data, space, time_factor)
    out_space = space if out_space is None else out_space
    size = output_size(low.shape[-2], low.shape[-1], out_space)
    times = output_times(low.shape[2], time_factor)
    results: dict[str, dict[str, float]] = {}
    for name, method in methods.items():
        psnr, ssim, seconds, frames = [], [], 0.0, 0
        for clip in range(len(data)):
            truth = target[clip].permute(1, 0, 2, 3)  # (T, 3, H, W)
            if tuple(truth.shape[-2:]) != size:
                truth = F.interpolate(truth, size=size, mode="area")
            start = time.perf_counter()
            out = method(low[clip], size, times)
            seconds += time.perf_counter() - start
            frames += out.shape[0]
            psnr.append(float(peak_signal_noise_ratio(out, truth, data_range=1.0)))
            if min(size) >= 11:
                ssim.append(float(structural_similarity_index_measure(out, truth, data_range=1.0)))
        results[name] = {
            "psnr": float(np.mean(psnr)),
            "ssim": float(np.mean(ssim)) if ssim else float("nan"),
            "seconds_per_frame": seconds / max(frames, 1),
        }
    return results


def standard_methods(model: VideoFourierField | None) -> dict[str, Callable]:
    """``vff`` (when a model is given) and the baselines ``nearest``, ``trilinear``, ``bicubic+linear`` as
    :func:`evaluate` methods."""
    methods: dict[str, Callable] = {}
    if model is not None:
        methods["vff"] = lambda low, size, times: upscale_clip("vff", low, size, times, model)
    for name in METHODS[1:]:
        methods[name] = lambda low, size, times, name=name: upscale_clip(name, low, size, times)
    return methods
