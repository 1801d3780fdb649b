"""The managed policy node driven as an operator would, run inside an isolated network namespace.

``python -m tests.robot.lifecycle_scenario WORKDIR`` starts ``embodia robot policy --lifecycle`` as its own
process (and a second one with a policy that cannot load), drives the transitions and parameters through
the lifecycle and parameter services from an rclpy node of its own, records the command topic and
``/diagnostics``, and prints one JSON line of what it saw. Every wait is on an event (a service answer, a
message), never a fixed sleep that load could stretch past.
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
    "status_period": 0.2,
    "observations": [
        {"topic": "obs/state", "type": "JointState", "key": "state", "joint_names": ["s0", "s1"]}
    ],
    "command": {"topic": "cmd", "type": "Float64MultiArray", "low": [-1, -1], "high": [1, 1]},
}
STATE = [0.5, -0.2]
SAFE = [0.0, 0.0]


def _rounded(msg: Any) -> list[float]:
    return [round(float(v), 6) for v in msg.data]


def run(workdir: Path) -> dict[str, Any]:
    import yaml
    from diagnostic_msgs.msg import DiagnosticArray
    from rcl_interfaces.msg import ParameterType
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    from std_msgs.msg import Float64MultiArray

    from embodia.robot.convert import make_joint_state
    from embodia.robot.lifecycle_node import change_state, get_state

    (workdir / "node.yaml").write_text(yaml.safe_dump(CONFIG))
    policy = ["--policy", "tests.robot.scenarios:make_fault_policy"]
    node = _spawn(
        [
            "robot",
            "policy",
            "--lifecycle",
            *policy,
            "--config",
            str(workdir / "node.yaml"),
            "--status-out",
            str(workdir / "status.json"),
        ],
        workdir / "policy.log",
    )
    broken = _spawn(
        [
            "robot",
            "policy",
            "--lifecycle",
            "--policy",
            str(workdir / "no-such-policy"),
            "--config",
            str(workdir / "node.yaml"),
            "--ros-args",
            "-r",
            "__node:=broken",
        ],
        workdir / "broken.log",
    )
    probe = Probe()
    seen: dict[str, Any] = {}
    try:
        probe.subscribe(Float64MultiArray, "cmd")
        probe.subscribe(DiagnosticArray, "/diagnostics")
        publisher = probe.node.create_publisher(type(make_joint_state(np.zeros(1), ["a"])), "obs/state", 10)

        def publish() -> None:
            publisher.publish(make_joint_state(np.asarray(STATE, float), ["s0", "s1"], time.time_ns()))

        def spin_until(condition: Any, timeout: float = 30.0) -> bool:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if condition():
                    return True
                probe.spin(0.05, 0.02, publish)
            return condition()

        def commands_since(t0: float) -> list[list[float]]:
            return [_rounded(m) for m in probe.since("cmd", t0)]

        def call(future: Any, timeout: float = 30.0) -> Any:
            spin_until(future.done, timeout)
            return future.result()

        seen["initial_state"] = get_state(probe.node, "/embodia_policy", timeout=60)
        probe.spin(1.0, 0.02, publish)  # observations arrive; an unconfigured node publishes nothing
        seen["commands_unconfigured"] = len(probe.received["cmd"])

        seen["configure"] = change_state(probe.node, "/embodia_policy", "configure", timeout=60)
        seen["state_after_configure"] = get_state(probe.node, "/embodia_policy")
        probe.spin(1.0, 0.02, publish)
        seen["commands_inactive"] = len(probe.received["cmd"])

        before_activate = time.monotonic()
        seen["activate"] = change_state(probe.node, "/embodia_policy", "activate")
        seen["commands_before_activate"] = len([t for t, _ in probe.received["cmd"] if t < before_activate])
        seen["runs_policy"] = spin_until(lambda: STATE in commands_since(before_activate))

        # parameters: described with types, ranges and read-only flags; changed at runtime; bad values refused
        parameters = AsyncParameterClient(probe.node, "/embodia_policy")
        parameters.wait_for_services(timeout_sec=30)
        names = ["rate_hz", "command.high", "observations.0.topic", "command.safe"]
        described = call(parameters.describe_parameters(names)).descriptors
        seen["descriptors"] = {
            name: {
                "read_only": d.read_only,
                "range": [[r.from_value, r.to_value] for r in d.floating_point_range],
                "description": d.description,
            }
            for name, d in zip(names, described)
        }
        listed = call(parameters.list_parameters()).result.names
        seen["listed"] = sorted(n for n in listed if n.startswith(("command.", "observations.", "rate_hz")))

        def set_parameters(*pairs: tuple[str, Any]) -> list[dict[str, Any]]:
            results = call(parameters.set_parameters([Parameter(n, value=v) for n, v in pairs])).results
            return [{"successful": r.successful, "reason": r.reason} for r in results]

        seen["set_high"] = set_parameters(("command.high", [0.3, 1.0]))
        changed = time.monotonic()
        seen["clipped_after_set"] = spin_until(lambda: [0.3, -0.2] in commands_since(changed))
        seen["set_nan"] = set_parameters(("command.low", [math.nan, -1.0]))
        seen["set_low_above_high"] = set_parameters(("command.low", [0.5, -1.0]))
        seen["set_size"] = set_parameters(("command.low", [-1.0, -1.0, -1.0]))
        seen["set_read_only"] = set_parameters(("observations.0.topic", "elsewhere"))
        seen["set_rate"] = set_parameters(("rate_hz", 20.0))
        values = call(parameters.get_parameters(["command.low", "command.high", "rate_hz"])).values
        seen["running_values"] = {
            "command.low": list(values[0].double_array_value),
            "command.high": list(values[1].double_array_value),
            "rate_hz": values[2].double_value if values[2].type == ParameterType.PARAMETER_DOUBLE else None,
        }
        after_refusals = time.monotonic()
        seen["still_clipped"] = spin_until(lambda: [0.3, -0.2] in commands_since(after_refusals))

        def diagnostics_with(predicate: Any) -> Any:
            for _, array in reversed(probe.received["/diagnostics"]):
                for status in array.status:
                    values = {kv.key: kv.value for kv in status.values}
                    if status.name.startswith("/embodia_policy") and predicate(values):
                        return {"level": status.level[0], "message": status.message, "values": values}
            return None

        spin_until(lambda: diagnostics_with(lambda v: v.get("target_rate_hz") == "20") is not None)
        seen["diagnostics_active"] = diagnostics_with(lambda v: v.get("target_rate_hz") == "20")

        # deactivate: the safe command once, then nothing
        seen["deactivate"] = change_state(probe.node, "/embodia_policy", "deactivate")
        deactivated = time.monotonic()
        probe.spin(1.5, 0.02, publish)
        after = [(t, _rounded(m)) for t, m in probe.received["cmd"] if t >= deactivated - 1.0]
        seen["last_command"] = after[-1][1] if after else None
        seen["commands_after_deactivate"] = len([1 for t, _ in after if t >= deactivated + 0.5])
        seen["state_after_deactivate"] = get_state(probe.node, "/embodia_policy")
        spin_until(lambda: diagnostics_with(lambda v: v.get("state") == "inactive") is not None)
        seen["diagnostics_inactive"] = diagnostics_with(lambda v: v.get("state") == "inactive")

        seen["cleanup"] = change_state(probe.node, "/embodia_policy", "cleanup")
        seen["state_after_cleanup"] = get_state(probe.node, "/embodia_policy")
        seen["configure_again"] = change_state(probe.node, "/embodia_policy", "configure")

        # a policy that cannot load: configure fails, the node stays unconfigured
        seen["broken_configure"] = change_state(probe.node, "/broken", "configure", timeout=60)
        seen["broken_state"] = get_state(probe.node, "/broken")
    finally:
        codes = {"node": _stop(node), "broken": _stop(broken)}
        probe.node.destroy_node()
        probe.rclpy.shutdown()
    seen["exit_codes"] = codes
    seen["log"] = (workdir / "policy.log").read_text()
    seen["broken_log"] = (workdir / "broken.log").read_text()
    return seen


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1])), default=float))
