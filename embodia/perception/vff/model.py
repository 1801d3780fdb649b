"""The Video Fourier Field and its encoder (Becker, Erbach, Narnhofer, Schindler, "Continuous Space-Time Video
Super-Resolution with 3D Fourier Fields", ICLR 2026, arXiv:2509.26325), after the authors' code
(``cdadashovkhandan/v3vsr`` at 6caf8e6: ``models/vff.py`` the field, ``run_train.py`` ``forward`` / ``build_models``
the local coordinates, the learned ``k`` and the skip, ``utils.py`` ``interpolate_grid`` the nearest lookup,
``data.py`` ``make_z_coords`` / ``ContinuousWrapper`` the temporal assignment and the nearest-upsampled input).

Coordinates are continuous and measured in units of the *low-resolution* input: ``x, y`` in input pixels (pixel
``i`` covers ``[i, i + 1)``, its centre is ``i + 0.5``) and ``t`` in input frames (frame ``j`` is at ``t = j``).
The video is the paper's Video Fourier Field with its Gaussian PSF factor, as the authors' code evaluates it:

    V_c(p) = skip_c(p) + sum_k W_ck(v) * g_k(s) * sin(omega_k . (p - c_v) + phi_k(v))

- ``omega_k`` (``K`` of them, ``(K, 3)``, radians per input pixel / frame) are learned and shared by every video
  and every position;
- the encoder (3-D convolutions with dilated spatial kernels: a large spatio-temporal receptive field; the authors
  use RVRT) maps the input clip to, per input voxel ``v``, ``K`` phases ``phi_k(v)`` and ``3 K`` mixing weights
  ``W_ck(v)`` (one per output channel);
- **the authors' design** (``FieldConfig.interpolation="nearest"``): a query point ``p`` reads the
  coefficients of the voxel ``v`` whose centre ``c_v`` is nearest (``interpolate_grid`` with ``order=0``; in time
  the nearest input frame, a point halfway between two frames going to the earlier one, as ``make_z_coords``
  does), evaluates that voxel's field at ``p - c_v`` (coordinates relative to the nearest voxel centre, so a
  translation-equivariant encoder can place a pattern anywhere), and adds the *nearest-upsampled* input
  (``source_nearest``): the Fourier part models the residual;
- **embodia's variant** (``interpolation="trilinear"``, the default because it measured clearly better at CPU
  budgets: ``results/perception/vff.json``): the 8 neighbouring voxels' local fields are blended with
  trilinear weights ``a_v(p)``, ``sum_v a_v(p) sum_k W_vk g_k sin(omega_k . (p - c_v) + phi_vk)``, computed
  exactly by interpolating the quadrature pair ``W cos(phi - omega . c_v)``, ``W sin(phi - omega . c_v)``
  (:func:`sample_field`), and the skip is the trilinearly interpolated input. It is continuous across voxel
  boundaries, where the nearest lookup jumps;
- ``g_k(s) = exp(-|omega_k,xy|^2 * k / s^2)`` is the analytic Gaussian point-spread-function factor for sampling
  at spatial scale ``s`` (output pixels per input pixel); the time axis is not filtered. The authors *learn* ``k``
  (``variables['params']['k']``, trained with everything else) from ``sqrt(ln 4) / (2 pi^2)`` ~ 0.060
  (:data:`AUTHORS_PSF_K`); here it is the parameter :attr:`VideoFourierField.psf_k` with that initial value
  (``FieldConfig.learn_psf_k=False`` keeps it fixed; :data:`BOX_PSF_K` = 1/24 is the constant of a Gaussian with
  the variance of a ``1/s`` box, an output pixel, which embodia used before). As ``s -> inf`` the factor tends to
  1; below the training scale it removes the frequencies the output grid cannot hold (anti-aliasing).

With ``local_phase=False`` the field is evaluated at the absolute ``p`` instead of ``p - c_v`` (an ablation:
the encoder would then have to output position-dependent phases).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from embodia.core.errors import EmbodiaError

AUTHORS_PSF_K = math.sqrt(math.log(4.0)) / (2.0 * math.pi**2)
"""The authors' initial PSF constant ``k`` (``args.py``: ``sqrt(log 4) / (2 pi^2)`` ~ 0.0596), then learned."""
BOX_PSF_K = 1.0 / 24.0
"""``k`` of the Gaussian with the variance ``1 / (12 s^2)`` of an output pixel's box (embodia's former fixed value)."""
INTERPOLATIONS = ("nearest", "trilinear")
"""How a query reads the per-voxel coefficients and the skip (see :class:`FieldConfig`)."""


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
    """Add the input, upsampled as ``interpolation`` says, to the field (the field models the residual)."""
    local_phase: bool = True
    """Evaluate each voxel's field at ``p - c_v``, relative to the voxel centre (the authors' design); False: at
    the absolute ``p`` (an ablation)."""
    interpolation: Literal["nearest", "trilinear"] = "trilinear"
    """``"nearest"`` (the authors'): the nearest voxel's coefficients and the nearest-upsampled input as skip;
    ``"trilinear"`` (embodia's variant, the default: ahead of the authors' at every factor, intervals apart, after
    150 steps with three seeds, ``results/perception/vff.json``): the 8 neighbouring voxels' local fields blended
    trilinearly and the trilinearly interpolated input as skip."""
    psf_k: float = AUTHORS_PSF_K
    """Initial value of the PSF constant ``k`` (the authors' ``sqrt(ln 4) / (2 pi^2)``; 1/24: a box pixel)."""
    learn_psf_k: bool = True
    """Learn ``k`` with the other parameters, as the authors do; False: keep it fixed at ``psf_k``."""

    def __post_init__(self) -> None:
        if self.interpolation not in INTERPOLATIONS:
            raise VFFError(
                f"interpolation must be one of {', '.join(INTERPOLATIONS)}, got {self.interpolation!r}"
            )


