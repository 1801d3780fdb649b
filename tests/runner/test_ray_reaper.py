"""A local Ray started by embodia does not outlive its driver, even a SIGKILLed one (real Ray, real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from embodia.runner.ray_reaper import _alive, descendants
from tests.conftest import ROOT


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _wait_for(condition, seconds: float = 180.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_a_sigkilled_driver_leaves_no_process_of_its_local_ray_behind(tmp_path):
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "embodia.cli",
            "run",
            "embodia/PointMaze-Medium-v0",
            "--policy",
            "expert",
            "--episodes",
            "2000",
            "--workers",
            "2",
            "--quiet",
            "--record",
            str(tmp_path / "pm.zarr"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    try:
        # the agents Ray leaves behind when nobody stops them, and a task at work: the node is fully up
        def up() -> bool:
            names = [_cmdline(pid) for pid in descendants(driver.pid)]
            return (
                any("DashboardAgent" in n for n in names)
                and any("ray::run_task" in n for n in names)
                and any("ray_reaper import reap" in n for n in names)
            )

        assert _wait_for(up), driver.stderr.read().decode()[-3000:] if driver.poll() is not None else "no Ray"
        ray_processes = {
            pid: start for pid, start in descendants(driver.pid).items() if "ray_reaper" not in _cmdline(pid)
        }
        reapers = [pid for pid in descendants(driver.pid) if "ray_reaper import reap" in _cmdline(pid)]
        assert len(reapers) == 1
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        assert _wait_for(lambda: not _alive(ray_processes)), [_cmdline(p) for p in _alive(ray_processes)]
        assert _wait_for(lambda: not Path(f"/proc/{reapers[0]}").exists() or "zombie" in _status(reapers[0]))
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return ""


def _driver(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter (a Ray driver of its own); it must exit 0."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out


def test_a_driver_that_ends_normally_stops_its_reaper_too():
    code = (
        "from embodia.runner.parallel import ray_session\n"
        "from embodia.runner.ray_reaper import descendants\n"
        "import os, pathlib\n"
        "import time\n"
        "def reapers():\n"
        "    return [p for p in descendants(os.getpid()) if b'import reap;' in pathlib.Path(f'/proc/{p}/cmdline').read_bytes()]\n"
        "with ray_session(2) as ray:\n"
        "    deadline = time.monotonic() + 120  # until the reaper has exec'd (its command line is its own)\n"
        "    while not reapers() and time.monotonic() < deadline:\n"
        "        time.sleep(0.1)\n"
        "    assert len(reapers()) == 1\n"
        "assert not reapers()\n"
    )
    _driver(code)


def test_the_workers_of_a_local_session_run_at_the_drivers_priority():
    """Ray's default worker niceness (15) starved workers beside any busy process; embodia's sessions use 0."""
    code = (
        "import os\n"
        "from embodia.runner.parallel import ray_session\n"
        "with ray_session(1) as ray:\n"
        "    worker = ray.get(ray.remote(lambda: os.nice(0)).remote())\n"
        "print(worker, os.nice(0))  # after the session: it sends stdout to stderr\n"
    )
    out = _driver(code)
    assert out.stdout.split()[-2:] == ["0", "0"], out.stdout
