"""The scene format and the procedural generator: seeded reproducibility, validity, walls and doors."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest

from embodia.envs.habitat.errors import NavSceneError
from embodia.envs.habitat.mjcf import scene_to_mjcf
from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.scene import Door, Room, Scene, load_scene, shipped_scene_names, wall_segments
from embodia.envs.habitat.scene_gen import generate_scene


@pytest.mark.parametrize("kind", ["apartment", "office"])
def test_same_seed_same_scene_other_seed_other_scene(kind):
    first, again, other = generate_scene(kind, 11), generate_scene(kind, 11), generate_scene(kind, 12)
    assert first.to_json() == again.to_json() and first.digest() == again.digest()
    assert other.digest() != first.digest()
    # the compiled MuJoCo models are identical too
    a = mujoco.MjModel.from_xml_string(scene_to_mjcf(first))
    b = mujoco.MjModel.from_xml_string(scene_to_mjcf(again))
    np.testing.assert_array_equal(a.geom_size, b.geom_size)
    np.testing.assert_array_equal(a.geom_pos, b.geom_pos)


def test_shipped_scenes_are_what_the_generator_makes():
    names = shipped_scene_names()
    assert {"apartment_0", "apartment_1", "apartment_2", "office_0"} <= set(names)
    for name in names:
        kind, seed = name.rsplit("_", 1)
        assert load_scene(name).digest() == generate_scene(kind, int(seed)).digest(), name


@pytest.mark.parametrize("kind,seed", [("apartment", 3), ("apartment", 8), ("office", 2)])
def test_generated_scenes_are_typed_furnished_and_connected(kind, seed):
    scene = generate_scene(kind, seed)
    categories = [r.category for r in scene.rooms]
    assert "bathroom" in categories and "kitchen" in categories
    assert ("living_room" in categories) if kind == "apartment" else ("meeting_room" in categories)
    assert len(scene.rooms) >= 4 and len(scene.doors) >= len(scene.rooms) - 1
    for obj in scene.objects:  # every object stands inside its room
        room = scene.room(obj.room)
        assert room.contains(obj.position[0], obj.position[1]), obj.id
    assert {"bed", "toilet", "sofa"} & {o.category for o in scene.objects}
    backend = MuJoCoBackend(scene, num_robots=0)
    try:
        pathfinder = backend.pathfinder
        # every room has navigable floor in the main island: all rooms are reachable through doors
        points = pathfinder.navigable_points(0.1, island_index=0)
        reached = {scene.room_at(x, y) for x, y, _ in points}
        assert {r.id for r in scene.rooms} <= reached
        assert pathfinder.island_area(0) > 0.85 * pathfinder.island_area(-1)
    finally:
        backend.close()


def test_walls_leave_door_openings_and_close_corners():
    scene = Scene(
        "two",
        rooms=[Room("a", "office", (0.0, 0.0, 4.0, 3.0)), Room("b", "office", (4.0, 0.0, 7.0, 3.0))],
        doors=[Door("d", ("a", "b"), (4.0, 1.5), "y", 1.0)],
    )
    walls = wall_segments(scene)
    shared = sorted(
        (w.start, w.end, w.extend_start, w.extend_end) for w in walls if w.axis == "y" and w.line == 4.0
    )
    assert shared == [(0.0, 1.0, True, False), (2.0, 3.0, False, True)]  # the door gap stays exactly 1 m
    south = [w for w in walls if w.axis == "x" and w.line == 0.0]
    assert len(south) == 1 and south[0].box(0.1) == pytest.approx((-0.05, -0.05, 7.05, 0.05))


def test_json_round_trip_and_bad_scenes_fail_clearly(tmp_path):
    scene = generate_scene("apartment", 5)
    path = scene.save(tmp_path / "scene.json")
    assert load_scene(path).digest() == scene.digest()
    assert load_scene("procedural:apartment:5").digest() == scene.digest()
    data = json.loads(path.read_text())
    data["rooms"][1]["bounds"] = data["rooms"][0]["bounds"]
    (tmp_path / "overlap.json").write_text(json.dumps(data))
    with pytest.raises(NavSceneError, match="overlap"):
        load_scene(tmp_path / "overlap.json")
    data = json.loads(path.read_text())
    data["format"] = 99
    (tmp_path / "future.json").write_text(json.dumps(data))
    with pytest.raises(NavSceneError, match="format 99"):
        load_scene(tmp_path / "future.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(NavSceneError, match="not valid JSON"):
        load_scene(tmp_path / "broken.json")
    with pytest.raises(NavSceneError, match="shipped scenes are"):
        load_scene("no_such_scene")
    with pytest.raises(NavSceneError, match="unknown scene kind"):
        generate_scene("castle", 0)
