"""OGBench play environments: the single-task labels, dense and sparse (the Q-chunking code's --sparse)."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.core.errors import EnvArgumentError
from embodia.runner.datasets import generate_dataset


def test_sparse_rewards_are_minus_one_before_success_and_zero_at_it(tmp_path):
    """A recorded play episode of Scene task 1: -1 on every step whose state does not solve the task, 0 on
    those that do; the dense labels of the same episode are minus the unsolved subtasks."""
    for sparse in (False, True):
        generate_dataset(
            "embodia/Scene-v0",
            1,
            tmp_path / f"{sparse}.zarr",
            task_id=1,
            sparse=sparse,
            max_steps=400,
            seed=2,
        )
    dense = embodia.TrajectoryStore(tmp_path / "False.zarr").episode(0)
    sparse = embodia.TrajectoryStore(tmp_path / "True.zarr").episode(0)
    np.testing.assert_array_equal(dense["action"], sparse["action"])  # the same episode, relabelled
    solved = sparse["success"].astype(bool)
    assert solved.any() and not solved.all()  # the expert reaches task 1's goal in this episode
    np.testing.assert_array_equal(sparse["reward"], np.where(solved, 0.0, -1.0))
    np.testing.assert_array_equal(sparse["reward"], (dense["reward"] != 0) * -1.0)  # (r != 0) * -1
    assert dense["reward"].min() < -1  # dense: several subtasks unsolved at once


def test_sparse_is_refused_where_rewards_are_goal_conditioned():
    with pytest.raises(EnvArgumentError, match="single-task"):
        embodia.make("embodia/Scene-v0", sparse=True)
    env = embodia.make("embodia/Scene-SingleTask-v0", task_id=2, sparse=True)
    env.reset(seed=0)
    _, reward, *_ = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
    assert reward in (-1.0, 0.0)
    env.close()
