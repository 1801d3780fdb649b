"""The policy node's health report: levels and fields from a real controller (no ROS graph)."""

from __future__ import annotations

import numpy as np

from embodia.robot.controller import PolicyController
from embodia.robot.convert import make_joint_state
from embodia.robot.diagnostics import ERROR, OK, WARN, diagnostic_array, health_marks, policy_health

CONFIG = {
    "rate_hz": 10,
    "watchdog_timeout": 0.5,
    "observations": [{"topic": "joints", "type": "JointState", "key": "state", "joint_names": ["a", "b"]}],
    "command": {"low": [-1, -1], "high": [1, 1]},
}


class EchoPolicy:
    """act = state; a state starting with 9 raises."""

    def reset(self, seed=None):
        pass

    def act(self, obs):
        if obs["state"][0] == 9:
            raise RuntimeError("broken")
        return np.asarray(obs["state"], dtype=np.float64)


def _observe(controller, values, now):
    controller.observe(0, make_joint_state(np.asarray(values, float), ["a", "b"]), now)


def test_levels_follow_what_happened_since_the_last_report():
    controller = PolicyController(EchoPolicy(), CONFIG)
    marks = health_marks(controller)
    _observe(controller, [0.2, 0.1], 0.0)
    controller.tick(0.01)
    health = policy_health(controller, "active", 0.1, 10.0, marks)
    assert health.level == OK and health.values["age.joints"] == "0.100"
    assert float(health.values["inference_p50_ms"]) > 0 and health.values["watchdog_trips"] == "0"

    marks = health_marks(controller)
    _observe(controller, [3.0, 0.1], 0.2)
    controller.tick(0.21)  # clipped to 1.0
    health = policy_health(controller, "active", 0.3, 10.0, marks)
    assert health.level == WARN and "clipped" in health.message and health.values["clipped_commands"] == "1"
    assert policy_health(controller, "active", 0.3, 10.0, health_marks(controller)).level == OK

    marks = health_marks(controller)
    controller.tick(2.0)  # nothing for 1.8 s: stale, one watchdog trip however many ticks it lasts
    controller.tick(2.1)
    health = policy_health(controller, "active", 2.1, 10.0, marks)
    assert health.level == WARN and "stale" in health.message and health.values["watchdog_trips"] == "1"

    marks = health_marks(controller)
    _observe(controller, [9.0, 0.0], 2.2)
    controller.tick(2.21)
    health = policy_health(controller, "active", 2.3, 10.0, marks)
    assert health.level == ERROR and health.values["policy_errors"] == "1"


def test_an_active_node_under_its_rate_warns_and_an_inactive_one_is_ok():
    controller = PolicyController(EchoPolicy(), CONFIG)
    _observe(controller, [0.2, 0.1], 0.0)
    controller.tick(0.01)
    marks = health_marks(controller)
    assert policy_health(controller, "active", 0.1, 5.0, marks).level == WARN  # 5 of 10 commands/s
    assert policy_health(controller, "inactive", 0.1, 0.0, marks).level == OK
    assert policy_health(None, "unconfigured", 0.1, 0.0, {}).values == {"state": "unconfigured"}


def test_the_report_is_a_diagnostic_array():
    from builtin_interfaces.msg import Time

    controller = PolicyController(EchoPolicy(), CONFIG)
    health = policy_health(controller, "active", 0.0, 0.0, {})
    array = diagnostic_array(health, "/robot/policy: policy", "/robot/policy", Time(sec=3))
    (status,) = array.status
    assert status.level == bytes([health.level]) and status.name == "/robot/policy: policy"
    assert array.header.stamp.sec == 3
    assert {kv.key: kv.value for kv in status.values} == health.values
