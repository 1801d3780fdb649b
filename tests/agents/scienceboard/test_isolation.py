"""Isolation: refused actions, a hung program killed at its limit, nothing left behind, Ctrl-C cleans up."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.sandbox import Sandbox, outside_paths
from tests.agents.scienceboard.conftest import make_task, play
from tests.conftest import ROOT


def test_shell_and_outside_files_are_refused_and_the_episode_goes_on(tmp_path):
    target = tmp_path / "pwned"
    reward, info, observations = play(
        make_task(),
        [
            {"type": "shell", "text": f"touch {target}"},
            {"type": "command", "text": 'x:="/etc/passwd"'},
            {"type": "click", "x": 10, "y": 10},
            {"type": "command", "text": "x:=42"},
            {"type": "done"},
        ],
    )
    outputs = [o["output"] for o in observations[1:4]]
    assert "does not allow shell commands" in outputs[0]
    assert "/etc/passwd" in outputs[1] and "outside the task's workspace" in outputs[1]
    assert "api interface takes command actions" in outputs[2]
    assert not target.exists()
    assert reward == 1.0 and info["success"]


def test_a_task_may_allow_the_shell_inside_its_workspace():
    task = make_task(allow_shell=True)
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        observation, *_ = env.step({"type": "shell", "text": "echo hi > note.txt; cat note.txt; pwd"})
        assert "hi" in observation["output"] and str(env.sandbox.workspace) in observation["output"]


def test_a_hung_program_is_killed_at_its_step_limit_and_nothing_is_left():
    task = make_task(step_timeout=2.0)
    env = ScienceBoardEnv("api")
    env.reset(task)
    sandbox = env.sandbox
    assert sandbox.marked_processes()  # calgebra runs in the sandbox
    started = time.monotonic()
    observation, reward, terminated, truncated, info = env.step(
        {"type": "command", "text": "sum(k : k=1..2000000000)"}
    )
    assert time.monotonic() - started < 10
    assert truncated and not terminated and reward == 0.0 and not info["success"]
    assert "did not answer within 2 s and was killed" in info["error"]
    env.close()
    assert sandbox.marked_processes() == []
    assert not sandbox.workspace.exists()


def test_the_step_budget_truncates_and_the_checker_still_reads_the_state():
    reward, info, _ = play(
        make_task(max_steps=2), [{"type": "command", "text": "y:=1"}, {"type": "command", "text": "x:=42"}]
    )
    assert info["limit"] == "step budget" and reward == 1.0


def test_outside_paths_finds_escapes_but_not_arithmetic(tmp_path):
    assert outside_paths("load /etc/passwd", tmp_path) == ["/etc/passwd"]
    assert outside_paths("cat ../../x ~/y", tmp_path) == ["../../x", "~/y"]
    assert outside_paths("x:=3/4; y:=a / b", tmp_path) == []
    assert outside_paths(f"save {tmp_path}/out.pdb", tmp_path) == []


def test_ctrl_c_closes_the_display_and_every_program(tmp_path):
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from embodia.agents.scienceboard.sandbox import Sandbox\n"
            "with Sandbox(display=True) as box:\n"
            "    box.spawn(['sleep', '300'])\n"
            "    print(box.id, box.workspace, flush=True)\n"
            "    time.sleep(300)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    box_id, workspace = child.stdout.readline().split()
    probe = Sandbox.__new__(Sandbox)
    probe.id = box_id
    assert len(probe.marked_processes()) >= 3  # Xvfb, the session bus, sleep (and the a11y bus)
    child.send_signal(signal.SIGINT)
    child.wait(timeout=30)
    assert probe.marked_processes() == []
    assert not Path(workspace).exists()
