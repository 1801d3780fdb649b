"""The MOVi-style video generator: determinism, masks that match what is drawn, motion and occlusion."""

from __future__ import annotations

import colorsys
from dataclasses import replace

import mujoco
import numpy as np
import pytest

from embodia.core.errors import EmbodiaError
from embodia.perception.video import PRESETS, VideoBatch, VideoConfig, render_videos
from embodia.perception.video.render import _render_one, _renderer
from embodia.perception.video.scene import PALETTE, sample_scene, scene_mjcf

TINY = PRESETS["tiny"]
SEED = 3


@pytest.fixture(scope="module")
def batch() -> VideoBatch:
    return render_videos(TINY, count=12, seed=SEED)


def _hue(rgb) -> float:
    return colorsys.rgb_to_hsv(*(np.asarray(rgb, dtype=float) / 255.0))[0] * 360.0


def _hue_distance(a: float, b: float) -> float:
    return min(abs(a - b), 360.0 - abs(a - b))


def test_shapes_and_dtypes(batch):
    n, t, s = 12, TINY.frames, TINY.size
    assert batch.rgb.shape == (n, t, s, s, 3) and batch.rgb.dtype == np.uint8
    assert batch.depth.shape == (n, t, s, s) and batch.depth.dtype == np.float32
    assert batch.masks.shape == (n, t, s, s) and batch.masks.dtype == np.uint8
    assert batch.seed == SEED and batch.config == TINY and len(batch) == n
    assert np.isfinite(batch.depth).all() and (batch.depth > 0).all()
    assert batch.masks.max() <= TINY.max_objects


def test_deterministic_and_independent_of_count(batch):
    again = render_videos("tiny", count=12, seed=SEED)
    for name in ("rgb", "depth", "masks"):
        assert np.array_equal(getattr(again, name), getattr(batch, name)), name
    fewer = render_videos(TINY, count=3, seed=SEED)
    assert np.array_equal(fewer.rgb, batch.rgb[:3]) and np.array_equal(fewer.masks, batch.masks[:3])
    other = render_videos(TINY, count=3, seed=SEED + 1)
    assert not np.array_equal(other.rgb, batch.rgb[:3])


def test_object_count_follows_config(batch):
    for i in range(len(batch)):
        scene = sample_scene(TINY, np.random.default_rng([SEED, i]))
        assert TINY.min_objects <= len(scene.objects) <= TINY.max_objects
        assert set(np.unique(batch.masks[i])) <= set(range(len(scene.objects) + 1))
    ks = {len(sample_scene(TINY, np.random.default_rng([SEED, i])).objects) for i in range(len(batch))}
    assert ks == {2, 3}


def test_masks_cover_objects_of_their_colour(batch):
    checked = visible = total = 0
    for i in range(len(batch)):
        scene = sample_scene(TINY, np.random.default_rng([SEED, i]))
        total += len(scene.objects)
        visible += len(set(np.unique(batch.masks[i, 0])) - {0})
        for k, obj in enumerate(scene.objects, start=1):
            for t in range(TINY.frames):
                pixels = batch.rgb[i, t][batch.masks[i, t] == k]
                if len(pixels) < 6:
                    continue
                hue = _hue(pixels.mean(axis=0))
                nearest = min(
                    range(len(PALETTE)), key=lambda c: _hue_distance(hue, _hue(np.multiply(PALETTE[c], 255)))
                )
                assert nearest == obj.color, (i, t, k, hue)
                checked += 1
    assert checked > 100
    assert visible >= 0.8 * total  # nearly every object is in view at the first frame


def test_background_is_floor_and_objects_are_in_front(batch):
    assert (batch.masks == 0).mean() > 0.5  # the floor fills most of the picture
    for i in range(len(batch)):
        for t in (0, TINY.frames - 1):
            mask, depth, rgb = batch.masks[i, t], batch.depth[i, t], batch.rgb[i, t]
            background = rgb[mask == 0].astype(float)
            saturation = background.max(axis=1) - background.min(axis=1)
            assert saturation.mean() < 10  # grey floor and wall, no object colour leaks into id 0
            objects = mask > 0
            if objects.any():
                assert depth[objects].max() < depth[~objects].max()


def test_objects_move_and_occlude(batch):
    moved = [not np.array_equal(m[0], m[-1]) for m in batch.masks]
    assert np.mean(moved) >= 0.8
    changes = []
    for masks in batch.masks:
        for k in range(1, int(masks.max()) + 1):
            area = (masks == k).sum(axis=(1, 2))
            if area.max() >= 10:
                changes.append((area.max() - area.min()) / area.max())
    assert max(changes) > 0.3  # some object is hidden or revealed by more than 30 % of its area


def test_fixed_camera_keeps_background_still_and_orbit_moves_it(batch):
    still = (batch.masks[:, 0] == 0) & (batch.masks[:, -1] == 0)
    assert np.array_equal(batch.rgb[:, 0][still], batch.rgb[:, -1][still])
    orbit = render_videos(replace(TINY, camera_motion=True), count=2, seed=SEED)
    still = (orbit.masks[:, 0] == 0) & (orbit.masks[:, -1] == 0)
    assert not np.array_equal(orbit.rgb[:, 0][still], orbit.rgb[:, -1][still])


def test_shared_renderer_matches_a_renderer_built_for_the_scene():
    config = replace(TINY, frames=2)
    scene = sample_scene(config, np.random.default_rng([SEED, 5]))
    scene.textured_floor, scene.wall = True, True
    pooled = _render_one(config, scene, _renderer(config.size))
    model = mujoco.MjModel.from_xml_string(scene_mjcf(scene, config.size))
    with mujoco.Renderer(model, height=config.size, width=config.size) as own:
        fresh = _render_one(config, scene, own)
    for a, b in zip(pooled, fresh, strict=True):
        assert np.array_equal(a, b)


def test_single_shape_and_bad_configs():
    boxes = render_videos(VideoConfig(size=24, frames=2, min_objects=1, max_objects=1, shapes=("box",)), 2, 0)
    assert boxes.rgb.shape == (2, 2, 24, 24, 3) and set(np.unique(boxes.masks)) <= {0, 1}
    for bad in ("no-such-preset", VideoConfig(min_objects=4, max_objects=2), VideoConfig(shapes=("torus",))):
        with pytest.raises(EmbodiaError) as error:
            render_videos(bad, 1, 0)
        assert "\n" not in str(error.value)
