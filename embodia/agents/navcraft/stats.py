"""Benchmark statistics of generated NavCraft episodes (CoNavBench-style): episodes by taxonomy type,
leg lengths in room hops and metres, robots per episode, rejected candidates by reason, generation speed."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from embodia.agents.navcraft.mission import NavCraftEpisode


def _summary(values: list[float]) -> dict[str, float]:
    values = values or [math.nan]
    return {"mean": float(np.mean(values)), "min": float(min(values)), "max": float(max(values))}


def generation_stats(
    episodes: Sequence[NavCraftEpisode], rejected: Counter, elapsed: float
) -> dict[str, Any]:
    """What ``embodia navcraft generate`` reports and writes to ``stats.json``."""
    return {
        "episodes": len(episodes),
        "by_taxonomy": dict(sorted(Counter(ep.info["taxonomy"] for ep in episodes).items())),
        "room_hops": _summary([leg.room_hops for ep in episodes for leg in ep.mission.legs]),
        "mission_length_m": _summary([sum(leg.distance for leg in ep.mission.legs) for ep in episodes]),
        "robots": dict(sorted(Counter(ep.num_robots for ep in episodes).items())),
        "items": dict(sorted(Counter(len(ep.mission.items) for ep in episodes).items())),
        "rejected": {k: int(v) for k, v in sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))},
        "seconds": elapsed,
        "episodes_per_second": len(episodes) / elapsed if elapsed > 0 else math.inf,
    }
