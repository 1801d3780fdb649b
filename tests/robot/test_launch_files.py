"""Reading real-shaped ROS 2 launch files (YAML and XML): conditions, includes, groups, namespaces, timers,
parameters, launch-wide settings, and the one-line refusals. Nothing here starts a process."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pytest

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch import parse_launch_file, plan_launch


def _write(path, text):
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.fixture
def ament(tmp_path, monkeypatch):
    """A fake ROS 2 install: demo_nodes_cpp (talker, listener) and turtlesim, as ``ros2 run`` finds them."""
    prefix = tmp_path / "install"
    for package, executables in {
        "demo_nodes_cpp": ["talker", "listener"],
        "turtlesim": ["turtlesim_node"],
    }.items():
        (prefix / "share" / package / "launch").mkdir(parents=True)
        (prefix / "lib" / package).mkdir(parents=True)
        for name in executables:
            script = prefix / "lib" / package / name
            script.write_text('#!/bin/sh\necho "$0 $*"\n')
            script.chmod(0o755)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    return prefix


def _ros_rules(spec):
    """The rules after the last ``--ros-args`` (those launch_ros adds: name, namespace, params, remaps)."""
    argv = spec.argv
    return argv[len(argv) - argv[::-1].index("--ros-args") :] if "--ros-args" in argv else []


# ---------------------------------------------------------------------- conditions
CONDITIONS_YAML = """
launch:
- arg: {name: use_sim, default: "false"}
- arg: {name: with_rviz, default: "true"}
- arg: {name: extra, default: "unused", if: $(var use_sim)}
- let: {name: robot, value: "real"}
- let: {name: robot, value: "simulated", if: $(var use_sim)}
- push-ros-namespace: {namespace: "$(var robot)", unless: $(var with_rviz)}
- set_env: {name: EMBODIA_TEST_MODE, value: "sim", if: "$(var use_sim)"}
- node: {pkg: turtlesim, exec: turtlesim_node, name: sim, if: $(var use_sim)}
- node: {pkg: demo_nodes_cpp, exec: talker, name: talker, unless: $(var use_sim), args: "$(var robot)"}
- executable: {cmd: "echo rviz", name: rviz, if: $(var with_rviz)}
- include:
    file: "$(dirname)/does_not_exist.launch.yaml"
    if: $(eval "'$(var use_sim)' == 'never'")
- group:
    if: $(var use_sim)
    children:
    - node: {pkg: demo_nodes_cpp, exec: listener, name: in_group}
- timer:
    period: 3.0
    unless: $(var use_sim)
    children:
    - node: {pkg: demo_nodes_cpp, exec: listener, name: late}
"""

CONDITIONS_XML = """
<launch>
  <arg name="use_sim" default="false"/>
  <arg name="with_rviz" default="true"/>
  <arg name="extra" default="unused" if="$(var use_sim)"/>
  <let name="robot" value="real"/>
  <let name="robot" value="simulated" if="$(var use_sim)"/>
  <push-ros-namespace namespace="$(var robot)" unless="$(var with_rviz)"/>
  <set_env name="EMBODIA_TEST_MODE" value="sim" if="$(var use_sim)"/>
  <node pkg="turtlesim" exec="turtlesim_node" name="sim" if="$(var use_sim)"/>
  <node pkg="demo_nodes_cpp" exec="talker" name="talker" unless="$(var use_sim)" args="$(var robot)"/>
  <executable cmd="echo rviz" name="rviz" if="$(var with_rviz)"/>
  <include file="$(dirname)/does_not_exist.launch.yaml" if="$(eval &quot;'$(var use_sim)' == 'never'&quot;)"/>
  <group if="$(var use_sim)">
    <node pkg="demo_nodes_cpp" exec="listener" name="in_group"/>
  </group>
  <timer period="3.0" unless="$(var use_sim)">
    <node pkg="demo_nodes_cpp" exec="listener" name="late"/>
  </timer>
