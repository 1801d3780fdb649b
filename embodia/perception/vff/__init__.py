"""VFF: the Video Fourier Field for continuous space-time video super-resolution.

Becker, Erbach, Narnhofer, Schindler, "Continuous Space-Time Video Super-Resolution with 3D Fourier Fields",
ICLR 2026, arXiv:2509.26325; the authors' code ``cdadashovkhandan/v3vsr``. The video is
``V(p) = skip(p) + sum_k W_k(v) g_k(s) sin(omega_k . (p - c_v) + phi_k(v))`` with learned shared frequencies
``omega_k``, per-voxel phases and weights from a 3-D conv encoder, coordinates relative to the voxel centre
``c_v`` and the Gaussian PSF factor ``g_k(s) = exp(-|omega_k,xy|^2 k / s^2)`` with a learned ``k``. As the authors
have it (``FieldConfig.interpolation="nearest"``): the nearest voxel and a nearest-upsampled skip; embodia's
variant (``"trilinear"``, the default, better at CPU budgets): the 8 neighbouring voxels blended trilinearly and
a trilinear skip.

- :mod:`.model`: the field, its encoder, save/load (``config.json`` + ``model.safetensors``).
- :mod:`.train`: low-res inputs, training (L1 on random query crops), evaluation, the baselines.
- :mod:`.upscale`: a video file in, an upscaled mp4 out (chunked).
"""

from embodia.perception.vff.model import (
    AUTHORS_PSF_K,
    BOX_PSF_K,
    INTERPOLATIONS,
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
    "AUTHORS_PSF_K",
    "BOX_PSF_K",
    "INTERPOLATIONS",
    "METHODS",
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
