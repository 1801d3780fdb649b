"""The launch supervisor: parsing (ROS 2 YAML launch format), supervision, respawn, timers, shutdown and its
SIGTERM / SIGKILL timeouts, emulate_tty, and `embodia robot launch` (--print, real runs, one-line refusals)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch import Supervisor, parse_launch_arguments, parse_launch_file, plan_launch
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
            "launch:\n- node_container: {pkg: rclcpp_components, exec: component_container, name: c}\n",
            "node_container: not supported",
        ),
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


WAITER = (
    "import pathlib, signal, sys, time\n"
    "print('main up', flush=True)\n"
    "log = pathlib.Path({log!r})\n"
    "# exit (and so shut the launch down) once the worker is up and the flaky process has started 3 times:\n"
    "# an event, not a time, so a loaded machine only makes it later\n"
    "while not (log.is_file() and log.read_text().count('flaky') >= 3 and 'worker' in log.read_text()):\n"
    "    time.sleep(0.05)\n"
)
STARTS = (
    "import pathlib, signal, sys, time\n"
    "signal.signal(signal.SIGINT, lambda *a: (print('{name} got SIGINT', flush=True), sys.exit(0)))\n"
    "print('{name} up', flush=True)\n"
    "with open({log!r}, 'a') as f:\n"
    "    f.write('{name}\\n')\n"
    "time.sleep({sleep})\n"
    "sys.exit({code})\n"
)


def test_supervisor_prefixes_output_respawns_and_shuts_down(tmp_path):
    log = str(tmp_path / "starts.log")
    for name, sleep, code in (("worker", 600, 0), ("flaky", 0, 3)):
        (tmp_path / f"{name}.py").write_text(STARTS.format(name=name, log=log, sleep=sleep, code=code))
    (tmp_path / "main.py").write_text(WAITER.format(log=log))
    run = f"{sys.executable} {tmp_path}"
    path = _write(
        tmp_path / "procs.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "{run}/worker.py", name: worker}}
        - executable: {{cmd: "{run}/flaky.py", name: flaky, respawn: true, respawn_delay: 0.2}}
        - executable: {{cmd: "{run}/main.py", name: main, on_exit: shutdown}}
    """,
    )
    out = io.StringIO()
    supervisor = Supervisor(parse_launch_file(path), out=out, grace=30.0)
    assert supervisor.run(timeout=300) == 0
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


STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "if sys.argv[1] == 'term-too':\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('up', flush=True)\n"
    "with open(sys.argv[2], 'a') as f:\n"
    "    f.write(sys.argv[1] + '\\n')\n"
    "time.sleep(600)\n"
)
BOTH_UP = (
    "import pathlib, time\n"
    "log = pathlib.Path({log!r})\n"
    "while not (log.is_file() and len(log.read_text().split()) >= 2):  # both ignore their signals now\n"
    "    time.sleep(0.05)\n"
)


def test_sigterm_and_sigkill_timeouts_stop_processes_that_ignore_signals(tmp_path):
    """SIGINT, then SIGTERM after sigterm_timeout, then SIGKILL after sigkill_timeout (real processes)."""
    script, log = tmp_path / "stubborn.py", tmp_path / "up.log"
    script.write_text(STUBBORN)
    (tmp_path / "main.py").write_text(BOTH_UP.format(log=str(log)))
    path = _write(
        tmp_path / "stubborn.launch.yaml",
        f"""
        launch:
        - let: {{name: sigterm_timeout, value: "0.3"}}
        - executable: {{cmd: "{sys.executable} {script} term-too {log}", name: deaf, sigterm_timeout: 1.0, sigkill_timeout: 0.4}}
        - executable: {{cmd: "{sys.executable} {script} int-only {log}", name: half_deaf}}
        - executable: {{cmd: "{sys.executable} {tmp_path}/main.py", name: main, on_exit: shutdown}}
    """,
    )
    specs = parse_launch_file(path)
    assert [(s.sigterm_timeout, s.sigkill_timeout) for s in specs] == [(1.0, 0.4), (0.3, None), (0.3, None)]
    out = io.StringIO()
    # timeouts of processes that set none: 2 min, so that only the file's timeouts end the run within 5
    supervisor = Supervisor(specs, out=out, grace=120.0)
    assert supervisor.run(timeout=300) == 0
    text = out.getvalue()
    assert "[deaf-1] up" in text and "[half_deaf-1] up" in text
    assert supervisor.exit_codes["deaf-1"] == [-signal.SIGKILL]
    assert supervisor.exit_codes["half_deaf-1"] == [-signal.SIGTERM]
    order = [line for line in text.splitlines() if "sending signal" in line and "deaf-1" in line]
    assert order == [
        "[INFO] [launch]: sending signal 'SIGINT' to process[deaf-1]",
        "[INFO] [launch]: sending signal 'SIGINT' to process[half_deaf-1]",
        "[INFO] [launch]: sending signal 'SIGTERM' to process[half_deaf-1]",
        "[INFO] [launch]: sending signal 'SIGTERM' to process[deaf-1]",
        "[INFO] [launch]: sending signal 'SIGKILL' to process[deaf-1]",
    ]


