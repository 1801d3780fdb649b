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
achieved rate and tick jitter (lateness against the drift-free schedule). ``--quick`` saves its numbers as
``ros_latency_quick.json``, so a smoke run never replaces the full benchmark's ``ros_latency.json``.

    python -m benchmarks.bench_ros_latency [--quick]
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


def inside(quick: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench_ros_"))
    os.environ.setdefault("ROS_LOG_DIR", str(work / "log"))
    _write_policies(work)
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
    return {"latency": latency, "rates": rates, "rates_onnx": rates_onnx, "quick": quick}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--echo", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo:
        echo_node()
        return
    if args.inside:
        print(json.dumps(inside(args.quick)))
        return
    sys.path.insert(0, str(ROOT))
    from benchmarks._common import markdown_table, save
    from embodia.robot.netns import run_isolated

    argv = [sys.executable, "-m", "benchmarks.bench_ros_latency", "--inside"] + (
        ["--quick"] if args.quick else []
    )
    result = run_isolated(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise SystemExit(f"benchmark failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    lat = data["latency"]
    print(
        markdown_table(
            ["path (JointState 7 joints -> command)", "p50 ms", "p99 ms", "samples"],
            [
                [name, f"{lat[key]['p50_ms']:.2f}", f"{lat[key]['p99_ms']:.2f}", str(lat[key]["n"])]
                for name, key in (
                    ("bare rclpy echo node (floor)", "echo"),
                    ("embodia policy node, MLP 2x256, torch", "policy"),
                    ("embodia policy node, MLP 2x256, ONNX Runtime", "onnx"),
                )
            ]
            + [
                ["ratio of medians (torch / echo)", f"{lat['ratio_p50']:.2f}", "", ""],
                ["ratio of medians (ONNX / echo)", f"{lat['ratio_p50_onnx']:.2f}", "", ""],
            ],
        )
    )
    print()
    print(
        markdown_table(
            [
                "runtime",
                "target Hz",
                "achieved Hz (node)",
                "received Hz (driver)",
                "tick jitter p50 ms",
                "p99 ms",
                "max ms",
                "overruns",
                "inter-arrival std ms",
            ],
            [
                [
                    runtime,
                    hz,
                    f"{r['achieved_hz']:.2f}",
                    f"{r['received_hz']:.2f}",
                    f"{r['jitter_p50_ms']:.2f}",
                    f"{r['jitter_p99_ms']:.2f}",
                    f"{r['jitter_max_ms']:.2f}",
                    str(r["overruns"]),
                    f"{r['interarrival_std_ms']:.2f}",
                ]
                for runtime, key in (("torch", "rates"), ("ONNX Runtime", "rates_onnx"))
                for hz, r in data[key].items()
            ],
        )
    )
    print(f"saved {save('ros_latency_quick' if args.quick else 'ros_latency', data)}")


if __name__ == "__main__":
    main()
