"""The offline-RL comparison's results files: names, paths, and the play data's coverage counted per task."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.core.errors import EmbodiaError
from embodia.data.store import TrajectoryStore
from embodia.policies.comparison_results import dataset_coverage, environment_slug, results_paths


def test_names_and_paths():
    assert [environment_slug(f) for f in ("CubeSingle", "Scene", "Puzzle3x3")] == [
        "cube_single",
        "scene",
        "puzzle3x3",
    ]
    paths = results_paths("out/{env}.json", ["CubeSingle", "Scene"])
    assert {k: str(v) for k, v in paths.items()} == {
        "CubeSingle": "out/cube_single.json",
        "Scene": "out/scene.json",
    }
    assert str(results_paths("one.json", ["Scene"])["Scene"]) == "one.json"  # one environment: any path
    with pytest.raises(EmbodiaError, match=r"2 environments need \{env\} in the path"):
        results_paths("one.json", ["CubeSingle", "Scene"])


def test_coverage_counts_episodes_that_reach_the_goal_and_goal_steps(tmp_path):
    flags = [[0, 0, 1, 1, 0], [0, 0, 0], [1, 0, 0, 0]]  # per step: the task's success flag
    with TrajectoryStore(tmp_path / "play.zarr", mode="w") as store:
        for success in flags:
            n = len(success)
            store.add_episode(
                {
                    "state": np.zeros((n, 2), np.float32),
                    "action": np.zeros((n, 1), np.float32),
                    "reward": np.zeros(n, np.float32),
                    "terminated": np.zeros(n, bool),
                    "truncated": np.zeros(n, bool),
                    "success": np.array(success, bool),
                },
                env_id="embodia/CubeSingle-Play-v0",
            )
    assert dataset_coverage(tmp_path / "play.zarr", 3) == {
        "task": 3,
        "episodes_with_goal": 2,
        "episodes": 3,
        "goal_steps": 3,
        "steps": 12,
    }
