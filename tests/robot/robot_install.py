"""The torch-free robot install (``.venv-robot``: Python 3.12, ``embodia[robot]``), as the tests use it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import ROOT

ROBOT_PYTHON = ROOT / ".venv-robot" / "bin" / "python"
ROBOT_EMBODIA = ROOT / ".venv-robot" / "bin" / "embodia"
#: what a robot must never need to run a policy
HEAVY = ("torch", "mujoco", "robosuite", "transformers", "ogbench", "dm_control")


def robot_python() -> Path:
    """The robot venv's interpreter; `make setup` builds it (the tests do not skip without it)."""
    assert ROBOT_PYTHON.is_file(), (
        f"{ROBOT_PYTHON} is missing: `make setup` builds the Python 3.12 robot install (embodia[robot])"
    )
    return ROBOT_PYTHON


def robot_env(**extra: str) -> dict[str, str]:
    """This environment for a robot-install process: without the library path and guard the ROS wheels'
    start-up hook (``ros_wheels_bootstrapper``) set for *this* venv, so the robot venv's hook points the
    child at its own ROS libraries (tf2_msgs is built into the robot install only)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "_ROS_WHEELS_BOOTSTRAP_COMPLETE")
    }
    return {**env, **extra}


def run_robot_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(robot_python()), "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
