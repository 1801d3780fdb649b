"""Schedule validation for NavCraft: every rule a collaborative schedule must keep, as a list of violations.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"): generated schedules are checked for reachability, travel time
and interference (two robots in one narrow passage at once) and repaired iteratively
(:mod:`embodia.agents.navcraft.repair`). :func:`validate` returns one :class:`Violation` per broken rule;
an empty list means the schedule is valid. The time model is :mod:`embodia.agents.navcraft.timing`'s
(:func:`~embodia.agents.navcraft.timing.retime`); distances are 2-D (floor plane). The rules, by kind:

- ``unreachable``: a ``move`` whose target cannot be reached from where the robot is, even with every door
  some ``open_door`` step opens taken as open; or ``retime`` raising :class:`ScheduleError` for another
  reason (a deadlock: circular waiting, a door opened only after the robot that needs it is stuck).
- ``timing``: a step whose stated ``start`` or ``end`` differs from ``retime(schedule)`` by more than
  ``time_tolerance`` seconds (the schedule claims times it cannot keep; reported once per robot, at its
  first such step); a ``give`` / ``take`` whose retimed start is after its ``window[1]``.
- ``interference``: two robots in one doorway at overlapping times (:func:`interference_events`). A doorway
  fits one robot when it is narrower than ``2 * PASSING_WIDTH`` (every 0.9 m door of the shipped and
  procedural scenes); a move's crossing of a doorway at arc length ``s`` happens at
  ``t = end - (distance - s) / speed`` on the route :func:`retime` chose, and the robot occupies the
  doorway during ``[t - clearance / speed, t + clearance / speed]``. Opposite directions and following in
  the same direction both count.
- ``rendezvous``: a ``give`` and its ``take`` whose places (or the robots' positions then) are more than
  ``PLACE_TOLERANCE`` apart; a window with ``window[1] < window[0]``; a give / take with no matching step
  in the partner's plan (then the schedule cannot be timed and timing / interference are not checked).
- ``carrying``: a pick while carrying :data:`CAPACITY` items; a drop or give of an item the robot does not
  carry; a take while full; a pick of an item that does not lie within ``PLACE_TOLERANCE`` of the robot
  (initially at its pickup place, later where it was dropped) or that a robot already carries (picked
  twice); a pick of an object that is not an item of the mission.
- ``door``: an ``open_door`` on a door the scene does not have or that is not in ``schedule.closed_doors``;
  an ``open_door`` done farther than ``DOOR_REACH`` from the door's centre.
- ``incomplete``: after the whole schedule, an item of the mission not lying within ``PLACE_TOLERANCE`` of
  its destination; the primary robot (robot 0) not ending within ``PLACE_TOLERANCE`` of ``mission.end``;
  a subgoal of the mission that no step achieves (no step names it and it is not achieved in effect: a pick
  of its item, its item dropped at its place, robot 0 moving to its place).

Carrying, rendezvous places and completion come from one simulation of the schedule (positions and carried
items), steps taken in time order when the schedule can be timed, else in plan order with handoffs together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from embodia.agents.navcraft.mission import CAPACITY, Mission, Schedule, Step
from embodia.agents.navcraft.timing import ScheduleError, TravelFor, partner_step, retime
from embodia.agents.navcraft.travel import Travel

VIOLATION_KINDS = ("unreachable", "timing", "interference", "rendezvous", "carrying", "door", "incomplete")
#: places closer than this (m) count as the same place (handoffs, pickups, deliveries, the end)
PLACE_TOLERANCE = 0.5
#: an ``open_door`` must be done within this distance (m) of the door's centre
DOOR_REACH = 1.2
#: width (m) one robot needs to pass a doorway (0.36 m base and a margin); narrower than twice it: one at a time
PASSING_WIDTH = 0.6


@dataclass
class Violation:
    """One broken rule of a schedule."""

    kind: str
    """A :data:`VIOLATION_KINDS` entry."""
    robot: int | None
    """The robot whose step breaks it (``None`` when it belongs to no single robot)."""
    step: int | None
    """Index of that step in the robot's plan (``None`` for end-of-schedule checks)."""
    message: str
    """What is wrong, in one line."""
    item: str | None = None
    """The mission item concerned, if any (lets :mod:`~embodia.agents.navcraft.repair` reassign it)."""


