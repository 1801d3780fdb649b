"""NavCraft's planners: the language model's allocation (prompt, parsing, fallback), schedules from
allocations, and re-planning from an execution state (apartment_0, real path finder)."""

from __future__ import annotations

import pytest

from embodia.agents.navcraft.mission import Item, Mission, RobotStart
from embodia.agents.navcraft.planner import (
    Allocation,
    ExecutionState,
    LMPlanner,
    ScheduledPlanner,
    allocation_schedule,
    build_prompt,
    parse_allocation,
    plan_from_state,
    remaining_mission,
)
from embodia.agents.navcraft.timing import ScheduleError, travel_for_scene
from tests.agents.navcraft.test_executor import mission_of, place, relay

SCENE = "apartment_0"
ROOMS = ["bedroom_0", "corridor_0", "kitchen_0", "bathroom_0"]


class ScriptedLM:
    """A language model that always answers ``text`` (the planner's parsing and fallback under test)."""

    def __init__(self, text: str) -> None:
        self.text, self.prompts = text, []

    def generate(self, prompt, *, max_new_tokens=64, temperature=0.0, chat=True) -> str:
        self.prompts.append(prompt)
        return self.text


def test_prompt_holds_the_scene_graph_and_the_format():
    mission, schedule = relay()
    prompt = build_prompt(mission, schedule.robots, travel_for_scene(SCENE), {"cup_9": 1})
    assert "door_5 joins bedroom_0 and corridor_0" in prompt
    travel = travel_for_scene(SCENE)(()).graph
    assert f"bedroom_0-corridor_0 {travel.travel_time('bedroom_0', 'corridor_0'):.0f}" in prompt
    assert "ROBOT 0 in bedroom_0 (primary); ROBOT 1 in kitchen_0" in prompt
    assert "bring cup_9 from bedroom_0 to kitchen_0 (ROBOT 1 already carries it)" in prompt
    assert "cup_0 in office_0" in prompt and "ITEM <object_id> -> ROBOT <k>" in prompt


def test_parse_well_formed_messy_and_garbage_answers():
    mission, _ = relay()
    clean = parse_allocation(
        "ITEM cup_9 -> ROBOT 0\nHANDOFF cup_9 AT corridor_0 TO ROBOT 1", mission, 2, ROOMS
    )
    assert clean == Allocation({"cup_9": 0}, {"cup_9": ("corridor_0", 1)})
    messy = parse_allocation(
        "Sure! Here is my plan:\n  - item  CUP_9->robot1 (it is closer)\n  item cup_9 -> robot 0\nhandoff cup_9 at "
        "Corridor_0 to robot 1\nThanks.",
        mission,
        2,
        ROOMS,
    )
    assert messy.assignment == {"cup_9": 1} and messy.handoffs == {}  # first line wins; no self-handoff
    for garbage, why in [
        ("ROBOT 1: ROBOT 0: ROBOT 1", "no 'ITEM"),
        ("ITEM mug_3 -> ROBOT 1", "unknown item"),
        ("ITEM cup_9 -> ROBOT 7", "robot 7"),
        ("ITEM cup_9 -> ROBOT 0\nHANDOFF cup_9 AT attic TO ROBOT 1", "invalid handoff"),
    ]:
        with pytest.raises(ScheduleError, match=why):
            parse_allocation(garbage, mission, 2, ROOMS)


def test_allocation_with_a_handoff_becomes_a_timed_relay():
    mission, reference = relay()
    travel_for = travel_for_scene(SCENE)
    schedule = allocation_schedule(
        mission, reference.robots, Allocation({"cup_9": 0}, {"cup_9": ("corridor_0", 1)}), travel_for
    )
    assert schedule.collaboration == "relay"
    assert [s.kind for s in schedule.plans[0]] == ["move", "pick", "move", "give", "move"]
    assert [s.kind for s in schedule.plans[1]] == ["move", "take", "move", "drop"]
    travel = travel_for(())
    anchor = travel.graph.room("corridor_0").anchor
    giver_ready = (
        travel.time(mission.start.position, mission.items[0].pickup.position)
        + 2.0
        + travel.time(mission.items[0].pickup.position, anchor)
    )
    taker_ready = travel.time(reference.robots[1].place.position, anchor)
    give, take = schedule.plans[0][3], schedule.plans[1][1]
    assert give.start == take.start == pytest.approx(max(giver_ready, taker_ready))
    assert give.window == (give.start, give.start + 10.0)
    assert schedule.plans[1][3].subgoal == "deliver_cup_9" and schedule.plans[0][4].subgoal == "arrive"


