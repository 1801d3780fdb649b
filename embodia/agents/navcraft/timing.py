"""When each step of a schedule happens: the time model of :mod:`embodia.agents.navcraft.mission`.

:func:`retime` fills every step's ``start`` and ``end`` (seconds) from travel times and synchronisation:

- a robot's steps run in order; ``move`` takes ``distance / speed`` along the geodesic path from where the
  robot is (with the doors closed at that moment shut); ``pick``, ``drop``, ``give``, ``take`` and
  ``open_door`` take :data:`~embodia.agents.navcraft.mission.DURATIONS` seconds where the robot stands;
  ``wait`` lasts until its given ``end``;
- a ``give`` and its ``take`` (robots ``r`` and ``partner``, same item) start together, when both robots are
  there and not before the window opens: ``start = max(ready_r, ready_partner, window[0])``;
- a door in ``schedule.closed_doors`` is shut until an ``open_door`` step on it ends (time ``E``); a move may
  use it if it reaches the doorway no earlier than ``E`` (it sets off at ``max(t, E - s / speed)``, ``s`` the
  arc length to the doorway), and takes whichever of that and the route with the door shut ends first;
  while an ``open_door`` step on a door it might use is not yet timed, the move waits for it;
- a step that can never be timed (a handoff whose partner never comes, circular waiting) makes the schedule
  infeasible: :class:`ScheduleError` names it.

The makespan is the last step's end (:attr:`Schedule.makespan`). Moves that wait record the waiting in
``start`` (when the step began) and the motion in ``end - travel time``, so doorway crossing times are
``end - (distance - s) / speed``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

from embodia.agents.navcraft.mission import DURATIONS, Schedule, Step
from embodia.agents.navcraft.travel import Travel
from embodia.core.errors import EmbodiaError

TravelFor = Callable[[tuple[str, ...]], Travel]
"""Travel with the given doors shut (the scene's own closed doors are always shut)."""


class ScheduleError(EmbodiaError):
    """A schedule whose steps cannot all be timed (deadlock, unreachable place, missing partner)."""


def travel_for_scene(scene, speed: float | None = None) -> TravelFor:
    """``closed -> Travel.for_scene(scene, closed)``: the usual :data:`TravelFor`."""

    def make(closed: tuple[str, ...]) -> Travel:
        if speed is None:
            return Travel.for_scene(scene, closed)
        return Travel.for_scene(scene, closed, speed)

    return make


def partner_step(plans: list[list[Step]], robot: int, step: Step) -> tuple[int, int] | None:
    """Index (robot, step) of the matching take/give of a give/take step."""
    want = "take" if step.kind == "give" else "give"
    if step.partner is None or not 0 <= step.partner < len(plans):
        return None
    for j, other in enumerate(plans[step.partner]):
        if other.kind == want and other.item == step.item and other.partner == robot:
            return step.partner, j
    return None


def retime(schedule: Schedule, travel_for: TravelFor) -> Schedule:
    """A copy of ``schedule`` with every step's ``start``/``end`` computed (see the module docstring)."""
    out = copy.deepcopy(schedule)
    plans = out.plans
    n = len(plans)
    position = [list(r.place.position) for r in out.robots]
    clock = [0.0] * n
    index = [0] * n
    opened: dict[str, float] = {}  # door -> time it is open from
    openers = {s.door for plan in plans for s in plan if s.kind == "open_door" and s.door}
    closed0 = tuple(sorted(out.closed_doors))

    def shut_at(t: float) -> tuple[str, ...]:
        return tuple(d for d in closed0 if not (d in opened and opened[d] <= t))

    def time_move(r: int, step: Step) -> tuple[float, float] | None:
        """(start of motion, end) of a move, or None while it must wait for an untimed door opening."""
        t = clock[r]
        target = step.place.position
        shut = shut_at(t)
        base = travel_for(shut)
        best_end = t + base.time(position[r], target)
        best_go = t
        for door in shut:
            if door not in openers:
                continue
            if door not in opened:
                via = travel_for(tuple(d for d in shut if d != door))
                if via.time(position[r], target) < best_end - t:
                    return None  # the route through it might be faster: wait until its opening is timed
                continue
            via = travel_for(tuple(d for d in shut if d != door))
            distance = via.distance(position[r], target)
            if not math.isfinite(distance):
                continue
            arcs = [s for d, s in via.door_crossings(position[r], target) if d == door]
            go = max(t, opened[door] - arcs[0] / via.speed) if arcs else t
            end = go + distance / via.speed
            if end < best_end:
                best_go, best_end = go, end
        if not math.isfinite(best_end):
            raise ScheduleError(
                f"robot {r} cannot reach {step.place.room} {tuple(round(v, 2) for v in target)} from "
                f"{tuple(round(v, 2) for v in position[r])} (doors shut: {list(shut) or 'none'})"
            )
        return best_go, best_end

    progress = True
    while progress:
        progress = False
        for r in range(n):
            while index[r] < len(plans[r]):
                step = plans[r][index[r]]
                if step.kind == "move":
                    timed = time_move(r, step)
                    if timed is None:
                        break
                    step.start, step.end = clock[r], timed[1]
                    position[r] = list(step.place.position)
                elif step.kind in ("give", "take"):
                    match = partner_step(plans, r, step)
                    if match is None:
                        raise ScheduleError(
                            f"robot {r}'s {step.kind} of {step.item!r} has no matching step in robot "
                            f"{step.partner}'s plan"
                        )
                    p, j = match
                    if index[p] != j:
                        break  # the partner is not there yet
                    start = max(clock[r], clock[p], step.window[0] if step.window else 0.0)
                    other = plans[p][j]
                    for who, s in ((r, step), (p, other)):
                        s.start, s.end = start, start + DURATIONS[s.kind]
                        clock[who] = s.end
                        index[who] += 1
                    progress = True
                    continue
                elif step.kind == "wait":
                    step.start, step.end = clock[r], max(clock[r], step.end)
                elif step.kind in DURATIONS:
                    step.start, step.end = clock[r], clock[r] + DURATIONS[step.kind]
                    if step.kind == "open_door" and step.door:
                        opened[step.door] = step.end
                else:
                    raise ScheduleError(f"robot {r} step {index[r]} has unknown kind {step.kind!r}")
                clock[r] = step.end
                index[r] += 1
                progress = True
    stuck = [(r, index[r]) for r in range(n) if index[r] < len(plans[r])]
    if stuck:
        described = ", ".join(f"robot {r} at step {i} ({plans[r][i].kind})" for r, i in stuck)
        raise ScheduleError(f"schedule deadlocks: {described} can never start")
    return out
