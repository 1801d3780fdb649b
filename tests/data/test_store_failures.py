"""A store whose file system refuses writes — full, read-only, or unmounted mid-run — ends the command with one
line and status 2, keeps every committed episode and leaves a store that ``info --check`` finds clean.

Real file systems in a private mount namespace (``unshare -m``, as root): a 300 KiB tmpfs that fills up, a
tmpfs remounted read-only, and a bind mount lazily unmounted while a recording runs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import embodia
from tests.conftest import ROOT

EMBODIA = f"{sys.executable} -m embodia.cli"
RECORD = "run embodia/PointMaze-Medium-v0 --policy expert --quiet"


def in_mount_namespace(script: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["unshare", "-m", "bash", "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr[-3000:]
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


def uncommitted_chunk_files(store) -> list[str]:
    """Chunk files wholly past the committed rows (what an abandoned write leaves)."""
    found = []
    for key in store.keys:
        array = store.array(key)
        first_unused = -(-store.num_steps // array.chunks[0])
        chunks = store.path / "data" / key / "c"
        found += [str(p) for p in chunks.iterdir() if int(p.name) >= first_unused] if chunks.is_dir() else []
    return found


def test_a_full_disk_is_one_line_with_the_free_space_and_keeps_every_committed_episode(tmp_path):
    out = in_mount_namespace(f"""
        mkdir -p {tmp_path}/fs && mount -t tmpfs -o size=300k tmpfs {tmp_path}/fs
        {EMBODIA} {RECORD} --episodes 500 --commit-every 0 --record {tmp_path}/fs/s.zarr 2> {tmp_path}/err
        echo $? > {tmp_path}/rc
        cp -r {tmp_path}/fs/s.zarr {tmp_path}/kept.zarr
    """)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "rc").read_text().strip() == "2"
    line = one_error_line((tmp_path / "err").read_text())
    assert f"trajectory store '{tmp_path}/fs/s.zarr': its file system is full (" in line
    assert "KiB free of 300.0 KiB" in line and "episodes committed before are kept" in line
    store = embodia.TrajectoryStore(tmp_path / "kept.zarr")
    assert 0 < store.num_episodes < 500 and f"the {store.num_episodes} episodes committed" in line
    assert store.verify()["ok"]  # every chunk reads and matches its checksum
    assert uncommitted_chunk_files(store) == []  # the half-written episode's chunks are gone
    assert (
        subprocess.run(
            [*EMBODIA.split(), "info", str(tmp_path / "kept.zarr"), "--check"], cwd=ROOT
        ).returncode
        == 0
    )


def test_a_read_only_file_system_is_one_line_for_a_new_and_an_existing_store(tmp_path):
    out = in_mount_namespace(f"""
        mkdir -p {tmp_path}/fs && mount -t tmpfs -o size=4m tmpfs {tmp_path}/fs
        {EMBODIA} {RECORD} --episodes 2 --record {tmp_path}/fs/s.zarr > /dev/null
        mount -o remount,ro {tmp_path}/fs
        {EMBODIA} {RECORD} --episodes 2 --record {tmp_path}/fs/s.zarr 2> {tmp_path}/err_existing
        echo $? > {tmp_path}/rc_existing
        {EMBODIA} {RECORD} --episodes 2 --record {tmp_path}/fs/new.zarr 2> {tmp_path}/err_new
        echo $? > {tmp_path}/rc_new
        {EMBODIA} info {tmp_path}/fs/s.zarr --check --json > {tmp_path}/info.json
    """)
    assert out.returncode == 0, out.stderr
    for case in ("existing", "new"):
        assert (tmp_path / f"rc_{case}").read_text().strip() == "2"
        line = one_error_line((tmp_path / f"err_{case}").read_text())
        assert "Read-only file system (the folder or its file system is read-only)" in line
    assert '"episodes": 2' in (tmp_path / "info.json").read_text()


def test_a_file_system_unmounted_mid_run_stops_the_writer_instead_of_writing_into_the_mount_point(tmp_path):
    (tmp_path / "disk").mkdir()
    out = in_mount_namespace(f"""
        mkdir -p {tmp_path}/fs && mount --bind {tmp_path}/disk {tmp_path}/fs
        {EMBODIA} {RECORD} --episodes 5000 --commit-every 0 --record {tmp_path}/fs/s.zarr 2> {tmp_path}/err &
        writer=$!
        until [ -f {tmp_path}/fs/s.zarr/meta/episode_ends/c/0 ]; do sleep 0.1; done  # committing now
        umount -l {tmp_path}/fs
        wait $writer
        echo $? > {tmp_path}/rc
    """)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "rc").read_text().strip() == "2"
    line = one_error_line((tmp_path / "err").read_text())
    assert "its file system went away" in line
    assert list((tmp_path / "fs").iterdir()) == []  # nothing written into the bare mount point
    store = embodia.TrajectoryStore(tmp_path / "disk" / "s.zarr")  # the real disk keeps what was committed
    assert store.num_episodes > 0 and store.verify()["ok"]
