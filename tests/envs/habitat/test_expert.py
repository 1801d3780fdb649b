"""The shortest-path follower expert reaches the goal (Habitat's success) on every navigation task."""

from __future__ import annotations

import pytest

from embodia.runner import EpisodeHook, rollout
from embodia.runner.evaluate import evaluate_policy
from embodia.runner.hooks import NAV_METRICS, FinalInfo


class SceneIds(EpisodeHook):
    def __init__(self) -> None:
        self.scenes: list[str] = []

    def begin(self, env, seed, obs, info) -> None:
        self.scenes.append(env.unwrapped.episode.scene_id)


def test_expert_pointnav_success_over_50_episodes():
    scenes = SceneIds()
    result = rollout(
        "embodia/Nav-PointNav-v0",
        "expert",
        episodes=50,
        seed=0,
        env_kwargs={"sensors": "none"},
        hooks=[scenes, FinalInfo(NAV_METRICS)],
    )
    assert len(result.episodes) == 50
    assert result.success_rate >= 0.95
    assert result.mean_metric("spl") >= 0.85  # close to the shortest path, not just arriving
    assert len(set(scenes.scenes)) >= 3  # across the shipped scenes


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
    result = evaluate_policy(
        "expert",
        env_id,
        episodes=episodes,
        seeds=[100],
        seed_stride=1,
        env_kwargs={"sensors": "none", **kwargs},
        metrics=NAV_METRICS,
    )
    assert result.success_rate == 1.0
    assert result.metrics["spl"] > 0.6
