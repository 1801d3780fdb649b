"""``embodia data export STORE --lerobot DIR`` and ``embodia data import DIR --out STORE`` (embodia/cli/data_lerobot.py)
run as a user would: the imported foreign store works with info, view and MCAP export, replay refuses it in one
line, and bad input is one line with exit status 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import embodia
from embodia.data.store import TrajectoryStore
from tests.conftest import run_cli
from tests.data.test_lerobot import read_dataset, write_v21


def one_error_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stdout + result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def foreign(tmp_path_factory) -> Path:
    """A v2.1 LeRobot dataset imported with the CLI."""
    root = tmp_path_factory.mktemp("cli_lerobot")
    write_v21(root / "koch_pick")
    result = run_cli("data", "import", str(root / "koch_pick"), "--out", str(root / "koch.zarr"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["episodes"] == 2
    return root / "koch.zarr"


def test_export_then_import_through_the_cli(tmp_path):
    store = tmp_path / "pm.zarr"
    embodia.rollout("embodia/PointMaze-Medium-v0", "expert", episodes=2, seed=0, max_steps=15, record=store)
    folder = tmp_path / "pm_lerobot"
    result = run_cli("data", "export", str(store), "--lerobot", str(folder), "--task", "reach the goal")
    assert result.returncode == 0 and "as a LeRobot v3.0 dataset" in result.stdout, result.stderr
    info = read_dataset(folder)["info"]
    assert info["total_tasks"] == 1 and info["video_path"] is None
    assert info["total_frames"] == TrajectoryStore(store).num_steps
    assert "observation.state" in info["features"] and "observation.goal" in info["features"]
    result = run_cli("data", "import", str(folder), "--out", str(tmp_path / "back.zarr"))
    assert result.returncode == 0, result.stderr
    back, original = TrajectoryStore(tmp_path / "back.zarr"), TrajectoryStore(store)
    assert back.schema == original.schema  # exactly its keys: the task went to meta/tasks.parquet
    for key in original.keys:
        assert np.array_equal(back.load([key])[key], original.load([key])[key]), key


def test_a_foreign_store_works_with_info_view_and_mcap_and_replay_says_it_has_no_states(foreign, tmp_path):
    info = run_cli("info", str(foreign), "--check", "--json")
    assert info.returncode == 0, info.stderr
    summary = json.loads(info.stdout)
    assert (
        summary["episodes"] == 2 and summary["env_ids"] == ["lerobot:koch_pick"] and "top" in summary["keys"]
    )
    view = run_cli("view", str(foreign), "--out", str(tmp_path / "koch.rrd"), "--no-map")
    assert view.returncode == 0 and (tmp_path / "koch.rrd").stat().st_size > 0, view.stderr
    bag = run_cli("data", "export", str(foreign), "--mcap", str(tmp_path / "koch.mcap"))
    assert bag.returncode == 0 and (tmp_path / "koch.mcap").is_file(), bag.stderr
    line = one_error_line(run_cli("replay", str(foreign), "--verify"))
    assert "holds no simulator states" in line and "lerobot:koch_pick" in line


def test_bad_input_is_one_line_and_exit_status_2(foreign, tmp_path):
    (tmp_path / "empty").mkdir()
    assert "is not a LeRobot dataset" in one_error_line(
        run_cli("data", "import", str(tmp_path / "empty"), "--out", str(tmp_path / "x.zarr"))
    )
    assert "needs --env" in one_error_line(
        run_cli("data", "import", "data.npz", "--out", str(tmp_path / "x.zarr"))
    )
    assert "needs --mcap OUT.mcap" in one_error_line(run_cli("data", "export", str(foreign)))
    both = run_cli(
        "data", "export", str(foreign), "--mcap", str(tmp_path / "a.mcap"), "--lerobot", str(tmp_path / "a")
    )
    assert "either --mcap or --lerobot" in one_error_line(both)
    write_v21(tmp_path / "again")
    assert "already exists" in one_error_line(
        run_cli("data", "import", str(tmp_path / "again"), "--out", str(foreign))
    )
    replaced = run_cli("data", "import", str(tmp_path / "again"), "--out", str(foreign), "--overwrite")
    assert replaced.returncode == 0 and TrajectoryStore(foreign).num_episodes == 2, replaced.stderr
    assert not (tmp_path / "x.zarr").exists() and not (tmp_path / "a").exists()
    assert not [p for p in foreign.parent.iterdir() if ".partial-" in p.name or ".replaced-" in p.name]
