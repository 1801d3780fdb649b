"""The robot install runs on ROS 2 Jazzy's Python (3.12) without torch, MuJoCo, robosuite or transformers."""

from __future__ import annotations

import json
import subprocess

from tests.robot.robot_install import HEAVY, ROBOT_EMBODIA, robot_python, run_robot_python


def test_the_robot_install_is_python_312_and_imports_no_heavy_package():
    result = run_robot_python(
        "import sys, json\n"
        "import embodia, embodia.robot.policy_node, embodia.robot.sim_bridge, embodia.robot.record\n"
        "import embodia.robot.launch, embodia.robot.bag_import, embodia.robot.mcap, embodia.cli\n"
        "from embodia.robot.controller import PolicyController\n"
        "embodia.cli.build_parser()\n"
        f"print(json.dumps({{'version': sys.version_info[:2], 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"version": [3, 12], "heavy": []}
    assert (
        "rclpy"
        in subprocess.run([str(robot_python()), "-m", "pip", "list"], capture_output=True, text=True).stdout
    )


def test_a_part_that_is_not_installed_is_one_line():
    for argv in (["run", "embodia/CubeSingle-v0"], ["train", "bc", "--dataset", "x.zarr", "--out", "r"]):
        result = subprocess.run([str(ROBOT_EMBODIA), *argv], capture_output=True, text=True, timeout=120)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert "needs the 'sim' part of embodia" in lines[0] and "pip install 'embodia[sim]'" in lines[0]
