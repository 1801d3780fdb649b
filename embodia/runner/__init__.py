"""Running episodes: an environment and a policy (plus recording and video) to per-episode statistics."""

from __future__ import annotations

from embodia.runner.episodes import RolloutResult, rollout, run_episode
from embodia.runner.hooks import EpisodeHook, EpisodeStats, FinalInfo, RecordingHook, Step

__all__ = [
    "EpisodeHook",
    "EpisodeStats",
    "FinalInfo",
    "RecordingHook",
    "RolloutResult",
    "Step",
    "rollout",
    "run_episode",
]
