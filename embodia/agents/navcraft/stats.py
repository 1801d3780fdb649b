"""Benchmark statistics of generated NavCraft episodes (CoNavBench-style): episodes by taxonomy type,
single-robot and collaborative episodes, the collaboration patterns they cover (handoff styles, rendezvous
patterns), leg lengths in room hops and metres, robots per episode, rejected candidates by reason,
generation speed.

CoNavBench's taxonomy "controls handoff styles and rendezvous patterns"; the paper does not list them, so
:data:`PATTERNS` is embodia's catalogue of what its schedules can express (:func:`collaboration_patterns`
reads them from a schedule's events and plans), and coverage is the share of the catalogue an episode set
contains.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from embodia.agents.navcraft.mission import TAXONOMY, NavCraftEpisode, Schedule
from embodia.core.results import interval

#: the collaboration patterns a schedule can show (see :func:`collaboration_patterns`)
PATTERNS = (
    "single robot",
    "handoff helper -> primary",
    "handoff primary -> helper",
    "handoff helper -> helper",
    "rendezvous swap",
    "parallel, 2 carriers",
    "parallel, 3+ carriers",
    "door opened ahead",
)


def _role(robot: int) -> str:
    return "primary" if robot == 0 else "helper"


def collaboration_patterns(schedule: Schedule) -> list[str]:
    """The :data:`PATTERNS` a schedule shows: each handoff by who gives to whom, a rendezvous (a swap), the
    number of robots that carry items in a parallel fetch (handoffs aside), a door opened ahead; a schedule
    where only robot 0 acts is ``single robot``."""
    found: list[str] = []
    for event in schedule.events:
        if event.kind == "handoff":
            giver, taker = event.robots
            found.append(f"handoff {_role(giver)} -> {_role(taker)}")
        elif event.kind == "rendezvous":
            found.append("rendezvous swap")
        elif event.kind == "door":
            found.append("door opened ahead")
    carriers = {r for r, plan in enumerate(schedule.plans) for s in plan if s.kind == "pick"}
    if schedule.collaboration == "parallel_fetch" and len(carriers) >= 2:
        found.append("parallel, 2 carriers" if len(carriers) == 2 else "parallel, 3+ carriers")
    if not any(schedule.plans[1:]):
        found.append("single robot")
    return list(dict.fromkeys(found))


def coverage(episodes: Sequence[NavCraftEpisode]) -> dict[str, Any]:
    """Episodes per pattern, and the share of :data:`PATTERNS` and of taxonomy types that occur."""
    patterns = Counter(p for ep in episodes for p in collaboration_patterns(ep.schedule))
    types = {ep.info["taxonomy"] for ep in episodes}
    return {
        "patterns": {p: int(patterns.get(p, 0)) for p in PATTERNS},
        "pattern_coverage": sum(1 for p in PATTERNS if patterns.get(p)) / len(PATTERNS),
        "taxonomy_coverage": sum(1 for t in TAXONOMY if t in types) / len(TAXONOMY),
    }


def _share(successes: int, trials: int) -> dict[str, float] | None:
    from embodia.runner.evaluate import wilson_interval

    return interval(successes / trials, *wilson_interval(successes, trials)) if trials else None


def _mean_interval(values: Sequence[float]) -> dict[str, float] | None:
    from scipy import stats as scipy_stats

    values = [float(v) for v in values]
    if not values:
        return None
    mean = float(np.mean(values))
    if len(values) < 2 or float(np.std(values)) == 0.0:
        return interval(mean, mean, mean)
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=mean, scale=scipy_stats.sem(values))
    return interval(mean, low, high)


def generator_summary(label: str, episodes: Sequence[NavCraftEpisode], seconds: float) -> dict[str, Any]:
    """One generator's episodes compared (a row of ``scripts/navcraft_experiment.py``'s generator table):
    shares of stages done by the agent and of fallbacks (agent episodes only, from ``info["agent"]``), its
    proposals valid as proposed (the rule-based generator: candidates that reached validation), final
    schedules passing ``validate`` (checked again here), single-robot share, planned makespan reduction
    ``gain / solo makespan``, taxonomy and pattern coverage; shares with 95 % Wilson intervals, the mean
    reduction with a 95 % t interval."""
    from embodia.agents.navcraft.timing import travel_for_scene
    from embodia.agents.navcraft.validate import validate

    n = len(episodes)
    agents = [e.info["agent"] for e in episodes if "agent" in e.info]
    travel_fors: dict[str, Any] = {}
    for e in episodes:
        travel_fors.setdefault(e.mission.scene_id, travel_for_scene(e.mission.scene_id))
    valid_final = sum(not validate(e.mission, e.schedule, travel_fors[e.mission.scene_id]) for e in episodes)
    if agents:
        proposals = sum(a["mission_proposals"] + a["schedule_proposals"] for a in agents)
        valid = sum(a["mission_valid"] + a["schedule_valid"] for a in agents)
        with_helpers = [a for a in agents if a["schedule_by"] != "no_helpers"]
        mission_by_agent = _share(sum(a["mission_by"] == "agent" for a in agents), len(agents))
        schedule_by_agent = _share(
            sum(a["schedule_by"] in ("agent", "agent_solo") for a in with_helpers), len(with_helpers)
        )
        fell_back = _share(
            sum(a["mission_by"] == "rules" or a["schedule_by"] == "rules" for a in agents), len(agents)
        )
        calls = float(np.mean([a["lm_calls"] for a in agents]))
    else:  # the rule-based generator: its candidates are its proposals
        proposals = sum(e.info["validated"] for e in episodes)
        valid = sum(e.info["valid_as_built"] for e in episodes)
        mission_by_agent = schedule_by_agent = fell_back = None
        calls = None
    covered = coverage(episodes)
    return {
        "generator": label,
        "episodes": n,
        "mission_by_agent": mission_by_agent,
        "schedule_by_agent": schedule_by_agent,
        "fell_back": fell_back,
        "proposals": proposals,
        "valid_as_proposed": _share(valid, proposals),
        "valid_final": _share(valid_final, n),
        "single_robot": _share(sum(e.info["taxonomy"] == "solo" for e in episodes), n),
        "reduction": _mean_interval([e.info["gain"] / e.info["solo_makespan"] for e in episodes]),
        "taxonomy_coverage": covered["taxonomy_coverage"],
        "pattern_coverage": covered["pattern_coverage"],
        "lm_calls": calls,
        "seconds": seconds / n if n else None,
    }


def _summary(values: list[float]) -> dict[str, float]:
    values = values or [math.nan]
    return {"mean": float(np.mean(values)), "min": float(min(values)), "max": float(max(values))}


def generation_stats(
    episodes: Sequence[NavCraftEpisode], rejected: Counter, elapsed: float
) -> dict[str, Any]:
    """What ``embodia navcraft generate`` reports and writes to ``stats.json``."""
    single = [ep for ep in episodes if ep.info["taxonomy"] == "solo"]
    return {
        "episodes": len(episodes),
        "by_taxonomy": dict(sorted(Counter(ep.info["taxonomy"] for ep in episodes).items())),
        "single_robot": len(single),
        "collaborative": len(episodes) - len(single),
        "single_robot_by_reason": dict(
            sorted(Counter(str(ep.info.get("single_robot")) for ep in single).items())
        ),
        "coverage": coverage(episodes),
        "room_hops": _summary([leg.room_hops for ep in episodes for leg in ep.mission.legs]),
        "mission_length_m": _summary([sum(leg.distance for leg in ep.mission.legs) for ep in episodes]),
        "robots": dict(sorted(Counter(ep.num_robots for ep in episodes).items())),
        "items": dict(sorted(Counter(len(ep.mission.items) for ep in episodes).items())),
        "rejected": {k: int(v) for k, v in sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))},
        "seconds": elapsed,
        "episodes_per_second": len(episodes) / elapsed if elapsed > 0 else math.inf,
    }