def test_lm_planner_parses_or_falls_back_to_solo():
    mission, reference = relay()
    travel_for = travel_for_scene(SCENE)
    planner = LMPlanner(ScriptedLM("I think: ITEM cup_9 -> ROBOT 1."))
    parallel = planner.plan(mission, reference.robots, travel_for)
    assert not planner.last.fallback and parallel.collaboration == "parallel_fetch"
    assert [s.kind for s in parallel.plans[1]] == ["move", "pick", "move", "drop"]
    assert "Mission: bring cup_9" in planner.lm.prompts[0]
    planner = LMPlanner(ScriptedLM("no idea"))
    solo = planner.plan(mission, reference.robots, travel_for)
    assert planner.last.fallback and "no 'ITEM" in planner.last.reason
    assert solo.collaboration == "solo" and solo.plans[1] == [] and len(solo.plans[0]) == 5


def test_lm_planner_with_smollm2_returns_a_valid_schedule(smol):
    mission, reference = relay()
    planner = LMPlanner(smol, max_new_tokens=24)
    schedule = planner.plan(mission, reference.robots, travel_for_scene(SCENE))
    record = planner.last
    assert record.answer and (record.fallback or record.allocation is not None)
    steps = [s for plan in schedule.plans for s in plan]
    assert {"pick", "drop"} <= {s.kind for s in steps} and schedule.plans[0][-1].place == mission.end
    assert all(s.end >= s.start for s in steps) and schedule.makespan > 0


def test_remaining_mission_starts_from_the_state():
    mission, reference = relay()
    carried = ExecutionState(
        time=12.0,
        positions=[(5.0, 3.7, 0.0), (6.0, 3.8, 0.0)],
        yaws=[0.5, 0.0],
        carrying=[[], ["cup_9"]],
        achieved={"pick_cup_9": 5.0},
    )
    left = remaining_mission(mission, carried, room_of=lambda p: "corridor_0")
    assert left.start.position == (5.0, 3.7, 0.0) and left.start_yaw == 0.5
    assert left.items[0].pickup.position == (6.0, 3.8, 0.0)  # carried: picked up where its carrier is
    assert [s.id for s in left.subgoals] == ["deliver_cup_9", "arrive"]
    carried.achieved["deliver_cup_9"] = 20.0
    assert remaining_mission(mission, carried).items == []


def test_replan_waits_for_a_frozen_robot_and_keeps_a_carried_item_with_its_carrier():
    mission, reference = relay()
    travel_for = travel_for_scene(SCENE)
    helper = place("corridor_0", 6.0, 3.8)
    state = ExecutionState(
        time=12.0,
        positions=[place("corridor_0", 4.5, 3.8).position, helper.position],
        yaws=[0.0, 0.0],
        carrying=[[], ["cup_9"]],
        achieved={"pick_cup_9": 5.0},
        busy_until=[0.0, 30.0],
    )
    outcome = plan_from_state(mission, state, travel_for, ScheduledPlanner(reference))
    assert outcome.fallback and "cannot be re-planned" in outcome.reason
    helper_plan = outcome.schedule.plans[1]
    assert [s.kind for s in helper_plan] == ["wait", "move", "drop"]  # carries it already: no pick
    assert helper_plan[0].start == 12.0 and helper_plan[0].end == 30.0
    travel = travel_for(())
    assert helper_plan[1].end == pytest.approx(
        30.0 + travel.time(helper.position, mission.items[0].destination.position)
    )
    assert [s.kind for s in outcome.schedule.plans[0]] == ["move"]  # robot 0 just goes to the end
    assert outcome.schedule.plans[0][0].start == 12.0


def test_replan_assigns_an_item_behind_a_closed_door_to_the_robot_that_can_reach_it():
    item = Item("towel_9", "towel", place("bathroom_0", 4.9, 6.0, "towel_9"), place("bathroom_0", 3.8, 6.2))
    mission: Mission = mission_of("door", place("corridor_0", 2.6, 3.8), item, place("corridor_0", 6.5, 3.8))
    inside = place("bathroom_0", 3.5, 5.3)
    state = ExecutionState(
        0.0, [mission.start.position, inside.position], [0.0, 0.0], [[], []], closed_doors=("door_6",)
    )
    schedule = plan_from_state(mission, state, travel_for_scene(SCENE), None).schedule
    assert [s.kind for s in schedule.plans[1]] == ["move", "pick", "move", "drop"]
    assert [s.kind for s in schedule.plans[0]] == ["move"]
    # with the door open the primary does it alone (the solo fallback)
    state.closed_doors = ()
    solo = plan_from_state(mission, state, travel_for_scene(SCENE), None).schedule
    assert solo.plans[1] == [] and [s.kind for s in solo.plans[0]] == ["move", "pick", "move", "drop", "move"]


def test_solo_and_collaborative_planners_use_the_generator():
    pytest.importorskip("embodia.agents.navcraft.generate")
    from embodia.agents.navcraft.planner import CollaborativePlanner, SoloPlanner

    mission, reference = relay()
    travel_for = travel_for_scene(SCENE)
    robots: list[RobotStart] = reference.robots
    solo = SoloPlanner().plan(mission, robots, travel_for)
    assert len(solo.plans) == 2 and solo.plans[1] == [] and solo.collaboration == "solo"
    together = CollaborativePlanner().plan(mission, robots, travel_for)
    assert len(together.plans) == 2 and together.makespan <= solo.makespan
