"""Play-data generation (OGBench-style), its labels, and importing OGBench .npz files."""

from __future__ import annotations

import json

import numpy as np
import pytest

import embodia
from embodia.core.errors import EmbodiaError
from embodia.data.store import TrajectoryStore
from embodia.runner.datasets import generate_dataset, import_ogbench_npz, play_env_id
from embodia.runner.replay import replay


def test_play_ids():
    assert play_env_id("embodia/CubeSingle-SingleTask-v0") == "embodia/CubeSingle-Play-v0"
    assert play_env_id("PointMaze-Medium-v0") == "embodia/PointMaze-Medium-Play-v0"


def test_generated_cube_data_is_labelled_replayable_and_matches_ogbench_relabelling(tmp_path):
    path = tmp_path / "cube.zarr"
    result = generate_dataset(
        "embodia/CubeSingle-v0", 2, path, noise=0.1, max_steps=250, task_id=2, record_sim_state=True
    )
    assert result.steps_per_second > 0
    store = TrajectoryStore(path)
    data = store.load()
    assert store.num_episodes == 2 and store.num_steps == 500
    assert set(np.unique(data["reward"])) <= {-1.0, 0.0}
    np.testing.assert_array_equal(data["terminated"], data["reward"] == 0.0)  # terminal = task success
    assert store.episode_meta(0).env_id == "embodia/CubeSingle-Play-v0"
    assert max(r.max_deviation for r in replay(store, verify=True)) == 0.0

    # The same data in OGBench's file format, labelled by ogbench's own relabel_dataset, gives our labels.
    env = embodia.make("embodia/CubeSingle-Play-v0")
    nq = env.unwrapped.model.nq
    env.close()
    terminals = np.zeros(store.num_steps, dtype=bool)
    terminals[store.episode_ends - 1] = True
    npz = tmp_path / "cube-single-play-v0.npz"
    np.savez(
        npz,
        observations=data["state"],
        actions=data["action"],
        terminals=terminals,
        qpos=data["sim_state"][:, 1 : 1 + nq],
    )
    imported = tmp_path / "imported.zarr"
    assert import_ogbench_npz(npz, imported, env_id="embodia/CubeSingle-Play-v0", task_id=2) == 2
    again = TrajectoryStore(imported).load()
    np.testing.assert_array_equal(again["reward"], data["reward"])
    np.testing.assert_array_equal(again["terminated"], data["terminated"])
    np.testing.assert_array_equal(again["state"], data["state"])


def test_puzzle_and_maze_play(tmp_path):
    with TrajectoryStore(tmp_path / "p.zarr", mode="a") as store:  # an empty store, appended to below
        pass
    generate_dataset("embodia/Puzzle3x3-v0", 1, store.path, max_steps=150)
    generate_dataset("embodia/PointMaze-Medium-v0", 1, tmp_path / "m.zarr", max_steps=300)
    puzzle = TrajectoryStore(tmp_path / "p.zarr").load()
    assert puzzle["reward"].min() >= -9 and puzzle["reward"].max() <= 0  # 9 buttons
    assert np.abs(np.diff(puzzle["state"], axis=0)).sum() > 0
    maze = TrajectoryStore(tmp_path / "m.zarr").load()
    assert np.linalg.norm(maze["state"][-1] - maze["state"][0]) > 1.0  # the point moved between goals


def test_import_errors(tmp_path):
    with pytest.raises(EmbodiaError, match="no dataset file"):
        import_ogbench_npz(tmp_path / "none.npz", tmp_path / "o.zarr", env_id="embodia/CubeSingle-v0")
    np.savez(tmp_path / "bad.npz", observations=np.zeros((3, 2)))
    with pytest.raises(EmbodiaError, match="missing actions, terminals"):
        import_ogbench_npz(tmp_path / "bad.npz", tmp_path / "o.zarr", env_id="embodia/CubeSingle-v0")


def test_cli_generate_import_and_bench(cli, tmp_path):
    out = tmp_path / "g.zarr"
    result = cli(
        "data",
        "generate",
        "embodia/PointMaze-Medium-v0",
        "--episodes",
        "2",
        "--max-steps",
        "100",
        "--out",
        str(out),
        check=True,
    )
    assert "2 episodes, 200 steps" in result.stdout
    info = json.loads(cli("info", str(out), "--json", check=True).stdout)
    assert info["env_ids"] == ["embodia/PointMaze-Medium-Play-v0"]
    bad = cli(
        "data",
        "import",
        str(tmp_path / "missing.npz"),
        "--out",
        str(tmp_path / "x.zarr"),
        "--env",
        "embodia/CubeSingle-v0",
    )
    assert bad.returncode == 2 and "no dataset file" in bad.stderr
