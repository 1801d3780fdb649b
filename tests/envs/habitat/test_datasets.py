"""habitat-lab datasets as users have them: the split layout with ``content/``, habitat scene paths, and
the ObjectNav files embodia writes (fixtures are written here in habitat-lab's shapes, by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embodia.envs.habitat.coords import from_habitat_position, habitat_rotation_to_yaw
from embodia.envs.habitat.datasets import NavDataset, load_episodes, save_episodes
from embodia.envs.habitat.env import NavEnv
from embodia.envs.habitat.episodes import sample_episode
from embodia.envs.habitat.errors import NavEpisodeError, NavSceneError
from embodia.envs.habitat.scene import load_scene
from tests.envs.habitat.habitat_files import (
    HM3D_CATEGORIES,
    pointnav_episode,
    read_gz,
    room_scene,
    write_gz,
)

# navigable points of apartment_0 (checked below) and of the room scene
APARTMENT_STARTS_GOALS = [((4.3135, 4.5020), (7.775, 1.625)), ((7.775, 1.625), (4.3135, 4.5020))]
ROOM_STARTS_GOALS = [((1.0, 1.0), (3.0, 3.2)), ((5.0, 3.0), (1.5, 2.0))]


@pytest.fixture
def split(tmp_path):
    """``pointnav/embodia/v1/val/val.json.gz`` (no episodes) + ``content/<scene>.json.gz``, and a scenes
    directory with the room scene where habitat-lab's ``SCENES_DIR`` would have its ``.glb``."""
    scenes_dir = tmp_path / "scene_datasets"
    room_scene().save(scenes_dir / "embodia" / "room.json")
    val = tmp_path / "pointnav" / "embodia" / "v1" / "val"
    write_gz(val / "val.json.gz", {"episodes": []})
    write_gz(
        val / "content" / "apartment_0.json.gz",
        {
            "episodes": [
                pointnav_episode(str(i), "embodia/apartment_0.glb", start, goal, yaw=1.0)
                for i, (start, goal) in enumerate(APARTMENT_STARTS_GOALS)
            ]
        },
    )
    write_gz(
        val / "content" / "room.json.gz",
        {
            "episodes": [
                pointnav_episode(str(i), "data/scene_datasets/embodia/room.basis.glb", start, goal)
                for i, (start, goal) in enumerate(ROOM_STARTS_GOALS)
            ]
        },
    )
    return val / "val.json.gz", scenes_dir


def test_split_dataset_with_content_loads_and_the_expert_reaches_every_goal(split):
    path, scenes_dir = split
    env = NavEnv(sensors="none", dataset=str(path), scenes_dir=str(scenes_dir))
    try:
        episodes = env._dataset.episodes
        assert [ep.scene_id for ep in episodes] == ["apartment_0"] * 2 + [
            str(scenes_dir / "embodia" / "room.json")
        ] * 2
        assert episodes[2].habitat_scene_id == "data/scene_datasets/embodia/room.basis.glb"
        expert = env.make_expert()
        for index, episode in enumerate(episodes):
            obs, info = env.reset(seed=index, options={"episode_index": index})
            assert info["episode_id"] == episode.episode_id and "snapped" not in info
            np.testing.assert_allclose(env.backend.get_pose(0)[0], episode.start_positions[0], atol=1e-9)
            assert info["distance_to_goal"] > 1.0
            expert.reset(index)
            for _ in range(300):
                obs, _, terminated, _, info = env.step(expert.act(obs))
                if terminated:
                    break
            assert info["success"], (index, info)
    finally:
        env.close()
    # habitat-lab's content_scenes picks scenes of the split
    only_room = NavDataset.load(path, scenes_dir=scenes_dir, content_scenes=["room"])
    assert [ep.habitat_scene_id for ep in only_room.episodes] == [
        "data/scene_datasets/embodia/room.basis.glb"
    ] * 2
    with pytest.raises(
        NavEpisodeError, match=r"content_scenes \['kitchen'\] are not in .*it has \['apartment_0', 'room'\]"
    ):
        NavDataset.load(path, scenes_dir=scenes_dir, content_scenes=["kitchen"])


