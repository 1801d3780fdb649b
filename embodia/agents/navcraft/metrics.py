"""CoNavBench-style metrics of executed NavCraft missions, and the records an execution produces.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). An :class:`ExecutionResult` (written by
:func:`embodia.agents.navcraft.executor.execute`) is scored by pure functions:

- ``mission_success``: 1 when every subgoal was achieved (every item picked and delivered, the primary
  robot at the end), else 0;
- ``step_success``: the fraction of subgoals achieved - the paper's headline step-level success;
- ``makespan``: executed seconds until the last robot finished (``planned_makespan`` for the plan);
- ``handoff_errors``, ``interference_events``: counts (a handoff whose partner did not come in its window
  plus grace; two robots close together in one doorway, consecutive steps counted once);
- ``spl_per_robot``: success weighted by path length per robot, ``S * l / max(p, l)`` with ``l`` the
  geodesic length of the robot's assigned route (its final plan), ``p`` its executed path length and ``S``
  whether all that robot's subgoals were achieved (vacuously true for a robot with none); habitat-lab's
  formula (:func:`embodia.envs.habitat.metrics.spl`), so ``l = p = 0`` (an idle robot) is NaN and skipped
  by means;
- :func:`summarise`: means over results, overall and per taxonomy type (the initial plan's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.agents.navcraft.mission import Step
from embodia.envs.habitat.metrics import spl


@dataclass
class Delay:
    """Robot ``robot`` is frozen for ``seconds`` from ``at_time`` (s)."""

    robot: int
    at_time: float
    seconds: float


@dataclass
class CloseDoor:
    """Door ``door`` shuts at ``at_time`` (s)."""

    door: str
    at_time: float


Disturbance = Delay | CloseDoor


@dataclass
class HandoffRecord:
    """A handoff (``error`` empty) or a handoff error (``error`` says why)."""

    time: float
    giver: int
    taker: int
    item: str
    room: str
    error: str = ""


@dataclass
class InterferenceRecord:
    door: str
    robots: tuple[int, int]
    start: float
    end: float


@dataclass
class ReplanRecord:
    time: float
    reason: str
    fallback: bool
    fallback_reason: str
    collaboration: str
    planned_makespan: float


@dataclass
class ExecutionResult:
    """What happened when a mission was executed."""

    mission_id: str
    collaboration: str
    """Taxonomy type of the initial plan."""
    planner: str
    subgoal_times: dict[str, float | None]
    """Subgoal id -> time (s) it was achieved, ``None`` if never."""
    success: bool
    """Every subgoal achieved (every item delivered, robot 0 at the end)."""
    makespan: float
    """Executed: seconds until the last robot finished its plan (or the episode stopped)."""
    planned_makespan: float
    handoffs: list[HandoffRecord] = field(default_factory=list)
    handoff_errors: list[HandoffRecord] = field(default_factory=list)
    interference: list[InterferenceRecord] = field(default_factory=list)
    replans: list[ReplanRecord] = field(default_factory=list)
    path_lengths: list[float] = field(default_factory=list)
    """Per robot, executed path length (m)."""
    route_lengths: list[float] = field(default_factory=list)
    """Per robot, geodesic length (m) of its assigned route: before the last re-plan as executed (move
    places reached, then where it was), after it the final plan's moves."""
    robot_subgoals: list[list[str]] = field(default_factory=list)
    """Per robot, the subgoals it achieved or that its final plan assigns to it."""
    trajectories: list[list[tuple[float, float]]] = field(default_factory=list)
    disturbances: list[tuple[float, Disturbance]] = field(default_factory=list)
    """Disturbances applied, with the time they took effect."""
    steps: int = 0
    wall_seconds: float = 0.0
    final_plans: list[list[Step]] = field(default_factory=list)

    @property
    def num_replans(self) -> int:
        return len(self.replans)


# ---------------------------------------------------------------------- metrics
def mission_success(result: ExecutionResult) -> float:
    """1.0 when every subgoal was achieved, else 0.0."""
    return float(bool(result.subgoal_times) and all(t is not None for t in result.subgoal_times.values()))


def step_success(result: ExecutionResult) -> float:
    """Fraction of the mission's subgoals achieved."""
    times = list(result.subgoal_times.values())
    return sum(t is not None for t in times) / len(times) if times else 0.0


def makespan(result: ExecutionResult) -> float:
    """Executed makespan (s)."""
    return float(result.makespan)


def handoff_errors(result: ExecutionResult) -> int:
    return len(result.handoff_errors)


def interference_events(result: ExecutionResult) -> int:
    return len(result.interference)


def spl_per_robot(result: ExecutionResult) -> list[float]:
    """``S * l / max(p, l)`` per robot (NaN when ``l = p = 0``)."""
    out = []
    for subgoals, route, path in zip(result.robot_subgoals, result.route_lengths, result.path_lengths):
        achieved = all(result.subgoal_times.get(s) is not None for s in subgoals)
        out.append(spl(achieved, route, path))
    return out


def _nanmean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def _summary(results: Sequence[ExecutionResult]) -> dict[str, float]:
    successful = [makespan(r) for r in results if mission_success(r)]
    return {
        "episodes": len(results),
        "mission_success": _nanmean([mission_success(r) for r in results]),
        "step_success": _nanmean([step_success(r) for r in results]),
        "makespan": _nanmean([makespan(r) for r in results]),
        "makespan_successful": _nanmean(successful),
        "planned_makespan": _nanmean([r.planned_makespan for r in results]),
        "handoff_errors": _nanmean([handoff_errors(r) for r in results]),
        "interference_events": _nanmean([interference_events(r) for r in results]),
        "replans": _nanmean([len(r.replans) for r in results]),
        "spl": _nanmean([v for r in results for v in spl_per_robot(r)]),
    }


def summarise(results: Sequence[ExecutionResult]) -> dict[str, Any]:
    """Means of every metric over ``results`` (``makespan_successful`` over successful ones only; ``spl``
    over robots, NaN skipped), and the same per taxonomy type under ``by_type``."""
    out: dict[str, Any] = _summary(results)
    types = sorted({r.collaboration for r in results})
    out["by_type"] = {kind: _summary([r for r in results if r.collaboration == kind]) for kind in types}
    return out