def _xy(position) -> tuple[float, float]:
    return (float(position[0]), float(position[1]))


def _dist(a, b) -> float:
    return math.dist(_xy(a), _xy(b))


def _fmt(position) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in _xy(position)) + ")"


# ---------------------------------------------------------------------- routes and doorway crossings
def door_open_times(schedule: Schedule) -> dict[str, float]:
    """Door -> planned end of the first ``open_door`` step on it (stated times)."""
    opened: dict[str, float] = {}
    for plan in schedule.plans:
        for step in plan:
            if step.kind == "open_door" and step.door:
                opened[step.door] = min(opened.get(step.door, math.inf), step.end)
    return opened


def move_route(
    position, step: Step, closed: Sequence[str], opened: dict[str, float], travel_for: TravelFor
) -> tuple[Travel, float]:
    """The travel (door state) and motion start of a timed ``move`` from ``position``, chosen as
    :func:`retime` does: the route with the doors shut at ``step.start``, or through a door opened later
    when that ends first (setting off so as to reach the doorway once it is open)."""
    t = step.start
    shut = tuple(d for d in sorted(closed) if not (d in opened and opened[d] <= t))
    best = travel_for(shut)
    best_go, best_end = t, t + best.time(position, step.place.position)
    for door in shut:
        if door not in opened:
            continue
        via = travel_for(tuple(d for d in shut if d != door))
        distance = via.distance(position, step.place.position)
        if not math.isfinite(distance):
            continue
        arcs = [s for d, s in via.door_crossings(position, step.place.position) if d == door]
        go = max(t, opened[door] - arcs[0] / via.speed) if arcs else t
        if go + distance / via.speed < best_end:
            best, best_go, best_end = via, go, go + distance / via.speed
    return best, best_go


def _crossing_direction(travel: Travel, points: np.ndarray, arc: float, door_id: str) -> int:
    """+1 / -1: which way (along the wall's normal) the path passes the doorway at arc length ``arc``."""
    door = next(d for d in travel.scene.doors if d.id == door_id)
    axis = 1 if door.axis == "x" else 0
    travelled = 0.0
    for p0, p1 in zip(points[:-1], points[1:]):
        seg = float(np.linalg.norm(p1[:2] - p0[:2]))
        if travelled + seg >= arc - 1e-6 and p1[axis] != p0[axis]:
            return 1 if p1[axis] > p0[axis] else -1
        travelled += seg
    return 0


def doorway_crossings(schedule: Schedule, travel_for: TravelFor, *, clearance: float = 0.6) -> list[dict]:
    """Every doorway crossing of a timed schedule: ``robot``, ``step``, ``door``, ``time`` (s),
    ``interval`` (occupancy ``(t - clearance / speed, t + clearance / speed)``) and ``direction`` (+-1)."""
    opened = door_open_times(schedule)
    crossings: list[dict] = []
    for robot, plan in enumerate(schedule.plans):
        position = schedule.robots[robot].place.position
        for index, step in enumerate(plan):
            if step.kind != "move" or step.place is None:
                continue
            travel, _ = move_route(position, step, schedule.closed_doors, opened, travel_for)
            target = step.place.position
            distance = travel.distance(position, target)
            if math.isfinite(distance):
                points = travel.path(position, target)
                for door, arc in travel.door_crossings(position, target):
                    t = step.end - (distance - arc) / travel.speed
                    half = clearance / travel.speed
                    crossings.append(
                        {
                            "robot": robot,
                            "step": index,
                            "door": door,
                            "time": t,
                            "interval": (t - half, t + half),
                            "direction": _crossing_direction(travel, points, arc, door),
                        }
                    )
            position = target
    return crossings


