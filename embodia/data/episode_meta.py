"""One row of a trajectory store's per-episode table (``meta/episodes``), as :meth:`TrajectoryStore.episode_meta`
returns it: the data model below the store's I/O (:mod:`embodia.data.store`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class EpisodeMeta:
    """One row of ``meta/episodes``."""

    index: int
    env_id: str
    env_kwargs: dict[str, Any]
    seed: int
    success: bool
    length: int
    return_: float
    start: int
    initial_state: np.ndarray | None = field(default=None, repr=False)
    final_state: np.ndarray | None = field(default=None, repr=False)
