"""Schedule repair for NavCraft: fix a collaborative schedule's violations one at a time, or reject it.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"): schedules are checked for reachability, travel time and
interference and *repaired iteratively*. :func:`repair` runs :func:`~embodia.agents.navcraft.validate.validate`,
applies the cheapest fix that fits the most basic violation, and validates again, for at most
``max_rounds`` rounds. Violations are taken in this order (structure before timing, timing before
interference, since interference is judged on the retimed schedule):

1. ``unreachable`` at a helper's move -> **reassign** the item the helper was going for to the primary
   robot (robot 0); with no item ahead, drop the helper's steps from that move on. Robot 0's or a
   deadlock -> reject.
2. ``rendezvous`` (handoff places apart, inverted window, missing partner) -> **reassign** the item.
3. ``carrying`` -> **reorder**: move one block of the robot's plan (an action with the moves leading to
   it) to another position, keeping the order that leaves the fewest violations; if no order helps and the
   robot is a helper, **reassign** the item.
4. ``door`` -> reject. ``incomplete`` -> **reassign** an undelivered item a helper handled, else reject.
5. ``timing`` -> **retime** (:func:`~embodia.agents.navcraft.timing.retime`); a handoff window that closes
   before the retimed start is widened to it (recorded).
6. ``interference`` -> **wait**: insert a ``wait`` before the move of one of the two robots so that it
   enters the doorway ``margin`` seconds after the other has left; both robots are tried and the one that
   resolves the conflict with the shorter makespan is kept.

*Reassign* removes every pick / drop / give / take of the item from all plans (with the untagged moves
leading to them), drops robot 0's trailing moves and appends ``move pickup, pick, move destination, drop,
move end`` to robot 0's plan (subgoal tags carried over). The result may be longer than the original; the
generator then decides whether collaboration still pays. Every schedule :func:`repair` returns passes
``validate`` with no violations.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from embodia.agents.navcraft.mission import Mission, Place, Schedule, Step
from embodia.agents.navcraft.timing import ScheduleError, TravelFor, partner_step, retime
from embodia.agents.navcraft.validate import (
    Violation,
    door_open_times,
    interference_events,
    move_route,
    validate,
)

#: order in which violation kinds are repaired
REPAIR_ORDER = ("unreachable", "rendezvous", "carrying", "door", "incomplete", "timing", "interference")
#: seconds between one robot leaving a doorway and the delayed one entering it
WAIT_MARGIN = 0.1
ITEM_STEPS = ("pick", "drop", "give", "take")


@dataclass
class RepairResult:
    """What :func:`repair` made of a schedule."""

    schedule: Schedule | None
    """The repaired (valid, timed) schedule, or ``None`` when it was rejected."""
    actions: list[str] = field(default_factory=list)
    """The fixes applied, in order, e.g. ``"retime"``, ``"delay robot 1 by 4.0 s before step 2 (...)"``."""
    reason: str | None = None
    """When rejected: the violation kind that could not be repaired."""


def _try_retime(schedule: Schedule, travel_for: TravelFor) -> Schedule | None:
    try:
        return retime(schedule, travel_for)
    except ScheduleError:
        return None


def _score(mission: Mission, schedule: Schedule, travel_for: TravelFor) -> tuple[int, float]:
    """(violations other than timing, makespan) of a retimed candidate."""
    rest = [v for v in validate(mission, schedule, travel_for) if v.kind != "timing"]
    return len(rest), schedule.makespan


# ---------------------------------------------------------------------- reassign
def _reassign_item(mission: Mission, schedule: Schedule, item_id: str) -> tuple[Schedule, str] | None:
    """The schedule with ``item_id`` carried by robot 0 alone (appended to its plan), or ``None``."""
    item = next((i for i in mission.items if i.object_id == item_id), None)
    if item is None or not any(
        s.item == item_id and s.kind in ITEM_STEPS for plan in schedule.plans[1:] for s in plan
    ):
        return None
    out = copy.deepcopy(schedule)
    tags: dict[str, str] = {}
    for r, plan in enumerate(out.plans):
        touch = [i for i, s in enumerate(plan) if s.item == item_id and s.kind in ITEM_STEPS]
        remove = set(touch)
        for i in touch:
            if plan[i].subgoal:
                tags.setdefault("drop" if plan[i].kind in ("drop", "give") else "pick", plan[i].subgoal)
            j = i - 1
            while j >= 0 and j not in remove and plan[j].kind in ("move", "wait") and plan[j].subgoal is None:
                remove.add(j)
                j -= 1
        out.plans[r] = [s for i, s in enumerate(plan) if i not in remove]
    for subgoal in mission.subgoals:
        if subgoal.item == item_id and subgoal.kind in ("pick", "deliver"):
            tags.setdefault("pick" if subgoal.kind == "pick" else "drop", subgoal.id)
    primary = out.plans[0]
    end_tag = None
    while primary and primary[-1].kind in ("move", "wait"):
        end_tag = end_tag or primary.pop().subgoal
    primary += [
        Step("move", place=copy.deepcopy(item.pickup)),
        Step("pick", place=copy.deepcopy(item.pickup), item=item_id, subgoal=tags.get("pick")),
        Step("move", place=copy.deepcopy(item.destination)),
        Step("drop", place=copy.deepcopy(item.destination), item=item_id, subgoal=tags.get("drop")),
        Step("move", place=copy.deepcopy(mission.end), subgoal=end_tag),
    ]
    out.events = [e for e in out.events if item_id not in e.items]
    return out, f"reassign item {item_id} to robot 0"


def _reassign_from(
    mission: Mission, schedule: Schedule, robot: int, index: int
) -> tuple[Schedule, str] | None:
    """Reassign the item helper ``robot`` goes for at or after step ``index``; else drop its steps from there."""
    plan = schedule.plans[robot]
    ahead = next((s.item for s in plan[index:] if s.item and s.kind in ITEM_STEPS), None)
    if ahead is not None:
        return _reassign_item(mission, schedule, ahead)
    out = copy.deepcopy(schedule)
    out.plans[robot] = out.plans[robot][:index]
    return out, f"drop robot {robot}'s steps from step {index} (unreachable)"


# ---------------------------------------------------------------------- reorder
def _blocks(plan: list[Step]) -> list[list[Step]]:
    """The plan cut after each action: every block is moves / waits followed by one action."""
    blocks, current = [], []
    for step in plan:
        current.append(step)
        if step.kind not in ("move", "wait"):
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _reorder(
    mission: Mission, schedule: Schedule, robot: int, travel_for: TravelFor, baseline: int
) -> tuple[Schedule, str] | None:
    """The best single block move in ``robot``'s plan that leaves fewer than ``baseline`` violations."""
    blocks = _blocks(schedule.plans[robot])
    best: tuple[tuple[int, float], Schedule, str] | None = None
    for j in range(len(blocks)):
        for k in range(len(blocks)):
            if k == j:
                continue
            order = blocks[:j] + blocks[j + 1 :]
            order.insert(k, blocks[j])
            candidate = copy.deepcopy(schedule)
            candidate.plans[robot] = [copy.deepcopy(s) for block in order for s in block]
            timed = _try_retime(candidate, travel_for)
            if timed is None:
                continue
            score = _score(mission, timed, travel_for)
            if score[0] < baseline and (best is None or score < best[0]):
                moved = blocks[j][-1]
                where = "before" if k < j else "after"
                anchor = blocks[k][-1]
                text = (
                    f"reorder robot {robot}: {moved.kind} {moved.item or ''} {where} "
                    f"{anchor.kind} {anchor.item or ''}".replace("  ", " ").strip()
                )
                best = (score, timed, text)
    return None if best is None else (best[1], best[2])


