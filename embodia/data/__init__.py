"""Trajectories: the zarr store, episode recording, window sampling for training, replay and video."""

from __future__ import annotations

from embodia.data.recorder import EpisodeRecorder
from embodia.data.store import EpisodeMeta, TrajectoryStore

__all__ = ["EpisodeMeta", "EpisodeRecorder", "TrajectoryStore"]
