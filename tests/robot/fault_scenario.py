"""One fault of the matrix through the real simulator bridge and policy node, inside an isolated network.

``python -m tests.robot.fault_scenario WORKDIR SPEC MODE`` writes a seek policy and a node config for
PointMaze, starts ``embodia robot sim ... --faults SPEC`` (two episodes) and ``embodia robot policy`` as their
own processes, records every command with an rclpy probe until the simulator has finished, and prints one
JSON line: the episodes, the node's final status and the stamps its commands answered.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.robot.scenarios import Probe, _spawn, _stop

ENV = "embodia/PointMaze-Medium-v0"
STEPS = 30


def run(workdir: Path, spec: str, mode: str) -> dict[str, Any]:
    import yaml
    from geometry_msgs.msg import TwistStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from embodia.policies.linear import LinearPolicy
    from embodia.robot.convert import stamp_to_ns
    from embodia.robot.sim_bridge import policy_config_for

    seek = LinearPolicy(np.hstack([-np.eye(2), np.eye(2)]).astype(np.float32), np.zeros(2), ["state", "goal"])
    seek.save(workdir / "seek")
    config = policy_config_for(ENV, command_type="TwistStamped", watchdog_timeout=0.3).to_dict()
    (workdir / "node.yaml").write_text(yaml.safe_dump(config))
    rate = ["--mode", "rate", "--rate-hz", "50"] if mode == "rate" else []
    node = _spawn(
        [
            "robot",
            "policy",
            "--policy",
            str(workdir / "seek"),
            "--config",
            str(workdir / "node.yaml"),
            "--status-out",
            str(workdir / "status.json"),
        ],
        workdir / "policy.log",
    )
    probe = Probe()
    sim = None
    try:
        probe.subscribe(TwistStamped, "cmd")
        for key in ("state", "goal"):  # the second subscriber the simulator waits for
            probe.subscribe(JointState, f"obs/{key}")
        probe.subscribe(String, "episode")
        # the simulator starts once the node and this probe subscribe its topics; it cannot see whether the
        # node's command publisher reaches this probe yet (discovery is per pair), so start it only then
        commands = next(sub for sub in probe.node.subscriptions if sub.topic_name == "/cmd")
        deadline = time.monotonic() + 120
        while commands.get_publisher_count() < 1 and time.monotonic() < deadline:
            probe.spin(0.05)
        sim = _spawn(
            [
                "robot",
                "sim",
                ENV,
                "--episodes",
                "2",
                "--max-steps",
                str(STEPS),
                "--command-type",
                "TwistStamped",
                "--results",
                str(workdir / "results.json"),
                "--faults",
                spec,
                "--fault-seed",
                "0",
                "--wait-for-subscribers",  # the node and this probe: the probe sees every command
                "2",
                *rate,
            ],
            workdir / "sim.log",
        )
        deadline = time.monotonic() + 240
        while sim.poll() is None and time.monotonic() < deadline:
            probe.spin(0.1)
        sim_code = sim.poll()
    finally:
        node_code = _stop(node)
        if sim is not None and sim.poll() is None:
            _stop(sim)
        probe.node.destroy_node()
        probe.rclpy.shutdown()
    stamps = [stamp_to_ns(m.header.stamp) for _, m in probe.received["cmd"]]
    counts = {topic: len(messages) for topic, messages in probe.received.items()}
    return {
        "sim_exit": sim_code,
        "node_exit": node_code,
        "results": json.loads((workdir / "results.json").read_text())
        if (workdir / "results.json").exists()
        else None,
        "status": json.loads((workdir / "status.json").read_text()),
        "command_stamps": stamps,
        "received": counts,
        "sim_log": (workdir / "sim.log").read_text()[-3000:],
        "policy_log": (workdir / "policy.log").read_text()[-3000:],
    }


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), sys.argv[2], sys.argv[3]), default=float))
