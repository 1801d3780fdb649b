"""NavCraft's generator on real scenes (apartment_0, office_0) and the real path finder."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embodia.agents.navcraft.benchmark import generate, scene_refs
from embodia.agents.navcraft.generate import (
    GeneratorConfig,
    NavCraftError,
    accept,
    annotate,
    build_mission,
    collaborate,
    door_side_places,
    sample_mission,
    solo_schedule,
)
from embodia.agents.navcraft.instructions import humanise_room
from embodia.agents.navcraft.mission import DURATIONS, Item, Place, RobotStart, to_plain
from embodia.agents.navcraft.timing import retime, travel_for_scene
from embodia.agents.navcraft.travel import Travel
from embodia.envs.habitat.instructions import object_name

SCENE = "apartment_0"


@pytest.fixture(scope="module")
def travel() -> Travel:
    return Travel.for_scene(SCENE)


def anchor(travel: Travel, room: str) -> Place:
    return Place(room, tuple(float(v) for v in travel.graph.room(room).anchor))


def near(travel: Travel, room: str, dx: float = 0.0, dy: float = 0.0) -> Place:
    point = travel.pathfinder.snap_point(
        np.array(anchor(travel, room).position) + [dx, dy, 0.0], island_index=0
    )
    return Place(room, (float(point[0]), float(point[1]), 0.0))


def cup_item(travel: Travel, destination: Place) -> Item:
    # cup_0 stands on the desk in the office; (2.225, 4.925) is a navigable point next to the desk
    return Item("cup_0", "cup", Place("office_0", (2.225, 4.925, 0.0), "cup_0"), destination)


# ---------------------------------------------------------------------- acceptance rule
def test_accept_needs_more_than_the_margin():
    assert accept(100.0, 98.5, 1.0)
    assert not accept(100.0, 100.0, 1.0)
    assert not accept(100.0, 120.0, 1.0)
    assert not accept(100.0, 99.5, 1.0)  # shorter, but within the margin
    assert not accept(100.0, 99.0, 1.0)  # exactly the margin is not enough
    assert accept(math.inf, 50.0, 1.0)


# ---------------------------------------------------------------------- stage 1
def test_humanised_room_names():
    assert humanise_room("living_room_0", ["living_room_0", "kitchen_0"]) == "the living room"
    assert humanise_room("bedroom_1", ["bedroom_0", "bedroom_1"]) == "the second bedroom"
    assert humanise_room("bedroom_0", ["bedroom_0"]) == "the bedroom"


@pytest.mark.parametrize("num_items", [1, 2])
def test_missions_have_long_legs_and_name_rooms_and_objects(travel, num_items):
    rooms = [r.id for r in travel.graph.rooms]
    for seed in range(5):
        mission = sample_mission(travel, np.random.default_rng(seed), f"m{seed}", num_items=num_items)
        assert len(mission.items) == num_items and len(mission.legs) == 2 * num_items + 1
        stops = (
            [mission.start] + [p for i in mission.items for p in (i.pickup, i.destination)] + [mission.end]
        )
        for leg, a, b in zip(mission.legs, stops[:-1], stops[1:]):
            route = travel.graph.route(a.room, b.room)
            assert leg.room_hops == len(route) - 1 >= 2
            assert leg.rooms == route
            assert leg.distance == pytest.approx(travel.distance(a.position, b.position))
        text = mission.instruction
        for item in mission.items:
            assert object_name(item.category) in text
            assert humanise_room(item.pickup.room, rooms) in text
            assert humanise_room(item.destination.room, rooms) in text
            assert item.pickup.room != item.destination.room
            assert travel.scene.object(item.object_id).room == item.pickup.room
        assert humanise_room(mission.end.room, rooms) in text
        assert [s.kind for s in mission.subgoals] == ["pick", "deliver"] * num_items + ["arrive"]


def test_missions_are_reproducible_by_seed(travel):
    def make(seed):
        return to_plain(sample_mission(travel, np.random.default_rng(seed), "m", num_items=2))

    assert make(3) == make(3)
    assert make(3) != make(4)


def test_impossible_hop_count_raises_a_clear_error(travel):
    with pytest.raises(NavCraftError, match="room hops per leg"):
        sample_mission(travel, np.random.default_rng(0), "m", min_room_hops=9, max_tries=5)


# ---------------------------------------------------------------------- solo plan
def test_solo_makespan_is_travel_plus_actions(travel):
    travel_for = travel_for_scene(SCENE)
    item = cup_item(travel, anchor(travel, "living_room_0"))
    start, end = anchor(travel, "kitchen_0"), anchor(travel, "bedroom_0")
    mission = build_mission(travel, "m", start, [item], end, np.random.default_rng(0))
    solo = solo_schedule(mission, travel_for)
    assert [s.kind for s in solo.plans[0]] == ["move", "pick", "move", "drop", "move"]
    expected = (
        travel.time(start.position, item.pickup.position)
        + travel.time(item.pickup.position, item.destination.position)
        + travel.time(item.destination.position, end.position)
        + DURATIONS["pick"]
        + DURATIONS["drop"]
    )
    assert solo.makespan == pytest.approx(expected)


def test_solo_picks_the_faster_item_order(travel):
    # the plant in the corridor goes to the kitchen, the cup in the office to the office's neighbour the
    # corridor; starting in the office, the cup first is clearly faster than the plant first
    travel_for = travel_for_scene(SCENE)
    plant = Item("plant_3", "plant", near(travel, "corridor_0"), anchor(travel, "kitchen_0"))
    cup = cup_item(travel, near(travel, "corridor_0", dx=0.5))
    start = near(travel, "office_0", dx=0.4)
    mission = build_mission(
        travel, "m", start, [plant, cup], anchor(travel, "kitchen_0"), np.random.default_rng(0)
    )
    solo = solo_schedule(mission, travel_for)
    assert [s.item for s in solo.plans[0] if s.kind == "pick"] == ["cup_0", "plant_3"]


# ---------------------------------------------------------------------- stage 2
def test_helper_next_to_the_item_makes_collaboration_pay(travel):
    travel_for = travel_for_scene(SCENE)
    # primary in the living room, the cup in the office (far), delivered to the living room, where the
    # primary finishes too: the helper should fetch it
    item = cup_item(travel, anchor(travel, "living_room_0"))
    mission = build_mission(
        travel,
        "m",
        near(travel, "living_room_0", dx=0.8),
        [item],
        near(travel, "living_room_0", dy=0.8),
        np.random.default_rng(0),
    )
    helper = RobotStart(Place("office_0", (1.925, 5.525, 0.0)), 0.0)
    result = collaborate(
        mission, [helper], travel_for, np.random.default_rng(0), types=("relay", "parallel_fetch")
    )
    assert result.accepted and result.taxonomy in ("relay", "parallel_fetch")
    assert result.schedule.makespan < result.solo.makespan - 1.0
    assert result.solo.makespan == pytest.approx(solo_schedule(mission, travel_for).makespan)
    # the helper picks the cup; the accepted schedule's times are the timing model's
    assert any(s.kind == "pick" and s.item == "cup_0" for s in result.schedule.plans[1])
    again = retime(result.schedule, travel_for)
    for plan, plan_again in zip(result.schedule.plans, again.plans):
        assert [t for s in plan for t in (s.start, s.end)] == pytest.approx(
            [t for s in plan_again for t in (s.start, s.end)]
        )
    handoffs = [e for e in result.schedule.events if e.kind == "handoff"]
    assert len(handoffs) == 1 and handoffs[0].items == ["cup_0"]
    give = next(s for s in result.schedule.plans[1] if s.kind == "give")
    assert give.window == pytest.approx((give.start - 5.0, give.start + 15.0))


def test_far_helper_is_rejected_and_solo_is_returned(travel):
    travel_for = travel_for_scene(SCENE)
    # the primary starts next to the cup and finishes where it delivers it: nobody can save time
    kitchen = anchor(travel, "kitchen_0")
    item = cup_item(travel, kitchen)
    mission = build_mission(
        travel, "m", near(travel, "office_0", dx=0.4), [item], kitchen, np.random.default_rng(0)
    )
    helper = RobotStart(near(travel, "living_room_0", dx=1.0), 0.0)
    result = collaborate(
        mission,
        [helper],
        travel_for,
        np.random.default_rng(0),
        types=("relay", "parallel_fetch", "rendezvous_swap"),
    )
    assert not result.accepted and result.taxonomy == "solo"
    assert result.rejected.get("no_gain", 0) > 0
    assert to_plain(result.schedule) == to_plain(result.solo)
    assert len(result.schedule.robots) == 1


def test_escort_compares_with_the_solo_plan_behind_the_closed_door(travel):
    travel_for = travel_for_scene(SCENE)
    # dining room -> corridor: 2.5 m through door_1, 6.1 m round through the bedroom when it is closed;
    # the kitchen (door_3) and the bathroom (door_6) have one door each: closing those leaves no detour
    start = near(travel, "dining_room_0", dx=0.5)
    item = Item("chair_2", "chair", start, anchor(travel, "kitchen_0"))
    mission = build_mission(
        travel, "m", start, [item], anchor(travel, "bathroom_0"), np.random.default_rng(0)
    )
    helper = RobotStart(near(travel, "corridor_0", dx=-0.5), 0.0)
    result = collaborate(mission, [helper], travel_for, np.random.default_rng(0), types=("escort",))
    assert result.rejected.get("solo_infeasible") == 2
    assert result.accepted and result.taxonomy == "escort"
    door = result.schedule.closed_doors[0]
    assert result.solo.closed_doors == [door]
    assert door == "door_1"
    open_world = solo_schedule(mission, travel_for).makespan
    assert result.solo.makespan > open_world + 3.0 / travel.speed  # round the bedroom: >= 3 m longer
    assert result.schedule.makespan == pytest.approx(open_world, abs=0.5)  # the door opens in time
    opener = result.schedule.plans[1]
    assert [s.kind for s in opener] == ["move", "open_door"] and opener[1].door == door
    assert math.dist(opener[1].place.position[:2], travel.scene.door(door).center) <= 1.0
    assert [e.kind for e in result.schedule.events] == ["door"]


def test_door_side_places_are_on_both_sides_within_a_metre(travel):
    door = travel.scene.door("door_5")
    places = door_side_places(travel, "door_5")
    assert sorted(p.room for p in places) == sorted(door.rooms)
    assert all(math.dist(p.position[:2], door.center) <= 1.0 for p in places)


def test_annotate_marks_a_swap_as_one_rendezvous(travel):
    travel_for = travel_for_scene(SCENE)
    plant = Item("plant_3", "plant", near(travel, "corridor_0"), anchor(travel, "bedroom_0"))
    cup = cup_item(travel, anchor(travel, "kitchen_0"))
    mission = build_mission(
        travel,
        "m",
        near(travel, "office_0", dx=0.4),
        [cup, plant],
        anchor(travel, "living_room_0"),
        np.random.default_rng(0),
    )
    helper = RobotStart(near(travel, "corridor_0", dx=0.8), 0.0)
    result = collaborate(mission, [helper], travel_for, np.random.default_rng(0), types=("rendezvous_swap",))
    if result.accepted:
        (event,) = result.schedule.events
        assert event.kind == "rendezvous" and sorted(event.items) == ["cup_0", "plant_3"]
    else:
        assert result.rejected.get("no_gain", 0) > 0
    config = GeneratorConfig(window_before=2.0, window_after=4.0)
    timed = annotate(retime(result.schedule, travel_for), config)
    for plan in timed.plans:
        for step in plan:
            if step.kind in ("give", "take"):
                assert step.window == pytest.approx((max(0.0, step.start - 2.0), step.start + 4.0))


# ---------------------------------------------------------------------- generation
def test_scene_refs_list_shipped_scenes_first():
    refs = scene_refs(6, 3)
    assert refs[:4] == ["apartment_0", "apartment_1", "apartment_2", "office_0"]
    assert refs[4].startswith("procedural:apartment:") and refs[5].startswith("procedural:office:")


def test_generate_is_reproducible_and_only_keeps_collaboration_that_pays():
    scenes = ["apartment_0", "office_0"]
    first = generate(scenes, 4, seed=7)
    again = generate(scenes, 4, seed=7)
    assert [to_plain(e) for e in first.episodes] == [to_plain(e) for e in again.episodes]
    # an episode does not depend on how many others are made
    fewer = generate(scenes, 2, seed=7)
    assert to_plain(fewer.episodes[:2]) == to_plain(first.episodes[:2])
    assert to_plain(fewer.episodes[2:]) == to_plain(first.episodes[4:6])
    other = generate(scenes, 4, seed=8)
    assert [to_plain(e) for e in other.episodes] != [to_plain(e) for e in first.episodes]
    stats = first.stats
    assert stats["episodes"] == len(first.episodes) == 8
    assert sum(stats["by_taxonomy"].values()) == 8 and sum(stats["robots"].values()) == 8
    for ep in first.episodes:
        info = ep.info
        assert info["taxonomy"] == ep.schedule.collaboration
        assert info["makespan"] == pytest.approx(ep.schedule.makespan)
        assert min(info["room_hops"]) >= 2
        if info["taxonomy"] != "solo":
            assert info["makespan"] < info["solo_makespan"] - 1.0
            assert ep.num_robots >= 2
        positions = [np.array(r.place.position[:2]) for r in ep.schedule.robots]
        for i, a in enumerate(positions):
            assert all(np.linalg.norm(a - b) >= 0.6 for b in positions[i + 1 :])
    assert stats["episodes_per_second"] > 0


# ---------------------------------------------------------------------- single-robot episodes, patterns
def test_single_robot_episodes_are_counted_and_leave_the_other_missions_alone():
    scenes = ["apartment_0"]
    mixed = generate(scenes, 4, seed=7, config=GeneratorConfig(single_robot_share=0.5))
    none = generate(scenes, 4, seed=7, config=GeneratorConfig(single_robot_share=0.0))
    alone = generate(scenes, 4, seed=7, config=GeneratorConfig(single_robot_share=1.0))
    for ep in alone.episodes:
        assert ep.num_robots == 1 and ep.info["taxonomy"] == "solo"
        assert ep.info["single_robot"] == "no_helpers" and not ep.info["accepted"]
    assert alone.stats["single_robot"] == 4 and alone.stats["collaborative"] == 0
    assert alone.stats["single_robot_by_reason"] == {"no_helpers": 4}
    assert alone.stats["coverage"]["patterns"]["single robot"] == 4
    # the missions are the same whatever the share; an episode keeps its helpers unless it is drawn single
    assert [to_plain(e.mission) for e in alone.episodes] == [to_plain(e.mission) for e in none.episodes]
    drawn = [e.info["single_robot"] == "no_helpers" for e in mixed.episodes]
    assert any(drawn) and not all(drawn)
    for ep, reference in zip(mixed.episodes, none.episodes):
        if ep.info["single_robot"] != "no_helpers":
            assert to_plain(ep) == to_plain(reference)
    stats = mixed.stats
    assert stats["single_robot"] + stats["collaborative"] == 4
    assert stats["single_robot"] == sum(n for reason, n in stats["single_robot_by_reason"].items())


def test_collaboration_patterns_are_read_from_events_and_plans(travel):
    from embodia.agents.navcraft.mission import Event, Schedule, Step
    from embodia.agents.navcraft.stats import PATTERNS, collaboration_patterns

    here = anchor(travel, "corridor_0")
    robots = [RobotStart(here, 0.0)] * 3
    relay = Schedule(
        "relay",
        robots,
        [[Step("move", here)], [Step("pick", here, item="a")], []],
        [Event("handoff", [1, 0], here, (0, 1), ["a"]), Event("handoff", [0, 2], here, (0, 1), ["b"])],
    )
    assert collaboration_patterns(relay) == ["handoff helper -> primary", "handoff primary -> helper"]
    parallel = Schedule(
        "parallel_fetch",
        robots,
        [[Step("pick", here, item="a")], [Step("pick", here, item="b")], [Step("pick", here, item="c")]],
    )
    assert collaboration_patterns(parallel) == ["parallel, 3+ carriers"]
    swap = Schedule(
        "rendezvous_swap",
        robots[:2],
        [[], [Step("move", here)]],
        [Event("rendezvous", [0, 1], here, (0, 1), ["a", "b"])],
    )
    assert collaboration_patterns(swap) == ["rendezvous swap"]
    alone = Schedule("solo", robots[:1], [[Step("move", here)]])
    assert collaboration_patterns(alone) == ["single robot"]
    assert set(collaboration_patterns(relay) + collaboration_patterns(parallel)) <= set(PATTERNS)
