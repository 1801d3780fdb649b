"""The recorder's control frequency (``embodia/data/recorder.py``): read from environments, recorded with
every episode and kept by the store, whichever way the episodes ran."""

from __future__ import annotations

import types

import numpy as np
import pytest

import embodia
from embodia.core.errors import StoreSchemaError
from embodia.data.recorder import EpisodeRecorder, control_fps
from embodia.data.store import TrajectoryStore

MAZE = "embodia/PointMaze-Medium-v0"


def fake_env(metadata=None, dt=None):
    unwrapped = types.SimpleNamespace(dt=dt) if dt is not None else types.SimpleNamespace()
    return types.SimpleNamespace(metadata=metadata or {}, unwrapped=unwrapped)


def test_control_fps_reads_render_fps_then_dt():
    assert control_fps(fake_env({"render_fps": 25})) == 25.0
    assert control_fps(fake_env({"render_fps": 25}, dt=0.1)) == 25.0  # gymnasium's metadata first
    assert control_fps(fake_env(dt=0.002 * 5)) == pytest.approx(100.0)
    assert control_fps(fake_env()) is None
    assert control_fps(fake_env({"render_fps": "fast"})) is None
    assert control_fps(fake_env({"render_fps": 0})) is None


def test_real_environments_report_their_control_frequency():
    maze = embodia.make(MAZE)  # ogbench's point maze: 0.1 s per step
    cube = embodia.make("embodia/CubeSingle-v0")  # ogbench's manipulation: 0.05 s per step
    try:
        assert control_fps(maze) == 10.0 and control_fps(cube) == 20.0
    finally:
        maze.close()
        cube.close()


@pytest.mark.parametrize("num_envs", [1, 2])
def test_rollouts_record_the_frequency_in_the_store(tmp_path, num_envs):
    path = tmp_path / "maze.zarr"
    embodia.rollout(MAZE, "random", episodes=2, max_steps=4, record=path, num_envs=num_envs)
    store = TrajectoryStore(path)
    assert store.num_episodes == 2 and store.fps == 10.0 and store.summary()["fps"] == 10.0


def test_the_recorder_carries_fps_to_the_store(tmp_path):
    store = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    recorder = EpisodeRecorder(store, "e", commit_every=0)
    for fps in (15.0, 15.0):
        recorder.begin_episode(0, fps=fps)
        recorder.add_step({"x": np.zeros(2)}, np.zeros(1), 0.0, False, False, False)
        recorder.end_episode()
    assert store.fps == 15.0 and store.num_episodes == 2
    recorder.begin_episode(1, fps=30.0)
    recorder.add_step({"x": np.zeros(2)}, np.zeros(1), 0.0, False, False, False)
    with pytest.raises(StoreSchemaError, match="at 30 steps per second do not match"):
        recorder.end_episode()
    assert TrajectoryStore(tmp_path / "s.zarr").num_episodes == 2