def test_timers_respawn_limits_and_a_shutdown_action(tmp_path):
    path = _write(
        tmp_path / "timers.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "{_child(tmp_path, "worker", 60)}", name: worker}}
        - executable:
            cmd: "{_child(tmp_path, "flaky", 0, code=3)}"
            name: flaky
            respawn: true
            respawn_delay: 0.1
            respawn_max_retries: 2
        - timer:
            period: 0.5
            children:
            - executable: {{cmd: "echo late", name: late}}
            - log: {{message: "half a second"}}
        - timer:
            period: 3.0
            children:
            - shutdown: {{reason: "enough"}}
        - timer: {{period: 30.0, children: [executable: {{cmd: "echo never", name: never}}]}}
    """,
    )
    out = io.StringIO()
    supervisor = Supervisor(plan_launch(path), out=out, grace=3.0)
    started = time.monotonic()
    assert supervisor.run(timeout=60) == 3  # flaky's status: it failed for good after its 2 respawns
    assert time.monotonic() - started < 15
    text = out.getvalue()
    assert "[late-1] late" in text and "[INFO] [launch.user]: half a second" in text
    assert "shutdown action (enough); stopping all" in text and "[worker-1] worker got SIGINT" in text
    assert supervisor.starts["flaky-1"] == 3 and supervisor.exit_codes["flaky-1"] == [3, 3, 3]
    assert supervisor.starts["never-1"] == 0 and "never" not in text.replace("never-1", "")


def test_emulate_tty_gives_the_process_a_terminal(tmp_path):
    check = f"{sys.executable} -c 'import sys; print(\\\"tty\\\", sys.stdout.isatty())'"
    path = _write(
        tmp_path / "tty.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "{check}", name: with_tty, emulate_tty: true}}
        - executable: {{cmd: "{check}", name: piped}}
    """,
    )
    out = io.StringIO()
    assert Supervisor(parse_launch_file(path), out=out).run(timeout=30) == 0
    assert "[with_tty-1] tty True" in out.getvalue() and "[piped-1] tty False" in out.getvalue()


def _cli(*args, **kwargs):
    return subprocess.run(
        [sys.executable, *kwargs.pop("python", []), "-m", "embodia.cli", "robot", "launch", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **kwargs.pop("env", {})},
    )


CONDITIONAL = """
launch:
- arg: {name: record, default: "false"}
- arg: {name: robot, default: "r1"}
- node:
    pkg: embodia_ros
    exec: policy_node
    name: policy
    namespace: $(var robot)
    respawn: true
    param: [{name: policy, value: "$(dirname)/policy"}, {name: rate_hz, value: 50.0}]
    remap: [{from: cmd, to: /cmd_vel}]
    env: [{name: LEVEL, value: debug}]
    if: $(not $(var record))
- executable: {cmd: "touch $(dirname)/recorded", name: recorder, if: $(var record)}
- executable: {cmd: "touch $(dirname)/always", name: always, unless: $(var record)}
- timer:
    period: 2.5
    children:
    - executable: {cmd: "touch $(dirname)/late", name: late, sigterm_timeout: 1}
"""


def test_print_shows_every_process_and_starts_nothing(tmp_path):
    path = _write(tmp_path / "robot.launch.yaml", CONDITIONAL)
    result = _cli(str(path), "robot:=arm", "--print", python=["-X", "importtime"])
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "[policy-1]" in out and "[always-1]" in out and "[late-1]" in out and "[recorder-1]" not in out
    assert (
        f"-r __node:=policy -r __ns:=/arm -p policy:={tmp_path}/policy -p rate_hz:=50.0 -r cmd:=/cmd_vel"
        in out
    )
    assert "environment: LEVEL=debug" in out and "respawn:     yes" in out and "after 2.5 s (timer)" in out
    assert "SIGTERM after 1 s" in out and "robot = 'arm'" in out
    assert "executable recorder (if: false)" in out.split("skipped by a condition:")[1]
    assert not list(tmp_path.glob("recorded")) + list(tmp_path.glob("always")) + list(tmp_path.glob("late"))
    assert "rclpy" not in result.stderr and "torch" not in result.stderr  # -X importtime lists every import


