"""Episodes from outside are checked on the navigation mesh: off-mesh and other-floor points are clear
errors, or, with ``snap=True``, moved and reported; habitat-lab episode dicts run through ``reset``."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from embodia.envs.habitat.env import NavEnv
from embodia.envs.habitat.episodes import NavEpisode
from embodia.envs.habitat.errors import NavEpisodeError
from tests.envs.habitat.habitat_files import habitat, pointnav_episode, room_scene, write_gz

ROOM = "data/scene_datasets/embodia/room.glb"


@pytest.fixture
def scenes_dir(tmp_path):
    room_scene().save(tmp_path / "scene_datasets" / "embodia" / "room.json")
    return tmp_path / "scene_datasets"


def _dataset(tmp_path, records) -> str:
    return str(write_gz(tmp_path / "val.json.gz", {"episodes": records}))


def test_off_mesh_and_other_floor_episodes_are_clear_errors(tmp_path, scenes_dir):
    good = pointnav_episode("ok", ROOM, (1.0, 1.0), (3.0, 3.0))
    off_mesh = pointnav_episode("far", ROOM, (7.0, 2.0), (3.0, 3.0))  # 1.23 m east of the room
    in_chair = pointnav_episode("chair", ROOM, (1.0, 1.0), (4.0, 2.0))  # the goal is inside the chair
    upstairs = pointnav_episode("up", ROOM, (2.0, 2.0), (3.0, 3.0))
    upstairs["start_position"] = habitat(2.0, 2.0, height=2.9)  # right above a navigable point
    cases = [
        (
            off_mesh,
            r"episode 'far' \(scene 'data/scene_datasets/embodia/room.glb' = .*room.json\): the start "
            r"\[7.0, 0.0, -2.0\] \(Habitat frame\) is 1.23 m from the navigation mesh",
        ),
        (
            in_chair,
            r"episode 'chair' .*: the goal \[4.0, 0.0, -2.0\] \(Habitat frame\) is 0.43 m from the navigation mesh",
        ),
        (
            upstairs,
            r"episode 'up' .*: the start \[2.0, 2.9, -2.0\] \(Habitat frame\) is at height 2.90 m, on "
            r"another floor: the scene's only floor is at 0.00 m",
        ),
    ]
    for record, message in cases:
        with pytest.raises(NavEpisodeError, match=message) as error:
            NavEnv(sensors="none", dataset=_dataset(tmp_path, [good, record]), scenes_dir=str(scenes_dir))
        assert "pass snap=True" in str(error.value) and len(str(error.value).splitlines()) == 1
    # several bad points: the first is named, the others counted
    both = pointnav_episode("both", ROOM, (7.0, 2.0), (9.0, 2.0))
    with pytest.raises(NavEpisodeError, match=r"1 more point\(s\) of it are off the mesh"):
        NavEnv(sensors="none", dataset=_dataset(tmp_path, [both]), scenes_dir=str(scenes_dir))
    # a NavEpisode given to reset is checked as well
    env = NavEnv(sensors="none", scenes_dir=str(scenes_dir))
    try:
        start, goal = np.array([2.0, 2.0, 0.0]), np.array([[4.0, 2.0, 0.0]])
        bad = NavEpisode("given", ROOM, "pointnav", [start], [0.0], [goal], [1.0])
        with pytest.raises(
            NavEpisodeError, match=r"reset\(options\['episode'\]\): episode 'given' .*: the goal"
        ):
            env.reset(options={"episode": bad})
    finally:
        env.close()


def test_snap_moves_points_onto_the_mesh_and_reports_each_move(tmp_path, scenes_dir, caplog):
    upstairs = pointnav_episode("up", ROOM, (2.0, 2.0), (3.0, 3.0))
    upstairs["start_position"] = habitat(2.0, 2.0, height=2.9)
    records = [
        pointnav_episode("far", ROOM, (7.0, 2.0), (4.0, 2.0)),
        upstairs,
        pointnav_episode(
            "near", ROOM, (5.85, 2.0), (1.0, 1.0)
        ),  # 8 cm past the mesh's edge: within tolerance
    ]
    with caplog.at_level(logging.WARNING, logger="embodia.envs.habitat"):
        env = NavEnv(
            sensors="none", dataset=_dataset(tmp_path, records), scenes_dir=str(scenes_dir), snap=True
        )
    try:
        _, info = env.reset(seed=0, options={"episode_index": 0})
        moves = {m["point"]: m for m in info["snapped"]}
        assert set(moves) == {"start", "goal"}
        assert moves["start"]["from"] == [7.0, 0.0, -2.0] and moves["start"]["distance"] == pytest.approx(
            1.23, abs=0.01
        )
        assert moves["start"]["to"][0] == pytest.approx(5.77, abs=1e-3) and moves["start"]["beyond_tolerance"]
        assert moves["goal"]["distance"] == pytest.approx(0.43, abs=0.01)
        position = env.backend.get_pose(0)[0]
        assert env.pathfinder.is_navigable(position) and position[0] == pytest.approx(5.77, abs=1e-3)
        assert info["distance_to_goal"] > 0.5
        _, info = env.reset(seed=0, options={"episode_index": 1})
        (move,) = info["snapped"]
        assert (
            move["point"] == "start"
            and move["to"] == [2.0, 0.0, -2.0]
            and move["distance"] == pytest.approx(2.9)
        )
        _, info = env.reset(seed=0, options={"episode_index": 2})
        (move,) = info["snapped"]
        assert not move["beyond_tolerance"] and move["distance"] == pytest.approx(0.08, abs=0.01)
    finally:
        env.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2  # one line per episode moved beyond the tolerance
    assert (
        "episode 'far'" in warnings[0]
        and "moved 2 point(s) onto the navigation mesh (snap=True)" in warnings[0]
    )
    # without snap, the near point alone is accepted (moved within the tolerance, reported)
    env = NavEnv(sensors="none", dataset=_dataset(tmp_path, records[2:]), scenes_dir=str(scenes_dir))
    try:
        _, info = env.reset(seed=0)
        assert info["snapped"][0]["point"] == "start"
    finally:
        env.close()
    # tolerance 0: the same point is an error
    with pytest.raises(NavEpisodeError, match="is 0.08 m from the navigation mesh"):
        NavEnv(
            sensors="none",
            dataset=_dataset(tmp_path, records[2:]),
            scenes_dir=str(scenes_dir),
            mesh_tolerance=0.0,
        )


def test_unreachable_goals_are_an_error_even_with_snap(tmp_path):
    from embodia.envs.habitat.scene import Room, Scene

    two = Scene(
        "two", rooms=[Room("a", "office", (0.0, 0.0, 3.0, 3.0)), Room("b", "office", (3.0, 0.0, 6.0, 3.0))]
    )
    path = two.save(tmp_path / "two.json")  # no door between the rooms
    record = pointnav_episode("walled", str(path), (1.5, 1.5), (4.5, 1.5))
    with pytest.raises(NavEpisodeError, match="episode 'walled' .*no goal can be reached from the start"):
        NavEnv(sensors="none", dataset=_dataset(tmp_path, [record]), snap=True)


def test_reset_accepts_habitat_lab_episode_dicts(tmp_path, scenes_dir):
    env = NavEnv(sensors="none", scenes_dir=str(scenes_dir))
    try:
        record = pointnav_episode("7", ROOM, (1.0, 1.0), (3.0, 3.0), yaw=0.5)
        obs, info = env.reset(seed=0, options={"episode": record})
        assert info["episode_id"] == "7" and env.scene.name == "room"
        position, yaw = env.backend.get_pose(0)
        np.testing.assert_allclose(position, [1.0, 1.0, 0.0])
        assert yaw == pytest.approx(0.5)
        assert info["distance_to_goal"] == pytest.approx(np.hypot(2.0, 2.0))
        np.testing.assert_allclose(obs["goal"], [np.hypot(2.0, 2.0), np.pi / 4 - 0.5], atol=1e-6)
        expert = env.make_expert()
        expert.reset(0)
        for _ in range(100):
            obs, _, terminated, _, info = env.step(expert.act(obs))
            if terminated:
                break
        assert info["success"]
        # habitat-lab's in-memory episode (numpy positions, extra fields) works too
        record = dict(record, start_position=np.array(record["start_position"]), _shortest_path_cache=None)
        env.reset(options={"episode": record})
        with pytest.raises(
            NavEpisodeError, match=r"reset\(options\['episode'\]\) must be a NavEpisode or a habitat-lab"
        ):
            env.reset(options={"episode": 3})
        with pytest.raises(NavEpisodeError, match=r"is malformed .*KeyError: 'start_position'"):
            env.reset(options={"episode": {"episode_id": "x", "scene_id": ROOM}})
        view_point = {"agent_state": {"position": habitat(3.2, 2.0), "rotation": [0, 0, 0, 1]}, "iou": None}
        chair = {"object_id": "chair_0", "position": habitat(4.0, 2.0), "view_points": [view_point]}
        objectnav = {**record, "object_category": "chair", "goals": [chair]}
        with pytest.raises(
            NavEpisodeError, match="is of task objectnav, this environment's task is pointnav"
        ):
            env.reset(options={"episode": objectnav})
    finally:
        env.close()