</launch>
"""


@pytest.mark.parametrize(
    ("name", "text"), [("c.launch.yaml", CONDITIONS_YAML), ("c.launch.xml", CONDITIONS_XML)]
)
def test_if_and_unless_skip_actions_on_every_kind_of_action(tmp_path, ament, name, text):
    path = _write(tmp_path / name, text)
    plan = plan_launch(path)
    assert [p.name for p in plan.processes] == ["talker-1", "rviz-1", "late-1"]
    talker = plan.processes[0]
    assert talker.argv[1] == "real" and talker.namespace is None and "EMBODIA_TEST_MODE" not in talker.env
    assert plan.processes[2].delay == 3.0 and "extra" not in plan.arguments
    skipped = "\n".join(plan.skipped)
    assert "node sim (if: false)" in skipped and "include" in skipped and "group" in skipped

    plan = plan_launch(path, {"use_sim": "True", "with_rviz": "0"})  # ROS 2 truthiness: any case, 1/0
    assert [p.name for p in plan.processes] == ["sim-1", "in_group-1"]
    assert plan.processes[0].namespace == "/simulated" and plan.processes[0].env["EMBODIA_TEST_MODE"] == "sim"
    assert "timer" in "\n".join(plan.skipped)


@pytest.mark.parametrize("value", ["yes", "", "maybe", "on"])
def test_a_condition_that_is_not_true_false_1_0_is_an_error(tmp_path, value):
    path = _write(tmp_path / "c.launch.yaml", f'launch:\n- executable: {{cmd: "echo x", if: "{value}"}}\n')
    with pytest.raises(
        LaunchFileError, match=r"c\.launch\.yaml:2: executable: if: condition .* is not true/false/1/0"
    ):
        parse_launch_file(path)


def test_if_and_unless_together_are_refused(tmp_path):
    path = _write(
        tmp_path / "c.launch.yaml", 'launch:\n- executable: {cmd: "echo x", if: "1", unless: "0"}\n'
    )
    with pytest.raises(LaunchFileError, match="has both 'if' and 'unless'"):
        parse_launch_file(path)


# ---------------------------------------------------------------------- includes and groups
def test_include_passes_its_arg_and_let_values(tmp_path, ament):
    _write(
        tmp_path / "talker.launch.yaml",
        """
        launch:
        - arg: {name: rate, default: "1"}
        - arg: {name: topic, default: "chatter"}
        - arg: {name: who}
        - node:
            pkg: demo_nodes_cpp
            exec: talker
            name: "talker_$(var who)"
            param: [{name: rate, value: $(var rate)}]
            remap: [{from: chatter, to: $(var topic)}]
        """,
    )
    _write(
        tmp_path / "listener.launch.xml",
        """
        <launch>
          <arg name="topic" default="chatter"/>
          <node pkg="demo_nodes_cpp" exec="listener" name="listener">
            <remap from="chatter" to="$(var topic)"/>
          </node>
        </launch>
        """,
    )
    path = _write(
        tmp_path / "main.launch.yaml",
        """
        launch:
        - include:
            file: "$(dirname)/talker.launch.yaml"
            arg:
            - {name: rate, value: "10"}
            - {name: who, value: "a"}
        - include:
            file: "talker.launch.yaml"
            let:
            - {name: who, value: "b"}
            - {name: topic, value: "news"}
        - include:
            file: "listener.launch.xml"
            arg: [{name: topic, value: "news"}]
        """,
    )
    first, second, listener = parse_launch_file(path)
    assert (
        "rate:=10" in first.parameters
        and "chatter:=chatter" in first.remaps
        and first.node_name == "talker_a"
    )
    # include arguments are launch configurations, as in ROS 2: rate stays 10 after the first include
    assert (
        "rate:=10" in second.parameters
        and "chatter:=news" in second.remaps
        and second.node_name == "talker_b"
    )
    assert listener.remaps == ["chatter:=news"]


def test_an_include_of_a_missing_argument_says_which(tmp_path):
    _write(tmp_path / "inner.launch.yaml", "launch:\n- arg: {name: robot}\n")
    path = _write(tmp_path / "outer.launch.yaml", "launch:\n- include: {file: inner.launch.yaml}\n")
    with pytest.raises(LaunchFileError, match=r"inner\.launch\.yaml:2: arg: argument 'robot' has no default"):
        parse_launch_file(path)


def test_groups_with_a_list_body_or_children_scope_and_forward_like_ros2(tmp_path, ament):
    path = _write(
        tmp_path / "groups.launch.yaml",
        """
        launch:
        - arg: {name: color, default: "red"}
        - group:
          - push-ros-namespace: {namespace: turtlesim1}
          - let: {name: color, value: "blue"}
          - node: {pkg: turtlesim, exec: turtlesim_node, name: sim, args: "$(var color)"}
        - group:
            children:
            - push_ros_namespace: {namespace: turtlesim2}
            - node: {pkg: turtlesim, exec: turtlesim_node, name: sim, args: "$(var color)"}
        - node: {pkg: turtlesim, exec: turtlesim_node, name: outside, args: "$(var color)"}
        - group:
            scoped: false
            children:
            - push-ros-namespace: {namespace: leaked}
            - let: {name: color, value: "green"}
        - node: {pkg: turtlesim, exec: turtlesim_node, name: after, args: "$(var color)"}
        - group:
            forwarding: false
            keep: [{name: kept, value: "$(var color)"}]
            children:
            - node: {pkg: turtlesim, exec: turtlesim_node, name: fresh, args: "$(var kept) $(var color none)"}
        """,
    )
    one, two, outside, after, fresh = parse_launch_file(path)
    assert (one.namespace, one.argv[1]) == ("/turtlesim1", "blue")
    assert (two.namespace, two.argv[1]) == ("/turtlesim2", "red")
    assert (outside.namespace, outside.argv[1]) == (None, "red")  # scoped groups do not leak
    assert (after.namespace, after.argv[1]) == ("/leaked", "green")  # scoped: false does
    assert fresh.namespace is None and fresh.argv[1:3] == ["green", "none"]  # forwarding: false, keep


def test_absolute_namespaces_stay_absolute_under_a_pushed_namespace(tmp_path, ament):
    path = _write(
        tmp_path / "ns.launch.xml",
        """
        <launch>
          <group>
            <push_ros_namespace namespace="robot1"/>
            <node pkg="demo_nodes_cpp" exec="talker" name="relative" namespace="arm"/>
            <node pkg="demo_nodes_cpp" exec="talker" name="absolute" namespace="/global/arm"/>
            <node pkg="demo_nodes_cpp" exec="talker" name="plain"/>
            <push_ros_namespace namespace="/fleet"/>
            <node pkg="demo_nodes_cpp" exec="talker" name="pushed_absolute" namespace="cam"/>
          </group>
          <node pkg="demo_nodes_cpp" exec="talker" name="root"/>
        </launch>
        """,
    )
    specs = parse_launch_file(path)
    assert [s.namespace for s in specs] == ["/robot1/arm", "/global/arm", "/robot1", "/fleet/cam", None]
    assert _ros_rules(specs[1]) == ["-r", "__node:=absolute", "-r", "__ns:=/global/arm"]
    assert "__ns" not in " ".join(specs[-1].argv)


# ---------------------------------------------------------------------- substitutions
def test_every_substitution(tmp_path, ament, monkeypatch):
    monkeypatch.setenv("EMBODIA_TEST_ROBOT", "r2")
    monkeypatch.delenv("EMBODIA_UNSET", raising=False)
    (tmp_path / "motd.txt").write_text("hello")
    path = _write(
        tmp_path / "subs.launch.yaml",
        """
        launch:
        - arg: {name: scale, default: "2"}
        - arg: {name: mode, default: "sim"}
        - executable:
            name: subs
            cmd: >-
              echo $(var scale) $(var missing fallback) $(env EMBODIA_TEST_ROBOT) [$(env EMBODIA_UNSET '')]
              [$(optenv EMBODIA_UNSET)] $(dirname) $(filename) $(find-pkg-share turtlesim)
              $(find-pkg-prefix turtlesim) $(find-exec echo) $(exec-in-pkg talker demo_nodes_cpp)
              $(command 'echo from a command') $(eval '$(var scale) * 1.5') $(eval "'$(var mode)' == 'sim'")
              $(eval 'round(sqrt(16) + math.pi, 2)') $(anon node) $(anon node) $(anon other)
              $(not $(var mode)x) $(and true 1) $(or false 0) $(any 0 0 1) $(all 1 true 0)
              $(equals $(var scale) 2.0) $(not-equals a b) $(if $(equals $(var mode) sim) yes no)
              $(file-content $(dirname)/motd.txt)
            if: $(not $(equals $(var mode) real))
        """,
    )
    with pytest.raises(
        LaunchFileError,
        match=r"subs\.launch\.yaml:4: executable: \$\(not \$\(var mode\)x\): 'simx' is not a boolean",
    ):
        parse_launch_file(path)
    path.write_text(path.read_text().replace("$(not $(var mode)x)", "$(not false)"))
    (spec,) = parse_launch_file(path)
    share = ament / "share" / "turtlesim"
    assert spec.argv[:16] == [
        "echo", "2", "fallback", "r2", "[]", "[]", str(tmp_path), str(path), str(share), str(ament),
        shutil.which("echo"),
        str(ament / "lib" / "demo_nodes_cpp" / "talker"),
        "from a command\n", "3.0", "True", "7.14",
    ]  # fmt: skip
    anon_a, anon_b, anon_c = spec.argv[16:19]
    assert (
        anon_a == anon_b and anon_a.startswith("node_") and anon_c.startswith("other_") and anon_a != anon_c
    )
    assert spec.argv[19:] == ["true", "true", "false", "true", "false", "true", "true", "yes", "hello"]


def test_substituted_values_are_one_argument_and_env_defaults_may_be_empty(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBODIA_UNSET", raising=False)
    path = _write(
        tmp_path / "args.launch.yaml",
        """
        launch:
        - arg: {name: title, default: "two words"}
        - executable: {cmd: "echo $(var title) --flag '$(var title) quoted' x$(env EMBODIA_UNSET '')y $(env EMBODIA_UNSET '')"}
        """,
    )
    (spec,) = parse_launch_file(path)
    assert spec.argv == ["echo", "two words", "--flag", "two words quoted", "xy", ""]


@pytest.mark.parametrize(
    ("substitution", "message"),
    [
        ("$(command 'false')", "$(command 'false') failed with exit status 1"),
        ("$(command 'no-such-program-xyz --v')", "$(command 'no-such-program-xyz --v') could not run"),
        ("$(command 'sh -c \"echo oops >&2\"')", "wrote to stderr (oops)"),
        ('$(eval \'__import__("os").system("true")\')', "name '__import__' is not defined"),
        ("$(eval '().__class__')", "attribute .__class__ of a tuple is not supported"),
        ("$(eval 'open(\"/etc/passwd\").read()')", "name 'open' is not defined"),
        ("$(eval '[x for x in range(3)]')", "a comprehension is not supported"),
        ("$(eval '9 ** 9 ** 9')", "is too large"),
        ("$(eval '1' 'os')", "module 'os' is not available"),
        ("$(eval '1/0')", "ZeroDivisionError"),
        ("$(param /node rate)", "$(param) is not supported"),
        ("$(nosuch x)", "unknown substitution $(nosuch)"),
        ("$(var", "unclosed '$(var'"),
        ("$(env)", "$(env) takes 1 to 2 argument(s), got 0"),
    ],
)
def test_bad_substitutions_say_what_and_where(tmp_path, substitution, message):
    path = _write(
        tmp_path / "bad.launch.yaml", f"launch:\n- let: {{name: x, value: {json.dumps(substitution)}}}\n"
    )
    with pytest.raises(LaunchFileError) as info:
        parse_launch_file(path)
    assert str(info.value).startswith(f"{path}:2: let: ") and message in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------- processes
def test_timers_launch_prefix_timeouts_and_tty(tmp_path, ament):
    path = _write(
        tmp_path / "proc.launch.yaml",
        """
        launch:
        - arg: {name: sigkill_timeout, default: "3"}
        - timer:
            period: 1.5
            children:
            - executable: {cmd: "echo one", name: one, launch-prefix: "nice -n 5", sigterm_timeout: 0.5}
            - timer:
                period: 2
                children:
                - node: {pkg: demo_nodes_cpp, exec: talker, launch-prefix: "env DEBUG=1", emulate_tty: true}
        - let: {name: launch-prefix, value: "time -p"}
        - let: {name: launch-prefix-filter, value: "listen.*"}
        - node: {pkg: demo_nodes_cpp, exec: listener, respawn: "True", respawn_delay: 0.5, respawn_max_retries: 2}
        - node: {pkg: demo_nodes_cpp, exec: talker, name: unprefixed}
        """,
    )
    one, talker, listener, unprefixed = plan_launch(path).processes
    assert (one.delay, one.argv, one.sigterm_timeout, one.sigkill_timeout) == (
        1.5,
        ["nice", "-n", "5", "echo", "one"],
        0.5,
        3.0,
    )
    assert talker.delay == 3.5 and talker.argv[:2] == ["env", "DEBUG=1"] and talker.emulate_tty
    assert listener.argv[:2] == ["time", "-p"] and listener.argv[2].endswith(
        "/listener"
    )  # the filter matched
    assert (listener.respawn, listener.respawn_delay, listener.respawn_max_retries) == (True, 0.5, 2)
    assert unprefixed.argv[0].endswith("/talker")  # the filter did not match
    assert parse_launch_file(path, {"sigterm_timeout": "7"})[2].sigterm_timeout == 7.0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{cmd: 'true', sigterm_timeout: -1}", "sigterm_timeout must be a finite number of seconds >= 0"),
        ("{cmd: 'true', sigkill_timeout: .inf}", "sigkill_timeout must be a finite number of seconds >= 0"),
        ("{cmd: 'true', respawn_max_retries: many}", "respawn_max_retries must be an integer >= -1"),
        ("{cmd: 'true', emulate_tty: sometimes}", "'emulate_tty' must be true or false"),
        ("{cmd: 'true', on_exit: restart}", "on_exit: 'restart' is not supported"),
        ("{cmd: 'true', respwan: true}", "unknown attribute 'respwan'"),
    ],
)
def test_bad_process_attributes(tmp_path, entry, message):
    path = _write(tmp_path / "p.launch.yaml", f"launch:\n- executable: {entry}\n")
    with pytest.raises(
        LaunchFileError, match=r"p\.launch\.yaml:2: executable: " + ".*" + message.replace("(", r"\(")
    ):
        parse_launch_file(path)


def test_launch_wide_sigterm_timeout_must_be_seconds(tmp_path):
    path = _write(tmp_path / "p.launch.yaml", "launch:\n- executable: {cmd: 'true'}\n")
    with pytest.raises(LaunchFileError, match="launch configuration sigterm_timeout must be a finite number"):
        parse_launch_file(path, {"sigterm_timeout": "soon"})


def test_parameters_keep_their_ros2_types(tmp_path, ament):
    (tmp_path / "params.yaml").write_text("talker:\n  ros__parameters: {a: 1}\n")
    path = _write(
        tmp_path / "params.launch.yaml",
        """
        launch:
        - arg: {name: port, default: "8080"}
        - set_parameter: {name: use_sim_time, value: "true"}
        - set_remap: {from: /tf, to: tf}
        - node:
            pkg: demo_nodes_cpp
            exec: talker
            param:
            - {name: quoted_string, value: "8080"}
            - {name: substituted, value: "$(var port)"}
            - {name: forced, value: "$(var port)", type: str}
            - {name: flag, value: "1", type: bool}
            - {name: gains, value: "[1, 2]", type: list_of_float}
            - {name: names, value: [a, "$(var port)"]}
            - {name: empty, value: ""}
            - {name: ctrl, param: [{name: pid, param: [{name: kp, value: 0.5}]}]}
            - {from: "$(dirname)/params.yaml"}
        """,
    )
    (spec,) = parse_launch_file(path)
    assert spec.parameters == [
        "use_sim_time:=true", "quoted_string:='8080'", "substituted:=8080", "forced:='8080'", "flag:=true",
        "gains:=[1.0, 2.0]", "names:=[a, 8080]", "empty:=''", "ctrl.pid.kp:=0.5", f"--params-file {tmp_path}/params.yaml",
    ]  # fmt: skip
    assert spec.remaps == ["/tf:=tf"]
    rules = _ros_rules(spec)
    assert rules[:2] == ["-p", "use_sim_time:=true"]  # global parameters first, as launch_ros
    assert (
        rules[-5:]
        == ["-p", "ctrl.pid.kp:=0.5", "--params-file", f"{tmp_path}/params.yaml", "-r", "/tf:=tf"][-5:]
    )
    with pytest.raises(LaunchFileError, match=r"value '8080x' is not of type int"):
        path.write_text(path.read_text().replace('value: "1", type: bool', 'value: "8080x", type: int'))
        parse_launch_file(path)


def test_environment_actions(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBODIA_TEST_PATH", "/a")
    monkeypatch.setenv("EMBODIA_TEST_DROP", "x")
    path = _write(
        tmp_path / "env.launch.yaml",
        """
        launch:
        - set_env: {name: EMBODIA_TEST_MODE, value: fast}
        - append_env: {name: EMBODIA_TEST_PATH, value: /b}
        - append_env: {name: EMBODIA_TEST_PATH, value: /z, prepend: true, separator: ";"}
        - unset_env: {name: EMBODIA_TEST_DROP}
        - group:
          - set_env: {name: EMBODIA_TEST_SCOPED, value: "1"}
          - executable: {cmd: "echo $(env EMBODIA_TEST_MODE) $(env EMBODIA_TEST_DROP gone)", name: inner, env: [{name: OWN, value: "2"}]}
        - executable: {cmd: "echo", name: outer}
        """,
    )
    inner, outer = parse_launch_file(path)
    assert inner.argv == ["echo", "fast", "gone"]
    assert inner.env == {
        "EMBODIA_TEST_MODE": "fast",
        "EMBODIA_TEST_PATH": "/z;/a:/b",
        "EMBODIA_TEST_SCOPED": "1",
        "OWN": "2",
    }
    assert (
        inner.unset_env == outer.unset_env == ["EMBODIA_TEST_DROP"] and "EMBODIA_TEST_SCOPED" not in outer.env
    )


def test_xml_and_yaml_spellings_of_one_launch_file_agree(tmp_path, ament):
    yaml_file = _write(
        tmp_path / "same.launch.yaml",
        """
        launch:
        - arg: {name: ns, default: "robot1", description: "namespace"}
        - group:
            scoped: "true"
            children:
            - push-ros-namespace: {namespace: $(var ns)}
            - node:
                pkg: demo_nodes_cpp
                exec: talker
                name: talker
                args: "--rate 5"
                respawn: "true"
                sigterm_timeout: "2"
                env: [{name: LEVEL, value: debug}]
                param: [{name: names, value: "a,b"}]
                remap: [{from: chatter, to: /chatter}]
        - timer:
            period: "0.5"
            children:
            - executable: {cmd: "echo done", name: done, shell: "true", on_exit: shutdown}
        """,
    )
    xml_file = _write(
        tmp_path / "same.launch.xml",
        """
        <?xml version="1.0"?>
        <launch>
          <arg name="ns" default="robot1" description="namespace"/>
          <group scoped="true">
            <push-ros-namespace namespace="$(var ns)"/>
            <node pkg="demo_nodes_cpp" exec="talker" name="talker" args="--rate 5" respawn="true" sigterm_timeout="2">
              <env name="LEVEL" value="debug"/>
              <param name="names" value="a,b"/>
              <remap from="chatter" to="/chatter"/>
            </node>
          </group>
          <timer period="0.5">
            <executable cmd="echo done" name="done" shell="true" on_exit="shutdown"/>
          </timer>
        </launch>
        """,
    )
    from_yaml, from_xml = plan_launch(yaml_file), plan_launch(xml_file)
    for a, b in zip(from_yaml.processes, from_xml.processes, strict=True):
        a.origin = b.origin = ""
        assert a == b
    assert from_yaml.arguments == from_xml.arguments == {"ns": "robot1"}


# ---------------------------------------------------------------------- refusals
REFUSALS = [
    (
        "launch:\n- node_container:\n    pkg: rclcpp_components\n    exec: component_container\n    name: c\n",
        "node_container: not supported by embodia's launch: composable nodes run inside a C++ component container",
    ),
    (
        "launch:\n- composable_node: {pkg: image_proc, plugin: image_proc::RectifyNode}\n",
        "composable_node: not supported",
    ),
    ("launch:\n- load_composable_node: {target: /c}\n", "load_composable_node: not supported"),
    ("launch:\n- include: {file: $(dirname)/robot.launch.py}\n", "robot.launch.py is a Python launch file"),
    (
        "launch:\n- ros_timer: {period: 1}\n",
        "ros_timer: not supported by embodia's launch: it counts ROS time",
    ),
    ("launch:\n- set_use_sim_time: {value: 'true'}\n", "set_use_sim_time: not supported"),
    (
        "launch:\n- on_process_exit: {target_action: x}\n",
        "on_process_exit: not supported by embodia's launch: event handlers",
    ),
    ("launch:\n- spawn_entity: {name: x}\n", "spawn_entity: not a ROS 2 launch action embodia knows"),
    ("launch:\n- node: {pkg: demo_nodes_cpp, exec: talker, nmae: x}\n", "node: unknown attribute 'nmae'"),
    (
        "launch:\n- node:\n    pkg: demo_nodes_cpp\n    exec: talker\n    param: [{from: p.yaml, allow_substs: true}]\n",
        "allow_substs is not supported",
    ),
    ("launch:\n- include: {file: $(dirname)/x.launch.yaml}\n", "launch file"),
]
XML_REFUSALS = [
    (
        '<launch>\n<node_container pkg="rclcpp_components" exec="component_container" name="c" namespace="">\n'
        '<composable_node pkg="image_proc" plugin="image_proc::RectifyNode" name="r"/>\n</node_container>\n</launch>\n',
        "x.launch.xml:2: node_container: not supported",
    ),
    ('<launch>\n  <include file="$(dirname)/demo.launch.py"/>\n</launch>\n', "x.launch.xml:2: include: "),
    (
        '<launch>\n<node pkg="demo_nodes_cpp" exec="talker"><foo/></node>\n</launch>\n',
        "unexpected nested <foo>",
    ),
    ("<launch>\n<node pkg='a'\n</launch>\n", "x.launch.xml:3: not well-formed XML"),
    ('<robot name="r"/>\n', "the root element is <robot>"),
]


@pytest.mark.parametrize(("text", "message"), REFUSALS + XML_REFUSALS)
def test_refused_constructs_are_one_line_naming_the_construct_and_line(tmp_path, ament, text, message):
    name = "x.launch.xml" if text.startswith("<") else "x.launch.yaml"
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(LaunchFileError) as info:
        parse_launch_file(path)
    error = str(info.value)
    assert message in error and "\n" not in error and "not valid YAML" not in error, error
    if not text.startswith("<robot"):
        assert f"{path}:" in error, error  # file and line


def test_a_python_launch_file_given_directly_is_refused(tmp_path):
    with pytest.raises(
        LaunchFileError, match="is a Python launch file; embodia runs YAML and XML launch files"
    ):
        parse_launch_file(tmp_path / "bringup.launch.py")


def test_invalid_yaml_is_one_line_with_its_line(tmp_path):
    path = tmp_path / "broken.launch.yaml"
    path.write_text("launch:\n- node: {pkg: a\n- node: b\n")
    with pytest.raises(
        LaunchFileError, match=r"broken\.launch\.yaml:\d+: not valid YAML \(.*\); fix the syntax$"
    ):
        parse_launch_file(path)


def test_module_import_is_cheap():
    import subprocess

    code = "import sys, embodia.robot.launch, embodia.cli.robot; print(sorted({'rclpy', 'torch'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_a_launch_prefix_this_machine_lacks_is_reported_not_refused(tmp_path):
    path = _write(
        tmp_path / "p.launch.yaml",
        "launch:\n- executable: {cmd: 'true', launch-prefix: 'no-such-debugger-xyz'}\n",
    )
    (spec,) = parse_launch_file(path)
    assert spec.missing == (
        "executable 'no-such-debugger-xyz' not found (not a file with execute permission, nor on PATH) "
        "(the launch-prefix)"
    )


def test_lifecycle_nodes_need_a_name_and_namespace_and_carry_autostart(tmp_path, ament):
    path = _write(
        tmp_path / "l.launch.yaml",
        """
        launch:
        - push-ros-namespace: {namespace: robot}
        - lifecycle_node: {pkg: demo_nodes_cpp, exec: talker, name: managed, namespace: "", autostart: true}
        - lifecycle_node: {pkg: demo_nodes_cpp, exec: listener, name: waiting, namespace: arm}
        """,
    )
    started, waiting = plan_launch(path).processes
    assert started.lifecycle and started.autostart and started.full_node_name == "/robot/managed"
    assert waiting.lifecycle and not waiting.autostart and waiting.full_node_name == "/robot/arm/waiting"
    assert _ros_rules(started)[:4] == ["-r", "__node:=managed", "-r", "__ns:=/robot"]
    for missing in ("name: x", 'namespace: ""'):
        bad = _write(
            tmp_path / "b.launch.yaml",
            f"launch:\n- lifecycle_node: {{pkg: demo_nodes_cpp, exec: talker, {missing}}}\n",
        )
        with pytest.raises(
            LaunchFileError, match=r"b\.launch\.yaml:2: lifecycle_node: .*needs '(name|namespace)'"
        ):
            parse_launch_file(bad)
