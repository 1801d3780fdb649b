"""A policy node reading a pose from tf2's topics, run inside an isolated network namespace.

``python -m tests.robot.tf_scenario WORKDIR`` (the robot install's Python: it has tf2_msgs) latches a static
transform on ``/tf_static`` *before* the node starts (as robot_state_publisher does at boot), starts
``embodia robot policy`` with an observation ``base -> tool`` read from tf, streams the dynamic transform
``flange -> tool`` on ``/tf``, and records the commands of a policy that answers with the pose it reads.
Then ``/tf`` falls silent and the safe command must follow. Prints one JSON line of what it saw; every wait
is on a message, bounded only by a generous timeout.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.robot.scenarios import Probe, _spawn, _stop

CONFIG = {
    "rate_hz": 50,
    "trigger": "timer",
    "watchdog_timeout": 0.5,
    "observations": [
        {
            "topic": "/tf",
            "type": "TFMessage",
            "key": "tool",
            "parent_frame": "base",
            "child_frame": "tool",
            "fields": ["x", "y", "z", "yaw"],
        }
    ],
    "command": {"topic": "cmd", "type": "Float64MultiArray", "low": [-5] * 4, "high": [5] * 4},
}
#: base -> flange (static): 0.1 m ahead, 0.2 m up, turned 90 degrees about z; flange -> tool: 0.5 m along x
#: (dynamic), so the tool is at (0.1, 0.5, 0.2) in base, turned 90 degrees
EXPECTED = [0.1, 0.5, 0.2, round(math.pi / 2, 4)]


class PosePolicy:
    """Answers with the observation it was given: the command shows what the node read from tf."""

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        return np.asarray(obs["tool"], dtype=np.float64)


def make_pose_policy() -> PosePolicy:
    return PosePolicy()


def _transform(parent: str, child: str, xyz: list[float], yaw: float, stamp_ns: int) -> Any:
    from geometry_msgs.msg import TransformStamped

    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z = xyz
    msg.transform.rotation.z, msg.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


def run(workdir: Path) -> dict[str, Any]:
    import yaml
    from std_msgs.msg import Float64MultiArray
    from tf2_msgs.msg import TFMessage

    from embodia.robot import ros

    (workdir / "node.yaml").write_text(yaml.safe_dump(CONFIG))
    probe = Probe()
    seen: dict[str, Any] = {}
    node = None
    try:
        probe.subscribe(Float64MultiArray, "cmd")
        static = probe.node.create_publisher(TFMessage, "/tf_static", ros.tf_qos(static=True))
        dynamic = probe.node.create_publisher(TFMessage, "/tf", ros.tf_qos(static=False))
        static.publish(TFMessage(transforms=[_transform("base", "flange", [0.1, 0.0, 0.2], math.pi / 2, 0)]))
        node = _spawn(
            [
                "robot",
                "policy",
                "--policy",
                "tests.robot.tf_scenario:make_pose_policy",
                "--config",
                str(workdir / "node.yaml"),
            ],
            workdir / "policy.log",
        )

        def publish() -> None:
            transform = _transform("flange", "tool", [0.5, 0.0, 0.0], 0.0, time.time_ns())
            dynamic.publish(TFMessage(transforms=[transform]))

        def commands() -> list[list[float]]:
            return [[round(float(v), 4) for v in m.data] for _, m in probe.received["cmd"]]

        end = time.monotonic() + 90
        while time.monotonic() < end and EXPECTED not in commands():
            probe.spin(0.1, 0.02, publish)
        seen["pose_read"] = EXPECTED in commands()
        seen["commands"] = commands()[-3:]
        # /tf falls silent: the transform observation goes stale and the safe command (zero) follows
        silent_since = time.monotonic()
        end = silent_since + 60
        safe = [0.0] * 4
        while time.monotonic() < end and safe not in [
            [round(float(v), 4) for v in m.data] for m in probe.since("cmd", silent_since)
        ]:
            probe.spin(0.1)
        seen["safe_after_silence"] = safe in [
            [round(float(v), 4) for v in m.data] for m in probe.since("cmd", silent_since)
        ]
    finally:
        if node is not None:
            seen["exit_code"] = _stop(node)
        probe.node.destroy_node()
        probe.rclpy.shutdown()
    seen["log"] = (workdir / "policy.log").read_text()[-3000:]
    return seen


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]))))
