"""Trajectories: the zarr store, episode recording, window sampling for training, replay and video."""

from __future__ import annotations

from embodia.data.episode_meta import EpisodeMeta
from embodia.data.recorder import EpisodeRecorder
from embodia.data.store import TrajectoryStore

__all__ = ["EpisodeMeta", "EpisodeRecorder", "TrajectoryStore"]
