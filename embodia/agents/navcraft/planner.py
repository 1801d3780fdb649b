"""NavCraft's hierarchical agent, stage 2: planners that turn a mission into per-robot plans, and re-planning.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). The hierarchical agent splits the work: a *planner* decides
who does what (which robot fetches and delivers each item, where items are handed over) as a
:class:`~embodia.agents.navcraft.mission.Schedule`; the executor (:mod:`.executor`) drives every robot
along its plan in the multi-robot navigation environment. Planners:

- :class:`ScheduledPlanner`: the schedule given with an episode (the generator's plan);
- :class:`SoloPlanner`: robot 0 does everything (:func:`~embodia.agents.navcraft.generate.solo_schedule`);
- :class:`CollaborativePlanner`: the generator's stage 2 (:func:`~embodia.agents.navcraft.generate.collaborate`);
- :class:`LMPlanner`: a language model reads the scene graph as text (:func:`build_prompt`) and answers an
  allocation, one line per item ``ITEM <object_id> -> ROBOT <k>`` and optionally
  ``HANDOFF <object_id> AT <room> TO ROBOT <k>`` (:func:`parse_allocation`); the allocation becomes a
  timed schedule (:func:`allocation_schedule`). An unparsable or infeasible answer falls back to the solo
  schedule and is recorded (``fallback=True`` and the reason).

Re-planning (:func:`plan_from_state`, :func:`replan`) starts from an :class:`ExecutionState`: the
*remaining* mission (:func:`remaining_mission`: items not yet delivered; an item being carried starts
picked by its carrier) is planned from the robots' current places with the doors shut now; robots frozen by
a delay first wait. When the planner's answer does not fit the state (infeasible, or it has another robot
pick a carried item), the reachability fallback (:func:`fallback_allocation`) is used: each item goes to
its carrier, else to robot 0 when it can reach it (the solo plan), else to the nearest robot that can.
Re-planned step times are absolute (seconds from the episode's start).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from embodia.agents.navcraft.mission import Event, Mission, Place, RobotStart, Schedule, Step
from embodia.agents.navcraft.timing import ScheduleError, TravelFor, retime

#: seconds a handoff may start after its planned start (the window's latest start)
HANDOFF_SLACK = 10.0


@dataclass
class ExecutionState:
    """Where an execution stands: what re-planning starts from."""

    time: float
    """Seconds since the episode's start."""
    positions: list[tuple[float, float, float]]
    yaws: list[float]
    carrying: list[list[str]]
    """Per robot, the items it carries."""
    achieved: dict[str, float] = field(default_factory=dict)
    """Subgoal id -> time it was achieved."""
    closed_doors: tuple[str, ...] = ()
    """Doors shut now."""
    busy_until: list[float] = field(default_factory=list)
    """Per robot, the time until which it cannot move (a delay); empty: nobody is frozen."""
    item_places: dict[str, Place] = field(default_factory=dict)
    """Items put down somewhere other than their pickup (not delivered)."""


@dataclass
class Allocation:
    """Who carries each item; ``handoffs[item] = (room, taker)`` hands it over at that room's anchor."""

    assignment: dict[str, int]
    handoffs: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass
class PlanOutcome:
    """A (re)plan and how it came about."""

    schedule: Schedule
    fallback: bool = False
    reason: str = ""


class Planner(Protocol):
    name: str

    def plan(
        self,
        mission: Mission,
        robots: list[RobotStart],
        travel_for: TravelFor,
        *,
        state: ExecutionState | None = None,
    ) -> Schedule: ...


# ---------------------------------------------------------------------- schedules from allocations
def _subgoal_id(mission: Mission, kind: str, item: str | None) -> str | None:
    return next((s.id for s in mission.subgoals if s.kind == kind and s.item == item), None)


def _padded(schedule: Schedule, robots: list[RobotStart]) -> Schedule:
    """``schedule`` with every robot of ``robots`` (idle helpers get empty plans)."""
    out = copy.deepcopy(schedule)
    out.robots = list(robots)
    out.plans = list(out.plans) + [[] for _ in range(len(robots) - len(out.plans))]
    return out