# ---------------------------------------------------------------------- retime and wait
def _retime_with_windows(schedule: Schedule, travel_for: TravelFor) -> tuple[Schedule, list[str]] | None:
    timed = _try_retime(schedule, travel_for)
    if timed is None:
        return None
    actions = ["retime"]
    for r, plan in enumerate(timed.plans):
        for step in plan:
            if step.kind != "give" or not step.window or step.start <= step.window[1]:
                continue
            window = (step.window[0], step.start)
            step.window = window
            match = partner_step(timed.plans, r, step)
            if match is not None:
                timed.plans[match[0]][match[1]].window = window
            for event in timed.events:
                if step.item in event.items:
                    event.window = (event.window[0], max(event.window[1], step.start))
            actions.append(
                f"widen the window of robot {r}'s handoff of {step.item} to [{window[0]:.1f}, {window[1]:.1f}] s"
            )
    for r, plan in enumerate(timed.plans):  # a take whose give has no window of its own
        for step in plan:
            if step.kind == "take" and step.window and step.start > step.window[1]:
                step.window = (step.window[0], step.start)
                actions.append(
                    f"widen the window of robot {r}'s take of {step.item} to "
                    f"[{step.window[0]:.1f}, {step.window[1]:.1f}] s"
                )
    return timed, actions


