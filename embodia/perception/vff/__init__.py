"""VFF: the Video Fourier Field for continuous space-time video super-resolution.

Becker, Erbach, Narnhofer, Schindler, "Continuous Space-Time Video Super-Resolution with 3D Fourier Fields",
ICLR 2026, arXiv:2509.26325. The video is ``V(x, y, t) = skip + sum_k W_k g_k(s) sin(omega_k . [x, y, t] + phi_k)``
with learned shared frequencies ``omega_k``, per-voxel phases and weights from a 3-D conv encoder (interpolated
trilinearly) and the Gaussian PSF factor ``g_k(s) = exp(-|omega_k,xy|^2 k / s^2)``.

- :mod:`.model`: the field, its encoder, save/load (``config.json`` + ``model.safetensors``).
- :mod:`.train`: low-res inputs, training (L1 on random query crops), evaluation, the baselines.
- :mod:`.upscale`: a video file in, an upscaled mp4 out (chunked).
"""

from embodia.perception.vff.model import (
    PSF_K,
    FieldConfig,
    VFFError,
    VideoFourierField,
    load_field,
    psf_factor,
    sample_field,
    save_field,
)
from embodia.perception.vff.train import (
    METHODS,
    VFFTrainConfig,
    evaluate,
    make_lowres,
    output_size,
    output_times,
    standard_methods,
    train_field,
    upscale_clip,
)
from embodia.perception.vff.upscale import read_video, upscale_file, upscale_frames, write_video

__all__ = [
    "METHODS",
    "PSF_K",
    "FieldConfig",
    "VFFError",
    "VFFTrainConfig",
    "VideoFourierField",
    "evaluate",
    "load_field",
    "make_lowres",
    "output_size",
    "output_times",
    "psf_factor",
    "read_video",
    "sample_field",
    "save_field",
    "standard_methods",
    "train_field",
    "upscale_clip",
    "upscale_file",
    "upscale_frames",
    "write_video",
]
