"""Seven distortion classes at five levels for the Embodied-IQA database.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) distort reference images
with distortions in 7 classes at 5 levels; these are the seven classes here, each a function
``f(image, level, rng) -> image`` on ``uint8`` ``(H, W, 3)`` arrays. ``x`` is the image in [0, 255], ``l`` in
1..5 the level, ``eps`` a standard-normal field from the seeded generator:

- ``blur``: Gaussian blur, ``x * G_sigma`` with ``sigma_l = 0.6, 1.0, 1.6, 2.4, 3.5`` pixels;
- ``noise``: additive Gaussian noise, ``clip(x + s_l eps)`` with ``s_l = 6, 12, 24, 40, 64``;
- ``jpeg``: PIL JPEG compression at quality ``q_l = 40, 20, 10, 5, 2``;
- ``exposure``: gamma and contrast, ``y = 255 (0.5 + c_l ((x / 255)^gamma - 0.5))`` with
  ``gamma = exp(+-g_l)``, ``g_l = 0.15, 0.3, 0.5, 0.75, 1.0`` (the sign, under- or over-exposure, from the
  generator) and ``c_l = 0.95, 0.85, 0.7, 0.55, 0.4`` (contrast shrinks toward grey);
- ``colour``: a hue rotation about the grey axis ``(1, 1, 1) / sqrt(3)`` by ``+-theta_l`` with
  ``theta_l = 20, 40, 70, 110, 160`` degrees (sign from the generator);
- ``occlusion``: ``l`` opaque rectangles of one random colour; rectangle ``i`` has a seeded centre and
  aspect ratio and area ``A_l / l`` of the image with ``A_l = 0.04, 0.08, 0.14, 0.22, 0.32``, so the
  occluded region at level ``l + 1`` contains the one at level ``l``;
- ``pixelate``: box down-sampling by ``k_l = 2, 3, 4, 6, 8`` then nearest-neighbour up-sampling.

Every function draws the same random numbers at every level, so for one seed the severity grows with the
level (the mean absolute difference to the original is non-decreasing). Level 0 is the identity.
"""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO

import numpy as np
from PIL import Image
from scipy.ndimage import gaussian_filter

from embodia.core.errors import EmbodiaError

LEVELS = (1, 2, 3, 4, 5)
"""The distortion levels (0, the identity, is accepted too)."""

BLUR_SIGMA = (0.6, 1.0, 1.6, 2.4, 3.5)
NOISE_STD = (6.0, 12.0, 24.0, 40.0, 64.0)
JPEG_QUALITY = (40, 20, 10, 5, 2)
EXPOSURE_GAMMA = (0.15, 0.3, 0.5, 0.75, 1.0)
EXPOSURE_CONTRAST = (0.95, 0.85, 0.7, 0.55, 0.4)
HUE_DEGREES = (20.0, 40.0, 70.0, 110.0, 160.0)
OCCLUDED_AREA = (0.04, 0.08, 0.14, 0.22, 0.32)
PIXELATE_FACTOR = (2, 3, 4, 6, 8)


class DistortionError(EmbodiaError, ValueError):
    """An unknown distortion class, a level outside 0..5, or an image that is not uint8 (H, W, 3)."""


Distortion = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