def interference_events(schedule: Schedule, travel_for: TravelFor, *, clearance: float = 0.6) -> list[dict]:
    """Pairs of robots in one narrow doorway at overlapping times, in a timed schedule (stated times).

    Each event: ``door``, ``width``, ``robots`` ``(a, b)`` with ``a < b``, ``steps`` (their move indices),
    ``times`` (crossing times), ``intervals`` (occupancy), ``overlap`` (s) and ``same_direction``.
    """
    doors = {d.id: d for d in travel_for(()).scene.doors}
    crossings = doorway_crossings(schedule, travel_for, clearance=clearance)
    events: list[dict] = []
    for i, a in enumerate(crossings):
        for b in crossings[i + 1 :]:
            if a["robot"] == b["robot"] or a["door"] != b["door"]:
                continue
            width = doors[a["door"]].width if a["door"] in doors else 0.0
            if width >= 2 * PASSING_WIDTH:
                continue
            overlap = min(a["interval"][1], b["interval"][1]) - max(a["interval"][0], b["interval"][0])
            if overlap <= 0:
                continue
            first, second = (a, b) if a["robot"] < b["robot"] else (b, a)
            events.append(
                {
                    "door": a["door"],
                    "width": width,
                    "robots": (first["robot"], second["robot"]),
                    "steps": (first["step"], second["step"]),
                    "times": (first["time"], second["time"]),
                    "intervals": (first["interval"], second["interval"]),
                    "overlap": overlap,
                    "same_direction": first["direction"] == second["direction"],
                }
            )
    events.sort(key=lambda e: (min(e["times"]), e["door"]))
    return events


# ---------------------------------------------------------------------- step order for the simulation
def _causal_order(plans: list[list[Step]]) -> list[tuple[int, int]]:
    """Steps in plan order, robot by robot, a give and its take together (give first)."""
    index = [0] * len(plans)
    order: list[tuple[int, int]] = []
    progress = True
    while progress:
        progress = False
        for r, plan in enumerate(plans):
            while index[r] < len(plan):
                step = plan[index[r]]
                match = partner_step(plans, r, step) if step.kind in ("give", "take") else None
                if match is not None and match[0] != r:
                    p, j = match
                    if index[p] != j:
                        break
                    pair = [(r, index[r]), (p, j)]
                    order += pair if step.kind == "give" else pair[::-1]
                    index[r] += 1
                    index[p] += 1
                else:
                    order.append((r, index[r]))
                    index[r] += 1
                progress = True
    for r, plan in enumerate(plans):  # what a deadlock left over
        order += [(r, i) for i in range(index[r], len(plan))]
    return order


def _timed_order(plans: list[list[Step]]) -> list[tuple[int, int]]:
    keyed = [
        (step.start, 0 if step.kind == "give" else 1, r, i)
        for r, plan in enumerate(plans)
        for i, step in enumerate(plan)
    ]
    return [(r, i) for _, _, r, i in sorted(keyed)]


# ---------------------------------------------------------------------- checks
def _check_structure(schedule: Schedule, travel_for: TravelFor) -> list[Violation]:
    """Missing handoff partners, inverted windows, bad door steps, moves unreachable even optimistically."""
    found: list[Violation] = []
    plans = schedule.plans
    doors = {d.id: d for d in travel_for(()).scene.doors}
    openers = {s.door for plan in plans for s in plan if s.kind == "open_door" and s.door}
    optimistic = travel_for(tuple(sorted(d for d in schedule.closed_doors if d not in openers)))
    for r, plan in enumerate(plans):
        position = schedule.robots[r].place.position
        for i, step in enumerate(plan):
            if step.kind in ("give", "take"):
                match = partner_step(plans, r, step)
                if match is None or match[0] == r:
                    found.append(
                        Violation(
                            "rendezvous",
                            r,
                            i,
                            f"robot {r}'s {step.kind} of {step.item!r} has no matching step in robot "
                            f"{step.partner}'s plan",
                        )
                    )
                if step.window is not None and step.window[1] < step.window[0]:
                    found.append(
                        Violation(
                            "rendezvous",
                            r,
                            i,
                            f"robot {r}'s {step.kind} window {step.window} closes before it opens",
                            step.item,
                        )
                    )
            elif step.kind == "open_door":
                if step.door not in doors:
                    found.append(
                        Violation("door", r, i, f"robot {r} opens {step.door!r}, not a door of the scene")
                    )
                elif step.door not in schedule.closed_doors:
                    found.append(Violation("door", r, i, f"robot {r} opens {step.door}, which is not closed"))
                else:
                    reach = _dist(position, doors[step.door].center)
                    if reach > DOOR_REACH:
                        found.append(
                            Violation(
                                "door",
                                r,
                                i,
                                f"robot {r} opens {step.door} from {reach:.2f} m away (at most {DOOR_REACH} m)",
                            )
                        )
            elif step.kind == "move":
                if step.place is None:
                    found.append(Violation("unreachable", r, i, f"robot {r}'s move {i} has no place"))
                    continue
                if not optimistic.reachable(position, step.place.position):
                    found.append(
                        Violation(
                            "unreachable",
                            r,
                            i,
                            f"robot {r} cannot reach {step.place.room} {_fmt(step.place.position)} from "
                            f"{_fmt(position)} (doors never opened: {list(optimistic.closed_doors) or 'none'})",
                        )
                    )
                position = step.place.position
    return found


