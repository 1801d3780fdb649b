"""A pose read from tf2's topics by the real policy node (robot install: tf2_msgs built by `make setup`).

The scenario (``tests/robot/tf_scenario.py``) runs in a loopback-only network namespace; its waits are on
messages, bounded by generous timeouts only.
"""

from __future__ import annotations

import json

import pytest

from embodia.robot.netns import check_isolation, run_isolated
from tests.conftest import ROOT
from tests.robot.robot_install import robot_env, robot_python


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    check_isolation()
    workdir = tmp_path_factory.mktemp("tf")
    result = run_isolated(
        [str(robot_python()), "-m", "tests.robot.tf_scenario", str(workdir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=robot_env(ROS_LOG_DIR=str(workdir / "ros_log"), PYTHONUNBUFFERED="1"),
    )
    assert result.returncode == 0, f"scenario failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_node_composes_a_latched_static_transform_with_a_streamed_one(seen):
    assert seen["pose_read"], f"commands seen: {seen['commands']}\n{seen['log']}"


def test_the_pose_goes_stale_when_tf_falls_silent(seen):
    assert seen["safe_after_silence"], seen["log"]
    assert seen["exit_code"] == 0
