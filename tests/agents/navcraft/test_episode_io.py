"""NavCraft episode files: habitat-lab's layout, Habitat's frame, round trips and clear errors."""

from __future__ import annotations

import copy
import gzip
import json
import math

import pytest

from embodia.agents.navcraft.benchmark import generate
from embodia.agents.navcraft.episode_io import NavCraftFileError, load_episodes, save_episodes
from embodia.agents.navcraft.mission import to_plain
from embodia.agents.navcraft.travel import Travel
from embodia.envs.habitat.coords import habitat_rotation_to_yaw


@pytest.fixture(scope="module")
def episodes():
    return generate(["apartment_0", "procedural:office:5"], 2, seed=1).episodes


@pytest.mark.parametrize("name", ["episodes.json", "episodes.json.gz"])
def test_round_trip(tmp_path, episodes, name):
    path = save_episodes(tmp_path / name, episodes)
    loaded = load_episodes(path)
    assert [to_plain(e) for e in loaded] == [to_plain(e) for e in episodes]


def test_habitat_fields_in_habitats_frame(tmp_path, episodes):
    path = save_episodes(tmp_path / "e.json", episodes)
    data = json.loads(path.read_text())
    assert data["format"] == 1 and len(data["episodes"]) == len(episodes)
    assert data["embodia_scene_refs"]["embodia/procedural_office_5.glb"] == "procedural:office:5"
    for record, episode in zip(data["episodes"], episodes):
        mission = episode.mission
        x, y, _ = mission.start.position
        # embodia (x, y, z) -> Habitat (x, z, -y)
        assert record["start_position"] == pytest.approx([x, 0.0, -y])
        assert habitat_rotation_to_yaw(record["start_rotation"]) == pytest.approx(mission.start_yaw, abs=1e-9)
        assert record["scene_id"].startswith("embodia/") and record["scene_id"].endswith(".glb")
        assert len(record["robots"]) == episode.num_robots
        assert record["robots"][0]["start_position"] == record["start_position"]
        assert len(record["goals"]) == len(mission.subgoals)
        assert record["goals"][-1]["position"] == pytest.approx(
            [mission.end.position[0], 0.0, -mission.end.position[1]]
        )
        assert record["taxonomy"] == episode.schedule.collaboration
        assert record["instruction"]["instruction_text"] == mission.instruction
        assert record["mission"]["start"]["position"] == pytest.approx(list(mission.start.position))


def test_scene_graphs_are_stored(tmp_path, episodes):
    graph = Travel.for_scene("apartment_0").graph
    path = save_episodes(tmp_path / "e.json.gz", episodes, scene_graphs={"apartment_0": graph})
    with gzip.open(path, "rt") as handle:
        data = json.load(handle)
    assert [r["id"] for r in data["scene_graphs"]["apartment_0"]["rooms"]] == [r.id for r in graph.rooms]


def test_infinite_numbers_are_written_as_null(tmp_path, episodes):
    episode = copy.deepcopy(episodes[0])
    episode.info = {**episode.info, "solo_makespan": math.inf}
    path = save_episodes(tmp_path / "e.json", [episode])
    assert '"solo_makespan": null' in path.read_text()
    assert load_episodes(path)[0].info["solo_makespan"] is None


def test_malformed_files_name_the_file_and_the_problem(tmp_path, episodes):
    with pytest.raises(NavCraftFileError, match="no NavCraft episode file"):
        load_episodes(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(NavCraftFileError, match="broken.json is not a readable habitat-lab JSON file"):
        load_episodes(broken)
    path = save_episodes(tmp_path / "e.json", episodes)
    data = json.loads(path.read_text())
    for mutate, message in [
        (lambda d: d.pop("episodes"), "top-level 'episodes' list"),
        (lambda d: d.update(format=99), "format 99"),
        (lambda d: d["episodes"][1].pop("schedule"), r"episode 1 .* lacks 'schedule'"),
        (lambda d: d["episodes"][0]["mission"].pop("start"), r"episode 0 .* malformed \(KeyError"),
        (
            lambda d: d["episodes"][0]["robots"].append(d["episodes"][0]["robots"][0]),
            "robots but its schedule",
        ),
    ]:
        bad = json.loads(json.dumps(data))
        mutate(bad)
        target = tmp_path / "bad.json"
        target.write_text(json.dumps(bad))
        with pytest.raises(NavCraftFileError, match=message) as caught:
            load_episodes(target)
        assert "bad.json" in str(caught.value) and "\n" not in str(caught.value)
