"""The shortest-path follower expert reaches the goal (Habitat's success) on every navigation task."""

from __future__ import annotations

import pytest

from embodia.envs.habitat.evaluate import evaluate


def test_expert_pointnav_success_over_50_episodes():
    result = evaluate("embodia/Nav-PointNav-v0", "expert", episodes=50, seed=0, sensors="none")
    assert len(result.episodes) == 50
    assert result.mean("success") >= 0.95
    assert result.mean("spl") >= 0.85  # close to the shortest path, not just arriving
    assert len({e.scene_id for e in result.episodes}) >= 3  # across the shipped scenes


@pytest.mark.parametrize(
    "env_id,kwargs,episodes",
    [
        ("embodia/Nav-PointNav-v0", {"action_mode": "velocity"}, 6),
        ("embodia/Nav-ObjectNav-v0", {}, 6),
        ("embodia/Nav-InstructionNav-v0", {}, 6),
        ("embodia/Nav-MultiRobot-v0", {}, 4),
    ],
)
def test_expert_succeeds_on_every_task(env_id, kwargs, episodes):
    result = evaluate(env_id, "expert", episodes=episodes, seed=100, sensors="none", **kwargs)
    assert result.mean("success") == 1.0
    assert result.mean("spl") > 0.6
