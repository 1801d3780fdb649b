"""Scaling out on Ray: episodes/s with 1 and 2 workers, through a multi-node cluster, Ray's overhead per
episode, and what the single writer sustains.

    python -m benchmarks.bench_parallel [--quick] [--results PATH]

- speed-up: `rollout(..., record=store)` of CubeSingle (expert) and Kitchen-OpenDrawer (expert), serially
  (no Ray) and with 2 local Ray workers (the Ray start is outside the clock: a session is opened first),
  once with the worker processes starting on the clock (their imports and environment construction, as one
  short command pays them; against the serial run that makes its environment on the clock) and once with
  them running (as in a long job; against the serial run on an environment made before);
- multi-node: the same through a cluster of separate node processes on this machine (a head with no CPUs,
  two worker nodes with one CPU each, started with `ray start`);
- overhead: one worker running episodes that last ~1 s (Kitchen-OpenDrawer's expert), against the serial
  loop running the same episodes (worker and environment built first): Ray time / serial time - 1;
- writer: how many finished episodes per second the driver commits (the bound of a cluster of any size), for
  a state-only CubeSingle episode of 200 steps and a 64x64 RGB episode of 200 steps.

Writes ``results/benchmarks/parallel.json`` (``--quick``: under ``runs/quick-results/``), the raw numbers in
its ``data``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import embodia
from benchmarks._common import save_results
from embodia.core.results import Column, Table
from embodia.data.recorder import EpisodeRecorder
from embodia.data.store import TrajectoryStore
from embodia.runner.parallel import ray_session, run_parallel
from embodia.runner.ray_reaper import processes_naming, terminate

RAY = Path(sys.executable).with_name("ray")


def episodes_per_second(
    env_id: str, episodes: int, workers: int, address: str | None, tmp: Path, built: bool = False
) -> float:
    """Episodes/s of a recorded expert rollout; ``built``: serially, on an environment made off the clock."""
    store = tmp / f"{env_id.split('/')[-1]}-{workers}-{bool(address)}.zarr"
    env = embodia.make(env_id) if built else env_id
    started = time.perf_counter()
    result = embodia.rollout(
        env, "expert", episodes=episodes, seed=0, record=store, workers=workers, ray_address=address
    )
    seconds = time.perf_counter() - started
    assert len(result.episodes) == episodes
    if built:
        env.close()
    shutil.rmtree(store, ignore_errors=True)
    return episodes / seconds


#: the writer benchmark's episodes: steps, and bytes per row (state 28 + action 5 float32, reward float32,
#: three flags; RGB adds a 64x64x3 uint8 frame)
WRITER_STEPS = 200
WRITER_ROW_BYTES = {"state": 28 * 4 + 5 * 4 + 4 + 3, "rgb64": 28 * 4 + 5 * 4 + 4 + 3 + 64 * 64 * 3}


def writer_rate(rgb: bool, seconds: float, tmp: Path) -> float:
    rng = np.random.default_rng(0)
    steps = WRITER_STEPS
    data = {
        "state": rng.normal(size=(steps, 28)).astype(np.float32),
        "action": rng.uniform(-1, 1, size=(steps, 5)).astype(np.float32),
        "reward": np.zeros(steps, np.float32),
        "terminated": np.zeros(steps, bool),
        "truncated": np.eye(1, steps, steps - 1, dtype=bool)[0],
        "success": np.zeros(steps, bool),
    }
    if rgb:
        data["rgb"] = rng.integers(0, 255, size=(steps, 64, 64, 3), dtype=np.uint8)
    info = {"env_id": "embodia/CubeSingle-v0", "env_kwargs": {}, "seed": 0, "success": False}
    path = tmp / f"writer-{rgb}.zarr"
    with TrajectoryStore(path, mode="w") as store:
        recorder = EpisodeRecorder(store, "embodia/CubeSingle-v0", commit_every=0.0)
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            recorder.add_finished((data, {**info, "seed": count}))
            count += 1
        recorder.flush()
        rate = count / (time.perf_counter() - started)
    shutil.rmtree(path, ignore_errors=True)
    return rate


def stage(text: str) -> None:
    """One line on stderr as each part starts (a run cut short by a timeout says where it was)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def free_port() -> int:
    """A TCP port nothing listens on now (a fixed one collides with another cluster on the machine)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_cluster(env: dict[str, str], temp_dir: Path) -> str:
    """A 3-node cluster on this machine whose nodes keep their sessions in ``temp_dir`` (what names its
    processes for the teardown: ``ray stop`` would stop every Ray on the machine, other people's included),
    its head on a free port."""
    port = free_port()
    env = {**env, "RAY_worker_niceness": "0"}  # the workers at the driver's priority, as a local session's
    node = ("--object-store-memory", "100000000", "--disable-usage-stats", "--temp-dir", str(temp_dir))
    subprocess.run(
        [
            str(RAY),
            "start",
            "--head",
            "--num-cpus",
            "0",
            "--port",
            str(port),
            "--include-dashboard",
            "false",
            *node,
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    for _ in range(2):
        subprocess.run(
            [str(RAY), "start", "--address", f"127.0.0.1:{port}", "--num-cpus", "1", *node],
            check=True,
            capture_output=True,
            env=env,
        )
    return f"127.0.0.1:{port}"


def tables(raw: dict) -> dict[str, Table]:
    """The tables the documentation shows, from the raw numbers: speed-ups, Ray's overhead, the writer."""
    speedup = Table(
        [
            Column("env", "environment (expert)"),
            Column("episodes", "episodes"),
            Column("serial", "serial ep/s, env made on the clock", ".2f"),
            Column("serial_env_built", "serial ep/s, env made before", ".2f"),
            Column("ray_2_workers_cold", "Ray, 2 workers, started on the clock: ep/s", ".2f"),
            Column("cold_speedup", "vs serial (on the clock)", ".2f"),
            Column("ray_2_workers", "Ray, 2 workers, running: ep/s", ".2f"),
            Column("speedup", "vs serial (env made before)", ".2f"),
            Column("cluster_3_nodes", "Ray cluster (head + 2 nodes), running: ep/s", ".2f"),
            Column("cluster_speedup", "vs serial (env made before)", ".2f"),
        ]
    )
    for e in raw["speedup"]:
        speedup.add(
            env=e["env_id"].removeprefix("embodia/").removesuffix("-v0"),
            episodes=e["episodes"],
            serial=e["serial"],
            serial_env_built=e["serial_env_built"],
            ray_2_workers_cold=e["ray_2_workers_cold"],
            cold_speedup=e["ray_2_workers_cold"] / e["serial"],
            ray_2_workers=e["ray_2_workers"],
            speedup=e["ray_2_workers"] / e["serial_env_built"],
            cluster_3_nodes=e["cluster_3_nodes"],
            cluster_speedup=e["cluster_3_nodes"] / e["serial_env_built"],
        )
    o = raw["overhead"]
    task_ms = (o["one_step_episode_seconds_ray"] - o["one_step_episode_seconds_serial"]) * 1e3
    overhead = Table(
        [
            Column("episode", "episodes"),
            Column("serial_s", "serial, s per episode", ".3f"),
            Column("ray_s", "Ray, one worker on one CPU, s per episode", ".3f"),
            Column("overhead", "Ray's overhead (median of paired runs)", "+.1%"),
            Column("task_ms", "Ray's fixed cost per episode task, ms", ".1f"),
            Column("task_share", "that cost, share of a serial episode", ".1%"),
        ]
    )
    overhead.add(
        episode="Kitchen-OpenDrawer, expert",
        serial_s=o["episode_seconds_serial"],
        ray_s=o["episode_seconds_ray_1_cpu"],
        overhead=o["median_ratio"] - 1,
        task_ms=task_ms,
        task_share=task_ms / 1e3 / o["episode_seconds_serial"],
    )
    writer = Table(
        [
            Column("episode", "episode (200 steps)"),
            Column("episodes_per_s", "episodes/s", ".0f"),
            Column("steps_per_s", "steps/s", ",.0f"),
            Column("mb_per_s", "MB/s of rows", ",.1f"),
        ]
    )
    for key, label in [("state", "state only (CubeSingle-sized)"), ("rgb64", "64x64 RGB")]:
        rate = raw["writer"][key]
        writer.add(
            episode=label,
            episodes_per_s=rate,
            steps_per_s=rate * WRITER_STEPS,
            mb_per_s=rate * WRITER_STEPS * WRITER_ROW_BYTES[key] / 1e6,
        )
    return {"speedup": speedup, "overhead": overhead, "writer": writer}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/parallel.json)"
    )
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-parallel-"))
    # --quick: the light environment only (every Ray session's workers would build a robosuite kitchen again;
    # the overhead part below still runs the kitchen's expert)
    cases = (
        [("embodia/CubeSingle-v0", 6)]
        if args.quick
        else [
            ("embodia/CubeSingle-v0", 40),
            ("embodia/Kitchen-OpenDrawer-v0", 12),
        ]
    )
    raw = {"speedup": [], "overhead": {}, "writer": {}}
    try:
        for env_id, episodes in cases:
            stage(f"speed-up: {env_id}, {episodes} episodes, serial then Ray with 2 workers")
            serial = episodes_per_second(env_id, episodes, 1, None, tmp)  # the env is made on the clock
            serial_built = episodes_per_second(env_id, episodes, 1, None, tmp, built=True)
            with ray_session(2):  # started once, outside the clock, as a long job would
                cold = episodes_per_second(env_id, episodes, 2, None, tmp)  # workers start on the clock
                warm = episodes_per_second(env_id, episodes, 2, None, tmp)  # workers already up
            raw["speedup"].append(
                {
                    "env_id": env_id,
                    "episodes": episodes,
                    "serial": serial,
                    "serial_env_built": serial_built,
                    "ray_2_workers_cold": cold,
                    "ray_2_workers": warm,
                }
            )
        os.environ["RAY_AUTH_MODE"] = "disabled"
        cluster_dir = Path(tempfile.mkdtemp(prefix="embodia-ray-"))  # short: Ray's socket paths fit 107 bytes
        try:
            stage("speed-up: a 3-node cluster on this machine")
            address = start_cluster(dict(os.environ), cluster_dir)
            with ray_session(2, address):
                for entry in raw["speedup"]:
                    episodes_per_second(entry["env_id"], 2, 2, address, tmp)  # start the node's workers
                    entry["cluster_3_nodes"] = episodes_per_second(
                        entry["env_id"], entry["episodes"], 2, address, tmp
                    )
        finally:
            terminate(processes_naming(str(cluster_dir)), kill_after=10.0)
            shutil.rmtree(cluster_dir, ignore_errors=True)
        # overhead: one worker, ~1 s episodes (Kitchen-OpenDrawer's expert), both on a built environment;
        # serial and Ray in turns, the median of the per-repeat ratios (drift and episode noise cancel)
        n, repeats = (3, 1) if args.quick else (12, 3)
        env_id = "embodia/Kitchen-OpenDrawer-v0"
        stage(f"overhead: {env_id}, {n} episodes x {repeats}, serial and Ray in turns")
        env = embodia.make(env_id)
        serial_times, ray_times = [], []
        with ray_session(1):  # one CPU: the tasks run one after the other, as the serial loop does
            run_parallel(env_id, "expert", episodes=1, seed=n, workers=1)  # start the worker, build its env
            for _ in range(repeats):
                started = time.perf_counter()
                embodia.rollout(env, "expert", episodes=n, seed=0)
                serial_times.append((time.perf_counter() - started) / n)
                started = time.perf_counter()
                run_parallel(env_id, "expert", episodes=n, seed=0, workers=1)
                ray_times.append((time.perf_counter() - started) / n)
            # Ray's fixed cost per episode task, measured on one-step episodes (nothing else to amortise it)
            tiny_env, tiny = embodia.make("embodia/PointMaze-Medium-v0"), 50 if args.quick else 300
            run_parallel("embodia/PointMaze-Medium-v0", "random", episodes=2, seed=0, workers=1, max_steps=1)
            started = time.perf_counter()
            embodia.rollout(tiny_env, "random", episodes=tiny, seed=0, max_steps=1)
            tiny_serial = (time.perf_counter() - started) / tiny
            started = time.perf_counter()
            run_parallel(
                "embodia/PointMaze-Medium-v0", "random", episodes=tiny, seed=0, workers=1, max_steps=1
            )
            tiny_ray = (time.perf_counter() - started) / tiny
            tiny_env.close()
        env.close()
        serial_seconds = statistics.median(serial_times)
        ray_seconds = statistics.median(ray_times)
        ratio = statistics.median(r / s for r, s in zip(ray_times, serial_times))
        raw["overhead"] = {
            "episode_seconds_serial": serial_seconds,
            "episode_seconds_ray_1_cpu": ray_seconds,
            "median_ratio": ratio,
            "one_step_episode_seconds_serial": tiny_serial,
            "one_step_episode_seconds_ray": tiny_ray,
            "serial_times": serial_times,
            "ray_times": ray_times,
        }
        stage("writer: episodes committed per second")
        raw["writer"] = {
            "state": writer_rate(False, 2 if args.quick else 5, tmp),
            "rgb64": writer_rate(True, 2 if args.quick else 5, tmp),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results = tables(raw)
    for table in results.values():
        print(table.markdown(), end="\n\n")
    save_results(
        "parallel",
        results,
        quick=args.quick,
        path=args.results,
        data=raw,
        title="Scaling out on Ray: speed-up, Ray's overhead per episode, the single writer",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