def _check_timing(schedule: Schedule, timed: Schedule, tolerance: float) -> list[Violation]:
    found: list[Violation] = []
    for r, (plan, retimed) in enumerate(zip(schedule.plans, timed.plans)):
        off = [
            i
            for i, (s, t) in enumerate(zip(plan, retimed))
            if abs(s.start - t.start) > tolerance or abs(s.end - t.end) > tolerance
        ]
        if off:
            i = off[0]
            found.append(
                Violation(
                    "timing",
                    r,
                    i,
                    f"robot {r} step {i} ({plan[i].kind}) is stated at [{plan[i].start:.1f}, {plan[i].end:.1f}] s "
                    f"but happens at [{retimed[i].start:.1f}, {retimed[i].end:.1f}] s ({len(off)} steps off)",
                )
            )
        for i, step in enumerate(retimed):
            window = step.window
            if step.kind in ("give", "take") and window and window[0] <= window[1] < step.start - 1e-6:
                found.append(
                    Violation(
                        "timing",
                        r,
                        i,
                        f"robot {r}'s {step.kind} of {step.item!r} starts at {step.start:.1f} s, after its window "
                        f"closes at {step.window[1]:.1f} s",
                    )
                )
    return found


def _simulate(mission: Mission, schedule: Schedule, order: list[tuple[int, int]]) -> list[Violation]:
    """Carrying and handoff-place checks along the simulation, then the completion checks."""
    found: list[Violation] = []
    plans = schedule.plans
    position = [r.place.position for r in schedule.robots]
    carried: list[list[str]] = [[] for _ in plans]
    items = {item.object_id: item for item in mission.items}
    lying = {item.object_id: item.pickup.position for item in mission.items}  # item -> where it lies
    achieved = {step.subgoal for plan in plans for step in plan if step.subgoal}
    picked, dropped_at, robot0_visits = set(), {}, []
    for r, i in order:
        step = plans[r][i]
        item = step.item
        if step.kind == "move" and step.place is not None:
            position[r] = step.place.position
            if r == 0:
                robot0_visits.append(step.place.position)
        elif step.kind == "pick":
            if len(carried[r]) >= CAPACITY:
                found.append(
                    Violation("carrying", r, i, f"robot {r} picks {item!r} while carrying {carried[r]}", item)
                )
            if item not in items:
                found.append(
                    Violation("carrying", r, i, f"robot {r} picks {item!r}, not an item of the mission")
                )
                continue
            if item not in lying:
                holder = next((f"robot {k}" for k, c in enumerate(carried) if item in c), "a handoff")
                found.append(
                    Violation("carrying", r, i, f"robot {r} picks {item!r}, already held by {holder}", item)
                )
                continue
            gap = _dist(position[r], lying[item])
            if gap > PLACE_TOLERANCE:
                found.append(
                    Violation(
                        "carrying", r, i, f"robot {r} picks {item!r} {gap:.2f} m from where it lies", item
                    )
                )
            del lying[item]
            carried[r].append(item)
            picked.add(item)
        elif step.kind in ("give", "take") and (partner_step(plans, r, step) or (r, i))[0] == r:
            continue  # an unmatched handoff (a rendezvous violation) moves nothing
        elif step.kind in ("drop", "give"):
            if item not in carried[r]:
                found.append(
                    Violation(
                        "carrying", r, i, f"robot {r} {step.kind}s {item!r} but does not carry it", item
                    )
                )
                continue
            carried[r].remove(item)
            if step.kind == "drop" and item in items:
                lying[item] = position[r]
                dropped_at.setdefault(item, []).append(position[r])
            elif step.kind == "give":
                match = partner_step(plans, r, step)
                if match is not None and match[0] != r:
                    other = plans[match[0]][match[1]]
                    gap = max(
                        _dist(step.place.position, other.place.position)
                        if step.place and other.place
                        else 0.0,
                        _dist(position[r], position[match[0]]),
                    )
                    if gap > PLACE_TOLERANCE:
                        found.append(
                            Violation(
                                "rendezvous",
                                r,
                                i,
                                f"robot {r} gives {item!r} {gap:.2f} m away from robot {match[0]} who takes it",
                                item,
                            )
                        )
        elif step.kind == "take":
            if len(carried[r]) >= CAPACITY:
                found.append(
                    Violation("carrying", r, i, f"robot {r} takes {item!r} while carrying {carried[r]}", item)
                )
            if item in lying:
                del lying[item]
            for other in carried:  # the giver's hands are emptied by its give; never hold an item twice
                if item in other:
                    other.remove(item)
            carried[r].append(item)
    for item in mission.items:
        where = lying.get(item.object_id)
        if where is None or _dist(where, item.destination.position) > PLACE_TOLERANCE:
            state = "still carried" if where is None else f"left at {_fmt(where)}"
            found.append(
                Violation(
                    "incomplete",
                    None,
                    None,
                    f"item {item.object_id!r} is not delivered to {item.destination.room} "
                    f"{_fmt(item.destination.position)} ({state})",
                    item.object_id,
                )
            )
    gap = _dist(position[0], mission.end.position)
    if gap > PLACE_TOLERANCE:
        found.append(
            Violation(
                "incomplete",
                0,
                None,
                f"robot 0 ends {gap:.2f} m from the mission's end in {mission.end.room}",
            )
        )
    for subgoal in mission.subgoals:
        if subgoal.id in achieved:
            continue
        near = [
            p for p in dropped_at.get(subgoal.item, []) if _dist(p, subgoal.place.position) <= PLACE_TOLERANCE
        ]
        done = (
            (subgoal.kind == "pick" and subgoal.item in picked)
            or (subgoal.kind == "deliver" and bool(near))
            or (
                subgoal.kind == "arrive"
                and any(_dist(p, subgoal.place.position) <= PLACE_TOLERANCE for p in robot0_visits)
            )
        )
        if not done:
            found.append(
                Violation(
                    "incomplete",
                    None,
                    None,
                    f"no step achieves subgoal {subgoal.id!r} ({subgoal.kind})",
                    subgoal.item,
                )
            )
    return found


