"""The Video Fourier Field and its encoder (Becker, Erbach, Narnhofer, Schindler, "Continuous Space-Time Video
Super-Resolution with 3D Fourier Fields", ICLR 2026, arXiv:2509.26325).

Coordinates are continuous and measured in units of the *low-resolution* input: ``x, y`` in input pixels (pixel
``i`` covers ``[i, i + 1)``, its centre is ``i + 0.5``) and ``t`` in input frames (frame ``j`` is at ``t = j``).
The video is the field

    V_c(x, y, t) = skip_c(x, y, t) + sum_k W_ck(x, y, t) * g_k(s) * sin(omega_k . [x, y, t] + phi_k(x, y, t))

- ``omega_k`` (``K`` of them, ``(K, 3)``, radians per input pixel / frame) are learned and shared by every video
  and every position;
- phases are relative to each voxel's centre ``c_v`` (``config.local_phase``, default; the authors' design,
  whose code evaluates the field relative to the *nearest* voxel centre): the field near ``p`` is here
  the trilinear blend ``sum_v a_v(p) sum_k W_vk g_k(s) sin(omega_k . (p - c_v) + phi_vk)`` of the 8 nearest
  voxels' local fields, which a translation-equivariant encoder can express (with one global phase it would have
  to output ``-omega . c_v``, which depends on absolute position); it is computed exactly by interpolating the
  quadrature pair ``W cos(phi - omega . c_v)``, ``W sin(phi - omega . c_v)`` (:func:`sample_field`). With
  ``local_phase=False`` phases and weights are interpolated directly, the formula above taken literally;
- the encoder (3-D convolutions with dilated spatial kernels: a large spatio-temporal receptive field) maps the
  input clip to, per input voxel, ``K`` phases ``phi_k`` and ``3 K`` mixing weights ``W_ck`` (one per output
  channel); between voxel centres they are interpolated trilinearly (``grid_sample``, border padding);
- ``g_k(s) = exp(-|omega_k,xy|^2 * k_psf / s^2)`` is the analytic Gaussian point-spread-function factor for
  sampling at spatial scale ``s`` (output pixels per input pixel). A sinusoid convolved with a Gaussian of
  standard deviation ``sigma`` is the same sinusoid times ``exp(-|omega|^2 sigma^2 / 2)``; an output pixel of
  width ``1/s`` (a box) has variance ``1 / (12 s^2)``, and the Gaussian of that variance gives
  ``k_psf = 1/24`` (:data:`PSF_K`; the authors learn this constant, initialised at sqrt(ln 4) / (2 pi^2)
  ~ 0.060). As ``s -> inf`` the factor tends to 1 (no damping); below the
  training scale it removes the frequencies the output grid cannot hold (anti-aliasing);
- ``skip`` is the input video interpolated trilinearly at ``(x, y, t)`` (the authors add their field to the
  nearest-upsampled input; the Fourier part then only models the residual).

The time axis is not filtered (the PSF acts in space, as in the paper's formulation).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from embodia.core.errors import EmbodiaError

PSF_K = 1.0 / 24.0
"""``k`` in the PSF factor ``exp(-|omega_xy|^2 k / s^2)``: the Gaussian with the variance of a ``1/s`` box."""


class VFFError(EmbodiaError):
    """A VFF model or video that cannot be used (one line)."""


@dataclass
class FieldConfig:
    """The model's shape (saved as ``config.json`` next to the weights)."""

    bases: int = 32
    """``K``: how many sinusoids (shared learned frequencies)."""
    width: int = 32
    """Channels of the 3-D convolutional encoder."""
    depth: int = 5
    """Residual 3-D conv blocks in the encoder (spatial dilations cycle 1, 2, 4)."""
    freq_init_xy: float = 4.0
    """Standard deviation of the initial spatial frequencies, radians per input pixel."""
    freq_init_t: float = 1.0
    """Standard deviation of the initial temporal frequencies, radians per input frame."""
    psf: bool = True
    """Multiply each basis by the Gaussian PSF factor when sampling."""
    skip: bool = True
    """Add the trilinearly interpolated input to the field."""
    local_phase: bool = True
    """Phases relative to each voxel's centre, blended trilinearly (see :func:`sample_field`); False: one global
    sinusoid with interpolated phase and weight."""


def psf_factor(frequencies: torch.Tensor, scale: float | torch.Tensor, k: float = PSF_K) -> torch.Tensor:
    """``exp(-|omega_xy|^2 k / s^2)`` per basis: ``frequencies`` ``(K, 3)`` (x, y, t), ``scale`` > 0."""
    squared = frequencies[..., 0] ** 2 + frequencies[..., 1] ** 2
    return torch.exp(-squared * k / (torch.as_tensor(scale, dtype=frequencies.dtype) ** 2))