def test_a_dataset_without_episodes_is_an_error_at_construction(tmp_path):
    write_gz(tmp_path / "a" / "val.json.gz", {"episodes": []})
    with pytest.raises(NavEpisodeError, match="val.json.gz: no episodes; point dataset= at"):
        NavEnv(sensors="none", dataset=str(tmp_path / "a" / "val.json.gz"))
    # a content folder whose files are all empty
    write_gz(tmp_path / "b" / "val.json.gz", {"episodes": []})
    write_gz(tmp_path / "b" / "content" / "apartment_0.json.gz", {"episodes": []})
    with pytest.raises(NavEpisodeError, match=r"and its 1 content file\(s\) in .*: no episodes"):
        NavEnv(sensors="none", dataset=str(tmp_path / "b" / "val.json.gz"))
    # a content folder without any per-scene file
    write_gz(tmp_path / "c" / "val.json.gz", {"episodes": []})
    (tmp_path / "c" / "content").mkdir()
    with pytest.raises(NavEpisodeError, match="holds no per-scene episode files"):
        NavEnv(sensors="none", dataset=str(tmp_path / "c" / "val.json.gz"))


def test_habitat_scene_paths_resolve_and_an_unknown_scene_is_a_one_line_error(tmp_path):
    (start, goal) = APARTMENT_STARTS_GOALS[0]
    hm3d = "hm3d/val/00800-TEEsavR23oF/TEEsavR23oF.basis.glb"
    records = [
        pointnav_episode("0", f"data/scene_datasets/{hm3d}", start, goal),
        pointnav_episode("1", "data/scene_datasets/mp3d/apartment_0/apartment_0.glb", start, goal),
    ]
    path = write_gz(tmp_path / "val.json.gz", {"episodes": records})
    with pytest.raises(NavSceneError) as error:
        load_episodes(path)
    message = str(error.value)
    assert len(message.splitlines()) == 1
    assert f"scene 'data/scene_datasets/{hm3d}' is not an embodia scene" in message
    assert "['apartment_0', 'apartment_1', 'apartment_2', 'office_0']" in message
    assert "scene_map={" in message and "scenes_dir=" in message
    # mapped by its full path, by its path relative to the scenes directory, or by its name
    for key in (f"data/scene_datasets/{hm3d}", hm3d, "TEEsavR23oF"):
        episodes = load_episodes(path, scene_map={key: "apartment_0"})
        assert [ep.scene_id for ep in episodes] == ["apartment_0", "apartment_0"]  # the .glb name is shipped
        assert episodes[0].habitat_scene_id == f"data/scene_datasets/{hm3d}"
    # written back, the file keeps the habitat path and says which embodia scene it was run in
    again = save_episodes(episodes, tmp_path / "again.json.gz")
    assert read_gz(again)["episodes"][0]["scene_id"] == f"data/scene_datasets/{hm3d}"
    assert [ep.scene_id for ep in load_episodes(again)] == ["apartment_0", "apartment_0"]
    with pytest.raises(NavSceneError, match=r"episode '0' \(scene .*\): no nav scene 'kitchen_9'"):
        load_episodes(path, scene_map={hm3d: "kitchen_9"})
    # a scene JSON path as the target; the environment runs it
    room = room_scene().save(tmp_path / "room.json")
    path = write_gz(
        tmp_path / "room_val.json.gz",
        {"episodes": [pointnav_episode("0", hm3d, *ROOM_STARTS_GOALS[0])]},
    )
    env = NavEnv(sensors="none", dataset=str(path), scene_map={hm3d: str(room)})
    try:
        _, info = env.reset(seed=0)
        assert info["scene_id"] == str(room) and env.scene.name == "room"
    finally:
        env.close()
    with pytest.raises(
        NavSceneError, match=r"scene 'hm3d/.*' is not an embodia scene, nor is there a scene JSON at"
    ):
        NavEnv(sensors="none", dataset=str(path), scenes_dir=str(tmp_path / "nowhere"))


