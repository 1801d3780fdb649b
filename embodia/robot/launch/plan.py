"""What a launch file amounts to: the processes to start (with when and how), log lines, shutdowns.

:func:`format_plan` renders it for ``embodia robot launch FILE --print`` (a dry run: nothing starts).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from embodia.robot.errors import LaunchFileError

#: the embodia_ros executables, as the ``embodia`` command lines they are (see ``embodia.cli.robot.ros_node``)
EMBODIA_EXECUTABLES = {
    "policy_node": ("robot", "policy"),
    "lifecycle_policy_node": ("robot", "policy", "--lifecycle"),
    "sim_node": ("robot", "sim"),
    "record_node": ("robot", "record"),
}


@dataclass
class ProcessSpec:
    """One process the supervisor starts."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    """environment variables added to (or replacing) the supervisor's environment"""
    cwd: str | None = None
    respawn: bool = False
    respawn_delay: float = 0.0
    shutdown_on_exit: bool = False
    shell: bool = False
    delay: float = 0.0
    """seconds after the launch starts (``timer`` actions)"""
    respawn_max_retries: int = -1
    """respawns at most this many times; -1: without limit"""
    unset_env: list[str] = field(default_factory=list)
    """environment variables removed (``unset_env``)"""
    emulate_tty: bool = False
    """run with a pseudo-terminal as stdout / stderr (line-buffered, coloured output)"""
    sigterm_timeout: float | None = None
    """seconds after SIGINT before SIGTERM on shutdown (None: the supervisor's default)"""
    sigkill_timeout: float | None = None
    """seconds after SIGTERM before SIGKILL on shutdown (None: the supervisor's default)"""
    output: str = "screen"
    node_name: str | None = None
    namespace: str | None = None
    parameters: list[str] = field(default_factory=list)
    """``name:=value`` rules and ``--params-file PATH`` entries, as passed"""
    remaps: list[str] = field(default_factory=list)
    origin: str = ""
    """``FILE:LINE`` of the action"""
    missing: str | None = None
    """why the executable cannot start on this machine (not found); reported when it would start"""
    lifecycle: bool = False
    """a ``lifecycle_node``: a managed node whose transitions the launch can drive"""
    autostart: bool = False
    """configure and activate it once its lifecycle services appear (launch_ros's ``autostart``)"""

    @property
    def full_node_name(self) -> str:
        """``/namespace/name`` of the node (its lifecycle services live under it)."""
        namespace = (self.namespace or "/").rstrip("/")
        return f"{namespace}/{self.node_name}"


@dataclass
class TimedMessage:
    """A ``log`` or ``shutdown`` action: what, and when (seconds after the launch starts)."""

    delay: float
    text: str
    origin: str = ""


@dataclass
class LaunchPlan:
    """Everything a launch file describes, resolved for one set of arguments."""

    file: Path
    arguments: dict[str, str] = field(default_factory=dict)
    """declared launch arguments and their values, in declaration order"""
    processes: list[ProcessSpec] = field(default_factory=list)
    logs: list[TimedMessage] = field(default_factory=list)
    shutdowns: list[TimedMessage] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """actions a condition (``if`` / ``unless``) skipped, one line each"""
    unevaluated: list[str] = field(default_factory=list)
    """``$(command ...)`` substitutions a dry run left as written (``FILE:LINE: $(command ...)``)"""


def find_package_share(package: str) -> Path:
    """``share/<package>`` in ``$AMENT_PREFIX_PATH``, or this repository's ``ros2/embodia_ros`` for embodia_ros."""
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        share = Path(prefix) / "share" / package
        if share.is_dir():
            return share
    if package == "embodia_ros":
        source = Path(__file__).resolve().parents[3] / "ros2" / "embodia_ros"
        if source.is_dir():
            return source
    raise LaunchFileError(f"package {package!r} not found in AMENT_PREFIX_PATH")


