"""Schedule validation on apartment_0 (real path finder), constructed cases with hand-checked expectations.

apartment_0: living_room_0 is reached only through door_0 (from dining_room_0); the corridor links
dining_room_0 (door_1), office_0 (door_2), kitchen_0 (door_3), bedroom_0 (door_5), bathroom_0 (door_6);
all doors 0.9 m wide. Robot speed 0.5 m/s.
"""

from __future__ import annotations

import copy

import pytest

from embodia.agents.navcraft.mission import Item, Mission, Place, RobotStart, Schedule, Step, Subgoal
from embodia.agents.navcraft.timing import retime, travel_for_scene
from embodia.agents.navcraft.validate import (
    VIOLATION_KINDS,
    doorway_crossings,
    interference_events,
    validate,
)

TRAVEL_FOR = travel_for_scene("apartment_0")
ANCHORS = {room.id: room.anchor for room in TRAVEL_FOR(()).graph.rooms}
DINING, LIVING = ANCHORS["dining_room_0"], ANCHORS["living_room_0"]
#: dining_room_0's anchor mirrored through door_0 (x = 5.7): as far from the doorway on the living side
LIVING_NEAR_DOOR = (2 * 5.7 - DINING[0], DINING[1], 0.0)


def place(room: str, position=None) -> Place:
    return Place(room, tuple(position) if position is not None else ANCHORS[room])


def cup_mission(items=None) -> Mission:
    """Bring cup_0 from office_0 to living_room_0, start in bedroom_0, end in dining_room_0."""
    cup = Item("cup_0", "cup", place("office_0"), place("living_room_0"))
    items = [cup] if items is None else items
    subgoals = [Subgoal(f"pick_{i.object_id}", "pick", i.pickup, i.object_id) for i in items]
    subgoals += [Subgoal(f"deliver_{i.object_id}", "deliver", i.destination, i.object_id) for i in items]
    subgoals.append(Subgoal("arrive", "arrive", place("dining_room_0")))
    return Mission(
        "m0",
        "apartment_0",
        "bring the cup",
        place("bedroom_0"),
        0.0,
        items,
        place("dining_room_0"),
        [],
        subgoals,
    )


def relay(give_at: Place | None = None, window=None) -> Schedule:
    """Robot 1 (in office_0) picks the cup and hands it to robot 0 in the corridor; robot 0 delivers it."""
    give_at = give_at or place("corridor_0")
    plans = [
        [
            Step("move", place("corridor_0")),
            Step("take", place("corridor_0"), "cup_0", 1, window=window),
            Step("move", place("living_room_0")),
            Step("drop", place("living_room_0"), "cup_0"),
            Step("move", place("dining_room_0")),
        ],
        [
            Step("move", place("office_0")),
            Step("pick", place("office_0"), "cup_0"),
            Step("move", give_at),
            Step("give", give_at, "cup_0", 0, window=window),
        ],
    ]
    starts = [RobotStart(place("bedroom_0"), 0.0), RobotStart(place("office_0"), 0.0)]
    return retime(Schedule("relay", starts, plans), TRAVEL_FOR)


def solo(plan: list[Step], items=None, closed=()) -> tuple[Mission, Schedule]:
    schedule = Schedule("solo", [RobotStart(place("bedroom_0"), 0.0)], [plan], closed_doors=list(closed))
    return cup_mission(items), schedule


def kinds(violations) -> set[str]:
    return {v.kind for v in violations}


def crossing_mission() -> Mission:
    return Mission("m1", "apartment_0", "go", place("dining_room_0"), 0.0, [], place("living_room_0"), [], [])


def door_0_crossing(helper_start, helper_target, helper_delay: float = 0.0) -> Schedule:
    """Robot 0 goes dining -> living through door_0; robot 1 goes from ``helper_start`` to ``helper_target``."""
    helper = [Step("move", place("dining_room_0", helper_target))]
    if helper_delay:
        helper.insert(0, Step("wait", place("dining_room_0", helper_start), end=helper_delay))
    schedule = Schedule(
        "parallel_fetch",
        [RobotStart(place("dining_room_0"), 0.0), RobotStart(place("dining_room_0", helper_start), 0.0)],
        [[Step("move", place("living_room_0"))], helper],
    )
    return retime(schedule, TRAVEL_FOR)


# ---------------------------------------------------------------------- correct schedules
def test_relay_with_correct_times_and_places_is_valid():
    schedule = relay()
    # hand check: robot 1 office -> corridor 5.22 m = 10.45 s after a 2 s pick; robot 0 waits for it
    take = schedule.plans[0][1]
    assert take.start == pytest.approx(2.0 + schedule.plans[1][2].end - schedule.plans[1][2].start, abs=1e-6)
    assert validate(cup_mission(), schedule, TRAVEL_FOR) == []