def _blur(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    sigma = BLUR_SIGMA[level - 1]
    out = gaussian_filter(image.astype(np.float32), sigma=(sigma, sigma, 0.0), mode="reflect")
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _noise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    eps = rng.standard_normal(image.shape, dtype=np.float32)
    return np.clip(np.rint(image + NOISE_STD[level - 1] * eps), 0, 255).astype(np.uint8)


def _jpeg(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    buffer = BytesIO()
    Image.fromarray(image).save(buffer, format="JPEG", quality=JPEG_QUALITY[level - 1])
    buffer.seek(0)
    return np.asarray(Image.open(buffer).convert("RGB"), dtype=np.uint8).copy()


def _exposure(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    sign = 1.0 if rng.random() < 0.5 else -1.0
    gamma = float(np.exp(sign * EXPOSURE_GAMMA[level - 1]))
    x = (image.astype(np.float32) / 255.0) ** gamma
    y = 0.5 + EXPOSURE_CONTRAST[level - 1] * (x - 0.5)
    return np.clip(np.rint(255.0 * y), 0, 255).astype(np.uint8)


def _hue_matrix(degrees: float) -> np.ndarray:
    """Rodrigues' rotation about the grey axis (1, 1, 1) / sqrt(3)."""
    theta = np.deg2rad(degrees)
    axis = np.ones(3) / np.sqrt(3.0)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.cos(theta) * np.eye(3) + np.sin(theta) * cross + (1 - np.cos(theta)) * np.outer(axis, axis)


def _colour(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    sign = 1.0 if rng.random() < 0.5 else -1.0
    matrix = _hue_matrix(sign * HUE_DEGREES[level - 1]).astype(np.float32)
    out = image.astype(np.float32) @ matrix.T
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _occlusion(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    n = len(LEVELS)
    centres = rng.random((n, 2)) * np.array([height, width])
    aspect = np.exp(rng.uniform(-0.7, 0.7, size=n))
    colour = rng.integers(0, 256, size=3).astype(np.uint8)
    area = OCCLUDED_AREA[level - 1] / level * height * width
    out = image.copy()
    for i in range(level):
        h, w = np.sqrt(area / aspect[i]), np.sqrt(area * aspect[i])
        top, left = int(round(centres[i, 0] - h / 2)), int(round(centres[i, 1] - w / 2))
        bottom, right = int(round(centres[i, 0] + h / 2)), int(round(centres[i, 1] + w / 2))
        out[max(top, 0) : max(bottom, 0), max(left, 0) : max(right, 0)] = colour
    return out


def _pixelate(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    factor = PIXELATE_FACTOR[level - 1]
    small = Image.fromarray(image).resize(
        (max(1, round(width / factor)), max(1, round(height / factor))), Image.Resampling.BOX
    )
    return np.asarray(small.resize((width, height), Image.Resampling.NEAREST), dtype=np.uint8).copy()


DISTORTIONS: dict[str, Distortion] = {
    "blur": _blur,
    "noise": _noise,
    "jpeg": _jpeg,
    "exposure": _exposure,
    "colour": _colour,
    "occlusion": _occlusion,
    "pixelate": _pixelate,
}
"""Distortion class name -> ``f(image uint8 (H, W, 3), level 1..5, rng) -> image``."""

CLASS_NAMES: tuple[str, ...] = tuple(DISTORTIONS)
"""The seven classes in registry order (a class's index in the database is its index here)."""


def check_distortion(name: str, level: int) -> None:
    """Raise :class:`DistortionError` (one line) for an unknown class or a level outside 0..5."""
    if name not in DISTORTIONS:
        raise DistortionError(f"unknown distortion class {name!r}; choose one of {', '.join(CLASS_NAMES)}")
    if (
        isinstance(level, bool)
        or not isinstance(level, (int, np.integer))
        or not 0 <= int(level) <= LEVELS[-1]
    ):
        raise DistortionError(
            f"distortion level {level!r} for {name!r} is not one of 0 (identity), {', '.join(map(str, LEVELS))}"
        )


def _check_image(image: np.ndarray, what: str = "image") -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[-1] != 3:
        raise DistortionError(
            f"{what} must be a uint8 (H, W, 3) array, got {image.dtype} {image.shape}; pass rendered RGB frames"
        )
    return image


def distort(image: np.ndarray, name: str, level: int, seed: int = 0) -> np.ndarray:
    """``image`` (uint8 ``(H, W, 3)``) distorted by class ``name`` at ``level`` (0 = a copy), seeded by ``seed``."""
    check_distortion(name, level)
    image = _check_image(image)
    if int(level) == 0:
        return image.copy()
    return DISTORTIONS[name](image, int(level), np.random.default_rng(seed))


def image_seed(*keys: int) -> int:
    """A deterministic 32-bit seed from integer keys (``SeedSequence``: distinct keys, unrelated seeds)."""
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def distort_batch(images: np.ndarray, name: str, level: int, seed: int = 0) -> np.ndarray:
    """Every image of uint8 ``(B, H, W, 3)`` distorted; image ``i`` uses seed ``image_seed(seed, i)``."""
    check_distortion(name, level)
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise DistortionError(f"images must be a uint8 (B, H, W, 3) array, got {images.dtype} {images.shape}")
    if len(images) == 0:
        return images.copy()
    return np.stack([distort(image, name, level, image_seed(seed, i)) for i, image in enumerate(images)])
