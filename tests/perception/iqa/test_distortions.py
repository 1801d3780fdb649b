"""The seven distortion classes: deterministic per seed, identity at level 0, monotone in the level."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.perception.iqa.distortions import (
    CLASS_NAMES,
    DISTORTIONS,
    DistortionError,
    distort,
    distort_batch,
)
from tests.perception.iqa import synthetic_scene

RANDOM_CLASSES = ("noise", "exposure", "colour", "occlusion")


@pytest.fixture(scope="module")
def frame():
    return synthetic_scene(7, size=64)


def test_registry_has_the_seven_classes():
    assert CLASS_NAMES == ("blur", "noise", "jpeg", "exposure", "colour", "occlusion", "pixelate")
    assert set(DISTORTIONS) == set(CLASS_NAMES)


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_dtype_shape_identity_and_determinism(frame, name):
    assert np.array_equal(distort(frame, name, 0, seed=1), frame)
    for level in (1, 5):
        out = distort(frame, name, level, seed=1)
        assert out.dtype == np.uint8 and out.shape == frame.shape
        assert np.array_equal(out, distort(frame, name, level, seed=1))
        assert not np.array_equal(out, frame)
    odd = synthetic_scene(3, size=48)[:, :40]  # non-square
    assert distort(odd, name, 3, seed=0).shape == odd.shape


@pytest.mark.parametrize("name", RANDOM_CLASSES)
def test_different_seeds_differ(frame, name):
    outs = [distort(frame, name, 4, seed=s) for s in range(4)]
    assert any(not np.array_equal(outs[0], other) for other in outs[1:])


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_severity_grows_with_level(frame, name):
    for seed in range(3):
        mad = [np.abs(distort(frame, name, level, seed).astype(float) - frame).mean() for level in range(6)]
        assert all(b > a for a, b in zip(mad, mad[1:])), (name, seed, mad)


def test_batch_is_per_image_seeded(frame):
    batch = np.stack([frame, frame[::-1]])
    out = distort_batch(batch, "noise", 2, seed=5)
    assert out.shape == batch.shape and out.dtype == np.uint8
    assert np.array_equal(out, distort_batch(batch, "noise", 2, seed=5))
    assert not np.array_equal(out[0] - batch[0], out[1] - batch[1])  # not the same noise twice


def test_errors_are_one_line_with_the_choices(frame):
    with pytest.raises(
        DistortionError, match="unknown distortion class 'fog'; choose one of blur, noise, jpeg"
    ):
        distort(frame, "fog", 1)
    with pytest.raises(DistortionError, match=r"level 6 .* not one of 0 \(identity\), 1, 2, 3, 4, 5"):
        distort(frame, "blur", 6)
    with pytest.raises(DistortionError, match="uint8"):
        distort(frame.astype(np.float32), "blur", 1)
    with pytest.raises(DistortionError, match="uint8"):
        distort_batch(frame, "blur", 1)
