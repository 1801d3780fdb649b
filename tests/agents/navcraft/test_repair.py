"""Schedule repair on apartment_0: constructed broken schedules, each fixed by the expected action (or
rejected with its reason); every returned schedule validates with no violations."""

from __future__ import annotations

import pytest

from embodia.agents.navcraft.mission import Item, Step
from embodia.agents.navcraft.repair import RepairResult, repair
from embodia.agents.navcraft.timing import retime
from embodia.agents.navcraft.validate import interference_events, validate
from tests.agents.navcraft.test_validate import (
    ANCHORS,
    DINING,
    LIVING_NEAR_DOOR,
    TRAVEL_FOR,
    crossing_mission,
    cup_mission,
    door_0_crossing,
    escort,
    place,
    relay,
    solo,
)


def assert_valid(result: RepairResult, mission) -> None:
    assert result.schedule is not None and result.reason is None
    assert validate(mission, result.schedule, TRAVEL_FOR) == []


def test_a_valid_schedule_is_returned_unchanged():
    schedule = relay()
    result = repair(cup_mission(), schedule, TRAVEL_FOR)
    assert_valid(result, cup_mission())
    assert result.actions == [] and result.schedule.makespan == schedule.makespan


def test_interference_is_repaired_by_a_wait():
    schedule = door_0_crossing(LIVING_NEAR_DOOR, DINING)
    result = repair(crossing_mission(), schedule, TRAVEL_FOR)
    assert_valid(result, crossing_mission())
    assert len(result.actions) == 1 and result.actions[0].startswith("delay robot")
    assert "interference at door_0" in result.actions[0]
    assert result.schedule.makespan >= schedule.makespan
    assert interference_events(result.schedule, TRAVEL_FOR) == []
    # either robot needs 2.5 s (both cross at 2.55 s: 2.4 s overlap + 0.1 s margin); delaying robot 0
    # (3.75 m = 7.5 s) ends at 10.0 s, delaying robot 1 (2.55 m = 5.1 s) at 7.6 s: robot 1 waits
    waits = [(r, s) for r, plan in enumerate(result.schedule.plans) for s in plan if s.kind == "wait"]
    assert len(waits) == 1 and waits[0][0] == 1 and waits[0][1].end == pytest.approx(2.5, abs=0.05)
    assert result.actions == ["delay robot 1 by 2.5 s before step 0 (interference at door_0)"]
    assert result.schedule.makespan == pytest.approx(7.6, abs=0.05)


def test_following_through_a_door_is_repaired_by_delaying_the_follower():
    schedule = door_0_crossing((DINING[0] - 0.3, DINING[1], 0.0), ANCHORS["living_room_0"])
    result = repair(crossing_mission(), schedule, TRAVEL_FOR)
    assert_valid(result, crossing_mission())
    # robot 1 crosses 0.6 s after robot 0: it must wait 2.4 - 0.6 + 0.1 = 1.9 s
    assert result.actions == ["delay robot 1 by 1.9 s before step 0 (interference at door_0)"]


def test_wrong_times_are_repaired_by_retime():
    schedule = relay()
    for step in schedule.plans[0][2:]:
        step.start += 5.0
        step.end += 5.0
    result = repair(cup_mission(), schedule, TRAVEL_FOR)
    assert_valid(result, cup_mission())
    assert result.actions == ["retime"]
    assert result.schedule.makespan == pytest.approx(relay().makespan)


def test_a_missed_window_is_widened_to_the_retimed_start():
    result = repair(cup_mission(), relay(window=(0.0, 10.0)), TRAVEL_FOR)
    assert_valid(result, cup_mission())
    assert result.actions[0] == "retime" and "widen the window" in result.actions[1]
    give = result.schedule.plans[1][3]
    assert give.window == (0.0, pytest.approx(give.start)) and give.start == pytest.approx(12.45, abs=0.01)


