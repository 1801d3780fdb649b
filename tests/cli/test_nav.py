"""The ``embodia nav`` commands, run as a user would (``python -m embodia.cli nav ...``)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from embodia.envs.habitat.episodes import load_episodes
from embodia.envs.habitat.scene import load_scene
from embodia.envs.habitat.scene_graph import SceneGraph
from tests.conftest import ROOT


def nav(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embodia.cli", "nav", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_scene_episodes_graph_and_eval_commands(tmp_path):
    out = nav(
        "scene",
        "--kind",
        "office",
        "--seed",
        "4",
        "--out",
        str(tmp_path / "office.json"),
        "--image",
        str(tmp_path / "top.png"),
    )
    assert out.returncode == 0, out.stderr
    assert (
        load_scene(tmp_path / "office.json").name == "office_4"
        and (tmp_path / "top.png").stat().st_size > 1000
    )
    out = nav(
        "episodes",
        "--task",
        "objectnav",
        "--scene",
        str(tmp_path / "office.json"),
        "--count",
        "3",
        "--out",
        str(tmp_path / "eps.json.gz"),
    )
    assert out.returncode == 0, out.stderr
    assert [e.task for e in load_episodes(tmp_path / "eps.json.gz")] == ["objectnav"] * 3
    out = nav("graph", "apartment_2", "--out", str(tmp_path / "graph.json"))
    assert out.returncode == 0, out.stderr
    assert len(SceneGraph.load(tmp_path / "graph.json").rooms) == len(load_scene("apartment_2").rooms)
    out = nav("eval", "--task", "pointnav", "--episodes", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["success_rate"] == 1.0


def test_user_errors_print_one_line_and_exit_2(tmp_path):
    out = nav("graph", "no_such_scene", "--out", str(tmp_path / "g.json"))
    assert out.returncode == 2
    assert (
        out.stderr.strip().startswith("error: no nav scene 'no_such_scene'")
        and len(out.stderr.strip().splitlines()) == 1
    )


def test_episodes_in_habitat_labs_split_layout(tmp_path):
    top = tmp_path / "val" / "val.json.gz"
    out = nav(
        "episodes",
        "--task",
        "pointnav",
        "--scene",
        "apartment_1",
        "--count",
        "4",
        "--split",
        "--out",
        str(top),
    )
    assert out.returncode == 0, out.stderr
    assert "content" in out.stdout
    with gzip.open(top, "rt") as handle:
        assert json.load(handle)["episodes"] == []  # the top-level file only names the split
    assert [p.name for p in (tmp_path / "val" / "content").iterdir()] == ["apartment_1.json.gz"]
    episodes = load_episodes(top)  # read back through the split layout
    assert len(episodes) == 4 and {e.task for e in episodes} == {"pointnav"}
