"""Labelled frames: shapes and labels agree with the simulator, and the zarr store round-trips."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.perception.datasets import (
    MAX_DEPTH,
    FrameDatasetConfig,
    FrameStoreError,
    load_frames,
    render_labelled_frames,
    save_frames,
)

CONFIG = FrameDatasetConfig(episodes=2, max_steps=12, noise=0.2, every=3, seed=5)


@pytest.fixture(scope="module")
def frames():
    return render_labelled_frames(CONFIG)


def test_shapes_and_dtypes(frames):
    n = 2 * (12 // 3 + 1)
    assert len(frames) == n
    assert frames.rgb.shape == (n, 64, 64, 3) and frames.rgb.dtype == np.uint8
    assert frames.depth.shape == (n, 64, 64) and frames.depth.dtype == np.float32
    assert frames.segmentation.shape == (n, 64, 64) and frames.segmentation.dtype == np.uint8
    assert frames.cube_pos.shape == frames.effector_pos.shape == (n, 3)
    assert frames.gripper_opening.shape == frames.phase.shape == (n,)
    assert frames.phase.dtype == np.int8 and set(np.unique(frames.phase)) <= {0, 1, 2, 3}
    assert frames.episode.tolist() == [0] * (n // 2) + [1] * (n // 2)
    assert frames.step.tolist() == [0, 3, 6, 9, 12] * 2
    assert set(np.unique(frames.segmentation)) <= {0, 1, 2, 3}


def test_depth_and_segmentation_are_plausible(frames):
    assert frames.depth.min() > 0.1 and frames.depth.max() <= MAX_DEPTH
    seen = frames.depth[frames.segmentation > 0]  # pixels with a labelled surface
    assert seen.max() < 3.0
    assert (frames.segmentation == 1).mean() > 0.5  # the floor fills most of the view
    has_cube = (frames.segmentation == 3).any(axis=(1, 2))
    assert has_cube.mean() >= 0.8
    camera = np.array([1.053, -0.014, 0.639])  # ogbench's front_pixels camera
    for i in np.flatnonzero(has_cube):
        distance = np.linalg.norm(frames.cube_pos[i] - camera)
        cube_depth = frames.depth[i][frames.segmentation[i] == 3].mean()
        assert 0.7 * distance < cube_depth < 1.05 * distance  # planar depth <= ray length


def test_rgb_is_the_environment_observation(frames):
    """Replay episode 1 with the same seeds: the stored frames are the observations."""
    env = embodia.make(CONFIG.env_id, **CONFIG.env_kwargs)
    try:
        expert = env.unwrapped.make_expert(noise=CONFIG.noise)
        obs, _ = env.reset(seed=CONFIG.seed + 1)
        expert.reset(seed=CONFIG.seed + 1)
        stored = frames.rgb[frames.episode == 1]
        for step in range(CONFIG.max_steps + 1):
            if step > 0:
                obs, *_ = env.step(expert.act(obs))
            if step % CONFIG.every == 0:
                np.testing.assert_array_equal(stored[step // CONFIG.every], obs["rgb"])
        info = env.unwrapped.raw.compute_ob_info()
        np.testing.assert_allclose(frames.cube_pos[-1], info["privileged/block_0_pos"], atol=1e-6)
    finally:
        env.close()
    # the cube class sits on the cube's red pixels
    cube = frames.segmentation == 3
    red = frames.rgb[..., 0].astype(int) - frames.rgb[..., 1:].max(-1)
    assert red[cube].mean() > red[frames.segmentation == 1].mean() + 50


def test_save_load_round_trip(frames, tmp_path):
    path = save_frames(frames, tmp_path / "frames.zarr")
    back = load_frames(path)
    for name in ("rgb", "depth", "segmentation", "cube_pos", "effector_pos", "gripper_opening", "phase",
                 "episode", "step"):  # fmt: skip
        np.testing.assert_array_equal(getattr(back, name), getattr(frames, name))
        assert getattr(back, name).dtype == getattr(frames, name).dtype
    assert back.config == frames.config
    save_frames(frames.subset(slice(0, 2)), path)  # replacing an earlier frame store is allowed
    assert len(load_frames(path)) == 2


def test_refuses_foreign_and_corrupt_folders(frames, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FrameStoreError, match="not a frame store"):
        save_frames(frames, foreign)
    assert (foreign / "notes.txt").read_text() == "mine"
    with pytest.raises(FrameStoreError, match="not a frame store"):
        load_frames(foreign)
    with pytest.raises(FrameStoreError, match="does not exist"):
        load_frames(tmp_path / "missing")
    path = save_frames(frames.subset(slice(0, 2)), tmp_path / "store")
    for chunk in (path / "depth" / "c").rglob("*"):
        if chunk.is_file():
            chunk.write_bytes(b"garbage")
    with pytest.raises(FrameStoreError, match="corrupt") as error:
        load_frames(path)
    assert "\n" not in str(error.value)
