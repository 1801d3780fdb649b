"""Running episodes: an environment and a policy (plus recording and video) to per-episode statistics; a person
with a keyboard or SpaceMouse in place of the policy (:func:`teleoperate`)."""

from __future__ import annotations

from embodia.runner.episodes import RolloutResult, rollout, run_episode
from embodia.runner.hooks import EpisodeHook, EpisodeStats, FinalInfo, RecordingHook, Step
from embodia.runner.teleop import TeleopResult, teleoperate

__all__ = [
    "EpisodeHook",
    "EpisodeStats",
    "FinalInfo",
    "RecordingHook",
    "RolloutResult",
    "Step",
    "TeleopResult",
    "rollout",
    "run_episode",
    "teleoperate",
]
