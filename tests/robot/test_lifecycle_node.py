"""The managed policy node as an operator drives it: real processes, real lifecycle and parameter services.

The scenario (``tests/robot/lifecycle_scenario.py``) runs inside a loopback-only network namespace; it waits on
service answers and messages, never on fixed timings that a loaded machine could stretch.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from embodia.robot.netns import check_isolation, run_isolated
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    check_isolation()  # a clear error (not a skip) where namespaces cannot be made
    workdir = tmp_path_factory.mktemp("lifecycle")
    result = run_isolated(
        [sys.executable, "-m", "tests.robot.lifecycle_scenario", str(workdir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "ROS_LOG_DIR": str(workdir / "ros_log"), "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 0, f"scenario failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_nothing_is_published_before_activate(seen):
    assert seen["initial_state"] == "unconfigured" and seen["commands_unconfigured"] == 0
    assert seen["configure"] and seen["state_after_configure"] == "inactive"
    assert seen["commands_inactive"] == 0 and seen["commands_before_activate"] == 0
    assert seen["activate"] and seen["runs_policy"]


def test_deactivate_sends_the_safe_command_once_then_nothing(seen):
    assert seen["deactivate"] and seen["state_after_deactivate"] == "inactive"
    assert seen["last_command"] == [0.0, 0.0]
    assert seen["commands_after_deactivate"] == 0
    assert "deactivated: safe command sent" in seen["log"]


def test_cleanup_returns_to_unconfigured_and_configure_reads_the_file_again(seen):
    assert seen["cleanup"] and seen["state_after_cleanup"] == "unconfigured"
    assert seen["configure_again"]


def test_a_policy_that_cannot_load_fails_configure_and_stays_unconfigured(seen):
    assert seen["broken_configure"] is False and seen["broken_state"] == "unconfigured"
    assert "configure failed: PolicyError: no policy at" in seen["broken_log"]
    assert seen["exit_codes"] == {"node": 0, "broken": 0}


def test_every_config_field_is_a_described_parameter(seen):
    assert {"rate_hz", "command.low", "command.high", "command.safe", "observations.0.topic"} <= set(
        seen["listed"]
    )
    rate = seen["descriptors"]["rate_hz"]
    assert rate["range"] == [[0.0, 1000.0]] and "control rate" in rate["description"]
    assert "fixed while configured" in seen["descriptors"]["observations.0.topic"]["description"]


def test_parameters_set_at_runtime_take_effect_and_bad_values_are_refused(seen):
    assert seen["set_high"] == [{"successful": True, "reason": ""}]
    assert seen["clipped_after_set"] and seen["still_clipped"]  # the new limit clips 0.5 to 0.3
    for key, reason in [
        ("set_nan", "command.low.0: Input should be a finite number (got nan)"),
        ("set_low_above_high", "low > high at entry 0"),
        ("set_size", "low has 3 entries, high has 2"),
        ("set_read_only", "observations.0.topic: cannot change while the node runs"),
    ]:
        assert seen[key][0]["successful"] is False and reason in seen[key][0]["reason"], key
    assert seen["set_rate"][0]["successful"]
    # the refused changes left the running values as they were
    assert seen["running_values"] == {
        "command.low": [-1.0, -1.0],
        "command.high": [0.3, 1.0],
        "rate_hz": 20.0,
    }
    assert "refused parameter change" in seen["log"]


def test_diagnostics_report_state_ages_rates_latency_and_faults(seen):
    active = seen["diagnostics_active"]
    assert active["level"] == 1 and "clipped" in active["message"]  # WARN while commands are clipped
    values = active["values"]
    for key in ("age.obs/state", "command_rate_hz", "inference_p50_ms", "inference_p99_ms", "watchdog_trips"):
        assert key in values
    assert values["state"] == "active" and values["target_rate_hz"] == "20"
    assert float(values["age.obs/state"]) < 5 and int(values["clipped_commands"]) > 0
    assert float(values["inference_p50_ms"]) > 0
    inactive = seen["diagnostics_inactive"]
    assert inactive["level"] == 0 and inactive["values"]["state"] == "inactive"


def test_the_shipped_launch_file_autostarts_the_managed_policy_node(tmp_path):
    """sim_policy.launch.yaml managed:=true: the launch configures and activates the node; episodes finish."""
    import numpy as np

    from embodia.policies.linear import LinearPolicy

    seek = LinearPolicy(np.hstack([-np.eye(2), np.eye(2)]).astype(np.float32), np.zeros(2), ["state", "goal"])
    seek.save(tmp_path / "seek")
    results = tmp_path / "results.json"
    launch_file = ROOT / "ros2" / "embodia_ros" / "launch" / "sim_policy.launch.yaml"
    run = run_isolated(
        [
            sys.executable,
            "-m",
            "embodia.cli",
            "robot",
            "launch",
            str(launch_file),
            f"policy:={tmp_path / 'seek'}",
            "managed:=true",
            "episodes:=2",
            "max_steps:=40",
            f"results:={results}",
            "--timeout",
            "300",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "ROS_LOG_DIR": str(tmp_path / "ros_log")},
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    assert (
        "/embodia/policy: configure succeeded" in output and "/embodia/policy: activate succeeded" in output
    )
    episodes = json.loads(results.read_text())["episodes"]
    # lockstep: the simulator steps once per command, so every step of both episodes was the policy's answer
    assert [e["length"] for e in episodes] == [40, 40]
