"""Observation -> command latency through the policy node, against a bare rclpy echo node (the floor).

Everything runs in a fresh loopback-only network namespace (the script re-executes itself inside one).
A driver publishes a JointState (7 joints, position + velocity) and waits for the command that answers
it, alternating between three nodes running side by side in blocks (interleaved, so machine drift hits all):

- echo: a bare rclpy node that republishes the joint positions as a Float64MultiArray on receipt;
- policy: ``embodia robot policy`` with an MLP policy folder (embodia's ``actor`` type, 2x256 hidden) run
  by torch, observation trigger, full safety path (conversion, watchdog, clipping);
- onnx: the same node and the same network exported (``embodia export --onnx``) and run by ONNX Runtime
  (one intra-op thread); its folder holds only config.json + model.onnx, as on a torch-free robot, so the
  node loads it through ONNX Runtime and never imports torch.

The ratios of the medians are the cost of each policy node over the ROS floor. Then each policy node runs
in timer mode at 50 and 100 Hz while the driver streams observations at 200 Hz; the node reports its
achieved rate and tick jitter (lateness against the drift-free schedule). Before any node starts, the
network alone: the median time of one ``act`` of each policy folder in this process, one thread each.

Writes ``results/benchmarks/ros_latency.json`` (tables ``latency``, ``rates``, ``act``; the raw numbers in
``data``); ``--quick`` writes under ``runs/quick-results/`` instead, ``--results PATH`` anywhere.

    python -m benchmarks.bench_ros_latency [--quick] [--results PATH]
"""

from __future__ import annotations

import argparse
import contextlib
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

from embodia.core.results import Column, Table

ROOT = Path(__file__).resolve().parents[1]
JOINTS = [f"j{i}" for i in range(7)]
#: the policy nodes: name (topic prefix) -> policy folder under the work directory
POLICY_NODES = {"policy": "mlp", "onnx": "mlp_onnx"}


