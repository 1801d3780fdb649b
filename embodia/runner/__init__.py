"""Running episodes: an environment and a policy (plus recording and video) to per-episode statistics."""

from __future__ import annotations

from embodia.runner.episodes import EpisodeStats, RolloutResult, rollout, run_episode

__all__ = ["EpisodeStats", "RolloutResult", "rollout", "run_episode"]
