"""CoNavBench-style evaluation of NavCraft episodes: the same missions run by the collaborative schedule,
by the primary robot alone, and by a language-model planner, with and without disturbances.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). Agents (:data:`AGENTS`):

- ``planner``: the episode's collaborative schedule (NavCraft's stage 2, the hierarchical agent's first
  stage), executed robot by robot (:func:`~.executor.execute`); re-planning uses the reachability fallback
  of :func:`~.planner.plan_from_state`;
- ``solo``: the same mission by the primary robot alone, the helpers idle in the scene (the episode's solo
  schedule; for an escort episode the door stays closed, as in the collaborative run);
- ``llm``: a language model allocates the items from the scene graph as text (:class:`~.planner.LMPlanner`;
  the solo schedule when its answer is unusable).

Disturbances (:func:`random_disturbances`, reproducible per episode and seed): one robot is delayed 20-60 s
at a random time in the first half of the planned makespan, and a door that one of the plan's moves goes
through is closed at a random time in its first 60 % - only a door whose closing leaves the scene another
way round (every place of the mission still reachable; none in a tree-shaped part of a floor plan). Each result row carries the metrics of
:mod:`.metrics` and the episode's taxonomy type; :func:`summary_rows` turns rows into the tables of the NavCraft guide (docs/guides/navcraft.md).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.agents.navcraft.executor import CloseDoor, Delay, execute
from embodia.agents.navcraft.metrics import (
    ExecutionResult,
    handoff_errors,
    interference_events,
    mission_success,
    spl_per_robot,
    step_success,
)
from embodia.agents.navcraft.mission import NavCraftEpisode, Schedule
from embodia.agents.navcraft.travel import Travel

AGENTS = ("planner", "solo", "llm")


@dataclass
class RunConfig:
    """How :func:`run_episode` runs an episode."""

    agent: str = "planner"
    """``planner`` (the collaborative schedule), ``solo`` (primary alone) or ``llm`` (an LM allocates)."""
    disturb: bool = False
    """Inject a random delay and a door closing (:func:`random_disturbances`)."""
    replan: bool = True
    """Re-plan on a disturbance, an unreachable target or a handoff window that will be missed."""
    lm: str = "smollm2"
    """``llm`` agent: the model (a local model name or folder, or an OpenAI-compatible endpoint URL)."""
    max_new_tokens: int = 96
    """``llm`` agent: tokens the model may answer with."""
    max_steps: int = 3000
    """Environment steps (0.5 s each) before an episode is cut off."""
    seed: int = 0
    """Seed of the disturbances and of the environment."""


def solo_of(episode: NavCraftEpisode) -> Schedule:
    """The episode's solo schedule with every robot of the episode present (helpers idle)."""
    out = copy.deepcopy(episode.solo)
    robots = episode.schedule.robots
    out.robots = list(robots)
    out.plans = list(out.plans) + [[] for _ in range(len(robots) - len(out.plans))]
    return out


def _doors_crossed(schedule: Schedule, travel: Travel) -> list[str]:
    doors: list[str] = []
    for robot, plan in zip(schedule.robots, schedule.plans):
        here = robot.place.position
        for step in plan:
            if step.kind == "move":
                doors += [d for d, _ in travel.door_crossings(here, step.place.position) if d not in doors]
                here = step.place.position
    return [d for d in doors if d not in schedule.closed_doors]


def _detour_exists(episode: NavCraftEpisode, closed: tuple[str, ...], door: str) -> bool:
    """Whether every place of the mission and every robot's start stay connected with ``door`` shut too
    (a disturbance the robots can recover from: the scene has another way round)."""
    travel = Travel.for_scene(episode.mission.scene_id, tuple(sorted({*closed, door})))
    mission = episode.mission
    places = [mission.start, mission.end, *(p for i in mission.items for p in (i.pickup, i.destination))]
    places += [r.place for r in episode.schedule.robots]
    return all(travel.reachable(places[0].position, p.position) for p in places[1:])


def random_disturbances(episode: NavCraftEpisode, seed: int = 0) -> list[Delay | CloseDoor]:
    """A delay of one robot and the closing of one door the plan goes through (see the module docstring)."""
    rng = np.random.default_rng([seed, _stable_id_hash(episode.episode_id)])
    makespan = max(episode.schedule.makespan, 10.0)
    working = [k for k, plan in enumerate(episode.schedule.plans) if plan] or [0]
    out: list[Delay | CloseDoor] = [
        Delay(
            int(rng.choice(working)), float(rng.uniform(0.05, 0.5) * makespan), float(rng.uniform(20.0, 60.0))
        )
    ]
    closed = tuple(episode.schedule.closed_doors)
    travel = Travel.for_scene(episode.mission.scene_id, closed)
    doors = [d for d in _doors_crossed(episode.schedule, travel) if _detour_exists(episode, closed, d)]
    if doors:
        out.append(CloseDoor(str(rng.choice(doors)), float(rng.uniform(0.1, 0.6) * makespan)))
    return out


