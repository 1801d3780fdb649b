"""habitat-lab's ObjectNav files as they are: ``goals_by_category`` and inline goals, the files' category
ids, and clear errors for categories and episodes embodia cannot run (fixtures written here by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.envs.habitat.datasets import load_episodes
from embodia.envs.habitat.env import NavEnv
from embodia.envs.habitat.errors import NavEpisodeError
from embodia.envs.habitat.habitat_format import episodes_from_habitat
from tests.envs.habitat.habitat_files import (
    HM3D_CATEGORIES,
    MP3D_ANNOTATION_IDS,
    MP3D_CATEGORIES,
    object_goal,
    objectnav_episode,
    pointnav_episode,
    room_scene,
    write_gz,
)

SCENE = "mp3d/room/room.glb"  # relative to the scenes directory, as MP3D ObjectNav files have it
CHAIR = object_goal("12", "chair", (4.0, 2.0, 0.4), [(3.2, 2.0), (4.0, 1.0), (4.8, 2.0), (4.0, 3.0)])
PLANT = object_goal("31", "plant", (0.6, 3.4, 0.45), [(1.2, 3.4), (0.6, 2.8)])
MP3D_MAPS = {
    "category_to_task_category_id": {c: i for i, c in enumerate(MP3D_CATEGORIES)},
    "category_to_mp3d_category_id": MP3D_ANNOTATION_IDS,
}


@pytest.fixture
def scenes_dir(tmp_path):
    room_scene().save(tmp_path / "scene_datasets" / "mp3d" / "room" / "room.json")
    return tmp_path / "scene_datasets"


def _run_expert(env: NavEnv, index: int) -> dict:
    obs, info = env.reset(seed=index, options={"episode_index": index})
    expert = env.make_expert()
    expert.reset(index)
    for _ in range(200):
        obs, _, terminated, _, info = env.step(expert.act(obs))
        if terminated:
            break
    return info


def test_objectnav_goals_by_category_split_uses_the_files_category_ids(tmp_path, scenes_dir):
    val = tmp_path / "objectnav_mp3d_v1" / "val"
    write_gz(val / "val.json.gz", {"episodes": [], **MP3D_MAPS})
    write_gz(
        val / "content" / "room.json.gz",
        {
            "goals_by_category": {"room.glb_chair": [CHAIR], "room.glb_plant": [PLANT]},
            "episodes": [
                objectnav_episode("0", SCENE, (1.0, 1.0), "chair"),
                objectnav_episode("1", SCENE, (5.0, 3.0), "plant"),
            ],
            **MP3D_MAPS,
        },
    )
    env = NavEnv(
        sensors="none", task="objectnav", dataset=str(val / "val.json.gz"), scenes_dir=str(scenes_dir)
    )
    try:
        assert env.observation_space["goal"].high[0] == 20  # MP3D's 21 categories
        chair = env._dataset.episodes[0]
        assert (
            chair.object_ids == ["12"]
            and len(chair.goals[0]) == 4
            and chair.goal_objects[0]["object_name_id"] == 7
        )
        for index, category in enumerate(["chair", "plant"]):
            obs, info = env.reset(seed=0, options={"episode_index": index})
            assert info["object_category"] == category
            assert obs["goal"][0] == MP3D_CATEGORIES.index(category)  # the file's id, not embodia's
            assert _run_expert(env, index)["success"]
    finally:
        env.close()


def test_objectnav_inline_goals_as_in_older_files_and_habitat_lab_episodes(tmp_path, scenes_dir):
    records = [
        objectnav_episode("0", SCENE, (1.0, 1.0), "chair", goals=[CHAIR]),
        objectnav_episode("1", SCENE, (5.0, 3.0), None, goals=[PLANT]),  # the category only in its goals
    ]
    path = write_gz(
        tmp_path / "val.json.gz",
        {
            "episodes": records,
            "category_to_task_category_id": HM3D_CATEGORIES,
            "category_to_scene_annotation_category_id": HM3D_CATEGORIES,
        },
    )
    episodes = load_episodes(path, scenes_dir=scenes_dir)
    assert [ep.object_category for ep in episodes] == ["chair", "plant"]
    assert [ep.object_ids for ep in episodes] == [["12"], ["31"]]
    env = NavEnv(sensors="none", task="objectnav", dataset=str(path), scenes_dir=str(scenes_dir))
    try:
        assert all(_run_expert(env, index)["success"] for index in range(2))
        # habitat-lab's episode in memory carries its goals inline: reset takes it as a dict
        obs, info = env.reset(options={"episode": records[1]})
        assert info["object_category"] == "plant" and obs["goal"][0] == HM3D_CATEGORIES["plant"]
        np.testing.assert_allclose(env.goals(), [[1.2, 3.4, 0.0], [0.6, 2.8, 0.0]])
        # with goals: [] the dataset's goals_by_category would be needed: a clear error without one
        with pytest.raises(
            NavEpisodeError,
            match=r"no goals for category 'chair': .*goals_by_category has no 'room.glb_chair'",
        ):
            env.reset(options={"episode": objectnav_episode("2", SCENE, (1.0, 1.0), "chair")})
    finally:
        env.close()


def test_categories_embodia_cannot_run_are_clear_errors(tmp_path, scenes_dir):
    def env_for(records, maps) -> NavEnv:
        path = write_gz(tmp_path / "val.json.gz", {"episodes": records, **maps})
        return NavEnv(sensors="none", task="objectnav", dataset=str(path), scenes_dir=str(scenes_dir))

    fireplace = object_goal("40", "fireplace", (2.0, 2.0, 0.5), [(2.0, 1.0)])
    records = [objectnav_episode("5", SCENE, (1.0, 1.0), "fireplace", goals=[fireplace])]
    # a category the scene has no object of (the file has an id for it)
    with pytest.raises(
        NavEpisodeError,
        match=r"episode '5' asks for 'fireplace', but scene 'mp3d/room/room.glb' = "
        r".*room.json has no object of that category \(it has \['chair', 'plant'\]\); map the episode's scene",
    ):
        env_for(records, MP3D_MAPS)
    # a category without a task category id (embodia's ids when the file has none)
    with pytest.raises(
        NavEpisodeError,
        match=r"asks for 'fireplace', which has no id in category_to_task_category_id "
        r"\['bed', 'chair', 'plant', 'sofa', 'toilet', 'tv_monitor'\]",
    ):
        env_for(records, {})
    # the file's two maps must name the same categories (as habitat-lab asserts)
    with pytest.raises(NavEpisodeError, match="name different categories"):
        env_for(
            records,
            {"category_to_task_category_id": HM3D_CATEGORIES, "category_to_mp3d_category_id": {"chair": 3}},
        )


def test_an_episode_without_object_category_is_never_read_as_pointnav(tmp_path, scenes_dir):
    no_category = objectnav_episode("3", SCENE, (1.0, 1.0), None)  # goals: [] and no object_category
    data = {"goals_by_category": {"room.glb_chair": [CHAIR]}, "episodes": [no_category], **MP3D_MAPS}
    with pytest.raises(
        NavEpisodeError,
        match=r"episode #0 \(episode_id '3', scene 'mp3d/room/room.glb'\): no "
        r"object_category, in an ObjectNav file",
    ):
        episodes_from_habitat(data, "val.json.gz")
    # a split whose top-level file says ObjectNav: its content episodes need categories too
    write_gz(tmp_path / "val" / "val.json.gz", {"episodes": [], **MP3D_MAPS})
    write_gz(
        tmp_path / "val" / "content" / "room.json.gz",
        {"episodes": [pointnav_episode("0", SCENE, (1.0, 1.0), (3.0, 3.0))]},
    )
    with pytest.raises(NavEpisodeError, match="no object_category, in an ObjectNav file"):
        load_episodes(tmp_path / "val" / "val.json.gz", scenes_dir=scenes_dir)
    # a PointNav file is PointNav; an ObjectNav environment refuses it
    path = write_gz(
        tmp_path / "pointnav.json.gz", {"episodes": [pointnav_episode("0", SCENE, (1.0, 1.0), (3.0, 3.0))]}
    )
    assert [ep.task for ep in load_episodes(path, scenes_dir=scenes_dir)] == ["pointnav"]
    with pytest.raises(
        NavEpisodeError, match=r"episode '0' .* is of task pointnav \(1 of 1 episodes are not objectnav\)"
    ):
        NavEnv(sensors="none", task="objectnav", dataset=str(path), scenes_dir=str(scenes_dir))
