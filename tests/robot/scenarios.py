"""Multi-process ROS 2 scenarios, run inside an isolated network namespace by ``test_ros_nodes.py``.

``python -m tests.robot.scenarios NAME WORKDIR`` starts real nodes as separate processes, drives and
watches them with an rclpy node of its own, and prints one JSON line with what it saw; the tests
assert on it. Nothing here is a stand-in: the nodes are the ones users run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


class FaultPolicy:
    """``act = state``, except that a state starting with 7 makes the policy output NaN (a broken network)."""

    chunk_size = 1

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        state = np.asarray(obs["state"], dtype=np.float64)
        return np.full(2, np.nan) if state[0] == 7 else state


def make_fault_policy() -> FaultPolicy:
    return FaultPolicy()


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "embodia.cli", *args],
        cwd=ROOT,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


class Probe:
    """An rclpy node that publishes and records what it needs, spun for given durations."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.node import Node

        rclpy.init()
        self.rclpy = rclpy
        self.node = Node("probe")
        self.received: dict[str, list[tuple[float, Any]]] = {}

    def subscribe(self, cls: type, topic: str) -> None:
        self.received[topic] = []
        self.node.create_subscription(
            cls, topic, lambda m: self.received[topic].append((time.monotonic(), m)), 50
        )

    def spin(self, seconds: float, every: float | None = None, action: Any = None) -> None:
        end = time.monotonic() + seconds
        next_action = time.monotonic()
        while time.monotonic() < end:
            if action is not None and time.monotonic() >= next_action:
                action()
                next_action += every
            self.rclpy.spin_once(self.node, timeout_sec=0.005)

    def wait_for(self, topic: str, count: int, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end and len(self.received[topic]) < count:
            self.rclpy.spin_once(self.node, timeout_sec=0.05)
        return len(self.received[topic]) >= count

    def since(self, topic: str, t0: float) -> list[Any]:
        return [m for t, m in self.received[topic] if t >= t0]


def faults(workdir: Path) -> dict[str, Any]:
    """Policy node under normal input, malformed messages, NaN / out-of-range outputs and silence."""
    import yaml
    from sensor_msgs.msg import Image
    from std_msgs.msg import Float64MultiArray, String

    from embodia.robot.convert import make_image, make_joint_state

    config = {
        "rate_hz": 50,
        "trigger": "timer",
        "watchdog_timeout": 0.3,
        "status_period": 0.2,
        "observations": [
            {"topic": "obs/state", "type": "JointState", "key": "state", "joint_names": ["s0", "s1"]},
            {
                "topic": "camera",
                "type": "Image",
                "key": "rgb",
                "encoding": "rgb8",
                "height": 4,
                "width": 4,
                "required": False,
            },
        ],
        "command": {
            "topic": "cmd",
            "type": "Float64MultiArray",
            "low": [-1, -1],
            "high": [1, 1],
            "out_of_range": "stop",
        },
    }
    (workdir / "faults.yaml").write_text(yaml.safe_dump(config))
    node = _spawn(
        [
            "robot",
            "policy",
            "--policy",
            "tests.robot.scenarios:make_fault_policy",
            "--config",
            str(workdir / "faults.yaml"),
            "--status-out",
            str(workdir / "status.json"),
        ],
        workdir / "policy.log",
    )
    probe = Probe()
    try:
        probe.subscribe(Float64MultiArray, "cmd")
        probe.subscribe(String, "/embodia_policy/status")
        state_pub = probe.node.create_publisher(type(make_joint_state(np.zeros(1), ["a"])), "obs/state", 10)
        image_pub = probe.node.create_publisher(Image, "camera", 10)
        values, names = [0.5, -0.2], ["s0", "s1"]

        def publish() -> None:
            state_pub.publish(make_joint_state(np.asarray(values, float), names, time.time_ns()))

        def published_commands(seconds: float) -> list[list[float]]:
            start = time.monotonic()
            probe.spin(seconds, 0.02, publish)
            tail = start + seconds / 2  # after the node settled into the phase
            return sorted({tuple(np.round(np.asarray(m.data), 6)) for m in probe.since("cmd", tail)})

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and probe.node.count_subscribers("obs/state") == 0:
            probe.spin(0.1)  # until the policy node is up and discovered
        phases: dict[str, Any] = {}
        phases["normal"] = published_commands(1.0)
        names = ["x", "y"]  # wrong joint names: rejected, so the observation goes stale
        phases["wrong_joints"] = published_commands(1.0)
        names = ["s1", "s0"]  # same joints, other order: accepted and reordered
        phases["reordered"] = published_commands(0.8)
        names = ["s0", "s1"]
        for _ in range(3):  # malformed images on an optional topic: rejected, the node keeps running
            image_pub.publish(make_image(np.zeros((4, 4), np.uint8), "mono8"))
            image_pub.publish(make_image(np.zeros((8, 8, 3), np.uint8), "rgb8"))
        phases["bad_images"] = published_commands(0.6)
        values = [5.0, 0.0]
        phases["out_of_range"] = published_commands(0.8)
        values = [7.0, 0.0]
        phases["nan"] = published_commands(0.8)
        start = time.monotonic()
        probe.spin(1.0)  # silence: the watchdog publishes the safe command
        phases["silence"] = sorted({tuple(np.asarray(m.data)) for m in probe.since("cmd", start + 0.5)})
        values = [0.5, -0.2]
        phases["resumed"] = published_commands(1.0)
        statuses = [json.loads(m.data) for _, m in probe.received["/embodia_policy/status"]]
    finally:
        code = _stop(node)
        probe.node.destroy_node()
        probe.rclpy.shutdown()
    return {
        "phases": phases,
        "exit_code": code,
        "last_status": statuses[-1] if statuses else None,
        "final_status": json.loads((workdir / "status.json").read_text()),
        "log": (workdir / "policy.log").read_text(),
    }


def restarts(workdir: Path) -> dict[str, Any]:
    """Kill and restart the policy node, then the bridge: the other side must pick the loop up again."""
    from rosgraph_msgs.msg import Clock

    policy_folder = workdir / "seek"
    from embodia.policies.linear import LinearPolicy

    LinearPolicy(np.hstack([-np.eye(2), np.eye(2)]).astype(np.float32), np.zeros(2), ["state", "goal"]).save(
        policy_folder
    )
    import yaml

    from embodia.robot.sim_bridge import policy_config_for

    config = workdir / "node.yaml"
    node_config = policy_config_for("embodia/PointMaze-Medium-v0", command_type="TwistStamped")
    config.write_text(yaml.safe_dump(node_config.to_dict()))
    sim_args = [
        "robot",
        "sim",
        "embodia/PointMaze-Medium-v0",
        "--command-type",
        "TwistStamped",
        "--max-steps",
        "40",
    ]
    policy_args = ["robot", "policy", "--policy", str(policy_folder), "--config", str(config)]
    probe = Probe()
    probe.subscribe(Clock, "/clock")
    steps: dict[str, int] = {}
    times: dict[str, float] = {}
    t0 = time.monotonic()

    def advanced(seconds: float) -> int:
        start = time.monotonic()
        probe.spin(seconds)
        return len(probe.since("/clock", start))

    sim = _spawn(sim_args, workdir / "sim-1.log")
    policy = _spawn(policy_args, workdir / "policy-1.log")
    try:
        steps["started"] = int(probe.wait_for("/clock", 20, timeout=40))
        times["started"] = round(time.monotonic() - t0, 2)
        steps["running"] = advanced(1.0)
        times["running"] = round(time.monotonic() - t0, 2)
        policy.kill()  # SIGKILL: no goodbye
        policy.wait()
        probe.spin(0.3)
        steps["policy_dead"] = advanced(1.0)
        times["policy_dead"] = round(time.monotonic() - t0, 2)
        policy = _spawn(policy_args, workdir / "policy-2.log")
        start = time.monotonic()
        probe.wait_for("/clock", len(probe.received["/clock"]) + 20, timeout=40)
        steps["policy_restarted"] = len(probe.since("/clock", start))
        times["policy_restarted"] = round(time.monotonic() - t0, 2)
        sim.kill()
        sim.wait()
        probe.spin(0.3)
        steps["sim_dead"] = advanced(1.0)
        times["sim_dead"] = round(time.monotonic() - t0, 2)
        sim = _spawn(sim_args, workdir / "sim-2.log")
        start = time.monotonic()
        probe.wait_for("/clock", len(probe.received["/clock"]) + 20, timeout=40)
        steps["sim_restarted"] = len(probe.since("/clock", start))
        times["sim_restarted"] = round(time.monotonic() - t0, 2)
    finally:
        codes = {"sim": _stop(sim)}
        times["sim_stopped"] = round(time.monotonic() - t0, 2)
        codes["policy"] = _stop(policy)
        times["policy_stopped"] = round(time.monotonic() - t0, 2)
        probe.node.destroy_node()
        probe.rclpy.shutdown()
        times["probe_stopped"] = round(time.monotonic() - t0, 2)
    return {
        "steps": steps,
        "times": times,
        "exit_codes": codes,
        "policy_log": (workdir / "policy-2.log").read_text(),
    }


if __name__ == "__main__":
    name, workdir = sys.argv[1], Path(sys.argv[2])
    result = {"faults": faults, "restarts": restarts}[name](workdir)
    print(json.dumps(result, default=float))