def echo_node() -> None:
    """A bare rclpy node: JointState in, Float64MultiArray out, nothing else."""
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    rclpy.init()
    node = Node("echo")
    pub = node.create_publisher(Float64MultiArray, "echo/cmd", 10)

    def on_state(msg: JointState) -> None:
        out = Float64MultiArray()
        out.data = msg.position
        pub.publish(out)

    node.create_subscription(JointState, "echo/joint_states", on_state, 10)
    with contextlib.suppress(KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        rclpy.spin(node)


def _write_policies(work: Path) -> None:
    """The torch policy folder ``mlp`` and its export ``mlp_onnx`` (config.json + model.onnx only)."""
    import torch

    from embodia.policies.actor_policy import save_actor_policy
    from embodia.policies.networks import Actor, ObsNormalizer
    from embodia.policies.onnx_export import export_onnx

    torch.manual_seed(0)
    actor = Actor(obs_dim=14, action_dim=7, horizon=1, hidden=(256, 256))
    folder = work / POLICY_NODES["policy"]
    save_actor_policy(folder, actor, ObsNormalizer(["state"], np.zeros(14), np.ones(14)), hidden=(256, 256))
    model = export_onnx(folder)
    deployed = work / POLICY_NODES["onnx"]
    deployed.mkdir()
    for path in (folder / "config.json", model):
        shutil.copy(path, deployed / path.name)
    from embodia.core.policy import load_policy

    loaded = type(load_policy(deployed)).__name__  # what the node will load (runtime "auto")
    assert loaded == "OnnxActorPolicy", f"{deployed} loads as {loaded}, not through ONNX Runtime"


def _node_config(path: Path, trigger: str, rate_hz: float, prefix: str = "policy") -> None:
    import yaml

    path.write_text(
        yaml.safe_dump(
            {
                "rate_hz": rate_hz,
                "trigger": trigger,
                "watchdog_timeout": 0.5,
                "status_period": 10.0,
                "observations": [
                    {
                        "topic": f"{prefix}/joint_states",
                        "type": "JointState",
                        "key": "state",
                        "joint_names": JOINTS,
                        "fields": ["position", "velocity"],
                    }
                ],
                "command": {
                    "topic": f"{prefix}/cmd",
                    "type": "Float64MultiArray",
                    "low": [-1] * 7,
                    "high": [1] * 7,
                },
            }
        )
    )


def _spawn(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


class Driver:
    def __init__(self) -> None:
        import rclpy
        from rclpy.node import Node
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        rclpy.init()
        self.rclpy = rclpy
        self.node = Node("driver")
        self.JointState = JointState
        self.pubs = {
            name: self.node.create_publisher(JointState, f"{name}/joint_states", 10)
            for name in ("echo", *POLICY_NODES)
        }
        self.replies: dict[str, list[float]] = {name: [] for name in ("echo", *POLICY_NODES)}
        for name in self.replies:
            self.node.create_subscription(
                Float64MultiArray,
                f"{name}/cmd",
                lambda _m, n=name: self.replies[n].append(time.perf_counter()),
                10,
            )
        self.rng = np.random.default_rng(0)

    def state(self) -> object:
        msg = self.JointState()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.name = JOINTS
        msg.position = self.rng.uniform(-1, 1, 7).tolist()
        msg.velocity = self.rng.uniform(-1, 1, 7).tolist()
        return msg

    def wait_connected(self, name: str, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.node.count_subscribers(f"{name}/joint_states") and self.node.count_publishers(
                f"{name}/cmd"
            ):
                return
            self.rclpy.spin_once(self.node, timeout_sec=0.1)
        raise RuntimeError(f"{name} node did not come up")

    def round_trips(self, name: str, count: int) -> list[float]:
        """Send one observation, wait for its command; returns latencies in ms."""
        latencies = []
        for _ in range(count):
            before = len(self.replies[name])
            sent = time.perf_counter()
            self.pubs[name].publish(self.state())
            deadline = sent + 0.5
            while len(self.replies[name]) == before and time.perf_counter() < deadline:
                self.rclpy.spin_once(self.node, timeout_sec=0.01)
            if len(self.replies[name]) > before:
                latencies.append((self.replies[name][before] - sent) * 1e3)
            time.sleep(0.002)
        return latencies

    def stream(self, name: str, seconds: float, hz: float) -> None:
        end, period = time.perf_counter() + seconds, 1.0 / hz
        next_send = time.perf_counter()
        while time.perf_counter() < end:
            if time.perf_counter() >= next_send:
                self.pubs[name].publish(self.state())
                next_send += period
            self.rclpy.spin_once(self.node, timeout_sec=max(0.0, next_send - time.perf_counter()))


def _policy_node(work: Path, name: str, config: Path, status: Path | None = None) -> subprocess.Popen:
    """``embodia robot policy`` on the policy folder of node ``name``."""
    args = ["-m", "embodia.cli", "robot", "policy", "--policy", str(work / POLICY_NODES[name])]
    args += ["--config", str(config)] + (["--status-out", str(status)] if status else [])
    return _spawn(args)


def _rates(driver: Driver, work: Path, name: str, seconds: float) -> dict:
    """Timer mode at 50 and 100 Hz under a 200 Hz observation stream: the node's rate and jitter."""
    rates = {}
    for hz in (50.0, 100.0):
        _node_config(work / f"rate_{name}.yaml", "timer", hz, prefix=name)
        status_file = work / f"status_{name}_{int(hz)}.json"
        node = _policy_node(work, name, work / f"rate_{name}.yaml", status_file)
        try:
            driver.wait_connected(name)
            driver.replies[name].clear()
            driver.stream(name, 1.0, 200.0)  # settle
            start = len(driver.replies[name])
            driver.stream(name, seconds, 200.0)
            arrivals = np.diff(driver.replies[name][start:])
        finally:
            _stop(node)
        status = json.loads(status_file.read_text())
        rates[str(int(hz))] = {
            **status["rate"],
            "received_hz": float(1.0 / arrivals.mean()),
            "interarrival_std_ms": float(arrivals.std() * 1e3),
            "safe_stops": status["safe_stops"],
        }
    return rates


def act_cost(work: Path, calls: int) -> dict:
    """The network alone: median microseconds per ``act`` of the torch folder and of its ONNX export, one
    thread each (as the node runs them), in blocks of 100 calls alternating between the two; and how far
    the export's outputs are from torch's (measured by ``export_onnx``'s check)."""
    import torch

    from embodia.core.policy import load_policy

    torch.set_num_threads(1)
    policies = {
        "policy": load_policy(work / POLICY_NODES["policy"], runtime="torch"),
        "onnx": load_policy(work / POLICY_NODES["onnx"], runtime="onnx"),
    }
    obs = {"state": np.random.default_rng(0).uniform(-1, 1, 14).astype(np.float32)}
    times: dict[str, list[float]] = {name: [] for name in policies}
    for policy in policies.values():
        policy.reset(0)
        for _ in range(100):  # warm up
            policy.act(obs)
    for _ in range(max(1, calls // 100)):
        for name, policy in policies.items():
            for _ in range(100):
                start = time.perf_counter()
                policy.act(obs)
                times[name].append((time.perf_counter() - start) * 1e6)
    costs = {name: {"median_us": float(np.median(v)), "calls": len(v)} for name, v in times.items()}
    # the export's own check: the largest |onnx - torch| over its sample observations
    record = json.loads((work / POLICY_NODES["onnx"] / "config.json").read_text())["onnx"]
    costs["onnx"]["max_abs_diff"] = record["max_abs_diff"]
    return costs


def inside(quick: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench_ros_"))
    os.environ.setdefault("ROS_LOG_DIR", str(work / "log"))
    _write_policies(work)
    act = act_cost(work, 1000 if quick else 10000)
    echo = _spawn([__file__, "--echo"])
    nodes = {}
    for name in POLICY_NODES:
        _node_config(work / f"latency_{name}.yaml", "observation", 100.0, prefix=name)
        nodes[name] = _policy_node(work, name, work / f"latency_{name}.yaml")
    driver = Driver()
    blocks, per_block = (4, 100) if quick else (10, 200)
    names = ("echo", *POLICY_NODES)
    samples: dict[str, list[float]] = {name: [] for name in names}
    try:
        for name in names:
            driver.wait_connected(name)
        for name in names:
            driver.round_trips(name, 20)  # warm up every path
        for _ in range(blocks):
            for name in names:
                samples[name] += driver.round_trips(name, per_block)
    finally:
        for node in nodes.values():
            _stop(node)
    latency = {
        name: {"p50_ms": float(np.percentile(v, 50)), "p99_ms": float(np.percentile(v, 99)), "n": len(v)}
        for name, v in samples.items()
    }
    latency["ratio_p50"] = latency["policy"]["p50_ms"] / latency["echo"]["p50_ms"]
    latency["ratio_p50_onnx"] = latency["onnx"]["p50_ms"] / latency["echo"]["p50_ms"]
    _stop(echo)

    seconds = 3.0 if quick else 10.0
    rates = _rates(driver, work, "policy", seconds)
    rates_onnx = _rates(driver, work, "onnx", seconds)
    driver.node.destroy_node()
    driver.rclpy.shutdown()
    return {"latency": latency, "rates": rates, "rates_onnx": rates_onnx, "act": act, "quick": quick}


LATENCY_ROWS = (
    ("bare rclpy echo node (floor)", "echo"),
    ("embodia policy node, MLP 2x256, torch", "policy"),
    ("embodia policy node, MLP 2x256, ONNX Runtime", "onnx"),
)
RUNTIMES = (("torch", "rates", "policy"), ("ONNX Runtime", "rates_onnx", "onnx"))


def tables(data: dict) -> dict[str, Table]:
    """The three tables of the results file: round-trip latency, timer-mode rates, the network alone."""
    lat = data["latency"]
    latency = Table(
        [
            Column("path", "path (JointState 7 joints -> command)"),
            Column("p50_ms", "p50 ms", ".2f"),
            Column("p99_ms", "p99 ms", ".2f"),
            Column("samples", "samples"),
            Column("ratio_p50", "p50 / floor p50", ".2f"),
        ]
    )
    ratios = {"echo": None, "policy": lat["ratio_p50"], "onnx": lat["ratio_p50_onnx"]}
    for label, key in LATENCY_ROWS:
        latency.add(
            path=label,
            p50_ms=lat[key]["p50_ms"],
            p99_ms=lat[key]["p99_ms"],
            samples=lat[key]["n"],
            ratio_p50=ratios[key],
        )
    rates = Table(
        [
            Column("runtime", "runtime"),
            Column("target_hz", "target Hz"),
            Column("achieved_hz", "achieved Hz (node)", ".2f"),
            Column("received_hz", "received Hz (driver)", ".2f"),
            Column("jitter_p50_ms", "tick jitter p50 ms", ".2f"),
            Column("jitter_p99_ms", "p99 ms", ".2f"),
            Column("jitter_max_ms", "max ms", ".2f"),
            Column("overruns", "overruns"),
            Column("interarrival_std_ms", "inter-arrival std ms", ".2f"),
        ]
    )
    for runtime, key, _ in RUNTIMES:
        for hz, r in data[key].items():
            rates.add(
                runtime=runtime,
                target_hz=int(hz),
                achieved_hz=r["achieved_hz"],
                received_hz=r["received_hz"],
                jitter_p50_ms=r["jitter_p50_ms"],
                jitter_p99_ms=r["jitter_p99_ms"],
                jitter_max_ms=r["jitter_max_ms"],
                overruns=r["overruns"],
                interarrival_std_ms=r["interarrival_std_ms"],
            )
    act = Table(
        [
            Column("runtime", "runtime (one thread)"),
            Column("act_us", "µs per act, median", ".0f"),
            Column("calls", "calls"),
            Column("max_abs_diff", "largest difference from torch", ".0e"),
        ]
    )
    for runtime, _, key in RUNTIMES:
        cost = data["act"][key]
        act.add(
            runtime=runtime,
            act_us=cost["median_us"],
            calls=cost["calls"],
            max_abs_diff=cost.get("max_abs_diff"),
        )
    return {"latency": latency, "rates": rates, "act": act}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/ros_latency.json)"
    )
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--echo", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.echo:
        echo_node()
        return
    if args.inside:
        print(json.dumps(inside(args.quick)))
        return
    sys.path.insert(0, str(ROOT))  # run as a file (make bench): benchmarks/ is importable
    from benchmarks._common import save_results
    from embodia.robot.netns import run_isolated

    inner = [sys.executable, "-m", "benchmarks.bench_ros_latency", "--inside"]
    result = run_isolated(
        inner + (["--quick"] if args.quick else []), cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    if result.returncode != 0:
        raise SystemExit(f"benchmark failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    results = tables(data)
    for table in results.values():
        print(table.markdown(), end="\n\n")
    save_results(
        "ros_latency",
        results,
        quick=args.quick,
        path=args.results,
        data=data,
        title="ROS 2 policy node: observation -> command latency, control rate, and the network alone",
    )


if __name__ == "__main__":
    main()
