"""A recording process killed with SIGKILL leaves every committed episode readable and the store appendable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np

from embodia.data.store import TrajectoryStore
from tests.conftest import ROOT


def test_sigkill_mid_recording_keeps_committed_episodes(tmp_path):
    path = tmp_path / "killed.zarr"
    # Long random-policy episodes of a real simulator, recorded until killed.
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "embodia.cli",
            "run",
            "embodia/PointMaze-Medium-v0",
            "--policy",
            "random",
            "--episodes",
            "1000",
            "--record",
            str(path),
            "--record-sim-state",
            "--commit-every",
            "0",
            "--quiet",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            time.sleep(0.2)
            if (path / "meta" / "episode_ends" / "zarr.json").exists():
                try:
                    if TrajectoryStore(path).num_episodes >= 3:
                        break
                except Exception:
                    pass
            assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.13)  # land somewhere inside the next episode
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL

    store = TrajectoryStore(path)
    n = store.num_episodes
    assert n >= 3
    lengths = store.episode_lengths
    assert (lengths == 1000).all(), lengths  # random point-mass episodes run to the time limit
    for i in range(n):
        episode = store.episode(i)
        meta = store.episode_meta(i)
        assert meta.seed == i and meta.length == 1000
        assert np.isfinite(episode["state"]).all()
        np.testing.assert_array_equal(episode["sim_state"][0], meta.initial_state)
    # The store accepts new episodes after the crash, right after the committed ones.
    writer = TrajectoryStore(path, mode="a")
    extra = store.episode(0)
    writer.add_episode(
        extra, env_id=meta.env_id, seed=99, initial_state=meta.initial_state, final_state=meta.final_state
    )
    reread = TrajectoryStore(path)
    assert reread.num_episodes == n + 1 and reread.num_steps == 1000 * (n + 1)
    np.testing.assert_array_equal(reread.episode(n)["action"], extra["action"])
    assert not list(path.rglob("*.partial"))


_VIDEO_WRITER = """
import sys
import numpy as np
from embodia.data.store import TrajectoryStore

store = TrajectoryStore(sys.argv[1], mode="a", video_codec="h264", fps=10)
for seed in range(10_000):
    rng = np.random.default_rng(seed)
    frames = np.repeat(rng.integers(0, 255, size=(30, 1, 1, 3), dtype=np.uint8), 32, axis=1).repeat(32, axis=2)
    store.add_episode({"rgb": frames, "action": np.full((30, 1), seed, np.float32)}, env_id="e", seed=seed)
"""


def test_sigkill_while_writing_video_columns_keeps_committed_episodes(tmp_path):
    path = tmp_path / "video.zarr"
    process = subprocess.Popen(
        [sys.executable, "-c", _VIDEO_WRITER, str(path)], cwd=ROOT, stderr=subprocess.PIPE
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            time.sleep(0.05)
            try:
                if TrajectoryStore(path).num_episodes >= 5:
                    break
            except Exception:
                pass
            assert process.poll() is None, process.stderr.read().decode()
        os.kill(process.pid, signal.SIGKILL)  # most likely inside an encode or a write
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    store = TrajectoryStore(path)
    n = store.num_episodes
    assert n >= 5 and store.verify()["videos_decoded"] == n  # every committed video decodes, frames count
    for i in range(n):
        assert store.episode(i)["action"][0, 0] == i
    with TrajectoryStore(path, mode="a") as writer:  # appendable right after the committed episodes
        frames = np.zeros((4, 32, 32, 3), dtype=np.uint8)
        writer.add_episode({"rgb": frames, "action": np.zeros((4, 1), np.float32)}, env_id="e")
    reread = TrajectoryStore(path)
    assert reread.num_episodes == n + 1 and reread.episode(n)["rgb"].shape == (4, 32, 32, 3)
    assert not list(path.rglob("*.partial"))
