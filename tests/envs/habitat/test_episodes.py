"""Episodes: Habitat's coordinate conventions and habitat-lab's JSON format, for every task."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from embodia.envs.habitat.coords import (
    from_habitat_position,
    habitat_rotation_to_yaw,
    to_habitat_position,
    yaw_to_habitat_rotation,
)
from embodia.envs.habitat.episodes import (
    OBJECTNAV_CATEGORIES,
    load_episodes,
    sample_episode,
    save_episodes,
)
from embodia.envs.habitat.errors import NavEpisodeError
from embodia.envs.habitat.instructions import decode_instruction, encode_instruction
from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.scene import load_scene


def test_habitat_frame_conversions():
    # embodia north (+y) is Habitat's forward at identity (-z); heights agree
    assert to_habitat_position((1.0, 2.0, 0.5)) == [1.0, 0.5, -2.0]
    np.testing.assert_allclose(from_habitat_position([1.0, 0.5, -2.0]), [1.0, 2.0, 0.5])
    np.testing.assert_allclose(yaw_to_habitat_rotation(math.pi / 2), [0.0, 0.0, 0.0, 1.0], atol=1e-12)
    for yaw in np.linspace(-math.pi, math.pi, 13)[:-1]:
        assert habitat_rotation_to_yaw(yaw_to_habitat_rotation(yaw)) == pytest.approx(yaw, abs=1e-9)
    # a quarter turn left about Habitat's +Y from identity faces Habitat -X = embodia -x (yaw pi)
    q = [0.0, math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4)]
    assert abs(habitat_rotation_to_yaw(q)) == pytest.approx(math.pi)


@pytest.fixture(scope="module")
def apartment():
    scene = load_scene("apartment_0")
    backend = MuJoCoBackend(scene, num_robots=2)
    yield scene, backend
    backend.close()


@pytest.mark.parametrize("task", ["pointnav", "objectnav", "instructionnav", "multirobot"])
def test_episodes_round_trip_through_habitat_lab_json(task, apartment, tmp_path):
    scene, backend = apartment
    rng = np.random.default_rng(7)
    robots = 2 if task == "multirobot" else 1
    episodes = [
        sample_episode(task, backend.pathfinder, scene, "apartment_0", rng, robots, str(i)) for i in range(3)
    ]
    path = save_episodes(episodes, tmp_path / f"{task}.json.gz", scene)
    with gzip.open(path, "rt") as handle:
        raw = json.load(handle)
    record = raw["episodes"][0]
    # habitat-lab's scene path convention: relative to its scenes directory, as a .glb
    assert record["scene_id"] == "embodia/apartment_0.glb" and record["episode_id"] == "0"
    if task == "multirobot":
        assert len(record["agents"]) == 2 and set(record["agents"][0]) >= {
            "start_position",
            "start_rotation",
            "goals",
        }
    else:
        assert len(record["start_position"]) == 3 and len(record["start_rotation"]) == 4
        assert record["info"]["geodesic_distance"] == pytest.approx(episodes[0].geodesic_distances[0])
    if task == "objectnav":
        key = f"apartment_0.glb_{record['object_category']}"  # habitat-lab's goals_key
        assert key in raw["goals_by_category"] and raw["goals_by_category"][key][0]["view_points"]
        assert raw["category_to_task_category_id"] == {c: i for i, c in enumerate(OBJECTNAV_CATEGORIES)}
    if task == "instructionnav":
        assert record["instruction"]["instruction_text"] == episodes[0].instruction
        assert len(record["reference_path"]) >= 2 and record["goals"][0]["radius"] == 3.0
    loaded = load_episodes(path)
    for ours, back in zip(episodes, loaded):
        assert back.task == task and back.scene_id == ours.scene_id
        for a, b in zip(ours.start_positions, back.start_positions):
            np.testing.assert_allclose(a, b, atol=1e-6)
        np.testing.assert_allclose(ours.start_yaws, back.start_yaws, atol=1e-6)
        for a, b in zip(ours.goals, back.goals):
            np.testing.assert_allclose(a, b, atol=1e-6)
        assert back.object_category == ours.object_category and back.instruction == ours.instruction


def test_sampled_episodes_follow_habitat_rules(apartment):
    scene, backend = apartment
    pathfinder = backend.pathfinder
    rng = np.random.default_rng(1)
    for _i in range(5):
        ep = sample_episode("pointnav", pathfinder, scene, "apartment_0", rng)
        start, goal = ep.start_positions[0], ep.goals[0][0]
        assert pathfinder.is_navigable(start) and pathfinder.is_navigable(goal)
        assert 1.0 <= ep.geodesic_distances[0] <= 30.0
        assert ep.geodesic_distances[0] == pytest.approx(pathfinder.geodesic_distance(start, goal))
    ep = sample_episode("objectnav", pathfinder, scene, "apartment_0", rng)
    objects = [scene.object(o) for o in ep.object_ids]
    assert all(o.category == ep.object_category for o in objects)
    assert len(ep.goal_object_of_view_point) == len(ep.goals[0])
    for point, owner in zip(
        ep.goals[0], ep.goal_object_of_view_point
    ):  # view points lie within 1 m of their object
        obj = objects[owner]
        assert pathfinder.is_navigable(point)
        assert (
            np.linalg.norm(point[:2] - np.asarray(obj.position[:2]))
            <= 1.0 + 0.5 * np.hypot(*obj.size[:2]) + 1e-9
        )
    ep = sample_episode("instructionnav", pathfinder, scene, "apartment_0", rng)
    rooms = ep.info["rooms"]
    assert scene.room(rooms[-1]).category.replace("_", " ") in ep.instruction
    assert ep.geodesic_distances[0] >= 4.0
    assert decode_instruction(encode_instruction(ep.instruction, 256)) == ep.instruction


def test_bad_episode_files_fail_clearly(tmp_path):
    with pytest.raises(NavEpisodeError, match="no episode file"):
        load_episodes(tmp_path / "missing.json")
    (tmp_path / "not_habitat.json").write_text(json.dumps({"something": 1}))
    with pytest.raises(NavEpisodeError, match="no 'episodes' list"):
        load_episodes(tmp_path / "not_habitat.json")
    (tmp_path / "bad.json").write_text(json.dumps({"episodes": [{"episode_id": 0, "scene_id": "x"}]}))
    with pytest.raises(NavEpisodeError, match="episode #0 is malformed"):
        load_episodes(tmp_path / "bad.json")
