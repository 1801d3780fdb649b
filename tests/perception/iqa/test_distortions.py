"""The 30 distortion types in 7 families: deterministic per seed, identity at level 0, monotone in the level."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.perception.iqa.distortions import (
    CLASS_NAMES,
    DISTORTIONS,
    FAMILIES,
    FAMILY_OF,
    DistortionError,
    distort,
    distort_batch,
)
from tests.perception.iqa import synthetic_scene

RANDOM_TYPES = (
    "noise", "shot_noise", "impulse_noise", "speckle_noise", "chroma_noise", "exposure", "vignette", "colour",
    "colour_cast", "motion_blur", "jitter", "rotate", "lens_distortion", "occlusion", "fog", "rain", "snow",
)  # fmt: skip


@pytest.fixture(scope="module")
def frame():
    return synthetic_scene(7, size=64)


def test_registry_has_30_types_in_7_families():
    assert len(CLASS_NAMES) == 30 and len(FAMILIES) == 7
    assert set(DISTORTIONS) == set(CLASS_NAMES) == set(FAMILY_OF)
    assert list(FAMILIES) == ["blur", "noise", "compression", "lighting", "colour", "geometry", "occlusion"]
    # the seven types embodia had before keep their names, first in their families
    firsts = [types[0] for types in FAMILIES.values()]
    assert firsts == ["blur", "noise", "jpeg", "exposure", "colour", "pixelate", "occlusion"]


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_dtype_shape_identity_and_determinism(frame, name):
    assert np.array_equal(distort(frame, name, 0, seed=1), frame)
    for level in (1, 5):
        out = distort(frame, name, level, seed=1)
        assert out.dtype == np.uint8 and out.shape == frame.shape
        assert np.array_equal(out, distort(frame, name, level, seed=1))
    odd = synthetic_scene(3, size=48)[:, :40]  # non-square
    assert distort(odd, name, 3, seed=0).shape == odd.shape


@pytest.mark.parametrize("name", RANDOM_TYPES)
def test_different_seeds_differ(frame, name):
    outs = [distort(frame, name, 4, seed=s) for s in range(4)]
    assert any(not np.array_equal(outs[0], other) for other in outs[1:])


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_distance_to_the_reference_grows_strictly_with_the_level(frame, name):
    for seed in range(3):
        mad = [np.abs(distort(frame, name, level, seed).astype(float) - frame).mean() for level in range(6)]
        assert all(b > a for a, b in zip(mad, mad[1:])), (name, seed, mad)


def test_hand_computed_values_on_a_flat_grey_image():
    grey = np.full((8, 8, 3), 100, np.uint8)
    assert (distort(grey, "darken", 1) == 85).all()  # (1 - 0.15) 100
    assert (distort(grey, "brighten", 5) == 208).all()  # 255 - 0.3 (255 - 100) = 208.5, rounded to even
    assert (distort(grey, "quantise", 5) == 64).all()  # 1 bit: bin [0, 128), centre 63.5 -> 64
    assert (distort(grey, "quantise", 4) == 96).all()  # 2 bits: bin [64, 128), centre 95.5 -> 96
    assert (distort(grey, "desaturate", 5) == 100).all()  # grey has no saturation to lose
    for name in ("blur", "lens_blur", "motion_blur", "zoom_blur", "rotate", "lens_distortion", "pixelate"):
        assert (distort(grey, name, 5, seed=2) == 100).all(), (
            name
        )  # linear filters and warps keep a flat image


def test_batch_is_per_image_seeded(frame):
    batch = np.stack([frame, frame[::-1]])
    out = distort_batch(batch, "noise", 2, seed=5)
    assert out.shape == batch.shape and out.dtype == np.uint8
    assert np.array_equal(out, distort_batch(batch, "noise", 2, seed=5))
    assert not np.array_equal(out[0] - batch[0], out[1] - batch[1])  # not the same noise twice


def test_errors_are_one_line_with_the_choices(frame):
    with pytest.raises(
        DistortionError, match="unknown distortion type 'smog'; choose one of blur, lens_blur, motion_blur"
    ):
        distort(frame, "smog", 1)
    with pytest.raises(DistortionError, match=r"level 6 .* not one of 0 \(identity\), 1, 2, 3, 4, 5"):
        distort(frame, "blur", 6)
    with pytest.raises(DistortionError, match="uint8"):
        distort(frame.astype(np.float32), "blur", 1)
    with pytest.raises(DistortionError, match="uint8"):
        distort_batch(frame, "blur", 1)