def test_violation_kinds_are_the_documented_seven():
    assert VIOLATION_KINDS == (
        "unreachable",
        "timing",
        "interference",
        "rendezvous",
        "carrying",
        "door",
        "incomplete",
    )


# ---------------------------------------------------------------------- one test per kind
def test_give_two_metres_from_the_take_is_a_rendezvous_violation():
    corridor = ANCHORS["corridor_0"]
    apart = place("corridor_0", (corridor[0] - 2.0, corridor[1], 0.0))
    violations = validate(cup_mission(), relay(give_at=apart), TRAVEL_FOR)
    assert kinds(violations) == {"rendezvous"}
    assert "2.00 m" in violations[0].message and violations[0].robot == 1


def test_inverted_window_and_missing_partner_are_rendezvous_violations():
    schedule = relay()
    schedule.plans[1][3].window = (12.0, 10.0)  # opens before 12.45 s, so only the inversion is wrong
    assert kinds(validate(cup_mission(), schedule, TRAVEL_FOR)) == {"rendezvous"}
    schedule = relay()
    schedule.plans[0][1].partner = None  # robot 0's take names no partner: both sides lose their match
    violations = validate(cup_mission(), schedule, TRAVEL_FOR)
    # the cup never reaches robot 0: its drop and the delivery fail too
    assert kinds(violations) == {"rendezvous", "carrying", "incomplete"}
    assert [(v.robot, v.step) for v in violations if v.kind == "rendezvous"] == [(0, 1), (1, 3)]


def test_wrong_stated_times_are_a_timing_violation():
    schedule = relay()
    for step in schedule.plans[0][2:]:
        step.start += 5.0
        step.end += 5.0
    violations = validate(cup_mission(), schedule, TRAVEL_FOR)
    assert kinds(violations) == {"timing"} and (violations[0].robot, violations[0].step) == (0, 2)
    assert "3 steps off" in violations[0].message
    # within the tolerance it passes
    schedule = relay()
    schedule.plans[0][4].end += 0.4
    assert validate(cup_mission(), schedule, TRAVEL_FOR) == []


def test_a_handoff_after_its_window_closes_is_a_timing_violation():
    # robot 1 reaches the corridor at 12.45 s: a window closing at 10 s is missed, one closing at 13 s kept
    violations = validate(cup_mission(), relay(window=(0.0, 10.0)), TRAVEL_FOR)
    assert kinds(violations) == {"timing"} and len(violations) == 2  # the give and the take
    assert validate(cup_mission(), relay(window=(0.0, 13.0)), TRAVEL_FOR) == []


def test_opposite_crossings_of_one_door_at_once_are_interference():
    # both robots are 1.275 m from door_0 and set off together: both are in it at 2.55 s
    schedule = door_0_crossing(LIVING_NEAR_DOOR, DINING)
    violations = validate(crossing_mission(), schedule, TRAVEL_FOR)
    assert kinds(violations) == {"interference"} and "door_0" in violations[0].message
    (event,) = interference_events(schedule, TRAVEL_FOR)
    assert event["door"] == "door_0" and event["robots"] == (0, 1) and not event["same_direction"]
    assert event["times"][0] == pytest.approx(2.55, abs=0.05) and event["times"][1] == pytest.approx(
        2.55, abs=0.05
    )
    assert event["overlap"] == pytest.approx(2.4, abs=0.1)  # 2 * 0.6 m / 0.5 m/s, fully overlapping
    # the same with robot 1 starting 2.5 s later: it enters after robot 0 has left (2.55 + 1.2 < 5.05 - 1.2)
    later = door_0_crossing(LIVING_NEAR_DOOR, DINING, helper_delay=2.5)
    assert validate(crossing_mission(), later, TRAVEL_FOR) == []


def test_following_through_one_door_is_interference_with_the_same_direction():
    behind = (DINING[0] - 0.3, DINING[1], 0.0)
    schedule = door_0_crossing(behind, LIVING)
    (event,) = interference_events(schedule, TRAVEL_FOR)
    assert event["same_direction"] and event["times"][1] - event["times"][0] == pytest.approx(0.6, abs=0.05)
    crossings = doorway_crossings(schedule, TRAVEL_FOR)
    assert [c["door"] for c in crossings] == ["door_0", "door_0"]


