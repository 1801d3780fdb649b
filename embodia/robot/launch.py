"""A small supervisor for ROS 2 YAML launch files (``ros2 launch`` is not installable from PyPI).

It reads the subset of the YAML launch format that describes processes, so the same file runs with
``ros2 launch`` on a robot with a full ROS 2 install::

    launch:
    - arg: {name: episodes, default: "3"}
    - node:
        pkg: embodia_ros
        exec: sim_node
        name: sim
        namespace: robot1
        args: "embodia/PointMaze-Medium-v0 --episodes $(var episodes)"
        on_exit: shutdown
    - node:
        pkg: embodia_ros
        exec: policy_node
        name: policy
        namespace: robot1
        respawn: true
        param:
        - {name: policy, value: $(env POLICY)}
        - {name: rate_hz, value: 50.0}
        remap:
        - {from: cmd, to: cmd_vel}
    - executable: {cmd: "echo hello", name: hello, shell: true}

Supported: ``arg`` (default, overridden by ``name:=value``), ``let``, ``node`` (pkg, exec, name,
namespace, args, param, remap, env, respawn, respawn_delay, on_exit, output, launch-prefix, ros_args),
``executable`` (cmd, name, cwd, env, shell, respawn, respawn_delay, on_exit, output), ``group`` with
``push-ros-namespace`` / ``push_ros_namespace`` and ``children``, ``include`` of another YAML file, and
the substitutions ``$(var N)``, ``$(env N [default])``, ``$(find-pkg-share P)``, ``$(dirname)``.

A node becomes the command ``ros2 run`` would start: the executable (``embodia_ros`` executables run as
``python -m embodia.robot.<module>``; other packages are looked up in ``$AMENT_PREFIX_PATH``), then
``--ros-args -r __node:=NAME -r __ns:=NS -p k:=v -r from:=to``. The supervisor prefixes every output line
with ``[name-N]``, restarts ``respawn`` processes, stops everything when a process with
``on_exit: shutdown`` exits, and on SIGINT / SIGTERM sends SIGINT to every process, then SIGTERM and
SIGKILL to those still running after a grace period.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from embodia.robot.errors import LaunchFileError

#: executables of the embodia_ros package -> module run with ``python -m``
#: the embodia_ros executables, as the ``embodia`` command lines they are (see ``embodia.cli.robot.ros_node``)
EMBODIA_EXECUTABLES = {
    "policy_node": ("robot", "policy"),
    "sim_node": ("robot", "sim"),
    "record_node": ("robot", "record"),
}
_SUBSTITUTION = re.compile(r"\$\(([a-z-]+)((?:\s+[^)\s]+)*)\s*\)")


@dataclass
class ProcessSpec:
    """One process the supervisor starts."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    respawn: bool = False
    respawn_delay: float = 0.0
    shutdown_on_exit: bool = False
    shell: bool = False