def _stable_id_hash(text: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(text))


def run_episode(episode: NavCraftEpisode, config: RunConfig, lm: Any = None) -> dict[str, Any]:
    """Run one episode as ``config`` says; a row of metrics (JSON-ready)."""
    from embodia.agents.navcraft.planner import LMPlanner

    disturbances = random_disturbances(episode, config.seed) if config.disturb else []
    planner, fallback = None, None
    if config.agent == "solo":
        task: Any = (episode.mission, solo_of(episode))
    elif config.agent == "planner":
        task = episode
    elif config.agent == "llm":
        if lm is None:
            from embodia.agents.llm import load_lm

            lm = load_lm(config.lm)
        planner = LMPlanner(lm, max_new_tokens=config.max_new_tokens)
        task = episode
    else:
        raise ValueError(f"unknown agent {config.agent!r}; choose one of {', '.join(AGENTS)}")
    result = execute(
        task,
        planner=planner,
        disturbances=disturbances,
        replan=config.replan,
        max_steps=config.max_steps,
        seed=config.seed,
    )
    if planner is not None and planner.records:
        fallback = planner.records[0].fallback
    return result_row(episode, config, result, fallback)


def result_row(
    episode: NavCraftEpisode, config: RunConfig, result: ExecutionResult, lm_fallback: bool | None = None
) -> dict[str, Any]:
    spl = [v for v in spl_per_robot(result) if not math.isnan(v)]
    return {
        "episode_id": episode.episode_id,
        "taxonomy": episode.info.get("taxonomy", episode.schedule.collaboration),
        "agent": config.agent,
        "disturbed": config.disturb,
        "replan": config.replan,
        "robots": episode.num_robots,
        "success": mission_success(result),
        "step_success": step_success(result),
        "makespan": result.makespan,
        "planned_makespan": result.planned_makespan,
        "handoffs": len(result.handoffs),
        "handoff_errors": handoff_errors(result),
        "interference": interference_events(result),
        "replans": len(result.replans),
        "spl": spl,
        "spl_mean": float(np.mean(spl)) if spl else math.nan,
        "lm_fallback": lm_fallback,
        "steps": result.steps,
        "wall_seconds": result.wall_seconds,
    }


def _run_plain(episode_plain: dict, config: RunConfig) -> dict[str, Any]:
    """:func:`run_episode` on an episode given as plain data (what a Ray worker receives)."""
    from embodia.agents.navcraft.mission import episode_from_plain

    return run_episode(episode_from_plain(episode_plain), config)


def run_episodes(
    episodes: Sequence[NavCraftEpisode],
    config: RunConfig,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    on_row: Callable[[int, dict], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows of :func:`run_episode` for every episode, in order; ``workers > 1`` runs episodes as Ray tasks
    (the ``llm`` agent loads its model once per worker)."""
    from embodia.agents.navcraft.mission import to_plain

    if workers > 1 or ray_address:
        from embodia.runner.parallel import map_tasks

        arguments = [(to_plain(ep), config) for ep in episodes]
        return map_tasks(_run_plain, arguments, workers, ray_address, on_result=on_row)
    lm = None
    if config.agent == "llm":
        from embodia.agents.llm import load_lm

        lm = load_lm(config.lm)
    rows = []
    for i, episode in enumerate(episodes):
        rows.append(run_episode(episode, config, lm))
        if on_row is not None:
            on_row(i, rows[-1])
    return rows


def _mean(rows: Sequence[dict], key: str) -> float:
    values = [
        r[key] for r in rows if r[key] is not None and not (isinstance(r[key], float) and math.isnan(r[key]))
    ]
    return float(np.mean(values)) if values else math.nan


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per taxonomy type (and ``all``): episodes, mission and step success, makespan (all episodes and
    successful ones), planned makespan, handoff errors, interference events, re-plans and SPL, means."""
    groups: dict[str, list[dict]] = {"all": list(rows)}
    for row in rows:
        groups.setdefault(row["taxonomy"], []).append(row)
    out = []
    for name, group in groups.items():
        out.append(
            {
                "taxonomy": name,
                "episodes": len(group),
                "success": _mean(group, "success"),
                "step_success": _mean(group, "step_success"),
                "makespan": _mean(group, "makespan"),
                "makespan_successful": _mean([r for r in group if r["success"]], "makespan"),
                "planned_makespan": _mean(group, "planned_makespan"),
                "handoff_errors": _mean(group, "handoff_errors"),
                "interference": _mean(group, "interference"),
                "replans": _mean(group, "replans"),
                "spl": _mean(group, "spl_mean"),
            }
        )
    return out