def allocation_schedule(
    mission: Mission,
    robots: list[RobotStart],
    allocation: Allocation,
    travel_for: TravelFor,
    carrying: dict[str, int] | None = None,
) -> Schedule:
    """A timed schedule for ``allocation``: per robot, for each of its items in mission order (a carried item
    first, without fetching it): move to the pickup, pick, move to the destination (or the handoff room's
    anchor, give; the taker moves there, takes, moves on), drop; robot 0 finally moves to the end. Raises
    :class:`ScheduleError` when it cannot be timed."""
    carrying = carrying or {}
    graph = travel_for(()).graph
    plans: list[list[Step]] = [[] for _ in robots]
    events: list[Event] = []
    items = sorted(mission.items, key=lambda item: item.object_id not in carrying)
    for item in items:
        robot = allocation.assignment.get(item.object_id, 0)
        sg_pick = _subgoal_id(mission, "pick", item.object_id)
        sg_deliver = _subgoal_id(mission, "deliver", item.object_id)
        if item.object_id not in carrying:
            plans[robot] += [
                Step("move", item.pickup),
                Step("pick", item.pickup, item=item.object_id, subgoal=sg_pick),
            ]
        carrier = robot
        if item.object_id in allocation.handoffs:
            room, taker = allocation.handoffs[item.object_id]
            anchor = graph.room(room).anchor
            if anchor is None:
                raise ScheduleError(f"handoff room {room!r} has no navigable floor")
            place = Place(room, tuple(anchor))
            plans[robot] += [Step("move", place), Step("give", place, item.object_id, partner=taker)]
            plans[taker] += [Step("move", place), Step("take", place, item.object_id, partner=robot)]
            events.append(Event("handoff", [robot, taker], place, (0.0, 0.0), [item.object_id]))
            carrier = taker
        plans[carrier] += [
            Step("move", item.destination),
            Step("drop", item.destination, item=item.object_id, subgoal=sg_deliver),
        ]
    plans[0].append(Step("move", mission.end, subgoal=_subgoal_id(mission, "arrive", None)))
    kind = "relay" if allocation.handoffs else "parallel_fetch" if any(plans[1:]) else "solo"
    timed = retime(Schedule(kind, list(robots), plans, events), travel_for)
    return with_windows(timed)


def with_windows(schedule: Schedule) -> Schedule:
    """Give every give/take step without a window the window (start, start + :data:`HANDOFF_SLACK`)."""
    for plan in schedule.plans:
        for step in plan:
            if step.kind in ("give", "take") and step.window is None:
                step.window = (step.start, step.start + HANDOFF_SLACK)
    for event in schedule.events:
        if event.kind == "handoff":
            starts = [
                s.start for p in schedule.plans for s in p if s.kind == "give" and s.item in event.items
            ]
            if starts:
                event.window = (starts[0], starts[0] + HANDOFF_SLACK)
    return schedule


def fallback_allocation(
    mission: Mission, robots: list[RobotStart], travel_for: TravelFor, carrying: dict[str, int] | None = None
) -> tuple[Allocation, list[str]]:
    """Each item to its carrier, else robot 0 when it can reach the pickup and the destination (the solo
    plan), else the robot that can reach both soonest; items nobody can reach are left out (returned)."""
    carrying = carrying or {}
    travel = travel_for(())
    assignment: dict[str, int] = {}
    unreachable: list[str] = []
    for item in mission.items:
        if item.object_id in carrying:
            assignment[item.object_id] = carrying[item.object_id]
            continue
        costs = []
        for robot in robots:
            cost = travel.time(robot.place.position, item.pickup.position) + travel.time(
                item.pickup.position, item.destination.position
            )
            costs.append(cost)
        if math.isfinite(costs[0]):
            assignment[item.object_id] = 0
        elif any(math.isfinite(c) for c in costs):
            assignment[item.object_id] = int(np.argmin(costs))
        else:
            unreachable.append(item.object_id)
    return Allocation(assignment), unreachable


def solo_from_state(
    mission: Mission, robots: list[RobotStart], travel_for: TravelFor, carrying=None
) -> Schedule:
    """The reachability fallback's schedule (see :func:`fallback_allocation`); robot 0 skips the end when it
    cannot reach it."""
    allocation, unreachable = fallback_allocation(mission, robots, travel_for, carrying)
    kept = copy.deepcopy(mission)
    kept.items = [i for i in mission.items if i.object_id not in unreachable]
    if not carrying and not unreachable and set(allocation.assignment.values()) <= {0}:
        from embodia.agents.navcraft.generate import solo_schedule

        kept.start = robots[0].place
        try:  # robot 0 alone from here: the generator's solo plan (its best item order)
            return _padded(solo_schedule(kept, travel_for), robots)
        except ScheduleError:
            pass
    try:
        return allocation_schedule(kept, robots, allocation, travel_for, carrying)
    except ScheduleError:
        kept.end = robots[0].place  # the end cannot be reached: stay
        return allocation_schedule(kept, robots, allocation, travel_for, carrying)


