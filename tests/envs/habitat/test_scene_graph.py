"""Scene graphs: JSON and networkx views, travel times that agree with the path finder, door changes."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from embodia.envs.habitat.errors import NavSceneError
from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.scene import Door, Room, Scene, load_scene
from embodia.envs.habitat.scene_graph import SceneGraph, build_scene_graph


@pytest.fixture(scope="module")
def backend():
    backend = MuJoCoBackend(load_scene("apartment_0"), num_robots=0)
    yield backend
    backend.close()


def test_graph_contents_and_travel_times(backend):
    scene = backend.scene
    graph = build_scene_graph(scene, backend.pathfinder, travel_speed=0.5)
    assert [r.id for r in graph.rooms] == [r.id for r in scene.rooms]
    assert {o.id for o in graph.objects} == {o.id for o in scene.objects}
    for room in graph.rooms:
        assert room.anchor is not None and backend.pathfinder.is_navigable(room.anchor)
        assert scene.room_at(*room.anchor[:2]) == room.id
    for c in graph.connections:
        a, b = (graph.room(r) for r in c.rooms)
        door = np.array([*scene.door(c.doors[0]).center, 0.0])
        via_door = backend.pathfinder.geodesic_distance(
            a.anchor, door
        ) + backend.pathfinder.geodesic_distance(door, b.anchor)
        assert c.distance == pytest.approx(via_door, abs=1e-3)
        assert c.distance >= backend.pathfinder.geodesic_distance(a.anchor, b.anchor) - 1e-6
        assert c.travel_time == pytest.approx(c.distance / 0.5, abs=1e-3)
        assert all(d in {door.id for door in scene.doors} for d in c.doors)
    ids = [r.id for r in graph.rooms]
    for a in ids:  # symmetric, finite (everything is connected), zero on the diagonal
        assert graph.travel_time(a, a) == 0.0
        for b in ids:
            assert graph.travel_time(a, b) == pytest.approx(graph.travel_time(b, a))
            assert math.isfinite(graph.travel_time(a, b))
    # a multi-hop route through the room graph costs at least the direct geodesic travel time
    a, b = ids[0], ids[-1]
    route = graph.route(a, b)
    assert route[0] == a and route[-1] == b
    hops = sum(graph.room_graph().edges[u, v]["travel_time"] for u, v in zip(route, route[1:]))
    assert hops >= graph.travel_time(a, b) - 1e-6


def test_json_and_networkx_round_trip(backend, tmp_path):
    graph = build_scene_graph(backend.scene, backend.pathfinder)
    loaded = SceneGraph.load(graph.save(tmp_path / "graph.json"))
    assert loaded.to_dict() == graph.to_dict()
    full = loaded.to_networkx()
    assert sum(1 for _, d in full.nodes(data=True) if d["type"] == "room") == len(graph.rooms)
    assert sum(1 for _, d in full.nodes(data=True) if d["type"] == "object") == len(graph.objects)
    for obj in graph.objects:
        assert full.edges[obj.id, obj.room]["type"] == "in"
    rooms = loaded.room_graph()
    assert nx.is_connected(rooms) and rooms.number_of_edges() == len(graph.connections)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(NavSceneError):
        SceneGraph.load(tmp_path / "bad.json")


def test_closing_doors_reroutes_or_isolates_rooms():
    # three rooms in a loop: west and east side by side, north across both; a door on every shared wall
    scene = Scene(
        "loop",
        rooms=[
            Room("west", "bedroom", (0.0, 0.0, 4.0, 3.0)),
            Room("east", "kitchen", (4.0, 0.0, 8.0, 3.0)),
            Room("north", "living_room", (0.0, 3.0, 8.0, 6.0)),
        ],
        doors=[
            Door("west_east", ("west", "east"), (4.0, 1.5), "y", 0.9),
            Door("west_north", ("west", "north"), (2.0, 3.0), "x", 0.9),
            Door("east_north", ("east", "north"), (6.0, 3.0), "x", 0.9),
        ],
    )
    backend = MuJoCoBackend(scene, num_robots=0)
    try:
        before = build_scene_graph(scene, backend.pathfinder)
        # the anchors are the room centres; west -> east goes straight through the door
        assert before.room("west").anchor == pytest.approx((2.0, 1.5, 0.0), abs=0.04)  # nearest grid cell
        assert before.travel_time("west", "east") == pytest.approx(4.0 / 0.5, abs=0.01)
        backend.set_door_open("west_east", False)
        rerouted = build_scene_graph(scene, backend.pathfinder, door_open={"west_east": False})
        backend.set_door_open("west_north", False)
        backend.set_door_open("east_north", False)
        closed = {"west_east": False, "west_north": False, "east_north": False}
        isolated = build_scene_graph(scene, backend.pathfinder, door_open=closed)
    finally:
        backend.close()
    assert ("east", "west") not in {c.rooms for c in rerouted.connections}
    assert rerouted.route("west", "east") == ["west", "north", "east"]
    assert rerouted.travel_time("west", "east") > before.travel_time("west", "east") + 4.0
    assert not isolated.reachable("west", "north") and isolated.route("west", "east") == []
    assert isolated.connections == []