def test_a_real_run_starts_only_what_the_conditions_allow(tmp_path):
    path = _write(
        tmp_path / "robot.launch.yaml",
        CONDITIONAL.split("- node:")[0] + CONDITIONAL.split("if: $(not $(var record))\n")[1],
    )
    result = _cli(str(path), "record:=TRUE")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (
        (tmp_path / "recorded").exists()
        and (tmp_path / "late").exists()
        and not (tmp_path / "always").exists()
    )
    assert "process started" in result.stdout and "always" not in result.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "launch:\n- node_container: {pkg: rclcpp_components, exec: component_container, name: c}\n",
            ":2: node_container: not supported",
        ),
        (
            "launch:\n- let: {name: x, value: \"$(eval '[a, b]')\"}\n",
            ":2: let: $(eval '[a, b]'): name 'a' is not defined",
        ),
        (
            'launch:\n- executable: {cmd: "echo", if: "[maybe]"}\n',
            "if: condition '[maybe]' is not true/false/1/0",
        ),
    ],
)
def test_the_cli_prints_a_refusal_as_one_line(tmp_path, text, message):
    path = tmp_path / "bad.launch.yaml"
    path.write_text(text)
    for extra in ([], ["--print"]):
        result = _cli(str(path), *extra)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert f"{path}{message}" in lines[0] if message.startswith(":") else message in lines[0], lines[0]


def test_a_process_that_cannot_start_is_an_error_line_not_a_traceback(tmp_path):
    path = _write(
        tmp_path / "cwd.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "echo hi", name: lost, cwd: "{tmp_path}/no/such/dir", on_exit: shutdown}}
    """,
    )
    out = io.StringIO()
    supervisor = Supervisor(parse_launch_file(path), out=out)
    assert supervisor.run(timeout=30) == 127
    assert "[ERROR] [launch]: process [lost-1] could not start:" in out.getvalue()
    assert supervisor.exit_codes["lost-1"] == [127]


def _launch(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embodia.cli", "robot", "launch", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_print_runs_no_command_substitution_and_says_so(tmp_path):
    marker = tmp_path / "ran"
    path = _write(
        tmp_path / "cmd.launch.yaml",
        f"""
        launch:
        - arg: {{name: who, default: "$(command 'touch {marker}')"}}
        - executable: {{cmd: "echo $(var who)", name: greet}}
    """,
    )
    out = _launch(str(path), "--print")
    assert out.returncode == 0, out.stderr
    assert not marker.exists()  # a dry run starts nothing, not even a substitution's command
    assert f"$(command 'touch {marker}')" in out.stdout
    assert "not evaluated (a dry run runs no commands" in out.stdout
    # the real launch runs it
    assert _launch(str(path), "--timeout", "120").returncode == 0 and marker.exists()


def test_print_shows_processes_whose_executable_this_machine_lacks(tmp_path):
    path = _write(
        tmp_path / "tutorial.launch.yaml",
        """
        launch:
        - executable: {cmd: "ros2-not-installed-here topic list", name: topics}
        - node: {pkg: turtlesim, exec: turtlesim_node, name: sim}
    """,
    )
    out = _launch(str(path), "--print")
    assert out.returncode == 0, out.stderr
    assert "[topics-1]" in out.stdout and "[sim-1]" in out.stdout
    assert "missing:     executable 'ros2-not-installed-here' not found" in out.stdout
    assert "missing:     executable 'turtlesim_node' of package 'turtlesim' not found" in out.stdout


def test_a_missing_executable_is_reported_when_it_would_start_and_the_others_run(tmp_path):
    (tmp_path / "main.py").write_text("print('main ran')\n")
    path = _write(
        tmp_path / "mixed.launch.yaml",
        f"""
        launch:
        - executable: {{cmd: "ros2-not-installed-here topic list", name: topics}}
        - executable: {{cmd: "{sys.executable} {tmp_path}/main.py", name: main, on_exit: shutdown}}
    """,
    )
    out = _launch(str(path), "--timeout", "120")
    assert "[main-1] main ran" in out.stdout, out.stdout + out.stderr
    assert (
        "[ERROR] [launch]: process [topics-1] could not start: executable 'ros2-not-installed-here' not found"
        in out.stdout
    )
    assert out.returncode == 0  # the status of the process that shut the launch down