def test_picking_while_carrying_is_a_carrying_violation():
    mug = Item("mug_0", "cup", place("bathroom_0"), place("dining_room_0"))
    cup = cup_mission().items[0]
    good = [
        Step("move", place("office_0")),
        Step("pick", place("office_0"), "cup_0"),
        Step("move", place("living_room_0")),
        Step("drop", place("living_room_0"), "cup_0"),
        Step("move", place("bathroom_0")),
        Step("pick", place("bathroom_0"), "mug_0"),
        Step("move", place("dining_room_0")),
        Step("drop", place("dining_room_0"), "mug_0"),
    ]
    mission, schedule = solo(good, items=[cup, mug])
    assert validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR) == []
    bad = [
        good[0],
        good[1],
        good[4],
        good[5],
        good[2],
        good[3],
        good[6],
        good[7],
    ]  # picks the mug holding the cup
    mission, schedule = solo(bad, items=[cup, mug])
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"carrying"} and (violations[0].robot, violations[0].step) == (0, 3)


def test_dropping_an_item_not_carried_or_picking_it_elsewhere_is_carrying():
    plan = [
        Step("move", place("office_0")),
        Step("pick", place("office_0"), "cup_0"),
        Step("move", place("living_room_0")),
        Step("drop", place("living_room_0"), "cup_0"),
        Step("move", place("dining_room_0")),
    ]
    mission, schedule = solo(plan)
    assert validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR) == []
    elsewhere = copy.deepcopy(plan)
    elsewhere[0].place = place("bathroom_0")  # picks the cup in the bathroom, 3 m from it
    mission, schedule = solo(elsewhere)
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"carrying"} and "from where it lies" in violations[0].message
    twice = plan[:2] + [Step("drop", place("office_0"), "mug_9")] + plan[2:]
    mission, schedule = solo(twice)
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"carrying"} and "does not carry" in violations[0].message


def escort(opener_position, closed=("door_0",), open_door=True) -> tuple[Mission, Schedule]:
    """Robot 1 opens door_0 from ``opener_position``; robot 0 then goes dining -> living."""
    helper = [Step("move", place("dining_room_0", opener_position))]
    if open_door:
        helper.append(Step("open_door", place("dining_room_0", opener_position), door="door_0"))
    schedule = Schedule(
        "escort",
        [RobotStart(place("dining_room_0"), 0.0), RobotStart(place("dining_room_0", (5.0, 1.0, 0.0)), 0.0)],
        [[Step("move", place("living_room_0"))], helper],
        closed_doors=list(closed),
    )
    return crossing_mission(), schedule


def test_open_door_far_from_the_door_or_not_closed_is_a_door_violation():
    mission, schedule = escort((5.2, 1.8, 0.0))  # 0.5 m from door_0's centre (5.7, 1.8)
    timed = retime(schedule, TRAVEL_FOR)
    assert timed.plans[0][0].end > timed.plans[1][1].end  # robot 0 waits for the door
    assert validate(mission, timed, TRAVEL_FOR) == []
    mission, schedule = escort((3.7, 1.8, 0.0))  # 2.0 m from it
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"door"} and "2.00 m away" in violations[0].message
    mission, schedule = escort((5.2, 1.8, 0.0), closed=())
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"door"} and "not closed" in violations[0].message


def test_a_target_behind_a_door_no_one_opens_is_unreachable():
    mission, schedule = escort((5.2, 1.8, 0.0), open_door=False)
    violations = validate(mission, schedule, TRAVEL_FOR)
    assert kinds(violations) == {"unreachable"} and (violations[0].robot, violations[0].step) == (0, 0)
    assert "door_0" in violations[0].message


def test_a_deadlock_is_unreachable():
    # robot 0 first waits to take mug_1 from robot 1, which gives it only after handing over the cup
    schedule = relay()
    schedule.plans[0].insert(0, Step("take", place("bedroom_0"), "mug_1", 1))
    schedule.plans[1].insert(4, Step("give", place("corridor_0"), "mug_1", 0))
    violations = validate(cup_mission(), schedule, TRAVEL_FOR)
    assert "unreachable" in kinds(violations)
    assert any("deadlock" in v.message for v in violations if v.kind == "unreachable")


def test_an_item_never_delivered_is_incomplete():
    plan = [
        Step("move", place("office_0")),
        Step("pick", place("office_0"), "cup_0"),
        Step("move", place("living_room_0")),
        Step("move", place("dining_room_0")),
    ]
    mission, schedule = solo(plan)
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"incomplete"}
    messages = " ".join(v.message for v in violations)
    assert "'cup_0' is not delivered" in messages and "still carried" in messages
    assert "deliver_cup_0" in messages  # its subgoal is achieved by no step


def test_ending_away_from_the_end_is_incomplete():
    plan = [
        Step("move", place("office_0")),
        Step("pick", place("office_0"), "cup_0"),
        Step("move", place("living_room_0")),
        Step("drop", place("living_room_0"), "cup_0"),
    ]
    mission, schedule = solo(plan)
    violations = validate(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert kinds(violations) == {"incomplete"} and {v.robot for v in violations} == {0, None}
    assert any("robot 0 ends" in v.message for v in violations)
