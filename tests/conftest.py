"""Shared fixtures. Rendering is headless (EGL) everywhere."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

ROOT = Path(__file__).resolve().parents[1]

# Tests Ctrl-C their subprocesses (training, launch files, ROS nodes). A run started as a background job
# of a non-interactive shell inherits SIGINT *ignored*, and so would every child: Python would then never
# raise KeyboardInterrupt. With a Python handler here, exec'd children start with the default disposition,
# as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run_cli(*args: str, timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess:
    """Run ``python -m embodia.cli ARGS`` in a subprocess, capturing output."""
    result = subprocess.run(
        [sys.executable, "-m", "embodia.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"embodia {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result


@pytest.fixture
def cli():
    return run_cli
