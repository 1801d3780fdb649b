"""A supervisor for ROS 2 launch files, YAML and XML (``ros2 launch`` is not installable from PyPI).

It reads the launch front ends (``.launch.yaml`` and ``.launch.xml``) with ROS 2's semantics, so the same
file runs with ``ros2 launch`` on a robot with a full ROS 2 install::

    launch:
    - arg: {name: episodes, default: "3"}
    - arg: {name: record, default: "false"}
    - group:
      - push-ros-namespace: {namespace: robot1}
      - node:
          pkg: embodia_ros
          exec: sim_node
          name: sim
          args: "embodia/PointMaze-Medium-v0 --episodes $(var episodes)"
          on_exit: shutdown
      - node:
          pkg: embodia_ros
          exec: policy_node
          name: policy
          respawn: true
          param: [{name: policy, value: $(env POLICY)}, {name: rate_hz, value: 50.0}]
          remap: [{from: cmd, to: cmd_vel}]
    - timer:
        period: 2.0
        children:
        - executable: {cmd: "echo recording", if: $(var record), sigterm_timeout: 2}

Supported actions: ``arg`` (default, choices; ``name:=value`` on the command line), ``let``, ``node``,
``executable``, ``group`` (a list body or ``children``; ``scoped``, ``forwarding``, ``keep``), ``include``
of YAML / XML files (``arg`` / ``let`` values passed), ``push-ros-namespace``, ``timer``, ``set_env``,
``unset_env``, ``append_env``, ``reset_env``, ``reset``, ``set_parameter``, ``set_parameters_from_file``,
``set_remap``, ``log``, ``shutdown``; ``if`` / ``unless`` on every action. Process attributes: ``args``,
``ros_args``, ``name``, ``namespace`` (absolute when it starts with '/'), ``param`` (nested, ``from``,
``type``), ``remap``, ``env``, ``cwd``, ``respawn``, ``respawn_delay``, ``respawn_max_retries``,
``on_exit: shutdown``, ``launch-prefix``, ``emulate_tty``, ``sigterm_timeout`` / ``sigkill_timeout``
(also launch-wide as launch configurations), ``output``, ``shell``. Substitutions: see
:mod:`.substitutions`. Refused with a one-line error naming the file, line and construct: composable
nodes (``node_container``, ``composable_node``, ``load_composable_node``), Python launch files,
``ros_timer``, ``set_use_sim_time``, ``set_ros_log_dir``, event handlers, unknown actions and attributes.

Modules: :mod:`.frontend` (YAML / XML -> entities), :mod:`.substitutions` and :mod:`.safe_eval`,
:mod:`.actions` (scopes, conditions, structure), :mod:`.processes` (nodes and executables -> commands),
:mod:`.plan` (what to start; ``--print``), :mod:`.supervisor` (starting and stopping).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch.actions import plan_launch
from embodia.robot.launch.plan import (
    EMBODIA_EXECUTABLES,
    LaunchPlan,
    ProcessSpec,
    find_package_share,
    format_plan,
    resolve_executable,
)
from embodia.robot.launch.supervisor import Supervisor

__all__ = [
    "EMBODIA_EXECUTABLES",
    "LaunchPlan",
    "ProcessSpec",
    "Supervisor",
    "describe_launch",
    "find_package_share",
    "launch",
    "parse_launch_arguments",
    "parse_launch_file",
    "plan_launch",
    "resolve_executable",
]


def parse_launch_file(path: str | Path, arguments: dict[str, str] | None = None) -> list[ProcessSpec]:
    """The processes a launch file describes (in start order of the file), with ``arguments`` applied."""
    return plan_launch(path, arguments).processes


def parse_launch_arguments(pairs: list[str]) -> dict[str, str]:
    """``["episodes:=3"]`` -> ``{"episodes": "3"}`` (the ``ros2 launch`` argument syntax)."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition(":=")
        if not sep or not name:
            raise LaunchFileError(f"launch arguments are NAME:=VALUE, got {pair!r}")
        out[name] = value
    return out


def describe_launch(path: str | Path, arguments: dict[str, str] | None = None) -> str:
    """What ``embodia robot launch FILE --print`` shows: every process it would start, nothing started."""
    return format_plan(plan_launch(path, arguments))


def launch(
    path: str | Path,
    arguments: dict[str, str] | None = None,
    timeout: float | None = None,
    out: TextIO | None = None,
) -> int:
    """Read a launch file and supervise its processes until they end (or Ctrl-C)."""
    return Supervisor(plan_launch(path, arguments), out=out).run(timeout)
