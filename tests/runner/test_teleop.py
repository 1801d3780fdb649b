"""Teleoperation (``embodia teleop``) driven through a virtual X display: xdotool types on Xvfb, robosuite's
keyboard device hears it through pynput, and the kept episode lands in the trajectory store.

Nothing here waits a fixed time for the program: each step waits for a line the program prints (``ready``,
``kept``, ``done``) with a generous timeout, so a loaded machine only makes the test slower.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from embodia.data.store import TrajectoryStore
from embodia.envs.kitchen import decode_instruction
from tests.conftest import ROOT

TIMEOUT = 240.0  # seconds for any one line: building a kitchen on a busy machine can take a while


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """A fresh Xvfb display (its number chosen by Xvfb itself), stopped after the module's tests."""
    for program in ("Xvfb", "xdotool"):
        assert shutil.which(program), f"{program} is not installed (apt-get install xvfb xdotool)"
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
        pass_fds=(write_end,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    with os.fdopen(read_end) as numbers:
        number = numbers.readline().strip()  # Xvfb writes it once it accepts connections
    assert number, "Xvfb did not start"
    try:
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=30)


class Program:
    """``embodia ARGS`` as a subprocess on the display, its stdout read line by line by a thread."""

    def __init__(self, display: str, *args: str) -> None:
        env = {**os.environ, "DISPLAY": display, "COLUMNS": "200"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "embodia.cli", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, prefix: str) -> str:
        """The next line starting with ``prefix`` (fails if the program ends or goes quiet first)."""
        while True:
            try:
                line = self._queue.get(timeout=TIMEOUT)
            except queue.Empty:
                pytest.fail(
                    f"no line starting with {prefix!r} within {TIMEOUT:.0f} s; output so far: {self.lines}"
                )
            if line is None:
                pytest.fail(f"embodia ended before printing {prefix!r}: {self.lines}\n{self.stderr()}")
            self.lines.append(line)
            if line.startswith(prefix):
                return line

    def printed_since(self) -> list[str]:
        """The lines printed since the last :meth:`wait_for`, without waiting (for failure messages)."""
        lines = []
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return lines
            if line is not None:
                lines.append(line)

    def stderr(self) -> str:
        if self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def finish(self) -> int:
        try:
            return self.process.wait(timeout=TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def xdotool(display: str, *args: str) -> None:
    subprocess.run(["xdotool", *args], env={**os.environ, "DISPLAY": display}, check=True, timeout=60)


def assert_window_shows(
    display: str, instruction: str, image_size: int, program: Program | None = None
) -> None:
    """The teleop window is on the screen with the instruction drawn across its top (waits for its next frame)."""
    from PIL import ImageGrab

    from embodia.runner.teleop import BANNER_HEIGHT, WINDOW_TITLE, compose_view
    from embodia.runner.teleop_devices import device_help

    env = {**os.environ, "DISPLAY": display}
    found = subprocess.run(
        ["xdotool", "search", "--sync", "--name", WINDOW_TITLE],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    window = found.stdout.split()[0]
    geometry = subprocess.run(
        ["xdotool", "getwindowgeometry", "--shell", window],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    box = dict(line.split("=") for line in geometry.split())
    x, y, width, height = (int(box[k]) for k in ("X", "Y", "WIDTH", "HEIGHT"))
    status = ("",) * 4  # the banner depends on the instruction and the window's width only
    expected = compose_view(
        np.zeros((image_size, image_size, 3), np.uint8), instruction, status, device_help("keyboard")
    )
    assert (height, width) == expected.shape[:2]
    banner = expected[:BANNER_HEIGHT, :, ::-1]  # BGR -> RGB, as the screen is read
    assert (banner == 255).any()  # the instruction is drawn in white
    deadline = time.monotonic() + TIMEOUT
    # the window shows the new instruction with its next frame (20 a second)
    while time.monotonic() < deadline:
        screen = np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB"))
        if np.array_equal(screen[y : y + BANNER_HEIGHT, x : x + width], banner):
            return
        time.sleep(0.1)
    later = program.printed_since() if program is not None else []
    pytest.fail(
        f"the window never showed the instruction {instruction!r}; the program printed since: {later}, "
        f"running: {program is not None and program.process.poll() is None}"
    )


def test_keyboard_episode_is_recorded(display: str, tmp_path: Path) -> None:
    store_path = tmp_path / "demos.zarr"
    program = Program(
        display, "teleop", "embodia/Kitchen-OpenDrawer-v0", "--device", "keyboard", "--record", str(store_path),
        "--seed", "3", "--image-size", "128",
    )  # fmt: skip
    try:
        # the first attempt (seed 3) is discarded with q after its recording started
        program.wait_for("ready: episode 0 (seed 3)")
        xdotool(display, "key", "Right")
        program.wait_for("recording: ")
        xdotool(display, "key", "q")
        assert program.wait_for("discarded").startswith("discarded: the episode was not kept")
        ready = program.wait_for("ready: episode 0 (seed 4)")  # the next attempt is a new kitchen
        instruction = ready.split(": ", 2)[2]
        assert_window_shows(display, instruction, image_size=128, program=program)
        # forward (up arrow) starts the recording; then raise the gripper (;), move left, close the gripper
        xdotool(display, "key", "Up")
        program.wait_for("recording: ")
        xdotool(display, "key", "--delay", "150", "Up", "semicolon", "Left", "space")
        xdotool(display, "key", "Return")  # end the episode and keep it
        kept = program.wait_for("kept: ")
        assert "ended by you" in kept and "store episode 0" in kept
        xdotool(display, "key", "Escape")
        done = program.wait_for("done: ")
        assert done.startswith("done: 1 episodes kept") and "1 discarded" in done
        assert program.finish() == 0
    finally:
        if program.process.poll() is None:
            program.process.kill()

    store = TrajectoryStore(store_path, mode="r")
    assert store.num_episodes == 1
    meta = store.episode_meta(0)
    assert meta.env_id == "embodia/Kitchen-OpenDrawer-v0" and meta.seed == 4 and meta.success is False
    episode = store.episode(0)
    assert decode_instruction(episode["instruction"][0]) == instruction
    assert instruction.startswith("open the drawer")
    actions = episode["action"]
    assert actions.shape[1] == 7 and len(actions) == meta.length >= 1
    assert episode["truncated"][-1] and not episode["truncated"][:-1].any()  # ended by Enter
    # the keys' directions (the kitchens mirror robosuite's keyboard: up = forward +x, left = +y, ; = up +z); keys
    # read within one control step add up to one full-scale step, so only directions are certain, not step counts
    for axis in (0, 1, 2):
        assert np.isclose(actions[:, axis].max(), 1.0) and actions[:, axis].min() >= 0.0, actions
    assert np.isclose(actions[0, 0], 1.0)  # the first recorded step is the first input (no idle steps before)
    assert not actions[:, 3:6].any()  # no rotation key was pressed
    # space closed the gripper from one step on (robosuite's gripper command: -1 open, 1 closed)
    closed = np.flatnonzero(actions[:, 6] == 1.0)
    assert len(closed) and (actions[closed[0] :, 6] == 1.0).all() and (actions[: closed[0], 6] == -1.0).all()
    # the robot moved forward: the end effector (proprioception, relative to the base) went +x from the first
    # step on (the observation before the last action already follows at least the first, forward, step)
    assert len(actions) >= 2  # the first step came before "recording:", the other keys after it
    eef = episode["proprio"][:, 14:17]
    assert eef[-1, 0] - eef[0, 0] > 0.001, eef


def test_no_display_is_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    result = subprocess.run(
        [sys.executable, "-m", "embodia.cli", "teleop", "embodia/Kitchen-OpenDrawer-v0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: teleoperation needs an X display")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_missing_spacemouse_and_unfit_env_are_one_line(display: str) -> None:
    env = {**os.environ, "DISPLAY": display}
    command = [sys.executable, "-m", "embodia.cli", "teleop"]
    spacemouse = subprocess.run(
        [*command, "embodia/Kitchen-OpenDrawer-v0", "--device", "spacemouse"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert spacemouse.returncode == 2, spacemouse.stderr
    last = spacemouse.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "SpaceMouse" in last and "Traceback" not in spacemouse.stderr
    maze = subprocess.run(
        [*command, "embodia/PointMaze-Medium-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert maze.returncode == 2, maze.stderr
    assert maze.stderr.strip().startswith("error:") and "no robosuite robot" in maze.stderr
    assert len(maze.stderr.strip().splitlines()) == 1 and "Traceback" not in maze.stderr
