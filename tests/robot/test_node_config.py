"""Node, bridge and recorder configs refuse NaN, inf and out-of-range values, naming the field, before ROS starts."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from embodia.policies.linear import LinearPolicy
from embodia.robot.config import (
    CommandTopic,
    ObservationTopic,
    PolicyNodeConfig,
    check_node_config,
    load_node_config,
    node_config_from_dict,
)
from embodia.robot.errors import LaunchFileError, RobotConfigError
from embodia.robot.rate import RateController
from embodia.robot.safety import CommandLimits, Watchdog
from tests.conftest import ROOT

NAN, INF = math.nan, math.inf

GOOD = {
    "rate_hz": 20,
    "trigger": "timer",
    "watchdog_timeout": 0.5,
    "observations": [
        {"topic": "obs/state", "type": "JointState", "key": "state", "joint_names": ["s0", "s1"]},
        {"topic": "obs/goal", "type": "JointState", "key": "goal", "joint_names": ["g0", "g1"]},
        {"topic": "camera", "type": "Image", "key": "rgb", "encoding": "rgb8", "height": 2, "width": 2},
        {"topic": "extra", "type": "Float64MultiArray", "key": "extra", "size": 3, "required": False},
    ],
    "command": {"topic": "cmd", "type": "Float64MultiArray", "low": [-1, -1], "high": [1, 1]},
}


def _with(path: str, value: object) -> dict:
    """``GOOD`` with the field at ``path`` (``command.low``, ``observations.2.height``) replaced."""
    data = yaml.safe_load(yaml.safe_dump(GOOD))  # a deep copy
    *parents, last = path.split(".")
    target = data
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[last] = value
    return data


# (field replaced, value, what the one-line error must say)
BAD = [
    ("command.low", [NAN, -1], "command.low.0: Input should be a finite number (got nan)"),
    ("command.low", [-1, -INF], "command.low.1: Input should be a finite number (got -inf)"),
    ("command.high", [INF, 1], "command.high.0: Input should be a finite number (got inf)"),
    ("command.high", [1, NAN], "command.high.1: Input should be a finite number (got nan)"),
    ("command.safe", [NAN, 0], "command.safe.vector.0: Input should be a finite number (got nan)"),
    ("command.safe", [0, INF], "command.safe.vector.1: Input should be a finite number (got inf)"),
    ("command.safe", [0, 0, 0], "command: safe has 3 entries, the command has 2"),
    ("command.safe", [0.5, 3], "command: safe.1 (3) is not within the limits [-1, 1]"),
    ("command.safe", "brake", "command.safe.name: Input should be 'zero' or 'hold' (got 'brake')"),
    ("command.low", [2, -1], "command: low > high at entry 0 (low.0 = 2, high.0 = 1)"),
    ("command.low", [-1], "command: low has 1 entries, high has 2"),
    ("command.low", [], "command.low: List should have at least 1 item"),
    ("command.time_from_start", -0.1, "command.time_from_start: Input should be greater than or equal to 0"),
    ("command.time_from_start", NAN, "command.time_from_start: Input should be a finite number"),
    ("command.out_of_range", "ignore", "command.out_of_range: Input should be 'clip' or 'stop'"),
    ("command.lows", [0, 0], "command.lows: Unexpected keyword argument"),
    ("rate_hz", 0, "rate_hz: Input should be greater than 0 (got 0)"),
    ("rate_hz", -1, "rate_hz: Input should be greater than 0 (got -1)"),
    ("rate_hz", 1e9, "rate_hz: Input should be less than or equal to 1000 (got 1000000000.0)"),
    ("rate_hz", NAN, "rate_hz: Input should be a finite number (got nan)"),
    ("rate_hz", INF, "rate_hz: Input should be a finite number (got inf)"),
    ("rate_hz", "fast", "rate_hz: Input should be a valid number"),
    ("watchdog_timeout", 0, "watchdog_timeout: Input should be greater than 0 (got 0)"),
    ("watchdog_timeout", INF, "watchdog_timeout: Input should be a finite number (got inf)"),
    ("status_period", 0, "status_period: Input should be greater than 0"),
    ("qos_depth", 0, "qos_depth: Input should be greater than or equal to 1"),
    ("torch_threads", 0, "torch_threads: Input should be greater than or equal to 1"),
    ("trigger", "sometimes", "trigger: Input should be 'timer' or 'observation'"),
    ("observations.2.height", 0, "observations.2.height: Input should be greater than or equal to 1 (got 0)"),
    ("observations.2.width", -64, "observations.2.width: Input should be greater than or equal to 1"),
    ("observations.3.size", 0, "observations.3.size: Input should be greater than or equal to 1"),
    ("observations.0.joints", ["s0"], "observations.0.joints: Unexpected keyword argument"),
    ("observations.0.dtype", "float33", "observations.0: dtype: 'float33' is not a numpy dtype"),
    ("observations", [], "observations: List should have at least 1 item"),
    ("rate", 50, "rate: Unexpected keyword argument (got 50)"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[f"{p}={v!r}" for p, v, _ in BAD])
def test_bad_node_config_is_one_line_naming_the_field(path, value, message):
    with pytest.raises(RobotConfigError) as info:
        node_config_from_dict(_with(path, value), "node.yaml")
    text = str(info.value)
    assert text.startswith("node.yaml: ") and message in text, text
    assert "\n" not in text


def test_good_config_round_trips_and_yaml_overrides_are_validated(tmp_path):
    config = node_config_from_dict(GOOD)
    assert check_node_config(config) == config
    assert node_config_from_dict(config.to_dict()) == config  # what `robot node-config` writes reads back
    path = tmp_path / "node.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    assert load_node_config(path, {"rate_hz": 100}).rate_hz == 100.0
    with pytest.raises(
        RobotConfigError, match=r"node.yaml: rate_hz: Input should be a finite number \(got nan\)"
    ):
        load_node_config(path, {"rate_hz": NAN})  # e.g. `--rate-hz nan` or a ROS parameter
    path.write_text("rate_hz: 20\ncommand: {low: [.nan], high: [1]}\nobservations: []\n")
    with pytest.raises(RobotConfigError) as info:
        load_node_config(path)
    assert "command.low.0: Input should be a finite number (got nan)" in str(info.value)
    assert "observations: List should have at least 1 item" in str(info.value)  # every problem at once


def _python_built(**overrides: object) -> PolicyNodeConfig:
    """A config built in Python: the dataclass constructors run ``__post_init__`` only, no range checks."""
    topics = [ObservationTopic("obs/state", "JointState", "state", joint_names=["s0", "s1"])]
    return PolicyNodeConfig(topics, CommandTopic(low=[-1.0, -1.0], high=[1.0, 1.0]), **overrides)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"rate_hz": NAN}, "rate_hz: Input should be a finite number"),
        ({"rate_hz": 5000.0}, "rate_hz: Input should be less than or equal to 1000"),
        ({"watchdog_timeout": -1.0}, "watchdog_timeout: Input should be greater than 0"),
        ({"status_period": INF}, "status_period: Input should be a finite number"),
        ({"qos_depth": 0}, "qos_depth: Input should be greater than or equal to 1"),
    ],
)
def test_a_config_built_in_python_cannot_bypass_the_checks(overrides, message):
    from embodia.robot.controller import PolicyController
    from embodia.robot.policy_node import run_policy_node

    config = _python_built(**overrides)  # the constructor alone accepts it
    policy = LinearPolicy(np.zeros((2, 2), np.float32), np.zeros(2), ["state"])
    with pytest.raises(RobotConfigError, match=message):
        check_node_config(config)
    with pytest.raises(RobotConfigError, match=message):
        PolicyController(policy, config)
    import rclpy

    with pytest.raises(RobotConfigError, match=f"node config: {message}"):
        run_policy_node(policy, config, duration=0.1)
    assert not rclpy.ok()  # refused before ROS started


def test_node_config_for_the_sim_bridge_is_validated():
    from embodia.robot.sim_bridge import policy_config_for

    config = policy_config_for("embodia/PointMaze-Medium-v0", rate_hz=1000)
    assert config.command.low == [-1.0, -1.0] and config.rate_hz == 1000.0
    for rate, message in ((0.0, "greater than 0"), (NAN, "finite number"), (2000.0, "less than or equal")):
        with pytest.raises(
            RobotConfigError, match=f"node config for embodia/PointMaze-Medium-v0: rate_hz: .*{message}"
        ):
            policy_config_for("embodia/PointMaze-Medium-v0", rate_hz=rate)


def test_command_limits_refuse_non_finite_bounds_and_safe_vectors():
    for low, high, safe, message in (
        ([NAN, 0], [1, 1], "zero", "low.0: command bounds and vectors must be finite"),
        ([0, 0], [1, INF], "zero", "high.1: command bounds and vectors must be finite"),
        ([-INF], [1], "zero", "low.0: command bounds"),
        ([0, 0], [1, 1], [0.5, NAN], "safe.1: command bounds and vectors must be finite"),
        ([0, 0], [1, 1], [0.5], "safe has 1 entries, the command has 2"),
        ([0, 0], [1, 1], ["a", "b"], "safe: expected a list of numbers"),
        ([], [], "zero", "low: the command needs at least one entry"),
    ):
        with pytest.raises(RobotConfigError, match=message):
            CommandLimits(low, high, safe=safe)
    with pytest.raises(RobotConfigError, match="low.0: command bounds"):
        CommandTopic(low=[NAN], high=[1.0])  # the dataclass checks its limits even when built directly


def test_watchdog_and_rate_refuse_non_finite_periods():
    for timeout in (0.0, -1.0, NAN, INF):
        with pytest.raises(RobotConfigError, match="watchdog timeout"):
            Watchdog(["state"], timeout)
    for rate in (0.0, -5.0, NAN, INF):
        with pytest.raises(RobotConfigError, match="control rate"):
            RateController(rate)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("rate_hz", NAN, "rate_hz: Input should be a finite number (got nan)"),
        ("rate_hz", 0.0, "rate_hz: Input should be greater than 0"),
        ("rate_hz", 1e6, "rate_hz: Input should be less than or equal to 1000"),
        ("republish_period", 0.0, "republish_period: Input should be greater than 0"),
        ("command_timeout", INF, "command_timeout: Input should be a finite number"),
        ("episodes", 0, "episodes: Input should be greater than or equal to 1"),
        ("max_steps", -3, "max_steps: Input should be greater than or equal to 1"),
        ("seed", -1, "seed: Input should be greater than or equal to 0"),
        ("wait_for_subscribers", -1, "wait_for_subscribers: Input should be greater than or equal to 0"),
        ("mode", "turbo", "mode: Input should be 'lockstep' or 'rate'"),
        ("twist_components", ["linear.w"], "twist_components ['linear.w'] are not Twist components"),
        ("speed", 2, "speed: Unexpected keyword argument"),
    ],
)
def test_bridge_config_is_validated(field, value, message):
    from embodia.robot.sim_bridge import BridgeConfig, SimBridge, check_bridge_config

    data = {"env_id": "embodia/PointMaze-Medium-v0", field: value}
    with pytest.raises(RobotConfigError) as info:
        check_bridge_config(data)
    assert str(info.value).startswith("sim bridge: ") and message in str(info.value), str(info.value)
    if field not in ("mode", "twist_components", "speed"):  # the constructor refuses those itself
        with pytest.raises(RobotConfigError, match=field):
            SimBridge(BridgeConfig(**data))  # built in Python: refused before the environment is made


def test_recorder_options_are_validated_before_ros_starts(tmp_path):
    import rclpy

    from embodia.robot.record import record

    for options, message in (
        ({"duration": NAN}, "recorder: duration: Input should be a finite number (got nan)"),
        ({"duration": 0.0}, "recorder: duration: Input should be greater than 0"),
        ({"episodes": 0}, "recorder: episodes: Input should be greater than or equal to 1"),
        ({"env_id": ""}, "recorder: env_id: String should have at least 1 character"),
    ):
        with pytest.raises(RobotConfigError) as info:
            record(["obs/state"], str(tmp_path / "out.zarr"), **options)
        assert message in str(info.value)
    assert not rclpy.ok() and not (tmp_path / "out.zarr").exists()


def test_launch_file_refuses_a_non_finite_respawn_delay(tmp_path):
    from embodia.robot.launch import parse_launch_file

    for delay in (".nan", ".inf", "-1", "soon"):
        path = tmp_path / "x.launch.yaml"
        path.write_text(f"launch:\n- executable: {{cmd: 'true', respawn: true, respawn_delay: {delay}}}\n")
        with pytest.raises(LaunchFileError, match="respawn_delay must be a finite number of seconds >= 0"):
            parse_launch_file(path)
    path.write_text("launch:\n- executable: {cmd: 'true', respawn: true, respawn_delay: 0.5}\n")
    assert parse_launch_file(path)[0].respawn_delay == 0.5


# ------------------------------------------------------------------ real processes
def marked_policy() -> LinearPolicy:
    """``module:factory`` policy that leaves a marker file: shows whether the CLI got as far as the policy."""
    Path(os.environ["EMBODIA_TEST_MARKER"]).write_text("policy built")
    return LinearPolicy(np.hstack([-np.eye(2), np.eye(2)]).astype(np.float32), np.zeros(2), ["state", "goal"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["policy", "--policy", "tests.robot.test_node_config:marked_policy", "--config", "{bad}"],
            "bad.yaml: command.low.0: Input should be a finite number (got nan)",
        ),
        (
            ["policy", "--policy", "tests.robot.test_node_config:marked_policy", "--config", "{good}"]
            + ["--rate-hz", "nan"],
            "argument --rate-hz: expected a finite number > 0, got 'nan'",
        ),
        (
            ["sim", "embodia/PointMaze-Medium-v0", "--rate-hz", "0"],
            "argument --rate-hz: expected a finite number > 0, got '0'",
        ),
        (
            ["record", "obs/state", "--out", "{out}", "--duration", "inf"],
            "argument --duration: expected a finite number > 0, got 'inf'",
        ),
    ],
    ids=["policy-nan-low", "policy-rate-override", "sim-rate", "record-duration"],
)
def test_cli_refuses_a_bad_config_in_one_line_before_any_node_starts(tmp_path, argv, message):
    from embodia.robot.netns import run_isolated

    marker, log_dir = tmp_path / "marker", tmp_path / "ros_log"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(_with("command.low", [NAN, -1])))  # low: [.nan, -1]
    assert "- .nan" in (tmp_path / "bad.yaml").read_text()
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(GOOD))
    paths = {"bad": tmp_path / "bad.yaml", "good": tmp_path / "good.yaml", "out": tmp_path / "out.zarr"}
    argv = [a.format(**paths) for a in argv]
    result = run_isolated(  # isolated: were the config accepted, a node would start; not on the host network
        [
            sys.executable,
            "-m",
            "embodia.cli",
            "robot",
            *argv,
            *(["--duration", "2"] if argv[0] == "policy" else []),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", "EMBODIA_TEST_MARKER": str(marker), "ROS_LOG_DIR": str(log_dir)},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not marker.exists()  # the policy was never built ...
    assert not log_dir.exists()  # ... and rclpy never initialised (it opens a log file in ROS_LOG_DIR)
    assert not paths["out"].exists()


def test_the_marker_policy_factory_works(tmp_path, monkeypatch):
    """The CLI test above proves something only if resolving the factory would leave the marker."""
    from embodia.robot.policy_node import resolve_policy

    monkeypatch.setenv("EMBODIA_TEST_MARKER", str(tmp_path / "marker"))
    assert isinstance(resolve_policy("tests.robot.test_node_config:marked_policy"), LinearPolicy)
    assert (tmp_path / "marker").exists()


TF = {"topic": "/tf", "type": "TFMessage", "key": "ee", "parent_frame": "base", "child_frame": "tool"}


@pytest.mark.parametrize(
    ("observation", "message"),
    [
        ({**TF, "child_frame": None}, "a TFMessage observation needs parent_frame and child_frame"),
        ({**TF, "parent_frame": ""}, "a TFMessage observation needs parent_frame and child_frame"),
        ({**TF, "fields": ["x", "roll"]}, "fields: ['roll'] are not transform fields"),
        (
            {"topic": "s", "type": "JointState", "key": "s", "parent_frame": "base"},
            "parent_frame and child_frame are for TFMessage topics",
        ),
    ],
)
def test_a_transform_observation_names_both_frames_and_known_fields(observation, message):
    data = {**GOOD, "observations": [GOOD["observations"][0], observation]}
    with pytest.raises(RobotConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        node_config_from_dict(data, "node.yaml")
    config = node_config_from_dict({**GOOD, "observations": [TF]}, "node.yaml")
    assert config.observations[0].fields == ["x", "y", "z", "qx", "qy", "qz", "qw"]
    assert config.observations[0].label == "/tf base->tool"