def normalised_grid(coords: torch.Tensor, size: tuple[int, int, int]) -> torch.Tensor:
    """``coords`` ``(B, Q, 3)`` as (x, y, t) in input units -> ``grid_sample``'s ``(B, 1, 1, Q, 3)`` in [-1, 1]
    (``align_corners=False``: input pixel ``i`` spans ``[i, i+1)``; frame ``j`` sits at ``t = j``)."""
    frames, height, width = size
    x = 2.0 * coords[..., 0] / width - 1.0
    y = 2.0 * coords[..., 1] / height - 1.0
    t = 2.0 * (coords[..., 2] + 0.5) / frames - 1.0
    return torch.stack([x, y, t], dim=-1)[:, None, None]


def interpolate(volume: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
    """Trilinear interpolation of ``volume`` ``(B, C, T, H, W)`` at ``coords`` ``(B, Q, 3)`` -> ``(B, Q, C)``."""
    grid = normalised_grid(coords, tuple(volume.shape[2:]))
    sampled = F.grid_sample(volume, grid, mode="bilinear", padding_mode="border", align_corners=False)
    return sampled[:, :, 0, 0].transpose(1, 2)


def voxel_phase(frequencies: torch.Tensor, size: tuple[int, int, int]) -> torch.Tensor:
    """``omega_k . c_v`` for every voxel centre ``c_v = (j + 0.5, i + 0.5, t)``: ``(K, T, H, W)``."""
    frames, height, width = size
    t = torch.arange(frames, dtype=frequencies.dtype).view(-1, 1, 1)
    y = (torch.arange(height, dtype=frequencies.dtype) + 0.5).view(1, -1, 1)
    x = (torch.arange(width, dtype=frequencies.dtype) + 0.5).view(1, 1, -1)
    w = frequencies.view(-1, 3, 1, 1, 1)
    return w[:, 0] * x + w[:, 1] * y + w[:, 2] * t


def sample_field(
    frequencies: torch.Tensor,
    phases: torch.Tensor,
    weights: torch.Tensor,
    coords: torch.Tensor,
    scale: float,
    psf: bool = True,
    local: bool = True,
) -> torch.Tensor:
    """The Fourier part of the field at ``coords``.

    ``local=False``: phases and weights are interpolated and the global sinusoid is evaluated,
    ``sum_k W_k(p) sin(omega_k . p + phi_k(p))``. ``local=True`` (default): each voxel's phase is relative to
    its own centre ``c_v``, so a translation-equivariant encoder can place the same pattern anywhere; the 8
    neighbouring voxels' local fields are blended with the trilinear weights ``a_v(p)``,

        sum_v a_v(p) sum_k W_vk sin(omega_k . (p - c_v) + phi_vk)
          = sum_k sin(omega_k . p) A_k(p) + cos(omega_k . p) B_k(p),

    with ``A, B`` the trilinear interpolation of ``W cos(phi - omega . c_v)`` and ``W sin(phi - omega . c_v)``
    (the quadrature pair: exact, and one interpolation instead of eight field evaluations).

    Args:
        frequencies: ``(K, 3)`` omegas (x, y, t).
        phases: ``(B, K, T, H, W)`` per-voxel phases.
        weights: ``(B, C*K, T, H, W)`` per-voxel weights (channel-major: ``[c*K + k]``).
        coords: ``(B, Q, 3)`` query points (x, y, t) in input units.
        scale: output pixels per input pixel (the PSF's ``s``).
        psf: apply the PSF factor.
        local: phases relative to each voxel's centre (see above).

    Returns:
        ``(B, Q, C)``.
    """
    bases = frequencies.shape[0]
    angle = coords @ frequencies.T  # (B, Q, K)
    damping = psf_factor(frequencies, scale) if psf else torch.ones(bases, dtype=frequencies.dtype)
    if not local:
        phi = interpolate(phases, coords)  # (B, Q, K)
        w = interpolate(weights, coords)  # (B, Q, C*K)
        w = w.reshape(*w.shape[:2], -1, bases)  # (B, Q, C, K)
        return torch.einsum("bqck,bqk->bqc", w, torch.sin(angle + phi) * damping)
    n, _, *size = phases.shape
    shifted = phases - voxel_phase(frequencies, tuple(size))  # (B, K, T, H, W)
    w = weights.reshape(n, -1, bases, *size)  # (B, C, K, T, H, W)
    pair = torch.cat([w * torch.cos(shifted)[:, None], w * torch.sin(shifted)[:, None]], dim=1)
    pair = interpolate(pair.reshape(n, -1, *size), coords).reshape(*coords.shape[:2], 2, -1, bases)
    return torch.einsum("bqck,bqk->bqc", pair[:, :, 0], torch.sin(angle) * damping) + torch.einsum(
        "bqck,bqk->bqc", pair[:, :, 1], torch.cos(angle) * damping
    )


class _Block(nn.Module):
    def __init__(self, width: int, dilation: int) -> None:
        super().__init__()
        pad = (1, dilation, dilation)
        self.conv1 = nn.Conv3d(width, width, 3, padding=pad, dilation=(1, dilation, dilation))
        self.conv2 = nn.Conv3d(width, width, 3, padding=(1, 1, 1))
        self.act = nn.GELU()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.conv2(self.act(self.conv1(self.act(h))))


class VideoFourierField(nn.Module):
    """Encoder + learned frequencies: ``field(video, coords, scale) -> colours``."""

    def __init__(self, config: FieldConfig | None = None, seed: int = 0) -> None:
        super().__init__()
        self.config = config = config or FieldConfig()
        generator = torch.Generator().manual_seed(seed)
        omega = torch.randn(config.bases, 3, generator=generator)
        omega[:, :2] *= config.freq_init_xy
        omega[:, 2] *= config.freq_init_t
        self.frequencies = nn.Parameter(omega)
        self.stem = nn.Conv3d(3, config.width, 3, padding=1)
        self.blocks = nn.Sequential(*[_Block(config.width, 2 ** (i % 3)) for i in range(config.depth)])
        self.head = nn.Conv3d(config.width, 4 * config.bases, 1)
        with torch.no_grad():  # start near the skip: small weights, phases spread over a period
            self.head.weight[config.bases :] *= 0.1
            self.head.bias[: config.bases].uniform_(-math.pi, math.pi, generator=generator)
            self.head.bias[config.bases :].zero_()

    def encode(self, video: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``video`` ``(B, 3, T, H, W)`` in [0, 1] -> phases ``(B, K, T, H, W)``, weights ``(B, 3K, T, H, W)``."""
        h = self.blocks(self.stem(video * 2.0 - 1.0))
        out = self.head(h)
        return out[:, : self.config.bases], out[:, self.config.bases :]

    def sample(
        self,
        video: torch.Tensor,
        coefficients: tuple[torch.Tensor, torch.Tensor],
        coords: torch.Tensor,
        scale: float,
        psf: bool | None = None,
    ) -> torch.Tensor:
        """Colours ``(B, Q, 3)`` at ``coords`` ``(B, Q, 3)`` from encoded ``coefficients`` (see :meth:`encode`)."""
        phases, weights = coefficients
        psf = self.config.psf if psf is None else psf
        out = sample_field(self.frequencies, phases, weights, coords, scale, psf, self.config.local_phase)
        if self.config.skip:
            out = out + interpolate(video, coords)
        return out

    def forward(self, video: torch.Tensor, coords: torch.Tensor, scale: float) -> torch.Tensor:
        return self.sample(video, self.encode(video), coords, scale)

    def render(
        self,
        video: torch.Tensor,
        size: tuple[int, int],
        times: torch.Tensor,
        scale: float | None = None,
        psf: bool | None = None,
        chunk: int = 65536,
    ) -> torch.Tensor:
        """The full output grid: ``video`` ``(1, 3, T, H, W)`` -> ``(len(times), 3, out_h, out_w)`` in [0, 1].

        Output pixel ``(i, j)`` of an ``out_h x out_w`` frame is the field at its centre; ``times`` in input
        frames; ``scale`` defaults to ``out_w / W`` (the PSF's ``s``)."""
        out_h, out_w = size
        in_h, in_w = video.shape[-2:]
        scale = out_w / in_w if scale is None else scale
        ys = (torch.arange(out_h, dtype=video.dtype) + 0.5) * in_h / out_h
        xs = (torch.arange(out_w, dtype=video.dtype) + 0.5) * in_w / out_w
        tt, yy, xx = torch.meshgrid(times.to(video.dtype), ys, xs, indexing="ij")
        coords = torch.stack([xx, yy, tt], dim=-1).reshape(1, -1, 3)
        coefficients = self.encode(video)
        parts = [
            self.sample(video, coefficients, coords[:, i : i + chunk], scale, psf)
            for i in range(0, coords.shape[1], chunk)
        ]
        out = torch.cat(parts, dim=1).reshape(len(times), out_h, out_w, 3)
        return out.permute(0, 3, 1, 2).clamp(0.0, 1.0)


def save_field(model: VideoFourierField, folder: str, extra: dict | None = None) -> None:
    """``config.json`` + ``model.safetensors`` in ``folder`` (created)."""
    import json
    from pathlib import Path

    from safetensors.torch import save_file

    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    config = {"method": "vff", "field": asdict(model.config), **(extra or {})}
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(
        {k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(path / "model.safetensors")
    )


def load_field(folder: str) -> VideoFourierField:
    """The model saved by :func:`save_field`; :class:`VFFError` (one line) when the folder is not one."""
    import json
    from pathlib import Path

    from safetensors.torch import load_file

    path = Path(folder)
    config_file, weights_file = path / "config.json", path / "model.safetensors"
    if not config_file.is_file() or not weights_file.is_file():
        raise VFFError(
            f"model folder {str(path)!r} has no config.json + model.safetensors (save one with --save)"
        )
    try:
        config = json.loads(config_file.read_text())
        if config.get("method") != "vff":
            raise ValueError("not a VFF model")
        model = VideoFourierField(FieldConfig(**config["field"]))
        model.load_state_dict(load_file(str(weights_file)))
    except (ValueError, KeyError, TypeError, RuntimeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise VFFError(f"model folder {str(path)!r} is not a VFF model: {first}") from None
    return model.eval()