def validate(
    mission: Mission, schedule: Schedule, travel_for: TravelFor, *, time_tolerance: float = 0.5
) -> list[Violation]:
    """Every violation of ``schedule`` (see the module docstring), ordered as :data:`VIOLATION_KINDS`;
    an empty list when the schedule is valid."""
    found = _check_structure(schedule, travel_for)
    timed: Schedule | None = None
    partners_missing = any("no matching step" in v.message for v in found)
    if not partners_missing and not any(v.kind == "unreachable" for v in found):
        try:
            timed = retime(schedule, travel_for)
        except ScheduleError as error:
            robot = re.match(r"robot (\d+)", str(error))
            found.append(Violation("unreachable", int(robot.group(1)) if robot else None, None, str(error)))
    if timed is not None:
        found += _check_timing(schedule, timed, time_tolerance)
        for event in interference_events(timed, travel_for):
            a, b = event["robots"]
            later = 1 if event["times"][1] >= event["times"][0] else 0
            how = "following each other" if event["same_direction"] else "in opposite directions"
            found.append(
                Violation(
                    "interference",
                    event["robots"][later],
                    event["steps"][later],
                    f"robots {a} and {b} are in {event['door']} ({event['width']:.2f} m wide) at once, {how}: "
                    f"{event['times'][0]:.1f} s and {event['times'][1]:.1f} s",
                )
            )
    order = _timed_order(timed.plans) if timed is not None else _causal_order(schedule.plans)
    found += _simulate(mission, schedule, order)
    rank = {kind: k for k, kind in enumerate(VIOLATION_KINDS)}
    return sorted(found, key=lambda v: rank[v.kind])