def psf_factor(
    frequencies: torch.Tensor, scale: float | torch.Tensor, k: float | torch.Tensor
) -> torch.Tensor:
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


def nearest_voxel(coords: torch.Tensor, size: tuple[int, int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The voxel whose centre is nearest to each query, clamped to the grid (the authors' ``order=0``,
    ``mode='nearest'`` lookup): flat indices ``t H W + y W + x`` ``(B, Q)`` and the centres ``(B, Q, 3)``.

    Pixel ``i`` covers ``[i, i + 1)`` (centre ``i + 0.5``); frame ``j`` sits at ``t = j`` and a time halfway
    between two frames goes to the earlier one (the authors' ``make_z_coords`` subtracts 1e-5 before rounding)."""
    frames, height, width = size
    x = coords[..., 0].detach().floor().clamp(0, width - 1)
    y = coords[..., 1].detach().floor().clamp(0, height - 1)
    t = torch.ceil(coords[..., 2].detach() - 0.5).clamp(0, frames - 1)
    index = ((t * height + y) * width + x).long()
    return index, torch.stack([x + 0.5, y + 0.5, t], dim=-1)


def gather_voxels(volume: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``volume`` ``(B, C, T, H, W)`` at flat voxel indices ``(B, Q)`` -> ``(B, Q, C)``."""
    flat = volume.flatten(2)
    return flat.gather(2, index[:, None].expand(-1, flat.shape[1], -1)).transpose(1, 2)


def upsample_input(video: torch.Tensor, coords: torch.Tensor, interpolation: str) -> torch.Tensor:
    """The skip: the input ``(B, 3, T, H, W)`` at ``coords`` by the nearest voxel or trilinearly -> ``(B, Q, 3)``."""
    if interpolation == "nearest":
        return gather_voxels(video, nearest_voxel(coords, tuple(video.shape[2:]))[0])
    return interpolate(video, coords)


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
    psf_k: float | torch.Tensor | None = AUTHORS_PSF_K,
    local: bool = True,
    interpolation: str = "nearest",
) -> torch.Tensor:
    """The Fourier part of the field at ``coords``.

    ``interpolation="nearest"`` (the authors'): the nearest voxel ``v``'s field,
    ``sum_k W_vk g_k sin(omega_k . (p - c_v) + phi_vk)`` (``p`` instead of ``p - c_v`` with ``local=False``).

    ``interpolation="trilinear"``, ``local=True``: the 8 neighbouring voxels' local fields blended with the
    trilinear weights ``a_v(p)``,

        sum_v a_v(p) sum_k W_vk sin(omega_k . (p - c_v) + phi_vk)
          = sum_k sin(omega_k . p) A_k(p) + cos(omega_k . p) B_k(p),

    with ``A, B`` the trilinear interpolation of ``W cos(phi - omega . c_v)`` and ``W sin(phi - omega . c_v)``
    (the quadrature pair: exact, and one interpolation instead of eight field evaluations). With
    ``local=False``: phases and weights interpolated, ``sum_k W_k(p) sin(omega_k . p + phi_k(p))``.

    Args:
        frequencies: ``(K, 3)`` omegas (x, y, t).
        phases: ``(B, K, T, H, W)`` per-voxel phases.
        weights: ``(B, C*K, T, H, W)`` per-voxel weights (channel-major: ``[c*K + k]``).
        coords: ``(B, Q, 3)`` query points (x, y, t) in input units.
        scale: output pixels per input pixel (the PSF's ``s``).
        psf_k: the PSF constant ``k``; None: no PSF factor.
        local: evaluate relative to the voxel centres (see above).
        interpolation: ``"nearest"`` or ``"trilinear"``.

    Returns:
        ``(B, Q, C)``.
    """
    bases = frequencies.shape[0]
    damping = (
        psf_factor(frequencies, scale, psf_k)
        if psf_k is not None
        else torch.ones(bases, dtype=frequencies.dtype)
    )
    if interpolation == "nearest":
        index, centres = nearest_voxel(coords, tuple(phases.shape[2:]))
        where = coords - centres if local else coords
        phi = gather_voxels(phases, index)  # (B, Q, K)
        w = gather_voxels(weights, index)
        w = w.reshape(*w.shape[:2], -1, bases)  # (B, Q, C, K)
        return torch.einsum("bqck,bqk->bqc", w, torch.sin(where @ frequencies.T + phi) * damping)
    angle = coords @ frequencies.T  # (B, Q, K)
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
        k = torch.tensor(float(config.psf_k))
        if config.learn_psf_k:
            self.psf_k = nn.Parameter(k)
            """The PSF constant ``k``, learned as the authors do (``variables['params']['k']``)."""
        else:
            self.register_buffer("psf_k", k)
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
        config = self.config
        k = self.psf_k if psf else None
        out = sample_field(
            self.frequencies, phases, weights, coords, scale, k, config.local_phase, config.interpolation
        )
        if config.skip:
            out = out + upsample_input(video, coords, config.interpolation)
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
        field = dict(config["field"])
        state = load_file(str(weights_file))
        if "interpolation" not in field:  # saved before the authors' variant was added: trilinear, k = 1/24
            field.update(interpolation="trilinear", psf_k=BOX_PSF_K, learn_psf_k=False)
            state.setdefault("psf_k", torch.tensor(BOX_PSF_K))
        model = VideoFourierField(FieldConfig(**field))
        model.load_state_dict(state)
    except (ValueError, KeyError, TypeError, RuntimeError, VFFError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise VFFError(f"model folder {str(path)!r} is not a VFF model: {first}") from None
    return model.eval()
