"""``embodia view STORE --out FILE.rrd [--spawn | --serve]`` and ``embodia run ENV --view FILE.rrd``, run as
a user would (subprocesses), the recordings read back with Rerun's reader."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import embodia
from embodia.data.store import TrajectoryStore
from tests.conftest import ROOT, free_port, run_cli
from tests.runner.test_rerun_view import column, read_recording

NAV = "embodia/Nav-PointNav-v0"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("view") / "nav.zarr"
    embodia.rollout(NAV, "expert", episodes=3, seed=0, max_steps=6, record=path)
    return path


def one_error_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    return lines[0]


def test_view_exports_the_chosen_episodes_and_refuses_what_it_cannot_do(store, tmp_path):
    out = tmp_path / "two.rrd"
    result = run_cli("view", str(store), "--episode", "0", "--episode", "2", "--out", str(out), "--no-map")
    assert result.returncode == 0, result.stderr
    lengths = TrajectoryStore(store).episode_lengths
    entities = read_recording(out)
    assert entities["obs/rgb"].num_rows == lengths[0] + lengths[2] and "map/image" not in entities
    assert set(entities["reward"].column("episode").to_pylist()) == {0, 2}
    before = out.read_bytes()
    assert "already exists" in one_error_line(run_cli("view", str(store), "--out", str(out)))
    assert out.read_bytes() == before
    assert "does not exist" in one_error_line(
        run_cli("view", str(tmp_path / "none.zarr"), "--out", str(tmp_path / "x.rrd"))
    )
    assert "out of range" in one_error_line(
        run_cli("view", str(store), "--episode", "9", "--out", str(tmp_path / "y.rrd"))
    )
    headless = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    spawn = subprocess.run(
        [
            sys.executable,
            "-m",
            "embodia.cli",
            "view",
            str(store),
            "--out",
            str(tmp_path / "s.rrd"),
            "--spawn",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=headless,
        timeout=60,
    )
    assert "needs a display" in one_error_line(spawn) and not (tmp_path / "s.rrd").exists()


def test_run_with_view_writes_a_readable_recording(tmp_path):
    out = tmp_path / "run.rrd"
    result = run_cli(
        "run", NAV, "--episodes", "2", "--max-steps", "5", "--view", str(out), "--json", "--quiet"
    )
    assert result.returncode == 0, result.stderr
    episodes = json.loads(result.stdout)["episodes"]
    steps = sum(e["length"] for e in episodes)
    entities = read_recording(out)
    assert entities["action"].num_rows == steps and entities["obs/depth"].num_rows == steps
    assert len(column(entities["episodes"], "TextLog:text")) == 2
    refused = run_cli("run", NAV, "--view", str(tmp_path / "v.rrd"), "--num-envs", "2")
    assert "--view" in one_error_line(refused) and not (tmp_path / "v.rrd").exists()


def test_serve_answers_on_both_ports_and_stops_cleanly_on_ctrl_c(store, tmp_path):
    web, grpc = free_port(), free_port()
    out = tmp_path / "served.rrd"
    args = [
        "view",
        str(store),
        "--out",
        str(out),
        "--serve",
        "--web-port",
        str(web),
        "--grpc-port",
        str(grpc),
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "embodia.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, status = time.monotonic() + 120, None
        while status != 200 and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://localhost:{web}/", timeout=2) as response:
                    status = response.status
            except OSError:
                time.sleep(0.2)
        assert status == 200, server.stderr.read() if server.poll() is not None else "no answer"
        with socket.create_connection(("127.0.0.1", grpc), timeout=5):
            pass
        server.send_signal(signal.SIGINT)
        stdout, stderr = server.communicate(timeout=20)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0, stderr
    url = f"http://localhost:{web}/?url=rerun%2Bhttp%3A%2F%2Flocalhost%3A{grpc}%2Fproxy"
    assert url in stdout and "stopped serving" in stdout
    assert read_recording(out)["action"].num_rows == TrajectoryStore(store).num_steps