class _Context:
    def __init__(self, path: Path, arguments: dict[str, str], includers: tuple[Path, ...] = ()) -> None:
        self.path = path
        self.includers = includers
        """the files that included this one, outermost first (an include cycle is an error)"""
        self.arguments = dict(arguments)
        self.variables: dict[str, str] = {}
        self.namespace = ""

    def substitute(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        if not isinstance(value, str):
            return value

        def replace(match: re.Match[str]) -> str:
            kind, rest = match.group(1), match.group(2).split()
            if kind == "var":
                if not rest or rest[0] not in self.variables:
                    raise LaunchFileError(
                        f"{self.path}: $(var {' '.join(rest)}) is not a declared arg or let"
                    )
                return self.variables[rest[0]]
            if kind == "env":
                if not rest:
                    raise LaunchFileError(f"{self.path}: $(env) needs a variable name")
                if rest[0] in os.environ:
                    return os.environ[rest[0]]
                if len(rest) > 1:
                    return " ".join(rest[1:])
                raise LaunchFileError(
                    f"{self.path}: environment variable {rest[0]} is not set (and has no default)"
                )
            if kind == "dirname":
                return str(self.path.parent)
            if kind == "find-pkg-share":
                return str(find_package_share(rest[0] if rest else ""))
            raise LaunchFileError(f"{self.path}: substitution $({kind}) is not supported")

        return _SUBSTITUTION.sub(replace, value)


def find_package_share(package: str) -> Path:
    """``share/<package>`` in ``$AMENT_PREFIX_PATH``, or this repository's ``ros2/embodia_ros`` for embodia_ros."""
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        share = Path(prefix) / "share" / package
        if share.is_dir():
            return share
    if package == "embodia_ros":
        source = Path(__file__).resolve().parents[2] / "ros2" / "embodia_ros"
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


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes")


def _param_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ",".join(_param_value(v) for v in value) + "]"
    return str(value)


def _respawn_delay(entry: dict[str, Any], ctx: _Context) -> float:
    """An entry's ``respawn_delay``: finite seconds >= 0 (NaN would never respawn, inf neither)."""
    value = entry.get("respawn_delay", 0.0)
    try:
        delay = float(value)
    except (TypeError, ValueError):
        delay = math.nan
    if not (math.isfinite(delay) and delay >= 0):
        raise LaunchFileError(
            f"{ctx.path}: respawn_delay must be a finite number of seconds >= 0, got {value!r}"
        )
    return delay


def _env(entries: Any, ctx: _Context) -> dict[str, str]:
    return {str(e["name"]): str(ctx.substitute(e["value"])) for e in entries or []}


def _node_spec(node: dict[str, Any], ctx: _Context, count: dict[str, int]) -> ProcessSpec:
    node = ctx.substitute(node)
    for required in ("pkg", "exec"):
        if required not in node:
            raise LaunchFileError(f"{ctx.path}: a node needs '{required}' (got {sorted(node)})")
    argv = resolve_executable(str(node["pkg"]), str(node["exec"]))
    if "launch-prefix" in node:
        argv = shlex.split(str(node["launch-prefix"])) + argv
    argv += shlex.split(str(node.get("args", "")))
    ros_args: list[str] = []
    if "name" in node:
        ros_args += ["-r", f"__node:={node['name']}"]
    namespace = "/".join(
        p.strip("/") for p in (ctx.namespace, str(node.get("namespace", ""))) if p.strip("/")
    )
    if namespace:
        ros_args += ["-r", f"__ns:=/{namespace}"]
    for param in node.get("param", []) or []:
        if "from" in param:
            ros_args += ["--params-file", str(param["from"])]
        else:
            ros_args += ["-p", f"{param['name']}:={_param_value(param['value'])}"]
    for remap in node.get("remap", []) or []:
        ros_args += ["-r", f"{remap['from']}:={remap['to']}"]
    ros_args += shlex.split(str(node.get("ros_args", "")))
    if ros_args:
        argv += ["--ros-args", *ros_args]
    base = str(node.get("name", node["exec"]))
    count[base] = count.get(base, 0) + 1
    return ProcessSpec(
        name=f"{base}-{count[base]}",
        argv=argv,
        env=_env(node.get("env"), ctx),
        respawn=_truthy(node.get("respawn", False)),
        respawn_delay=_respawn_delay(node, ctx),
        shutdown_on_exit=str(node.get("on_exit", "")) == "shutdown",
    )


def _executable_spec(entry: dict[str, Any], ctx: _Context, count: dict[str, int]) -> ProcessSpec:
    entry = ctx.substitute(entry)
    if "cmd" not in entry:
        raise LaunchFileError(f"{ctx.path}: an executable needs 'cmd'")
    shell = _truthy(entry.get("shell", False))
    argv = [str(entry["cmd"])] if shell else shlex.split(str(entry["cmd"]))
    if not argv or not argv[0].strip():
        raise LaunchFileError(f"{ctx.path}: an executable's 'cmd' is empty")
    if not shell and not _findable(argv[0], entry.get("cwd")):
        raise LaunchFileError(
            f"{ctx.path}: executable {argv[0]!r} not found (not a file with execute permission, nor on PATH)"
        )
    base = str(entry.get("name", Path(argv[0].split()[0]).name))
    count[base] = count.get(base, 0) + 1
    return ProcessSpec(
        name=f"{base}-{count[base]}",
        argv=argv,
        env=_env(entry.get("env"), ctx),
        cwd=entry.get("cwd"),
        respawn=_truthy(entry.get("respawn", False)),
        respawn_delay=_respawn_delay(entry, ctx),
        shutdown_on_exit=str(entry.get("on_exit", "")) == "shutdown",
        shell=shell,
    )


def _findable(command: str, cwd: str | None) -> bool:
    """Whether ``command`` would start: a path (relative to ``cwd``) to an executable file, or a name on PATH."""
    if "/" in command:
        path = Path(cwd or ".") / command
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(command) is not None


def _walk(entries: Any, ctx: _Context, specs: list[ProcessSpec], count: dict[str, int]) -> None:
    if not isinstance(entries, list):
        raise LaunchFileError(f"{ctx.path}: 'launch' must be a list of actions")
    for entry in entries:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise LaunchFileError(
                f"{ctx.path}: each launch entry is one action such as 'node:', got {entry!r}"
            )
        ((kind, body),) = entry.items()
        if kind == "arg":
            name = str(body["name"])
            if name in ctx.arguments:
                ctx.variables[name] = ctx.arguments[name]
            elif "default" in body:
                ctx.variables[name] = str(ctx.substitute(body["default"]))
            else:
                raise LaunchFileError(f"{ctx.path}: argument {name!r} has no default; pass {name}:=VALUE")
        elif kind == "let":
            ctx.variables[str(body["name"])] = str(ctx.substitute(body["value"]))
        elif kind == "node":
            specs.append(_node_spec(body, ctx, count))
        elif kind == "executable":
            specs.append(_executable_spec(body, ctx, count))
        elif kind in ("push-ros-namespace", "push_ros_namespace"):
            ctx.namespace = "/".join(
                p for p in (ctx.namespace, str(ctx.substitute(body["namespace"])).strip("/")) if p
            )
        elif kind == "group":
            saved = (ctx.namespace, dict(ctx.variables))
            _walk(body.get("children", []), ctx, specs, count)
            if _truthy(body.get("scoped", True)):
                ctx.namespace, ctx.variables = saved
        elif kind == "include":
            included = Path(str(ctx.substitute(body["file"])))
            if not included.is_absolute():
                included = ctx.path.parent / included
            arguments = {str(a["name"]): str(ctx.substitute(a["value"])) for a in body.get("arg", []) or []}
            chain = (*ctx.includers, ctx.path)
            if included.resolve() in {p.resolve() for p in chain}:
                cycle = " -> ".join(p.name for p in (*chain, included))
                raise LaunchFileError(
                    f"{ctx.path}: include cycle ({cycle}); a launch file cannot include itself"
                )
            sub = _Context(included, arguments, chain)
            sub.namespace = ctx.namespace
            _walk(_read(included), sub, specs, count)
        else:
            raise LaunchFileError(
                f"{ctx.path}: launch action {kind!r} is not supported by embodia's supervisor"
            )


def _read(path: Path) -> Any:
    if not path.is_file():
        raise LaunchFileError(f"launch file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise LaunchFileError(f"{path} is not valid YAML: {error}") from error
    if not isinstance(data, dict) or "launch" not in data:
        raise LaunchFileError(f"{path} is not a ROS 2 YAML launch file (no top-level 'launch:' list)")
    return data["launch"]


def parse_launch_file(path: str | Path, arguments: dict[str, str] | None = None) -> list[ProcessSpec]:
    """The processes a YAML launch file describes, with ``arguments`` (``name -> value``) applied."""
    path = Path(path).resolve()
    specs: list[ProcessSpec] = []
    try:
        _walk(_read(path), _Context(path, arguments or {}), specs, {})
    except (KeyError, TypeError) as error:
        raise LaunchFileError(f"{path}: malformed launch entry ({type(error).__name__}: {error})") from error
    return specs


def parse_launch_arguments(pairs: list[str]) -> dict[str, str]:
    """``["episodes:=3"]`` -> ``{"episodes": "3"}`` (the ``ros2 launch`` argument syntax)."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition(":=")
        if not sep or not name:
            raise LaunchFileError(f"launch arguments are NAME:=VALUE, got {pair!r}")
        out[name] = value
    return out


class Supervisor:
    """Starts the processes, prefixes their output, respawns, and stops them all (see module docstring)."""

    def __init__(self, specs: list[ProcessSpec], out: TextIO | None = None, grace: float = 5.0) -> None:
        self.specs = specs
        self.out = out or sys.stdout
        self.grace = grace
        self._lock = threading.Lock()
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.exit_codes: dict[str, list[int]] = {s.name: [] for s in specs}
        self.starts: dict[str, int] = {s.name: 0 for s in specs}

    def _print(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _pump(self, name: str, stream: Any) -> None:
        for raw in iter(stream.readline, b""):
            self._print(f"[{name}] {raw.decode(errors='replace').rstrip()}")
        stream.close()

    def _start(self, spec: ProcessSpec) -> subprocess.Popen[bytes]:
        env = {**os.environ, **spec.env, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            spec.argv if not spec.shell else spec.argv[0],
            shell=spec.shell,
            cwd=spec.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # signals come from the supervisor only, in a defined order
        )
        self.starts[spec.name] += 1
        thread = threading.Thread(target=self._pump, args=(spec.name, proc.stdout), daemon=True)
        thread.start()
        self._threads.append(thread)
        self._print(f"[INFO] [launch]: process started with pid [{proc.pid}]: {spec.name}")
        return proc

    def stop(self) -> None:
        """Ask the supervisor to shut everything down (thread-safe; also what SIGINT / SIGTERM do)."""
        self._stop.set()

    def run(self, timeout: float | None = None) -> int:
        """Run until every process has ended for good, one with ``on_exit: shutdown`` ended, or :meth:`stop`.

        Returns 0 when the shutdown-triggering process (or, without one, every process) exited with 0.
        """
        installed = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                installed[sig] = signal.signal(sig, lambda *_: self.stop())
        started = time.monotonic()
        status = 0
        respawn_at: dict[str, float] = {}
        try:
            for spec in self.specs:
                self._procs[spec.name] = self._start(spec)
            while not self._stop.is_set():
                if timeout is not None and time.monotonic() - started > timeout:
                    self._print("[WARN] [launch]: timeout reached, shutting down")
                    status = 124
                    break
                alive = 0
                for spec in self.specs:
                    proc = self._procs.get(spec.name)
                    if proc is None:
                        if spec.name in respawn_at and time.monotonic() >= respawn_at[spec.name]:
                            del respawn_at[spec.name]
                            self._procs[spec.name] = self._start(spec)
                            alive += 1
                        elif spec.name in respawn_at:
                            alive += 1
                        continue
                    code = proc.poll()
                    if code is None:
                        alive += 1
                        continue
                    self.exit_codes[spec.name].append(code)
                    del self._procs[spec.name]
                    level = "INFO" if code == 0 else "ERROR"
                    self._print(
                        f"[{level}] [launch]: process has finished cleanly [pid {proc.pid}]: {spec.name}"
                        if code == 0
                        else f"[{level}] [launch]: process [{spec.name}] died, exit code {code}"
                    )
                    if spec.shutdown_on_exit:
                        self._print(
                            f"[INFO] [launch]: {spec.name} exited with on_exit: shutdown; stopping all"
                        )
                        status = code
                        self._stop.set()
                        break
                    if spec.respawn and not self._stop.is_set():
                        respawn_at[spec.name] = time.monotonic() + spec.respawn_delay
                        alive += 1
                    elif code != 0 and status == 0:
                        status = code
                if not alive:
                    break
                self._stop.wait(0.05)
        finally:
            self._shutdown()
            for sig, handler in installed.items():
                signal.signal(sig, handler)
        return status

    def _shutdown(self) -> None:
        procs = [(n, p) for n, p in self._procs.items() if p.poll() is None]
        for sig, wait in ((signal.SIGINT, self.grace), (signal.SIGTERM, self.grace), (signal.SIGKILL, None)):
            if not procs:
                break
            for name, proc in procs:
                self._print(f"[INFO] [launch]: sending signal '{sig.name}' to process[{name}]")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + (wait or 5.0)
            while procs and time.monotonic() < deadline:
                procs = [(n, p) for n, p in procs if p.poll() is None]
                time.sleep(0.02)
        for name, proc in self._procs.items():
            if proc.returncode is not None:
                self.exit_codes[name].append(proc.returncode)
        self._procs.clear()
        for thread in self._threads:
            thread.join(timeout=2.0)


def launch(
    path: str | Path,
    arguments: dict[str, str] | None = None,
    timeout: float | None = None,
    out: TextIO | None = None,
) -> int:
    """Parse a YAML launch file and supervise its processes until they end (or Ctrl-C)."""
    return Supervisor(parse_launch_file(path, arguments), out=out).run(timeout)