def test_a_pick_before_the_drop_is_repaired_by_reordering():
    mug = Item("mug_0", "cup", place("bathroom_0"), place("dining_room_0"))
    cup = cup_mission().items[0]
    plan = [
        Step("move", place("office_0")),
        Step("pick", place("office_0"), "cup_0"),
        Step("move", place("bathroom_0")),
        Step("pick", place("bathroom_0"), "mug_0"),
        Step("move", place("living_room_0")),
        Step("drop", place("living_room_0"), "cup_0"),
        Step("move", place("dining_room_0")),
        Step("drop", place("dining_room_0"), "mug_0"),
    ]
    mission, schedule = solo(plan, items=[cup, mug])
    result = repair(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert_valid(result, mission)
    assert result.actions[0].startswith("reorder robot 0")
    kinds = [(s.kind, s.item) for s in result.schedule.plans[0] if s.kind != "move"]
    assert kinds == [("pick", "cup_0"), ("drop", "cup_0"), ("pick", "mug_0"), ("drop", "mug_0")]


def test_a_handoff_at_two_places_is_repaired_by_reassigning_the_item_to_robot_0():
    corridor = ANCHORS["corridor_0"]
    schedule = relay(give_at=place("corridor_0", (corridor[0] - 2.0, corridor[1], 0.0)))
    result = repair(cup_mission(), schedule, TRAVEL_FOR)
    assert_valid(result, cup_mission())
    assert result.actions == ["reassign item cup_0 to robot 0"]
    helper = result.schedule.plans[1]
    assert all(s.item != "cup_0" for s in helper)
    primary = [(s.kind, s.place.room) for s in result.schedule.plans[0]]
    assert primary[-5:] == [
        ("move", "office_0"),
        ("pick", "office_0"),
        ("move", "living_room_0"),
        ("drop", "living_room_0"),
        ("move", "dining_room_0"),
    ]
    # the pick and deliver subgoals are carried by the appended steps
    assert {s.subgoal for s in result.schedule.plans[0]} >= {"pick_cup_0", "deliver_cup_0"}


def test_unrepairable_schedules_are_rejected_with_their_reason():
    mission, schedule = escort((3.7, 1.8, 0.0))  # opens door_0 from 2 m away
    result = repair(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert result.schedule is None and result.reason == "door"
    mission, schedule = escort((5.2, 1.8, 0.0), open_door=False)  # robot 0 cut off from living_room_0
    result = repair(mission, schedule, TRAVEL_FOR)
    assert result.schedule is None and result.reason == "unreachable"
    plan = [
        Step("move", place("office_0")),
        Step("pick", place("office_0"), "cup_0"),
        Step("move", DINING_PLACE),
    ]
    mission, schedule = solo(plan)  # robot 0 never drops the cup
    result = repair(mission, retime(schedule, TRAVEL_FOR), TRAVEL_FOR)
    assert result.schedule is None and result.reason == "incomplete"


DINING_PLACE = place("dining_room_0")


def test_repair_never_returns_an_invalid_schedule():
    corridor = ANCHORS["corridor_0"]
    cases = [
        (cup_mission(), relay()),
        (cup_mission(), relay(window=(0.0, 5.0))),
        (cup_mission(), relay(give_at=place("corridor_0", (corridor[0] - 2.0, corridor[1], 0.0)))),
        (crossing_mission(), door_0_crossing(LIVING_NEAR_DOOR, DINING)),
        (crossing_mission(), door_0_crossing((DINING[0] - 0.3, DINING[1], 0.0), ANCHORS["living_room_0"])),
        escort((3.7, 1.8, 0.0)),
        escort((5.2, 1.8, 0.0), open_door=False),
    ]
    outcomes = []
    for mission, schedule in cases:
        result = repair(mission, schedule, TRAVEL_FOR, max_rounds=3)
        if result.schedule is not None:
            assert validate(mission, result.schedule, TRAVEL_FOR) == []
        else:
            assert result.reason is not None
        outcomes.append(result.reason)
    assert outcomes == [None, None, None, None, None, "door", "unreachable"]


def test_a_helper_cut_off_by_a_closed_door_has_its_item_reassigned():
    cup = Item("cup_0", "cup", place("office_0"), place("bathroom_0"))
    mission = cup_mission(items=[cup])
    schedule = relay()
    schedule.robots[1].place = place("living_room_0")  # door_0 is shut and no one opens it
    schedule.closed_doors = ["door_0"]
    schedule.plans[0][2].place = schedule.plans[0][3].place = place("bathroom_0")
    violations = validate(mission, schedule, TRAVEL_FOR)
    assert [(v.kind, v.robot, v.step) for v in violations] == [("unreachable", 1, 0)]
    result = repair(mission, schedule, TRAVEL_FOR)
    assert_valid(result, mission)
    assert result.actions == ["reassign item cup_0 to robot 0"]
    assert result.schedule.plans[1] == []  # every helper step served the cup
    solo_plan = [("move", "office_0"), ("pick", "office_0"), ("move", "bathroom_0")]
    assert [(s.kind, s.place.room) for s in result.schedule.plans[0]][:3] == solo_plan
