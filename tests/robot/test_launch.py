"""The YAML launch supervisor: parsing (ROS 2 YAML launch format), supervision, respawn, shutdown."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch import Supervisor, parse_launch_arguments, parse_launch_file
from tests.conftest import ROOT


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_nodes_become_ros2_run_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBODIA_TEST_POLICY", "/policies/seek")
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    _write(
        tmp_path / "inner.launch.yaml",
        """
        launch:
        - arg: {name: who}
        - executable: {cmd: "echo $(var who)", name: greet}
    """,
    )
    path = _write(
        tmp_path / "robot.launch.yaml",
        """
        launch:
        - arg: {name: rate, default: "50.0"}
        - let: {name: config, value: "$(dirname)/node.yaml"}
        - group:
            children:
            - push-ros-namespace: {namespace: robot1}
            - node:
                pkg: embodia_ros
                exec: policy_node
                name: policy
                namespace: arm
                respawn: "true"
                respawn_delay: 2
                param:
                - {name: policy, value: "$(env EMBODIA_TEST_POLICY)"}
                - {name: config, value: "$(var config)"}
                - {name: rate_hz, value: $(var rate)}
                - {name: verbose, value: true}
                remap:
                - {from: cmd, to: /base/cmd_vel}
        - node: {pkg: embodia_ros, exec: sim_node, args: "embodia/PointMaze-Medium-v0 --episodes 2", on_exit: shutdown}
        - include:
            file: inner.launch.yaml
            arg: [{name: who, value: "$(env EMBODIA_UNSET_VARIABLE world)"}]
    """,
    )
    policy, sim, greet = parse_launch_file(path, {"rate": "100"})
    assert policy.name == "policy-1" and policy.respawn and policy.respawn_delay == 2.0
    assert policy.argv[:5] == [
        sys.executable,
        "-m",
        "embodia.cli",
        "robot",
        "policy",
    ]  # `embodia robot policy`
    ros_args = policy.argv[policy.argv.index("--ros-args") + 1 :]
    assert ros_args == [
        "-r",
        "__node:=policy",
        "-r",
        "__ns:=/robot1/arm",
        "-p",
        "policy:=/policies/seek",
        "-p",
        f"config:={tmp_path}/node.yaml",
        "-p",
        "rate_hz:=100",
        "-p",
        "verbose:=true",
        "-r",
        "cmd:=/base/cmd_vel",
    ]
    assert (
        sim.argv[3:] == ["robot", "sim", "embodia/PointMaze-Medium-v0", "--episodes", "2"]
        and sim.shutdown_on_exit
    )
    assert "__ns" not in " ".join(sim.argv)  # the group's namespace does not leak out of the group
    assert greet.argv == ["echo", "world"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("launch:\n- arg: {name: policy}\n", "argument 'policy' has no default"),
        (
            "launch:\n- node: {pkg: embodia_ros, exec: teleop}\n",
            "executable 'teleop' of package 'embodia_ros' not found",
        ),
        ("launch:\n- timer: {period: 1}\n", "'timer' is not supported"),
        ("nodes: []\n", "no top-level 'launch:'"),
        ("launch:\n- executable: {cmd: 'echo $(var nope)'}\n", "is not a declared arg"),
    ],
)
def test_bad_launch_files_say_what_is_wrong(tmp_path, text, match):
    with pytest.raises(LaunchFileError, match=match):
        parse_launch_file(_write(tmp_path / "bad.launch.yaml", text))


def test_launch_arguments_syntax():
    assert parse_launch_arguments(["a:=1", "b:=x:=y"]) == {"a": "1", "b": "x:=y"}
    with pytest.raises(LaunchFileError, match="NAME:=VALUE"):
        parse_launch_arguments(["a=1"])


CHILD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, lambda *a: (print('{name} got SIGINT', flush=True), sys.exit(0)))\n"
    "print('{name} up', flush=True)\n"
    "time.sleep({sleep})\n"
    "sys.exit({code})\n"
)


def _child(tmp_path, name, sleep, code=0):
    script = tmp_path / f"{name}.py"
    script.write_text(CHILD.format(name=name, sleep=sleep, code=code))
    return f"{sys.executable} {script}"


def test_supervisor_prefixes_output_respawns_and_shuts_down(tmp_path):
    path = _write(
        tmp_path / "procs.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "{_child(tmp_path, "worker", 60)}", name: worker}}
        - executable: {{cmd: "{_child(tmp_path, "flaky", 0, code=3)}", name: flaky, respawn: true, respawn_delay: 0.2}}
        - executable: {{cmd: "{_child(tmp_path, "main", 2.5)}", name: main, on_exit: shutdown}}
    """,
    )
    out = io.StringIO()
    supervisor = Supervisor(parse_launch_file(path), out=out, grace=3.0)
    assert supervisor.run(timeout=30) == 0
    text = out.getvalue()
    assert "[worker-1] worker up" in text and "[main-1] main up" in text
    assert "[worker-1] worker got SIGINT" in text  # stopped with SIGINT, not killed
    assert "main-1 exited with on_exit: shutdown" in text
    assert supervisor.starts["flaky-1"] >= 3 and supervisor.exit_codes["flaky-1"].count(3) >= 2
    assert supervisor.exit_codes["worker-1"] == [0]


def test_ctrl_c_on_the_launch_command_stops_every_process(tmp_path):
    path = _write(
        tmp_path / "two.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "{_child(tmp_path, "a", 60)}", name: a}}
        - executable: {{cmd: "{_child(tmp_path, "b", 60)}", name: b}}
    """,
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "embodia.cli", "robot", "launch", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not ({"[a-1] a up", "[b-1] b up"} <= set(lines)):
        lines.append(proc.stdout.readline().rstrip())
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, rest
    assert "[a-1] a got SIGINT" in rest and "[b-1] b got SIGINT" in rest
