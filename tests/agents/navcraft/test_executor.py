"""NavCraft's executor in the real multi-robot environment (apartment_0, MuJoCo back end): a relay with a
handoff, a delay before the handoff and a door closed mid-episode, with and without re-planning."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.agents.navcraft.executor import CloseDoor, Delay, execute
from embodia.agents.navcraft.mission import Item, Mission, Place, RobotStart, Schedule, Step, Subgoal
from embodia.agents.navcraft.timing import retime, travel_for_scene
from embodia.agents.navcraft.travel import Travel

SCENE = "apartment_0"


def place(room: str, x: float, y: float, object_id: str | None = None) -> Place:
    point = Travel.for_scene(SCENE).pathfinder.snap_point(np.array([x, y, 0.0]))
    return Place(room, tuple(float(v) for v in point), object_id)


def mission_of(mission_id: str, start: Place, item: Item, end: Place) -> Mission:
    subgoals = [
        Subgoal(f"pick_{item.object_id}", "pick", item.pickup, item.object_id),
        Subgoal(f"deliver_{item.object_id}", "deliver", item.destination, item.object_id),
        Subgoal("arrive", "arrive", end),
    ]
    return Mission(mission_id, SCENE, "bring it", start, 0.0, [item], end, [], subgoals)


def relay() -> tuple[Mission, Schedule]:
    """Robot 0 picks a cup in the bedroom and hands it over in the corridor; robot 1 (from the kitchen)
    delivers it to the kitchen counter; robot 0 ends in the corridor."""
    item = Item("cup_9", "cup", place("bedroom_0", 1.0, 2.6, "cup_9"), place("kitchen_0", 7.85, 5.4))
    start, end = place("bedroom_0", 1.575, 2.0), place("corridor_0", 3.0, 3.8)
    handoff = place("corridor_0", 5.325, 3.775)
    plans = [
        [
            Step("move", item.pickup),
            Step("pick", item.pickup, "cup_9"),
            Step("move", handoff),
            Step("give", handoff, "cup_9", partner=1, window=(0.0, 40.0)),
            Step("move", end),
        ],
        [
            Step("move", handoff),
            Step("take", handoff, "cup_9", partner=0, window=(0.0, 40.0)),
            Step("move", item.destination),
            Step("drop", item.destination, "cup_9"),
        ],
    ]
    robots = [RobotStart(start, 0.0), RobotStart(place("kitchen_0", 8.6, 6.2), 3.14)]
    return mission_of("relay", start, item, end), retime(
        Schedule("relay", robots, plans), travel_for_scene(SCENE)
    )


def solo_with_idle_helper(mission: Mission, helper: Place) -> Schedule:
    item = mission.items[0]
    plan = [
        Step("move", item.pickup),
        Step("pick", item.pickup, item.object_id),
        Step("move", item.destination),
        Step("drop", item.destination, item.object_id),
        Step("move", mission.end),
    ]
    robots = [RobotStart(mission.start, 0.0), RobotStart(helper, 0.0)]
    return retime(Schedule("solo", robots, [plan, []]), travel_for_scene(SCENE))


def test_relay_executes_with_one_handoff():
    mission, schedule = relay()
    result = execute((mission, schedule))
    assert result.success and all(t is not None for t in result.subgoal_times.values())
    assert len(result.handoffs) == 1 and not result.handoff_errors and not result.replans
    handoff = result.handoffs[0]
    assert (handoff.giver, handoff.taker, handoff.item) == (0, 1, "cup_9")
    # the pick comes before the handoff, the delivery after it, by robot 1
    assert result.subgoal_times["pick_cup_9"] < handoff.time < result.subgoal_times["deliver_cup_9"]
    assert result.robot_subgoals == [["pick_cup_9", "arrive"], ["deliver_cup_9"]]
    assert schedule.makespan <= result.makespan <= 2 * schedule.makespan
    assert result.planned_makespan == schedule.makespan
    assert len(result.trajectories[1]) == result.steps + 1
    # executed paths are about the planned routes (moves end 0.3 m early; turning costs time, not length)
    for path, route in zip(result.path_lengths, result.route_lengths):
        assert 0.8 * route <= path <= 1.3 * route


def test_delay_before_the_handoff_is_recovered_only_by_replanning():
    mission, schedule = relay()
    delay = [Delay(robot=1, at_time=2.0, seconds=120.0)]
    replanned = execute((mission, schedule), disturbances=delay)
    kept = execute((mission, schedule), disturbances=delay, replan=False)
    assert replanned.success and not replanned.handoff_errors
    assert len(replanned.replans) == 1 and "delayed" in replanned.replans[0].reason
    assert replanned.robot_subgoals[0] == ["pick_cup_9", "deliver_cup_9", "arrive"]  # robot 0 does it alone
    assert not kept.success and kept.subgoal_times["deliver_cup_9"] is None
    assert len(kept.handoff_errors) == 1 and kept.handoff_errors[0].taker == 1
    # the primary gave up after the window (40 s) plus the grace (30 s)
    assert kept.handoff_errors[0].time == pytest.approx(70.5)
    assert kept.disturbances[0][0] == 2.0


def test_door_closed_on_the_route_reassigns_the_item_to_the_robot_behind_it():
    """door_6 is the bathroom's only door: once it shuts, robot 0 (in the corridor) cannot reach the towel;
    robot 1 (in the bathroom) can."""
    item = Item("towel_9", "towel", place("bathroom_0", 4.9, 6.0, "towel_9"), place("bathroom_0", 3.8, 6.2))
    start, end = place("corridor_0", 2.6, 3.8), place("corridor_0", 6.5, 3.8)
    mission = mission_of("door", start, item, end)
    schedule = solo_with_idle_helper(mission, place("bathroom_0", 3.5, 5.3))
    closing = [CloseDoor("door_6", at_time=2.0)]
    replanned = execute((mission, schedule), disturbances=closing)
    kept = execute((mission, schedule), disturbances=closing, replan=False)
    assert replanned.success and len(replanned.replans) == 1
    assert replanned.robot_subgoals == [["arrive"], ["pick_towel_9", "deliver_towel_9"]]
    assert replanned.replans[0].collaboration == "parallel_fetch"
    assert not kept.success and kept.subgoal_times == {
        "pick_towel_9": None,
        "deliver_towel_9": None,
        "arrive": None,
    }


def test_door_closed_with_a_detour_is_replanned_through_the_bedroom():
    """dining room -> kitchen goes through door_1; with it shut, through door_4, the bedroom and door_5."""
    item = Item("cup_8", "cup", place("dining_room_0", 4.4, 1.9, "cup_8"), place("kitchen_0", 8.0, 5.6))
    start, end = place("dining_room_0", 5.0, 1.5), place("kitchen_0", 7.0, 6.0)
    mission = mission_of("detour", start, item, end)
    schedule = solo_with_idle_helper(mission, place("living_room_0", 9.0, 1.5))
    assert [
        d
        for d, _ in travel_for_scene(SCENE)(()).door_crossings(
            item.pickup.position, item.destination.position
        )
    ] == [
        "door_1",
        "door_3",
    ]
    plain = execute((mission, schedule))
    replanned = execute((mission, schedule), disturbances=[CloseDoor("door_1", at_time=5.0)])
    assert plain.success and replanned.success and len(replanned.replans) == 1
    assert replanned.replans[0].planned_makespan > schedule.makespan  # the detour is longer
    assert replanned.path_lengths[0] > plain.path_lengths[0] + 3.0
    assert replanned.makespan > plain.makespan


def test_robots_together_in_a_doorway_are_an_interference_event():
    """Robot 1 stands next to door_0 while robot 0 walks through it."""
    item = Item("cup_7", "cup", place("dining_room_0", 4.6, 1.5, "cup_7"), place("living_room_0", 7.0, 1.5))
    start, end = place("dining_room_0", 4.0, 1.5), place("living_room_0", 7.5, 1.0)
    mission = mission_of("door", start, item, end)
    result = execute((mission, solo_with_idle_helper(mission, place("dining_room_0", 5.2, 2.4))))
    assert result.success
    assert [(e.door, e.robots) for e in result.interference] == [("door_0", (0, 1))]
    event = result.interference[0]
    assert 0 < event.start <= event.end < result.makespan


def test_an_idle_robot_in_the_way_steps_aside():
    """Robot 1 stands idle in the corridor, on robot 0's way from the kitchen to the living room."""
    item = Item("vase_9", "vase", place("kitchen_0", 8.4, 6.5, "vase_9"), place("living_room_0", 6.43, 0.58))
    start, end = place("kitchen_0", 8.42, 6.89), place("living_room_0", 7.5, 1.0)
    mission = mission_of("aside", start, item, end)
    route = travel_for_scene(SCENE)(()).path(item.pickup.position, item.destination.position)
    on_route = route[np.argmin(np.linalg.norm(route[:, :2] - np.array([7.5, 3.9]), axis=1))]
    blocker = place("corridor_0", float(on_route[0]), float(on_route[1]))  # a corner of robot 0's path
    result = execute((mission, solo_with_idle_helper(mission, blocker)), max_steps=600)
    assert result.success and result.makespan < 2 * result.planned_makespan
    assert result.path_lengths[1] > 0.5  # it moved out of the way
