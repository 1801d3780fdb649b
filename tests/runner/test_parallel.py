"""Parallel episodes on a real Ray cluster: the store equals the serial run's, a killed worker loses and
duplicates nothing, a multi-node cluster (separate node processes on this machine) runs an evaluation, and
`--workers` without Ray is one line. The cluster: a head with no CPUs and two worker nodes with one each, all
started with `ray start` as separate processes, as Ray's own cluster tests do."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import embodia
from embodia.data.store import TrajectoryStore
from embodia.runner.evaluate import evaluate_policy
from embodia.runner.ray_reaper import descendants, processes_naming, terminate
from tests.conftest import ROOT, free_port
from tests.robot.robot_install import ROBOT_EMBODIA, robot_python

RAY = Path(sys.executable).with_name("ray")


def _ray(*args: str, env: dict[str, str]) -> None:
    result = subprocess.run([str(RAY), *args], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def cluster_processes(temp_dir: Path) -> dict[int, int]:
    """The processes of the cluster whose nodes keep their sessions in ``temp_dir``, with their descendants."""
    return processes_naming(str(temp_dir))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # workers at ordinary priority, as embodia's local sessions run them (Ray's niceness 15 starves them under load)
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_worker_niceness": "0",
    }
    node = ("--object-store-memory", "100000000", "--disable-usage-stats")
    # a temp dir of its own (short: Ray's socket paths must fit 107 bytes) names this cluster's processes, so
    # the teardown stops them and nothing else: `ray stop` would stop every Ray instance on the machine,
    # another user's run included (a full-suite run took down a training queue's Ray that way)
    temp_dir = Path(tempfile.mkdtemp(prefix="embodia-ray-"))
    port = free_port()  # a fixed one collides with a cluster another run left or keeps
    _ray(
        "start",
        "--head",
        "--num-cpus",
        "0",
        "--port",
        str(port),
        "--include-dashboard",
        "false",
        "--temp-dir",
        str(temp_dir),
        *node,
        env=env,
    )
    try:
        for _ in range(2):
            _ray("start", "--address", f"127.0.0.1:{port}", "--num-cpus", "1", *node, env=env)
        yield {"address": f"127.0.0.1:{port}", "env": env, "temp_dir": temp_dir}
    finally:
        terminate(cluster_processes(temp_dir), kill_after=10.0)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _embodia(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embodia.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def _same_stores(a: Path, b: Path) -> None:
    left, right = TrajectoryStore(a), TrajectoryStore(b)
    assert left.num_episodes == right.num_episodes > 0
    assert left.keys == right.keys
    for i in range(left.num_episodes):
        ours, theirs = left.episode(i), right.episode(i)
        for key in ours:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=f"episode {i}, {key}")
        m, n = left.episode_meta(i), right.episode_meta(i)
        assert (m.env_id, m.env_kwargs, m.seed, m.length, m.success, m.return_) == (
            n.env_id,
            n.env_kwargs,
            n.seed,
            n.length,
            n.success,
            n.return_,
        )
        np.testing.assert_array_equal(m.initial_state, n.initial_state)
        np.testing.assert_array_equal(m.final_state, n.final_state)
    left.verify()


def test_a_parallel_run_stores_exactly_the_serial_run(cluster, tmp_path):
    run = ("run", "embodia/PointMaze-Medium-v0", "--policy", "expert", "--episodes", "6", "--seed", "11")
    serial = _embodia(
        *run, "--max-steps", "90", "--record", str(tmp_path / "serial.zarr"), "--quiet", env=cluster["env"]
    )
    assert serial.returncode == 0, serial.stderr
    parallel = _embodia(
        *run,
        "--max-steps",
        "90",
        "--record",
        str(tmp_path / "parallel.zarr"),
        "--ray-address",
        cluster["address"],
        "--json",
        env=cluster["env"],
    )
    assert parallel.returncode == 0, parallel.stderr
    _same_stores(tmp_path / "serial.zarr", tmp_path / "parallel.zarr")
    result = json.loads(parallel.stdout)
    assert [e["seed"] for e in result["episodes"]] == list(range(11, 17))
    assert len(result["workers"]) == 2 and sum(w["episodes"] for w in result["workers"].values()) == 6


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(cluster, tmp_path):
    store = tmp_path / "killed.zarr"
    args = ("run", "embodia/CubeSingle-v0", "--policy", "random", "--episodes", "10", "--seed", "0")
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "embodia.cli",
            *args,
            "--max-steps",
            "150",
            "--record",
            str(store),
            "--ray-address",
            cluster["address"],
            "--json",
        ],
        cwd=ROOT,
        env=cluster["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = None
    deadline = time.time() + 120
    while killed is None and time.time() < deadline and driver.poll() is None:
        running = _running_tasks(cluster)
        if running:
            time.sleep(0.3)  # mid-episode
            killed = int(running[0])
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    out, err = driver.communicate(timeout=300)
    assert killed is not None, "no episode task was seen running"
    assert driver.returncode == 0, err[-3000:]
    assert len(json.loads(out)["episodes"]) == 10, (out[-2000:], err[-2000:])
    embodia.rollout(
        "embodia/CubeSingle-v0", "random", episodes=10, seed=0, max_steps=150, record=tmp_path / "serial.zarr"
    )
    _same_stores(tmp_path / "serial.zarr", store)  # every episode once, each equal to the serial one


def test_a_multi_node_cluster_runs_an_evaluation(cluster):
    result = _embodia(
        "nav", "eval", "--task", "pointnav", "--episodes", "6", "--ray-address", cluster["address"], "--json",
        env=cluster["env"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["episodes"] == 6 and report["success_rate"] == 1.0 and 0.8 < report["metrics"]["spl"] <= 1.0
    nodes = {name.split(" node ")[-1] for name in report["workers"]}
    assert len(nodes) == 2  # both worker nodes ran episodes
    serial = evaluate_policy(
        "expert", "embodia/Nav-PointNav-v0", episodes=6, seeds=[0], seed_stride=1, metrics=("spl",)
    )
    assert [e["length"] for e in report["episode_stats"]] == [e.length for e in serial.episode_stats]


def test_the_teardown_stops_this_cluster_and_no_other_ray(cluster):
    # a bystander that looks like another Ray instance's raylet (its own temp dir): the teardown must not see it
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "raylet", "--temp-dir=/tmp/someone-elses-ray"]
    )
    try:
        found = cluster_processes(cluster["temp_dir"])
        commands = [
            Path(f"/proc/{pid}/cmdline").read_bytes() for pid in found if Path(f"/proc/{pid}").exists()
        ]
        assert sum(b"/raylet/raylet\0" in c for c in commands) == 3  # the head and both worker nodes
        assert sum(b"/gcs/gcs_server\0" in c for c in commands) == 1
        assert bystander.pid not in found and os.getpid() not in found
    finally:
        bystander.kill()
        bystander.wait()


def test_a_killed_driver_leaves_the_cluster_it_was_given_running(cluster, tmp_path):
    """--ray-address: the cluster is someone else's; no reaper watches it, a SIGKILLed driver leaves it up."""
    driver = subprocess.Popen(
        [sys.executable, "-m", "embodia.cli", "run", "embodia/PointMaze-Medium-v0", "--policy", "expert",
         "--episodes", "2000", "--ray-address", cluster["address"], "--quiet", "--record", str(tmp_path / "a.zarr")],
        cwd=ROOT, env=cluster["env"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (tmp_path / "a.zarr" / "meta").is_dir():
            time.sleep(0.2)  # connected and running episodes
        assert (tmp_path / "a.zarr" / "meta").is_dir()
        assert not [p for p in descendants(driver.pid) if b"import reap;" in _cmdline(p)]
    finally:
        driver.kill()
        driver.wait()
    # the cluster still runs work
    result = _embodia(
        "run", "embodia/PointMaze-Medium-v0", "--policy", "expert", "--episodes", "2",
        "--ray-address", cluster["address"], "--json", env=cluster["env"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_workers_without_ray_installed_is_one_line():
    robot_python()  # the torch-free robot install has no Ray
    result = subprocess.run(
        [str(ROBOT_EMBODIA), "run", "embodia/PointMaze-Medium-v0", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "needs the 'ray' part of embodia" in lines[0] and "pip install 'embodia[ray]'" in lines[0]


# Ctrl-C delivered at the worst moment: inside the store write of the driver's in-order commit (the
# store's add_episodes sends SIGINT to its own process once 3 episodes are in). Before the fix, the
# KeyboardInterrupt left the commit counter behind the store and the episodes were written twice.
_CTRL_C_IN_A_WRITE = """
import os, signal, sys
from embodia.data.store import TrajectoryStore
from embodia.runner.parallel import run_parallel

write = TrajectoryStore.add_episodes
def add_episodes(self, episodes):
    write(self, episodes)
    if self.num_episodes >= 3 and not getattr(add_episodes, "fired", False):
        add_episodes.fired = True
        os.kill(os.getpid(), signal.SIGINT)
TrajectoryStore.add_episodes = add_episodes

store = TrajectoryStore(sys.argv[1], mode="a")
run = run_parallel("embodia/PointMaze-Medium-v0", "random", episodes=24, seed=0, workers=2,
                   address=sys.argv[2], max_steps=40, store=store, commit_every=0.0)
print(run.interrupted, len(run.episodes))
"""


def test_ctrl_c_inside_a_store_write_loses_and_duplicates_nothing(cluster, tmp_path):
    store = tmp_path / "stopped.zarr"
    result = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_A_WRITE, str(store), cluster["address"]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=cluster["env"],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    interrupted, finished = result.stdout.split()[-2:]
    # how many finished before the interrupt took effect depends on load (under load every worker may be done
    # before the driver's first write, which then holds all 24): what must hold is no loss and no duplicate
    assert interrupted == "True" and 3 <= int(finished) <= 24
    kept = TrajectoryStore(store)
    seeds = kept.episodes_table()["seed"].tolist()
    assert seeds == sorted(set(seeds)) and len(seeds) == int(finished)  # each finished episode once, in order
    kept.verify()


def test_ctrl_c_stops_the_workers_and_keeps_every_finished_episode(cluster, tmp_path):
    store = tmp_path / "stopped.zarr"
    args = ("run", "embodia/CubeSingle-v0", "--policy", "random", "--episodes", "40", "--seed", "0")
    driver = subprocess.Popen(
        [sys.executable, "-m", "embodia.cli", *args, "--max-steps", "150", "--record", str(store)]
        + ["--ray-address", cluster["address"], "--commit-every", "0", "--quiet"],
        cwd=ROOT,
        env=cluster["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and driver.poll() is None:
        if (store / "meta" / "episode_ends" / "c" / "0").exists() and TrajectoryStore(
            store
        ).num_episodes >= 3:
            break
        time.sleep(0.2)
    driver.send_signal(signal.SIGINT)
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 130, err[-3000:]
    kept = TrajectoryStore(store)
    assert 3 <= kept.num_episodes < 40
    seeds = kept.episodes_table()["seed"].tolist()
    assert len(set(seeds)) == len(seeds)  # nothing twice
    deadline = time.monotonic() + 120  # cancelled tasks end when their workers get to it
    while time.monotonic() < deadline and _running_tasks(cluster):
        time.sleep(0.2)
    assert not _running_tasks(cluster)
    # every kept episode is the serial run's episode of the same seed
    reference = embodia.rollout(
        "embodia/CubeSingle-v0",
        "random",
        episodes=1,
        seed=seeds[-1],
        max_steps=150,
        record=tmp_path / "one.zarr",
    )
    assert reference.episodes[0].length == kept.episode_meta(len(seeds) - 1).length
    np.testing.assert_array_equal(
        TrajectoryStore(tmp_path / "one.zarr").episode(0)["action"], kept.episode(len(seeds) - 1)["action"]
    )


def _running_tasks(cluster: dict) -> list[int]:
    """Pids of this cluster's Ray workers running an episode task now (not another test process's: the
    suite runs in parallel workers, and a Ray run of theirs must neither be killed nor counted here)."""
    return [
        pid for pid in cluster_processes(cluster["temp_dir"]) if _cmdline(pid).startswith(b"ray::run_task")
    ]


class _SlowRaylet:
    """Ray's module as far as starting a local instance goes, whose raylet misses Ray's fixed 30 s
    registration window ``misses`` times (what a heavily loaded machine did to a comparison run)."""

    def __init__(self, misses: int) -> None:
        self.misses, self.inits, self.shutdowns = misses, 0, 0

    def init(self, **options) -> None:
        self.inits += 1
        if self.inits <= self.misses:
            raise Exception("The current node timed out during startup. This could happen because ...")

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_local_ray_that_misses_its_start_window_is_started_again(capsys):
    from embodia.core.errors import EmbodiaError
    from embodia.runner.parallel import LOCAL_START_ATTEMPTS, _start_local_ray

    ray = _SlowRaylet(misses=LOCAL_START_ATTEMPTS - 1)
    _start_local_ray(ray, 2, {})
    assert (ray.inits, ray.shutdowns) == (LOCAL_START_ATTEMPTS, LOCAL_START_ATTEMPTS - 1)
    assert "starting it again" in capsys.readouterr().err

    ray = _SlowRaylet(misses=LOCAL_START_ATTEMPTS)
    with pytest.raises(EmbodiaError, match="did not start in 3 attempts.*--workers 1"):
        _start_local_ray(ray, 2, {})
    assert ray.shutdowns == LOCAL_START_ATTEMPTS  # nothing half-started is left behind

    class Broken(_SlowRaylet):
        def init(self, **options) -> None:
            raise ValueError("num_cpus must be positive")

    with pytest.raises(ValueError):  # any other failure is not retried
        _start_local_ray(Broken(0), 0, {})
