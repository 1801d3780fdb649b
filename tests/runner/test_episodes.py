"""The episode runner: seeding, statistics, action chunks, recording, errors."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.core.errors import ActionError
from embodia.data.store import TrajectoryStore
from embodia.runner import rollout


class ChunkPolicy:
    """Emits chunks of 4 actions and counts how often it is queried."""

    chunk_size = 4

    def __init__(self, execute_steps=None):
        self.calls = 0
        if execute_steps is not None:
            self.execute_steps = execute_steps

    def reset(self, seed=None):
        self.calls = 0

    def act(self, obs):
        self.calls += 1
        return np.tile(np.array([[0.5, -0.5]], dtype=np.float32), (4, 1))


class NaNPolicy:
    def reset(self, seed=None):
        pass

    def act(self, obs):
        return np.array([np.nan, 0.0])


def test_same_seed_same_result_and_episode_seeds():
    a = rollout("embodia/PointMaze-Medium-v0", "random", episodes=2, seed=4, max_steps=50)
    b = rollout("embodia/PointMaze-Medium-v0", "random", episodes=2, seed=4, max_steps=50)
    assert [e.seed for e in a.episodes] == [4, 5]
    assert [(e.return_, e.length) for e in a.episodes] == [(e.return_, e.length) for e in b.episodes]
    assert all(e.length == 50 and e.truncated for e in a.episodes)


def test_expert_solves_pointmaze_and_beats_random():
    expert = rollout("embodia/PointMaze-Medium-v0", "expert", episodes=5, seed=0)
    rand = rollout("embodia/PointMaze-Medium-v0", "random", episodes=5, seed=0)
    assert expert.success_rate == 1.0 and rand.success_rate < 1.0
    assert all(e.terminated for e in expert.episodes)
    assert expert.mean_length < rand.mean_length


def test_chunks_are_executed_step_by_step():
    policy = ChunkPolicy()
    result = rollout("embodia/PointMaze-Medium-v0", policy, episodes=1, max_steps=10)
    assert result.episodes[0].length == 10 and policy.calls == 3  # ceil(10 / 4)
    receding = ChunkPolicy(execute_steps=2)
    rollout("embodia/PointMaze-Medium-v0", receding, episodes=1, max_steps=10)
    assert receding.calls == 5


def test_recording_matches_the_episode(tmp_path):
    result = rollout("embodia/PointMaze-Medium-v0", "expert", episodes=2, seed=3, record=tmp_path / "r.zarr")
    store = TrajectoryStore(tmp_path / "r.zarr")
    assert store.num_episodes == 2
    assert list(store.episode_lengths) == [e.length for e in result.episodes]
    meta = store.episode_meta(1)
    assert meta.seed == 4 and meta.success and meta.env_id == "embodia/PointMaze-Medium-v0"
    episode = store.episode(1)
    assert episode["terminated"][-1] and not episode["terminated"][:-1].any()
    assert episode["success"][-1]
    # the first recorded observation is what reset(seed) returns
    env = embodia.make("embodia/PointMaze-Medium-v0")
    obs, _ = env.reset(seed=4)
    np.testing.assert_array_equal(episode["state"][0], obs["state"])
    np.testing.assert_array_equal(episode["goal"][0], obs["goal"])
    env.close()


def test_an_environment_object_records_the_arguments_it_was_made_with(tmp_path):
    """A store recorded from an environment object replays the same environment: the arguments given to
    ``make`` beyond the registration's are recorded (the registration's own are not repeated)."""
    env = embodia.make("embodia/PointMaze-Medium-v0", width=64, height=48)
    rollout(env, "random", episodes=1, max_steps=5, record=tmp_path / "object.zarr")
    meta = TrajectoryStore(tmp_path / "object.zarr").episode_meta(0)
    assert (meta.env_id, meta.env_kwargs) == ("embodia/PointMaze-Medium-v0", {"width": 64, "height": 48})
    plain = embodia.make("embodia/PointMaze-Medium-v0")
    rollout(plain, "random", episodes=1, max_steps=5, record=tmp_path / "plain.zarr")
    assert TrajectoryStore(tmp_path / "plain.zarr").episode_meta(0).env_kwargs == {}


def test_nan_action_is_a_clear_error_and_keeps_earlier_episodes(tmp_path):
    path = tmp_path / "r.zarr"
    rollout("embodia/PointMaze-Medium-v0", "random", episodes=1, max_steps=5, record=path)
    with pytest.raises(ActionError, match="NaN"):
        rollout("embodia/PointMaze-Medium-v0", NaNPolicy(), episodes=1, record=path)
    assert TrajectoryStore(path).num_episodes == 1


def test_video(tmp_path):
    from embodia.data.video import read_video

    result = rollout(
        "embodia/PointMaze-Medium-v0",
        "random",
        episodes=2,
        max_steps=6,
        video=tmp_path / "v.mp4",
        env_kwargs={"width": 64, "height": 48},
    )
    frames = read_video(tmp_path / "v.mp4")
    assert frames.shape == (2 * (6 + 1), 48, 64, 3)
    assert result.success_rate == 0.0


def test_metric_means_leave_out_undefined_episodes():
    """habitat-lab's SPL is NaN for a start at the goal: such episodes do not turn the mean into NaN."""
    import math

    from embodia.runner.evaluate import _defined_mean

    assert _defined_mean([1.0, math.nan, 0.5]) == 0.75
    assert math.isnan(_defined_mean([math.nan]))
    assert _defined_mean([0.0, 0.0]) == 0.0


# Ctrl-C inside the store write that commits a finished serial episode (add_episodes sends SIGINT to its own
# process once 3 episodes are in; the commit holds it until the write is done, then it surfaces from the
# episode's end hooks). The result must list every episode the store kept.
_CTRL_C_IN_A_SERIAL_WRITE = """
import os, signal, sys
from embodia.data.store import TrajectoryStore
from embodia.runner import rollout

write = TrajectoryStore.add_episodes
def add_episodes(self, episodes):
    write(self, episodes)
    if self.num_episodes >= 3 and not getattr(add_episodes, "fired", False):
        add_episodes.fired = True
        os.kill(os.getpid(), signal.SIGINT)
TrajectoryStore.add_episodes = add_episodes

result = rollout("embodia/PointMaze-Medium-v0", "random", episodes=10, seed=0, max_steps=30,
                 record=sys.argv[1], commit_every=0.0)
print(result.interrupted, len(result.episodes))
"""


def test_ctrl_c_inside_a_serial_store_write_keeps_result_and_store_in_step(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    store = tmp_path / "stopped.zarr"
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_A_SERIAL_WRITE, str(store)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    interrupted, listed = done.stdout.split()[-2:]
    kept = TrajectoryStore(store)
    assert interrupted == "True" and int(listed) == kept.num_episodes == 3
    assert kept.episodes_table()["seed"].tolist() == [0, 1, 2]