# ---------------------------------------------------------------------- the language model's allocation
def _relevant_rooms(mission: Mission, robots: list[RobotStart]) -> list[str]:
    rooms = [r.place.room for r in robots] + [mission.end.room]
    for item in mission.items:
        rooms += [item.pickup.room, item.destination.room]
    return list(dict.fromkeys(r for r in rooms if r))


def build_prompt(
    mission: Mission, robots: list[RobotStart], travel_for: TravelFor, carrying: dict[str, int] | None = None
) -> str:
    """The scene graph and the mission as text, and the strict answer format."""
    carrying = carrying or {}
    graph = travel_for(()).graph
    lines = [
        "You plan a delivery mission for several robots in a house. Each robot carries one item at a time."
    ]
    lines.append("Rooms: " + ", ".join(r.id for r in graph.rooms) + ".")
    doors = [
        f"{d.id} joins {d.rooms[0]} and {d.rooms[1]}" + ("" if d.open else " (closed)") for d in graph.doors
    ]
    lines.append("Doors: " + "; ".join(doors) + ".")
    rooms = _relevant_rooms(mission, robots)
    times = []
    for i, a in enumerate(rooms):
        for b in rooms[i + 1 :]:
            t = graph.travel_time(a, b)
            times.append(f"{a}-{b} {t:.0f}" if math.isfinite(t) else f"{a}-{b} unreachable")
    lines.append("Travel times in seconds: " + "; ".join(times) + ".")
    lines.append("Objects: " + "; ".join(f"{o.id} in {o.room}" for o in graph.objects) + ".")
    lines.append(
        "Robots: "
        + "; ".join(
            f"ROBOT {k} in {r.place.room}" + (" (primary)" if k == 0 else "") for k, r in enumerate(robots)
        )
        + "."
    )
    tasks = []
    for item in mission.items:
        held = f" (ROBOT {carrying[item.object_id]} already carries it)" if item.object_id in carrying else ""
        tasks.append(f"bring {item.object_id} from {item.pickup.room} to {item.destination.room}{held}")
    lines.append("Mission: " + "; ".join(tasks) + f"; then ROBOT 0 ends in {mission.end.room}.")
    lines.append(
        "Answer only with one line per item: ITEM <object_id> -> ROBOT <k>. To hand an item to another robot "
        "on the way add: HANDOFF <object_id> AT <room> TO ROBOT <k>."
    )
    example = mission.items[0].object_id if mission.items else "cup_0"
    lines.append(f"Example: ITEM {example} -> ROBOT 1")
    return "\n".join(lines)


_ITEM = re.compile(r"ITEM\s*[:\s]\s*([A-Za-z][\w.]*)\s*(?:-+>|=>|→|:|\bTO\b)\s*ROBOT\s*#?\s*(\d+)", re.I)
_HANDOFF = re.compile(r"HANDOFF\s+([A-Za-z][\w.]*)\s+AT\s+([A-Za-z][\w.]*)\s+TO\s+ROBOT\s*#?\s*(\d+)", re.I)


def parse_allocation(text: str, mission: Mission, num_robots: int, rooms: list[str]) -> Allocation:
    """The allocation in a model's answer (case and spacing free, other text ignored, first line per item
    wins; items it does not mention go to robot 0). Raises :class:`ScheduleError` when no valid ``ITEM`` line
    is found or a line names an unknown item, robot or room."""
    items = {i.object_id.lower(): i.object_id for i in mission.items}
    room_ids = {r.lower(): r for r in rooms}
    assignment: dict[str, int] = {}
    for match in _ITEM.finditer(text):
        name, robot = match.group(1).lower(), int(match.group(2))
        if name not in items:
            raise ScheduleError(f"answer names unknown item {match.group(1)!r}")
        if robot >= num_robots:
            raise ScheduleError(f"answer names robot {robot}, there are {num_robots}")
        assignment.setdefault(items[name], robot)
    if not assignment:
        raise ScheduleError("answer has no 'ITEM <object_id> -> ROBOT <k>' line")
    handoffs: dict[str, tuple[str, int]] = {}
    for match in _HANDOFF.finditer(text):
        name, room, taker = match.group(1).lower(), match.group(2).lower(), int(match.group(3))
        if name not in items or room not in room_ids or taker >= num_robots:
            raise ScheduleError(f"invalid handoff line {match.group(0)!r}")
        if taker != assignment.get(items[name], 0):
            handoffs.setdefault(items[name], (room_ids[room], taker))
    for object_id in items.values():
        assignment.setdefault(object_id, 0)
    return Allocation(assignment, handoffs)