def test_written_objectnav_files_carry_habitat_fields_and_round_trip(tmp_path):
    scene = load_scene("apartment_0")
    env = NavEnv(sensors="none", task="objectnav")
    try:
        rng = np.random.default_rng(3)
        episodes = [
            sample_episode("objectnav", env.pathfinder, scene, "apartment_0", rng, 1, str(i))
            for i in range(4)
        ]
    finally:
        env.close()
    path = save_episodes(
        episodes, tmp_path / "val" / "val.json.gz", split=True, scenes_dir=tmp_path / "scenes"
    )
    top = read_gz(path)
    assert top["episodes"] == [] and top["category_to_task_category_id"] == HM3D_CATEGORIES
    content = read_gz(tmp_path / "val" / "content" / "apartment_0.json.gz")
    assert content["category_to_task_category_id"] == HM3D_CATEGORIES
    assert set(content["category_to_scene_annotation_category_id"]) == set(HM3D_CATEGORIES)
    for record, episode in zip(content["episodes"], episodes):
        assert record["scene_id"] == "embodia/apartment_0.glb" and record["goals"] == []
        assert record["object_category"] == episode.object_category
        info = record["info"]
        assert info["geodesic_distance"] == pytest.approx(episode.geodesic_distances[0])
        start = from_habitat_position(record["start_position"])
        assert info["euclidean_distance"] == pytest.approx(
            np.linalg.norm(episode.goals[0] - start, axis=1).min()
        )
        assert 0 < info["euclidean_distance"] <= info["geodesic_distance"] + 1e-9
        goals = content["goals_by_category"][f"apartment_0.glb_{record['object_category']}"]
        for goal in goals:
            obj = scene.object(goal["object_id"])
            assert goal["object_name"] == obj.id and goal["object_category"] == obj.category
            assert scene.objects[goal["object_name_id"]] is obj
            assert goal["room_id"] == obj.room and goal["room_name"] == scene.room(obj.room).category
            center = from_habitat_position(goal["position"])
            np.testing.assert_allclose(center[:2], obj.position[:2])
            assert goal["view_points"]
            for view in goal["view_points"]:  # each view point faces its object
                point = from_habitat_position(view["agent_state"]["position"])
                yaw = habitat_rotation_to_yaw(view["agent_state"]["rotation"])
                facing = math.atan2(center[1] - point[1], center[0] - point[0])
                assert math.remainder(yaw - facing, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)
                assert set(view) == {"agent_state", "iou"}
    # habitat-lab finds the scene under SCENES_DIR; embodia reads it back from there
    assert (tmp_path / "scenes" / "embodia" / "apartment_0.glb").stat().st_size > 1000
    assert load_scene(tmp_path / "scenes" / "embodia" / "apartment_0.json").digest() == scene.digest()
    back = load_episodes(path, scenes_dir=tmp_path / "scenes")
    assert len(back) == len(episodes)
    for ours, theirs in zip(episodes, back):
        assert theirs.scene_id == str(tmp_path / "scenes" / "embodia" / "apartment_0.json")
        assert theirs.object_category == ours.object_category and theirs.object_ids == ours.object_ids
        np.testing.assert_allclose(theirs.goals[0], ours.goals[0], atol=1e-12)
        np.testing.assert_allclose(theirs.start_positions[0], ours.start_positions[0], atol=1e-12)
        assert theirs.start_yaws[0] == pytest.approx(ours.start_yaws[0], abs=1e-12)
        assert theirs.goal_object_of_view_point == ours.goal_object_of_view_point
    # written again (one file), the read episodes keep their scene path and their goal objects' fields
    again = read_gz(save_episodes(back, tmp_path / "again.json.gz"))
    assert {r["scene_id"] for r in again["episodes"]} == {"embodia/apartment_0.glb"}
    assert again["goals_by_category"] == content["goals_by_category"]


def test_procedural_and_json_scenes_round_trip_through_their_written_paths(tmp_path):
    room = room_scene().save(tmp_path / "scenes" / "my_room.json")
    env = NavEnv(sensors="none", scenes=("procedural:office:3", str(room)))
    try:
        rng = np.random.default_rng(0)
        episodes = []
        for ref in ("procedural:office:3", str(room)):
            env.reset(seed=0, options={"scene": ref})
            episodes.append(sample_episode("pointnav", env.pathfinder, env.scene, ref, rng, 1, ref))
    finally:
        env.close()
    path = save_episodes(episodes, tmp_path / "out" / "val.json.gz")
    raw = read_gz(path)
    assert [r["scene_id"] for r in raw["episodes"]] == [
        "embodia/procedural_office_3.glb",
        "embodia/my_room.glb",
    ]
    assert raw["embodia_scene_refs"] == {
        "embodia/procedural_office_3.glb": "procedural:office:3",
        "embodia/my_room.glb": "../scenes/my_room.json",
    }
    back = load_episodes(path)
    assert back[0].scene_id == "procedural:office:3"
    assert load_scene(back[1].scene_id).digest() == load_scene(room).digest()