def resolve_executable(package: str, executable: str) -> list[str]:
    """The command that ``ros2 run PACKAGE EXECUTABLE`` would start."""
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidate = Path(prefix) / "lib" / package / executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate)]
    if package == "embodia_ros" and executable in EMBODIA_EXECUTABLES:
        return [sys.executable, "-m", "embodia.cli", *EMBODIA_EXECUTABLES[executable]]
    known = ", ".join(EMBODIA_EXECUTABLES)
    raise LaunchFileError(
        f"executable {executable!r} of package {package!r} not found (embodia_ros has {known}; other "
        "packages need a sourced ROS 2 workspace: AMENT_PREFIX_PATH)"
    )


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _describe_process(spec: ProcessSpec, grace: float) -> list[str]:
    rows = [("argv", spec.argv[0] if spec.shell else shlex.join(spec.argv))]
    if spec.missing:
        rows.append(("missing", f"{spec.missing} (reported when it would start)"))
    if spec.shell:
        rows.append(("shell", "yes (run by /bin/sh)"))
    if spec.node_name or spec.namespace:
        rows.append(("node", f"name {spec.node_name or '(default)'}, namespace {spec.namespace or '/'}"))
    if spec.lifecycle:
        drive = "configure + activate when its services appear" if spec.autostart else "left unconfigured"
        rows.append(("lifecycle", f"managed node {spec.full_node_name}: {drive}"))
    if spec.parameters:
        rows.append(("parameters", "  ".join(spec.parameters)))
    if spec.remaps:
        rows.append(("remaps", "  ".join(spec.remaps)))
    if spec.env or spec.unset_env:
        added = [f"{k}={v}" for k, v in spec.env.items()]
        rows.append(("environment", "  ".join(added + [f"-{k} (unset)" for k in spec.unset_env])))
    if spec.cwd:
        rows.append(("cwd", spec.cwd))
    rows.append(("start", f"after {_seconds(spec.delay)} (timer)" if spec.delay else "at launch"))
    if spec.respawn:
        retries = "unlimited" if spec.respawn_max_retries < 0 else str(spec.respawn_max_retries)
        rows.append(("respawn", f"yes, after {_seconds(spec.respawn_delay)}, max retries {retries}"))
    if spec.shutdown_on_exit:
        rows.append(("on exit", "shut the launch down"))
    if spec.emulate_tty:
        rows.append(("emulate_tty", "yes"))
    if spec.output != "screen":
        rows.append(("output", f"{spec.output} (embodia prints every process's output)"))
    term = grace if spec.sigterm_timeout is None else spec.sigterm_timeout
    kill = grace if spec.sigkill_timeout is None else spec.sigkill_timeout
    rows.append(("stop", f"SIGINT, SIGTERM after {_seconds(term)}, SIGKILL {_seconds(kill)} later"))
    return [f"    {key + ':':<13}{value}" for key, value in rows]


def format_plan(plan: LaunchPlan, grace: float = 5.0) -> str:
    """The dry-run report of ``embodia robot launch FILE --print``: every process it would start, and how."""
    lines = [f"launch file: {plan.file}"]
    if plan.arguments:
        lines.append("arguments:")
        lines += [f"  {name} = {value!r}" for name, value in plan.arguments.items()]
    lines.append(f"processes ({len(plan.processes)}):")
    for spec in sorted(plan.processes, key=lambda s: s.delay):
        lines.append(f"  [{spec.name}]" + (f"  ({spec.origin})" if spec.origin else ""))
        lines += _describe_process(spec, grace)
    for title, messages in (("log messages", plan.logs), ("shutdown", plan.shutdowns)):
        if messages:
            lines.append(f"{title}:")
            lines += [f"  after {_seconds(m.delay)}: {m.text}  ({m.origin})" for m in messages]
    if plan.skipped:
        lines.append("skipped by a condition:")
        lines += [f"  {line}" for line in plan.skipped]
    if plan.unevaluated:
        lines.append("not evaluated (a dry run runs no commands; shown as written above):")
        lines += [f"  {line}" for line in plan.unevaluated]
    return "\n".join(lines)