# ---------------------------------------------------------------------- planners
def _carrying(state: ExecutionState | None) -> dict[str, int]:
    if state is None:
        return {}
    return {item: k for k, held in enumerate(state.carrying) for item in held}


class ScheduledPlanner:
    """The given schedule (an episode's). It cannot plan from a mid-execution state: :func:`plan_from_state`
    then uses the reachability fallback."""

    name = "scheduled"

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule

    def plan(self, mission, robots, travel_for, *, state=None) -> Schedule:
        if state is not None:
            raise ScheduleError("a fixed schedule cannot be re-planned")
        return copy.deepcopy(self.schedule)


class SoloPlanner:
    """Robot 0 does everything (the generator's solo schedule: best item order)."""

    name = "solo"

    def plan(self, mission, robots, travel_for, *, state=None) -> Schedule:
        from embodia.agents.navcraft.generate import solo_schedule

        return _padded(solo_schedule(mission, travel_for, closed_doors=()), robots)


class CollaborativePlanner:
    """The generator's stage 2: the best collaborative schedule when it beats the solo one."""

    name = "collaborative"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def plan(self, mission, robots, travel_for, *, state=None) -> Schedule:
        from embodia.agents.navcraft.generate import collaborate

        mission = copy.deepcopy(mission)
        mission.start = robots[0].place
        result = collaborate(mission, list(robots[1:]), travel_for, np.random.default_rng(self.seed))
        return _padded(result.schedule, robots)


@dataclass
class LMPlanRecord:
    """One call of :class:`LMPlanner`: what it asked, what came back, and whether it fell back."""

    prompt: str
    answer: str
    fallback: bool
    reason: str = ""
    allocation: Allocation | None = None


class LMPlanner:
    """A language model allocates the items (see the module docstring); the solo schedule when its answer is
    unusable. ``lm`` is anything with ``generate(prompt, max_new_tokens=..., temperature=...)``
    (:func:`embodia.agents.llm.load_lm`)."""

    name = "lm"

    def __init__(self, lm, *, max_new_tokens: int = 96) -> None:
        self.lm = lm
        self.max_new_tokens = max_new_tokens
        self.records: list[LMPlanRecord] = []

    @property
    def last(self) -> LMPlanRecord | None:
        return self.records[-1] if self.records else None

    def plan(self, mission, robots, travel_for, *, state=None) -> Schedule:
        carrying = _carrying(state)
        prompt = build_prompt(mission, robots, travel_for, carrying)
        answer = self.lm.generate(prompt, max_new_tokens=self.max_new_tokens, temperature=0.0)
        rooms = [r.id for r in travel_for(()).graph.rooms]
        try:
            allocation = parse_allocation(answer, mission, len(robots), rooms)
            for item, k in carrying.items():
                if allocation.assignment.get(item) != k:
                    raise ScheduleError(f"{item} is carried by robot {k}, the answer gives it to another")
            schedule = allocation_schedule(mission, robots, allocation, travel_for, carrying)
            violations = _violations(mission, schedule, travel_for)
            if violations:
                raise ScheduleError(f"plan violates: {violations[0]}")
        except ScheduleError as error:
            self.records.append(LMPlanRecord(prompt, answer, True, str(error)))
            return solo_from_state(mission, robots, travel_for, carrying)
        self.records.append(LMPlanRecord(prompt, answer, False, "", allocation))
        return schedule


def _violations(mission: Mission, schedule: Schedule, travel_for: TravelFor) -> list:
    """The validator's findings when :mod:`.validate` is available (it is written separately)."""
    try:
        from embodia.agents.navcraft.validate import validate
    except ImportError:
        return []
    return list(validate(mission, schedule, travel_for))


