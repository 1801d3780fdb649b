"""What embodia promises about data: nothing it did not write is deleted, one writer per store, corruption is
reported as corruption. Real processes and real files throughout (no mocks of the store or the filesystem)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest
import zarr

from embodia.core.errors import StoreCorruptError, StoreError, StoreLockedError
from embodia.data.store import TrajectoryStore
from embodia.data.writer_lock import LOCK_NAME
from embodia.runner.datasets import generate_dataset, import_ogbench_npz
from embodia.runner.replay import replay
from tests.conftest import ROOT
from tests.data.test_store import make_episode


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    return lines[0]


def test_recording_into_a_directory_that_is_not_a_store_deletes_nothing(cli, tmp_path):
    folder = tmp_path / "my_results"
    folder.mkdir()
    (folder / "notes.txt").write_text("three weeks of work")
    (folder / "plots").mkdir()
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    line = one_line_error(
        cli("run", "embodia/PointMaze-Medium-v0", "--episodes", "1", "--record", str(folder))
    )
    assert "holds files but no trajectory store" in line
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before  # not even a lock file
    assert (folder / "notes.txt").read_text() == "three weeks of work"
    # every command that opens a store for writing goes through the same check, --overwrite included
    np.savez(
        tmp_path / "d.npz", observations=np.zeros((4, 2)), actions=np.zeros((4, 2)), terminals=np.eye(4)[3]
    )
    for overwrite in (False, True):
        with pytest.raises(StoreError, match="holds files but no trajectory store"):
            import_ogbench_npz(
                tmp_path / "d.npz", folder, env_id="embodia/PointMaze-Medium-v0", overwrite=overwrite
            )
        with pytest.raises(StoreError, match="holds files but no trajectory store"):
            generate_dataset("embodia/PointMaze-Medium-v0", 1, folder, max_steps=5, overwrite=overwrite)
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    # a store whose root metadata is gone is corrupt, not something to write over
    with TrajectoryStore(tmp_path / "s.zarr", mode="a") as store:
        store.add_episode(make_episode(3), env_id="e")
    (tmp_path / "s.zarr" / "zarr.json").unlink()
    with pytest.raises(StoreError, match="root metadata .* is missing"):
        TrajectoryStore(tmp_path / "s.zarr", mode="w")
    assert (tmp_path / "s.zarr" / "data").is_dir()


def test_overwrite_replaces_only_an_embodia_store(tmp_path):
    path = tmp_path / "s.zarr"
    with TrajectoryStore(path, mode="a") as store:
        store.add_episode(make_episode(3), env_id="e")
    (path / "README.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"will not overwrite .*README.txt"):
        TrajectoryStore(path, mode="w")
    assert len(TrajectoryStore(path)) == 1 and (path / "README.txt").exists()
    (path / "README.txt").unlink()
    with TrajectoryStore(path, mode="w") as store:
        assert len(store) == 0
        store.add_episode(make_episode(5), env_id="e")
    assert TrajectoryStore(path).episode_lengths.tolist() == [5]


def test_record_onto_or_under_a_file_is_one_line(cli, tmp_path):
    (tmp_path / "file.zarr").write_text("not a store")
    line = one_line_error(cli("run", "embodia/PointMaze-Medium-v0", "--record", str(tmp_path / "file.zarr")))
    assert "is a file, not a trajectory store" in line
    line = one_line_error(
        cli("run", "embodia/PointMaze-Medium-v0", "--record", str(tmp_path / "file.zarr" / "s.zarr"))
    )
    assert "a parent of it is a file" in line
    assert (tmp_path / "file.zarr").read_text() == "not a store"


def test_one_writer_per_store_in_one_process(tmp_path):
    path = tmp_path / "s.zarr"
    first = TrajectoryStore(path, mode="a")
    with pytest.raises(StoreLockedError, match="being written by this process"):
        TrajectoryStore(path, mode="a")
    reader = TrajectoryStore(path)  # readers never wait
    first.add_episode(make_episode(2), env_id="e")
    first.close()
    with TrajectoryStore(path, mode="a") as second:
        second.add_episode(make_episode(3), env_id="e")
    assert reader.num_episodes == 0 and TrajectoryStore(path).episode_lengths.tolist() == [2, 3]


def test_two_recording_processes_the_second_is_refused(tmp_path):
    path = tmp_path / "shared.zarr"
    command = [
        sys.executable,
        "-m",
        "embodia.cli",
        "run",
        "embodia/PointMaze-Medium-v0",
        "--policy",
        "random",
    ]
    first = subprocess.Popen(
        [
            *command,
            "--episodes",
            "300",
            "--max-steps",
            "60",
            "--record",
            str(path),
            "--commit-every",
            "0",
            "--quiet",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lock = path / LOCK_NAME
        deadline = time.time() + 60
        while time.time() < deadline and not (lock.is_file() and lock.read_text().startswith("{")):
            time.sleep(0.05)
        holder = json.loads(lock.read_text())
        assert holder["pid"] == first.pid
        second = subprocess.run(
            [*command, "--episodes", "5", "--seed", "1000", "--record", str(path), "--quiet"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert first.poll() is None, "the first writer finished before the second tried; make it longer"
        line = one_line_error(second)
        assert f"being written by process {first.pid}" in line and "one writer at a time" in line
        assert first.wait(timeout=300) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
    store = TrajectoryStore(path)
    assert len(store) == 300 and sorted(store.episodes_table()["seed"].tolist()) == list(range(300))
    results = replay(store, [0, 150, 299], verify=True)
    assert max(r.max_deviation for r in results) <= 1e-6
    # the first writer is gone: its lock went with it
    with TrajectoryStore(path, mode="a") as store:
        assert len(store) == 300


@pytest.fixture
def recorded(cli, tmp_path):
    path = tmp_path / "rec.zarr"
    cli(
        "run",
        "embodia/PointMaze-Medium-v0",
        "--episodes",
        "3",
        "--max-steps",
        "40",
        "--record",
        str(path),
        check=True,
    )
    return path


def test_a_damaged_chunk_is_reported_as_corruption_not_replayed(cli, recorded):
    chunk = recorded / "data" / "action" / "c" / "0" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[len(raw) // 2] ^= 0x5A
    chunk.write_bytes(bytes(raw))
    line = one_line_error(cli("replay", str(recorded), "--verify"))  # replay reads episode 0 first
    assert "is corrupt: reading data/action rows 0..40 (episode 0) failed" in line and "checksum" in line
    line = one_line_error(cli("info", str(recorded), "--check"))  # reads chunk by chunk
    assert "is corrupt: reading data/action rows 0..120 (episodes 0-2) failed" in line and "checksum" in line
    with pytest.raises(StoreCorruptError, match="data/action"):
        TrajectoryStore(recorded).episode(1)
    assert TrajectoryStore(recorded).episode(1, keys=["state"])["state"].shape == (40, 2)


def test_table_and_ends_that_disagree_are_corrupt(cli, recorded):
    lengths = zarr.open_array(str(recorded / "meta" / "episodes" / "length"), mode="r+")
    lengths[1] = 39
    line = one_line_error(cli("info", str(recorded)))
    assert "episode 1 has length 39 in meta/episodes/length but 40 by meta/episode_ends" in line
    lengths[1] = 40
    assert len(TrajectoryStore(recorded)) == 3
    ends = zarr.open_array(str(recorded / "meta" / "episode_ends"), mode="r+")
    ends[5] = 500  # an end written past the committed ones, as a second writer would
    with pytest.raises(StoreCorruptError, match="not increasing at episode 3 .* two processes"):
        TrajectoryStore(recorded)
    ends[5] = 0
    state_rows = zarr.open_array(str(recorded / "data" / "state"), mode="r+")
    state_rows.resize((100, 2))
    with pytest.raises(StoreCorruptError, match="data/state has 100 rows, the 3 committed episodes need 120"):
        TrajectoryStore(recorded)
