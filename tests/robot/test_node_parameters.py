"""The node config as flat ROS parameters, and runtime changes checked like the YAML file (no ROS graph)."""

from __future__ import annotations

import math

import pytest

from embodia.robot.config import check_node_config
from embodia.robot.errors import RobotConfigError
from embodia.robot.node_parameters import (
    RUNTIME_FIELDS,
    changed_config,
    config_from_parameters,
    config_parameters,
)
from embodia.robot.rate import RateController

CONFIG = {
    "rate_hz": 50,
    "observations": [
        {"topic": "joints", "type": "JointState", "key": "state", "joint_names": ["a", "b"]},
        {"topic": "goal", "type": "Float64MultiArray", "key": "goal", "size": 2, "required": False},
    ],
    "command": {"topic": "cmd", "low": [-1, -2], "high": [1, 2], "safe": "hold"},
}


def test_parameters_name_every_field_by_its_yaml_path_and_round_trip():
    config = check_node_config(CONFIG)
    flat = config_parameters(config)
    assert flat["rate_hz"] == 50 and flat["command.low"] == [-1, -2] and flat["command.safe"] == "hold"
    assert flat["observations.0.joint_names"] == ["a", "b"] and flat["observations.1.required"] is False
    assert config_from_parameters(flat) == config
    assert set(RUNTIME_FIELDS) <= set(flat) | {"command.safe"}


def test_runtime_changes_apply_and_keep_everything_else():
    config = check_node_config(CONFIG)
    new = changed_config(
        config, [("command.high", [0.5, 2.0]), ("rate_hz", 20.0), ("command.safe", [0.0, 1.0])]
    )
    assert new.command.high == [0.5, 2.0] and new.rate_hz == 20.0 and new.command.safe == [0.0, 1.0]
    assert new.observations == config.observations and new.command.topic == "cmd"
    assert config.command.high == [1, 2]  # the running config is not touched


@pytest.mark.parametrize(
    "changes, message",
    [
        ([("command.low", [math.nan, -2.0])], "command.low.0: Input should be a finite number"),
        ([("command.low", [2.0, -2.0])], "low > high at entry 0"),
        ([("command.low", [-1.0]), ("command.high", [1.0])], "the command has 2 entries, got 1"),
        ([("rate_hz", 5000.0)], "rate_hz"),
        ([("watchdog_timeout", math.inf)], "watchdog_timeout: must be a finite number"),
        ([("command.safe", [5.0, 0.0])], "safe"),
        ([("command.out_of_range", "ignore")], "out_of_range"),
        ([("observations.0.topic", "other")], "observations.0.topic: cannot change while the node runs"),
        ([("command.topic", "other")], "command.topic: cannot change while the node runs"),
    ],
)
def test_bad_runtime_changes_are_refused_with_the_reason(changes, message):
    with pytest.raises(RobotConfigError, match=None) as error:
        changed_config(check_node_config(CONFIG), changes)
    assert message in str(error.value)


def test_rate_change_keeps_the_phase_and_can_clear_statistics():
    rate = RateController(10.0)
    rate.start(0.0)
    rate.tick(0.0)
    rate.tick(0.1)
    rate.set_rate(50.0)
    assert rate.next_deadline == pytest.approx(0.2)  # the next deadline of the old schedule, then 20 ms steps
    rate.tick(0.2)
    assert rate.next_deadline == pytest.approx(0.22)
    assert rate.stats().ticks == 3
    rate.set_rate(5.0, clear_stats=True)
    assert rate.stats().ticks == 0 and rate.stats().target_hz == 5.0
    with pytest.raises(RobotConfigError):
        rate.set_rate(math.nan)