# ---------------------------------------------------------------------- re-planning
def remaining_mission(mission: Mission, state: ExecutionState, room_of: Callable = lambda p: None) -> Mission:
    """What is left: items not delivered (a carried item's pickup is its carrier's position, a put-down one
    where it lies), subgoals not achieved, starting where robot 0 is now."""
    carrying = _carrying(state)
    delivered = {s.item for s in mission.subgoals if s.kind == "deliver" and s.id in state.achieved}
    items = []
    for item in mission.items:
        if item.object_id in delivered:
            continue
        item = copy.deepcopy(item)
        if item.object_id in carrying:
            position = state.positions[carrying[item.object_id]]
            item.pickup = Place(room_of(position) or item.pickup.room, tuple(position), item.object_id)
        elif item.object_id in state.item_places:
            item.pickup = copy.deepcopy(state.item_places[item.object_id])
        items.append(item)
    start = Place(room_of(state.positions[0]) or mission.start.room, tuple(state.positions[0]))
    return Mission(
        mission_id=mission.mission_id,
        scene_id=mission.scene_id,
        instruction=mission.instruction,
        start=start,
        start_yaw=state.yaws[0],
        items=items,
        end=mission.end,
        legs=[],
        subgoals=[s for s in mission.subgoals if s.id not in state.achieved],
    )


def _fits_state(schedule: Schedule, carrying: dict[str, int]) -> bool:
    """No robot other than its carrier picks a carried item."""
    for k, plan in enumerate(schedule.plans):
        for step in plan:
            if step.kind == "pick" and step.item in carrying and carrying[step.item] != k:
                return False
    return True


def _shifted(schedule: Schedule, offset: float) -> Schedule:
    out = copy.deepcopy(schedule)
    for plan in out.plans:
        for step in plan:
            step.start += offset
            step.end += offset
            if step.window is not None:
                step.window = (step.window[0] + offset, step.window[1] + offset)
    for event in out.events:
        event.window = (event.window[0] + offset, event.window[1] + offset)
    return out


def _with_delays(schedule: Schedule, state: ExecutionState, travel_for: TravelFor) -> Schedule:
    """Frozen robots wait first; retimed (relative times), handoff windows refreshed."""
    out = copy.deepcopy(schedule)
    for k, until in enumerate(state.busy_until):
        if k < len(out.plans) and until > state.time and out.plans[k]:
            out.plans[k].insert(0, Step("wait", end=until - state.time))
    if any(until > state.time for until in state.busy_until):
        for plan in out.plans:
            for step in plan:
                if step.kind in ("give", "take"):
                    step.window = None
    return with_windows(retime(out, travel_for))


def plan_from_state(
    mission: Mission,
    state: ExecutionState,
    travel_for: TravelFor,
    planner: Planner | None,
    room_of: Callable = lambda p: None,
) -> PlanOutcome:
    """Plan the remaining mission from ``state`` with ``planner`` (see the module docstring); step times
    are absolute."""
    shut = tuple(state.closed_doors)

    def travel_now(closed: tuple[str, ...]):
        return travel_for(tuple(sorted(set(closed) | set(shut))))

    remaining = remaining_mission(mission, state, room_of)
    robots = [
        RobotStart(Place(room_of(p) or "", tuple(p)), yaw) for p, yaw in zip(state.positions, state.yaws)
    ]
    carrying = _carrying(state)
    reason = ""
    if planner is not None:
        try:
            planned = _padded(planner.plan(remaining, robots, travel_now, state=state), robots)
            if not _fits_state(planned, carrying):
                raise ScheduleError("the plan has a robot pick an item another robot carries")
            fallback = bool(getattr(planner, "last", None) and planner.last.fallback)
            reason = planner.last.reason if fallback else ""
            return PlanOutcome(
                _shifted(_with_delays(planned, state, travel_now), state.time), fallback, reason
            )
        except Exception as error:  # any planner failure falls back; the reason is recorded
            reason = f"{type(error).__name__}: {error}"
    schedule = solo_from_state(remaining, robots, travel_now, carrying)
    return PlanOutcome(_shifted(_with_delays(schedule, state, travel_now), state.time), True, reason)


def replan(
    mission: Mission, state: ExecutionState, travel_for: TravelFor, planner: Planner | None
) -> Schedule:
    """The schedule of :func:`plan_from_state` (absolute times)."""
    return plan_from_state(mission, state, travel_for, planner).schedule
