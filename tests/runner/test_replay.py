"""Replay: recorded episodes re-simulate exactly; divergence is detected; video renders."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from embodia.core.errors import ReplayMismatchError
from embodia.data.store import TrajectoryStore
from embodia.runner import rollout
from embodia.runner.replay import replay


@pytest.mark.parametrize(
    ("env_id", "policy", "episodes", "max_steps"),
    [("embodia/PointMaze-Medium-v0", "expert", 3, None), ("embodia/CubeSingle-v0", "random", 2, 80)],
)
def test_replay_matches_recorded_states(tmp_path, env_id, policy, episodes, max_steps):
    path = tmp_path / "r.zarr"
    # per-step simulator states on the maze, observations + final state only on the cube
    recorded = rollout(
        env_id,
        policy,
        episodes=episodes,
        seed=7,
        record=path,
        max_steps=max_steps,
        record_sim_state="Maze" in env_id,
    )
    results = replay(path, verify=True, tolerance=1e-6)
    assert len(results) == episodes
    for rec, rep in zip(recorded.episodes, results):
        assert rep.max_deviation <= 1e-6 and rep.reset_deviation <= 1e-6
        assert rep.success == rec.success and rep.return_ == pytest.approx(rec.return_)


def test_tampered_actions_are_detected(tmp_path):
    path = tmp_path / "r.zarr"
    rollout("embodia/PointMaze-Medium-v0", "random", episodes=1, seed=0, record=path, max_steps=30)
    actions = zarr.open_group(str(path), mode="r+")["data/action"]
    actions[10] = -np.asarray(actions[10])
    with pytest.raises(ReplayMismatchError, match="deviates by"):
        replay(path, verify=True)
    assert replay(path, verify=False)[0].length == 30


def test_replay_video(tmp_path):
    from embodia.data.video import read_video

    path = tmp_path / "r.zarr"
    rollout(
        "embodia/PointMaze-Medium-v0",
        "random",
        episodes=2,
        seed=0,
        record=path,
        max_steps=5,
        env_kwargs={"width": 64, "height": 64},
    )
    replay(TrajectoryStore(path), [1], video=tmp_path / "v.mp4")
    assert read_video(tmp_path / "v.mp4").shape == (6, 64, 64, 3)
