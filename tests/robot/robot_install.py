"""The torch-free robot install (``.venv-robot``: Python 3.12, ``embodia[robot]``), as the tests use it."""

from __future__ import annotations

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


def run_robot_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(robot_python()), "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