def _position_before(schedule: Schedule, robot: int, index: int) -> Place:
    for step in reversed(schedule.plans[robot][:index]):
        if step.kind == "move" and step.place is not None:
            return copy.deepcopy(step.place)
    return copy.deepcopy(schedule.robots[robot].place)


def _wait_fix(mission: Mission, schedule: Schedule, travel_for: TravelFor) -> tuple[Schedule, str] | None:
    """Delay one robot of the first interference event (the one giving the shorter makespan)."""
    events = interference_events(schedule, travel_for)
    if not events:
        return None
    event = events[0]
    opened = door_open_times(schedule)
    best: tuple[tuple, Schedule, str] | None = None
    for side in (0, 1):
        robot, other = event["robots"][side], event["robots"][1 - side]
        index = event["steps"][side]
        shift = event["intervals"][1 - side][1] - event["intervals"][side][0] + WAIT_MARGIN
        step = schedule.plans[robot][index]
        where = _position_before(schedule, robot, index)
        _, go = move_route(where.position, step, schedule.closed_doors, opened, travel_for)
        candidate = copy.deepcopy(schedule)
        candidate.plans[robot].insert(index, Step("wait", place=where, start=step.start, end=go + shift))
        timed = _try_retime(candidate, travel_for)
        if timed is None:
            continue
        still = any(
            e["door"] == event["door"] and set(e["robots"]) == {robot, other}
            for e in interference_events(timed, travel_for)
        )
        remaining, makespan = _score(mission, timed, travel_for)
        score = (still, remaining, makespan)
        text = f"delay robot {robot} by {shift:.1f} s before step {index} (interference at {event['door']})"
        if best is None or score < best[0]:
            best = (score, timed, text)
    return None if best is None else (best[1], best[2])


# ---------------------------------------------------------------------- the loop
def _fix(
    mission: Mission, schedule: Schedule, violations: list[Violation], travel_for: TravelFor
) -> tuple[Schedule, list[str]] | str:
    """One repair round: the fixed schedule and its actions, or the kind that cannot be repaired."""
    kind = next(k for k in REPAIR_ORDER if any(v.kind == k for v in violations))
    first = next(v for v in violations if v.kind == kind)
    fixed: tuple[Schedule, str] | None = None
    if kind == "unreachable":
        if first.robot not in (None, 0) and first.step is not None:
            fixed = _reassign_from(mission, schedule, first.robot, first.step)
    elif kind == "rendezvous" and first.item is not None:
        fixed = _reassign_item(mission, schedule, first.item)
    elif kind == "carrying":
        baseline = len([v for v in violations if v.kind != "timing"])
        if first.robot is not None:
            fixed = _reorder(mission, schedule, first.robot, travel_for, baseline)
        if fixed is None and first.robot not in (None, 0) and first.item is not None:
            fixed = _reassign_item(mission, schedule, first.item)
    elif kind == "incomplete" and first.item is not None:
        fixed = _reassign_item(mission, schedule, first.item)
    elif kind == "timing":
        retimed = _retime_with_windows(schedule, travel_for)
        if retimed is not None:
            return retimed
    elif kind == "interference":
        fixed = _wait_fix(mission, schedule, travel_for)
    if fixed is None:
        return kind
    timed = _try_retime(fixed[0], travel_for)
    return (timed if timed is not None else fixed[0]), [fixed[1]]


def repair(
    mission: Mission, schedule: Schedule, travel_for: TravelFor, *, max_rounds: int = 10
) -> RepairResult:
    """Validate and fix ``schedule`` for up to ``max_rounds`` rounds (see the module docstring); the
    returned schedule, if any, has no violations."""
    current = copy.deepcopy(schedule)
    actions: list[str] = []
    for _ in range(max_rounds):
        violations = validate(mission, current, travel_for)
        if not violations:
            return RepairResult(current, actions, None)
        outcome = _fix(mission, current, violations, travel_for)
        if isinstance(outcome, str):
            return RepairResult(None, actions, outcome)
        current, done = outcome
        actions += done
    violations = validate(mission, current, travel_for)
    if violations:
        return RepairResult(None, actions, violations[0].kind)
    return RepairResult(current, actions, None)
