"""Thirty distortion types in seven families, at five levels, for the Embodied-IQA database.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) distort every reference
image with 30 distortion types in 7 categories, each at 5 levels. The authors' repository
(github.com/lcysyzxdxc/EmbodiedIQA) holds only a README, and the paper's table of the 30 types could not be
read here, so the families below follow the kinds of degradation the paper names (blur and defocus, noise,
compression, lighting, colour, geometric / sensor shake, occlusion and weather) and the types inside them are
the classic synthetic ones of IQA databases, rendered with SciPy, OpenCV, Pillow and NumPy. Every type is
a function ``f(image, level, rng) -> image`` on ``uint8`` ``(H, W, 3)`` arrays; ``x`` is the image in
[0, 255], ``l`` in 1..5 the level, ``eps`` a standard-normal field from the seeded generator. The first
type of each family is the one embodia had before (same name, same output).

blur
    ``blur`` Gaussian, ``sigma_l = 0.6, 1.0, 1.6, 2.4, 3.5`` px; ``lens_blur`` a disc (defocus) kernel of
    radius ``1, 1.5, 2, 3, 4`` px; ``motion_blur`` a line kernel of ``3, 5, 7, 11, 15`` px at a seeded
    angle; ``zoom_blur`` the mean of 6 copies zoomed about the centre up to ``1 + z_l``,
    ``z_l = 0.02, 0.04, 0.07, 0.10, 0.14``.
noise
    ``noise`` additive white ``x + s_l eps``, ``s_l = 6, 12, 24, 40, 64``; ``shot_noise`` signal-dependent
    ``x + sqrt(255 x / lambda_l) eps`` (the Gaussian limit of Poisson photon noise), ``lambda_l = 60, 25,
    12, 5, 2.5``; ``impulse_noise`` salt and pepper on a fraction ``0.01, 0.03, 0.06, 0.10, 0.17`` of the
    pixels; ``speckle_noise`` multiplicative ``x (1 + s_l eps)``, ``s_l = 0.06, 0.12, 0.2, 0.3, 0.45``;
    ``chroma_noise`` white noise ``8, 16, 28, 44, 64`` on the BT.601 Cb and Cr channels only.
compression
    ``jpeg`` Pillow quality ``40, 20, 10, 5, 2``; ``jpeg2000`` Pillow (OpenJPEG, 9/7 wavelet) at target
    PSNRs ``36, 31, 27, 23, 20`` dB; ``webp`` Pillow quality ``30, 15, 8, 3, 0``; ``quantise`` ``5, 4, 3, 2, 1`` bits
    per channel (bin centres).
lighting
    ``exposure`` ``y = 255 (0.5 + c_l ((x / 255)^gamma - 0.5))``, ``gamma = exp(+-g_l)``,
    ``g_l = 0.15, 0.3, 0.5, 0.75, 1.0`` (sign from the generator), ``c_l = 0.95, 0.85, 0.7, 0.55, 0.4``;
    ``brighten`` ``255 - (1 - b_l)(255 - x)``, ``b_l = 0.1, 0.2, 0.35, 0.5, 0.7``; ``darken``
    ``(1 - d_l) x``, ``d_l = 0.15, 0.3, 0.45, 0.6, 0.75``; ``low_contrast`` ``m + c_l (x - m)`` (``m`` the
    image mean), ``c_l = 0.8, 0.6, 0.45, 0.3, 0.15``; ``vignette`` ``x (1 - v_l r^2)`` with ``r`` the distance
    to a seeded centre near the middle over the half-diagonal, ``v_l = 0.2, 0.35, 0.5, 0.65, 0.8``.
colour
    ``colour`` a hue rotation about the grey axis by ``+-20, 40, 70, 110, 160`` degrees; ``desaturate``
    ``g + (1 - s_l)(x - g)`` (``g`` the BT.601 luma), ``s_l = 0.2, 0.4, 0.6, 0.8, 1.0``; ``oversaturate``
    ``g + (1 + s_l)(x - g)``, ``s_l = 0.3, 0.6, 1.0, 1.5, 2.2``; ``colour_cast`` per-channel gains
    ``1 + k_l u`` (``u`` a seeded unit direction), ``k_l = 0.1, 0.2, 0.35, 0.5, 0.7`` (white balance).
geometry
    ``pixelate`` box down-sampling by ``2, 3, 4, 6, 8`` then nearest up-sampling; ``jitter`` every pixel
    read from a seeded offset ``round(j_l eps)``, ``j_l = 0.5, 1, 1.5, 2.5, 4`` px (sensor shake);
    ``rotate`` ``+-2, 5, 10, 18, 30`` degrees about the centre (a tilted camera); ``lens_distortion`` the
    radial map ``r -> r (1 + k r^2)``, ``k = +-0.05, 0.1, 0.18, 0.28, 0.4`` (barrel or pincushion).
occlusion
    ``occlusion`` ``l`` opaque rectangles of one seeded colour, area ``A_l / l`` each,
    ``A_l = 0.04, 0.08, 0.14, 0.22, 0.32`` (level ``l + 1`` covers level ``l``); ``fog`` homogeneous haze
    ``x t + a (1 - t)`` with transmission ``t = exp(-beta_l f)``, ``f`` a smooth seeded field in [0.5, 1.5],
    ``beta_l = 0.15, 0.3, 0.5, 0.8, 1.2`` and airlight ``a`` in [200, 240]; ``rain`` the first
    ``n_l = 15, 30, 60, 100, 160`` (per 64x64 px) of a seeded set of slanted streaks; ``snow`` the first
    ``10, 25, 50, 90, 150`` of a seeded set of flakes.

Every type draws the same random numbers at every level, so for one seed the severity grows with the level
(the mean absolute difference to the original grows strictly on natural-looking images; the tests pin it
on a hand-made one). Level 0 is the identity.

Not rendered here, and why: defocus and fog that depend on the scene's depth (the observations carry no
depth image, so blur and haze are uniform over the image); lens flare and glare (they need the light
sources' positions in the camera); rolling shutter and blur from the camera's own motion during exposure
(they need sub-frame rendering; ``motion_blur`` is a global kernel); and transmission errors of a video
stream (packet loss needs an encoded stream, not a still frame).
"""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO

import cv2
import numpy as np
from PIL import Image
from scipy.ndimage import gaussian_filter

from embodia.core.errors import EmbodiaError

LEVELS = (1, 2, 3, 4, 5)
"""The distortion levels (0, the identity, is accepted too)."""

BLUR_SIGMA = (0.6, 1.0, 1.6, 2.4, 3.5)
LENS_RADIUS = (1.0, 1.5, 2.0, 3.0, 4.0)
MOTION_LENGTH = (3, 5, 7, 11, 15)
ZOOM = (0.02, 0.04, 0.07, 0.10, 0.14)
NOISE_STD = (6.0, 12.0, 24.0, 40.0, 64.0)
SHOT_PHOTONS = (60.0, 25.0, 12.0, 5.0, 2.5)
IMPULSE_FRACTION = (0.01, 0.03, 0.06, 0.10, 0.17)
SPECKLE_STD = (0.06, 0.12, 0.2, 0.3, 0.45)
CHROMA_STD = (8.0, 16.0, 28.0, 44.0, 64.0)
JPEG_QUALITY = (40, 20, 10, 5, 2)
JPEG2000_PSNR = (36.0, 31.0, 27.0, 23.0, 20.0)
WEBP_QUALITY = (30, 15, 8, 3, 0)
QUANTISE_BITS = (5, 4, 3, 2, 1)
EXPOSURE_GAMMA = (0.15, 0.3, 0.5, 0.75, 1.0)
EXPOSURE_CONTRAST = (0.95, 0.85, 0.7, 0.55, 0.4)
BRIGHTEN = (0.1, 0.2, 0.35, 0.5, 0.7)
DARKEN = (0.15, 0.3, 0.45, 0.6, 0.75)
LOW_CONTRAST = (0.8, 0.6, 0.45, 0.3, 0.15)
VIGNETTE = (0.2, 0.35, 0.5, 0.65, 0.8)
HUE_DEGREES = (20.0, 40.0, 70.0, 110.0, 160.0)
DESATURATE = (0.2, 0.4, 0.6, 0.8, 1.0)
OVERSATURATE = (0.3, 0.6, 1.0, 1.5, 2.2)
COLOUR_CAST = (0.1, 0.2, 0.35, 0.5, 0.7)
PIXELATE_FACTOR = (2, 3, 4, 6, 8)
JITTER_PIXELS = (0.5, 1.0, 1.5, 2.5, 4.0)
ROTATE_DEGREES = (2.0, 5.0, 10.0, 18.0, 30.0)
LENS_DISTORTION = (0.05, 0.1, 0.18, 0.28, 0.4)
OCCLUDED_AREA = (0.04, 0.08, 0.14, 0.22, 0.32)
FOG_DENSITY = (0.15, 0.3, 0.5, 0.8, 1.2)
RAIN_STREAKS = (15, 30, 60, 100, 160)
SNOW_FLAKES = (10, 25, 50, 90, 150)

LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
"""BT.601 luma weights of R, G, B."""


class DistortionError(EmbodiaError, ValueError):
    """An unknown distortion type, a level outside 0..5, or an image that is not uint8 (H, W, 3)."""


Distortion = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


def _to_uint8(values: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _filter(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    out = cv2.filter2D(image.astype(np.float32), -1, kernel / kernel.sum(), borderType=cv2.BORDER_REFLECT)
    return _to_uint8(out)


# ------------------------------------------------------------------ blur


def _blur(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    sigma = BLUR_SIGMA[level - 1]
    return _to_uint8(gaussian_filter(image.astype(np.float32), sigma=(sigma, sigma, 0.0), mode="reflect"))


def _lens_blur(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    radius = LENS_RADIUS[level - 1]
    half = int(np.ceil(radius))
    yy, xx = np.mgrid[-half : half + 1, -half : half + 1]
    return _filter(image, (xx**2 + yy**2 <= radius**2 + 1e-6).astype(np.float32))


def _motion_blur(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    angle = rng.uniform(0.0, np.pi)
    length = MOTION_LENGTH[level - 1]
    kernel = np.zeros((length, length), np.float32)
    centre, reach = (length - 1) / 2, (length - 1) / 2
    # bilinear splats of points along the segment: an anti-aliased line of the given length
    t = np.linspace(-reach, reach, 8 * length)
    x, y = centre + t * np.cos(angle), centre + t * np.sin(angle)
    x0, y0 = np.clip(np.floor(x).astype(int), 0, length - 2), np.clip(np.floor(y).astype(int), 0, length - 2)
    fx, fy = x - x0, y - y0
    for dx, dy, weight in (
        (0, 0, (1 - fx) * (1 - fy)),
        (1, 0, fx * (1 - fy)),
        (0, 1, (1 - fx) * fy),
        (1, 1, fx * fy),
    ):
        np.add.at(kernel, (y0 + dy, x0 + dx), weight)
    return _filter(image, kernel)


def _zoom_blur(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    centre = ((width - 1) / 2, (height - 1) / 2)
    total = image.astype(np.float32)
    copies = 6
    for k in range(1, copies):
        matrix = cv2.getRotationMatrix2D(centre, 0.0, 1.0 + ZOOM[level - 1] * k / (copies - 1))
        total += cv2.warpAffine(
            image, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        ).astype(np.float32)
    return _to_uint8(total / copies)


# ------------------------------------------------------------------ noise


def _noise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    eps = rng.standard_normal(image.shape, dtype=np.float32)
    return _to_uint8(image + NOISE_STD[level - 1] * eps)


def _shot_noise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    eps = rng.standard_normal(image.shape, dtype=np.float32)
    x = image.astype(np.float32)
    return _to_uint8(x + np.sqrt(255.0 * np.maximum(x, 1.0) / SHOT_PHOTONS[level - 1]) * eps)


def _impulse_noise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    hit = rng.random(image.shape[:2]) < IMPULSE_FRACTION[level - 1]
    salt = rng.random(image.shape[:2]) < 0.5
    out = image.copy()
    out[hit & salt], out[hit & ~salt] = 255, 0
    return out


def _speckle_noise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    eps = rng.standard_normal(image.shape, dtype=np.float32)
    return _to_uint8(image * (1.0 + SPECKLE_STD[level - 1] * eps))


def _chroma_noise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    eps = rng.standard_normal((*image.shape[:2], 2), dtype=np.float32)
    ycrcb = cv2.cvtColor(image, cv2.COLOR_RGB2YCrCb).astype(np.float32)
    ycrcb[..., 1:] += CHROMA_STD[level - 1] * eps
    return cv2.cvtColor(_to_uint8(ycrcb), cv2.COLOR_YCrCb2RGB)


# ------------------------------------------------------------------ compression


def _codec(image: np.ndarray, **save: object) -> np.ndarray:
    buffer = BytesIO()
    Image.fromarray(image).save(buffer, **save)
    buffer.seek(0)
    with Image.open(buffer) as decoded:
        return np.asarray(decoded.convert("RGB"), dtype=np.uint8).copy()


def _jpeg(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    return _codec(image, format="JPEG", quality=JPEG_QUALITY[level - 1])


def _jpeg2000(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    target = JPEG2000_PSNR[level - 1]  # a rate target in dB: byte ratios saturate on small images (headers)
    return _codec(image, format="JPEG2000", quality_mode="dB", quality_layers=[target], irreversible=True)


def _webp(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    return _codec(image, format="WEBP", quality=WEBP_QUALITY[level - 1], method=4)


def _quantise(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    step = 2 ** (8 - QUANTISE_BITS[level - 1])
    return _to_uint8((image // step) * step + step / 2 - 0.5)


# ------------------------------------------------------------------ lighting


def _exposure(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    gamma = float(np.exp(_sign(rng) * EXPOSURE_GAMMA[level - 1]))
    x = (image.astype(np.float32) / 255.0) ** gamma
    return _to_uint8(255.0 * (0.5 + EXPOSURE_CONTRAST[level - 1] * (x - 0.5)))


def _brighten(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    return _to_uint8(255.0 - (1.0 - BRIGHTEN[level - 1]) * (255.0 - image.astype(np.float32)))


def _darken(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    return _to_uint8((1.0 - DARKEN[level - 1]) * image.astype(np.float32))


def _low_contrast(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    x = image.astype(np.float32)
    mean = x.mean()
    return _to_uint8(mean + LOW_CONTRAST[level - 1] * (x - mean))


def _vignette(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    cy, cx = (0.5 + rng.uniform(-0.1, 0.1, 2)) * np.array([height, width])
    yy, xx = np.mgrid[0:height, 0:width]
    r2 = ((yy - cy) ** 2 + (xx - cx) ** 2) / (0.25 * (height**2 + width**2))
    gain = np.clip(1.0 - VIGNETTE[level - 1] * r2, 0.0, 1.0)
    return _to_uint8(image * gain[..., None])


# ------------------------------------------------------------------ colour


def _hue_matrix(degrees: float) -> np.ndarray:
    """Rodrigues' rotation about the grey axis (1, 1, 1) / sqrt(3)."""
    theta = np.deg2rad(degrees)
    axis = np.ones(3) / np.sqrt(3.0)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.cos(theta) * np.eye(3) + np.sin(theta) * cross + (1 - np.cos(theta)) * np.outer(axis, axis)


def _colour(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    matrix = _hue_matrix(_sign(rng) * HUE_DEGREES[level - 1]).astype(np.float32)
    return _to_uint8(image.astype(np.float32) @ matrix.T)


def _saturation(image: np.ndarray, factor: float) -> np.ndarray:
    x = image.astype(np.float32)
    grey = (x @ LUMA)[..., None]
    return _to_uint8(grey + factor * (x - grey))


def _desaturate(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    return _saturation(image, 1.0 - DESATURATE[level - 1])


def _oversaturate(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    return _saturation(image, 1.0 + OVERSATURATE[level - 1])


def _colour_cast(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    direction = rng.standard_normal(3)
    direction /= np.linalg.norm(direction)
    gains = np.clip(1.0 + COLOUR_CAST[level - 1] * direction, 0.0, None).astype(np.float32)
    return _to_uint8(image.astype(np.float32) * gains)


# ------------------------------------------------------------------ geometry


def _pixelate(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    factor = PIXELATE_FACTOR[level - 1]
    small = Image.fromarray(image).resize(
        (max(1, round(width / factor)), max(1, round(height / factor))), Image.Resampling.BOX
    )
    return np.asarray(small.resize((width, height), Image.Resampling.NEAREST), dtype=np.uint8).copy()


def _jitter(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    offsets = np.rint(JITTER_PIXELS[level - 1] * rng.standard_normal((2, height, width))).astype(int)
    yy, xx = np.mgrid[0:height, 0:width]
    rows = np.clip(yy + offsets[0], 0, height - 1)
    cols = np.clip(xx + offsets[1], 0, width - 1)
    return image[rows, cols]


def _remap(image: np.ndarray, map_x: np.ndarray, map_y: np.ndarray) -> np.ndarray:
    return cv2.remap(
        image,
        map_x.astype(np.float32),
        map_y.astype(np.float32),
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REFLECT,
    )


def _rotate(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    matrix = cv2.getRotationMatrix2D(
        ((width - 1) / 2, (height - 1) / 2), _sign(rng) * ROTATE_DEGREES[level - 1], 1.0
    )
    return cv2.warpAffine(
        image, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
    )


def _lens_distortion(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    k = _sign(rng) * LENS_DISTORTION[level - 1]
    cy, cx = (height - 1) / 2, (width - 1) / 2
    norm = np.hypot(cy, cx)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    dy, dx = (yy - cy) / norm, (xx - cx) / norm
    factor = 1.0 + k * (dx**2 + dy**2)
    return _remap(image, cx + dx * factor * norm, cy + dy * factor * norm)


# ------------------------------------------------------------------ occlusion and weather


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


def _fog(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    field = gaussian_filter(rng.standard_normal((height, width)), sigma=max(height, width) / 6, mode="wrap")
    field = 0.5 + (field - field.min()) / max(np.ptp(field), 1e-9)
    airlight = rng.uniform(200.0, 240.0)
    transmission = np.exp(-FOG_DENSITY[level - 1] * field)[..., None]
    return _to_uint8(image * transmission + airlight * (1.0 - transmission))


def _count(per_4096: int, image: np.ndarray) -> int:
    return max(1, round(per_4096 * image.shape[0] * image.shape[1] / 4096))


def _overlay(image: np.ndarray, mask: np.ndarray, colour: float, opacity: float) -> np.ndarray:
    alpha = opacity * np.clip(mask, 0.0, 1.0)[..., None]
    return _to_uint8(image * (1.0 - alpha) + colour * alpha)


def _rain(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    most = _count(RAIN_STREAKS[-1], image)
    starts = rng.random((most, 2)) * np.array([width, height])
    lengths = rng.uniform(0.06, 0.14, most) * height
    slant = rng.uniform(-0.35, 0.35)
    mask = np.zeros((height, width), np.float32)
    for (x, y), length in zip(starts[: _count(RAIN_STREAKS[level - 1], image)], lengths):
        end = (int(round(x + slant * length)), int(round(y + length)))
        cv2.line(mask, (int(round(x)), int(round(y))), end, 1.0, thickness=1)
    return _overlay(image, mask, 220.0, 0.7)


def _snow(image: np.ndarray, level: int, rng: np.random.Generator) -> np.ndarray:
    height, width = image.shape[:2]
    most = _count(SNOW_FLAKES[-1], image)
    centres = rng.random((most, 2)) * np.array([width, height])
    radii = rng.uniform(0.5, 1.6, most)
    mask = np.zeros((height, width), np.float32)
    for (x, y), radius in zip(centres[: _count(SNOW_FLAKES[level - 1], image)], radii):
        cv2.circle(mask, (int(round(x)), int(round(y))), max(1, int(round(radius))), 1.0, thickness=-1)
    return _overlay(image, mask, 250.0, 0.9)


FAMILIES: dict[str, tuple[str, ...]] = {
    "blur": ("blur", "lens_blur", "motion_blur", "zoom_blur"),
    "noise": ("noise", "shot_noise", "impulse_noise", "speckle_noise", "chroma_noise"),
    "compression": ("jpeg", "jpeg2000", "webp", "quantise"),
    "lighting": ("exposure", "brighten", "darken", "low_contrast", "vignette"),
    "colour": ("colour", "desaturate", "oversaturate", "colour_cast"),
    "geometry": ("pixelate", "jitter", "rotate", "lens_distortion"),
    "occlusion": ("occlusion", "fog", "rain", "snow"),
}
"""The seven families and their distortion types (30 in all; module docstring)."""

DISTORTIONS: dict[str, Distortion] = {
    name: globals()[f"_{name}"] for types in FAMILIES.values() for name in types
}
"""Distortion type name -> ``f(image uint8 (H, W, 3), level 1..5, rng) -> image``."""

CLASS_NAMES: tuple[str, ...] = tuple(DISTORTIONS)
"""The 30 distortion types in registry order (a type's index in a database is its index in the database's
``class_names``)."""

FAMILY_OF: dict[str, str] = {name: family for family, types in FAMILIES.items() for name in types}
"""Distortion type -> its family."""


def check_distortion(name: str, level: int) -> None:
    """Raise :class:`DistortionError` (one line) for an unknown type or a level outside 0..5."""
    if name not in DISTORTIONS:
        raise DistortionError(f"unknown distortion type {name!r}; choose one of {', '.join(CLASS_NAMES)}")
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
    """``image`` (uint8 ``(H, W, 3)``) distorted by type ``name`` at ``level`` (0 = a copy), seeded by ``seed``."""
    check_distortion(name, level)
    image = _check_image(image)
    if int(level) == 0:
        return image.copy()
    return DISTORTIONS[name](np.ascontiguousarray(image), int(level), np.random.default_rng(seed))


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
