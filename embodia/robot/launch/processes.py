"""``node`` and ``executable`` actions -> :class:`~.plan.ProcessSpec` (the command ROS 2 would start).

A node becomes ``EXECUTABLE ARGS [--ros-args ROS_ARGS] --ros-args -r __node:=NAME -r __ns:=NS -p k:=v
-r from:=to``, as launch_ros builds it (parameters go on the command line instead of a temporary file).
Command lines split as ROS 2 splits them (:func:`.substitutions.split_cmdline`). Parameter values keep
their type as ROS 2 would: a quoted YAML string stays a string (``'8080'``), ``type:`` forces one
(``str``, ``int``, ``float``, ``bool``, ``list_of_*``, ``yaml``), substituted values are read as YAML.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import yaml

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch.actions import SUB_ATTRIBUTES, Here, absolute_namespace, check_attributes
from embodia.robot.launch.frontend import Entity
from embodia.robot.launch.plan import ProcessSpec, resolve_executable
from embodia.robot.launch.substitutions import evaluate, has_substitutions, parse_bool, split_cmdline

PARAMETER_TYPES = (
    "str",
    "int",
    "float",
    "bool",
    "list_of_str",
    "list_of_int",
    "list_of_float",
    "list_of_bool",
    "yaml",
)


def _findable(command: str, cwd: str | None) -> bool:
    """Whether ``command`` would start: a path (relative to ``cwd``) to an executable file, or a name on PATH."""
    if "/" in command:
        path = Path(cwd or ".") / command
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(command) is not None


def _not_found(command: str) -> str:
    return f"executable {command!r} not found (not a file with execute permission, nor on PATH)"


def _cmdline(here: Here, name: str) -> list[str]:
    template = here.template(name)
    return [] if template is None else split_cmdline(template, here)


# ---------------------------------------------------------------------- parameters
def yaml_text(value: Any) -> str:
    """``value`` as the YAML text ``-p name:=TEXT`` needs for rcl to read it back with its type."""
    if isinstance(value, str) and value == "":
        return "''"
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    return text.removesuffix("\n...\n").strip()


def _coerce(here: Here, entity: Entity, text: str, type_id: str) -> Any:
    """``text`` as the parameter type ``type_id`` (ROS 2's ``type:`` attribute of ``param``)."""

    def one(value: Any, kind: str) -> Any:
        try:
            if kind == "str":
                return value if isinstance(value, str) else yaml_text(value)
            if kind == "bool":
                parsed = value if isinstance(value, bool) else parse_bool(str(value))
                if parsed is None:
                    raise ValueError
                return parsed
            if isinstance(value, bool):
                raise ValueError
            return int(value) if kind == "int" else float(value)
        except (TypeError, ValueError):
            raise entity.fail(f"value {text!r} is not of type {type_id}") from None

    if type_id == "yaml":
        return yaml.safe_load(text) if text else ""
    if type_id.startswith("list_of_"):
        try:
            items = yaml.safe_load(text)
        except yaml.YAMLError:
            items = None
        if not isinstance(items, list):
            raise entity.fail(
                f"value {text!r} is not a list (type {type_id}); write it as a YAML list: 1, 2 in brackets"
            )
        return [one(item, type_id[len("list_of_") :]) for item in items]
    return one(text, type_id)


def _read_yaml_value(text: str) -> Any:
    try:
        return yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        return text


def _parameter_value(here: Here, entity: Entity) -> str:
    raw = entity.attrs["value"]
    type_id = here.text("type", entity=entity)
    if type_id is not None and type_id not in PARAMETER_TYPES:
        raise entity.fail(f"type {type_id!r} is not one of {', '.join(PARAMETER_TYPES)}")
    if isinstance(raw, list):
        items = []
        for item in raw:
            if isinstance(item, str):
                template = here.template(
                    "value", Entity(entity.kind, {"value": item}, entity.file, entity.line)
                )
                value = evaluate(template or (), here)
                literal = not entity.xml and not has_substitutions(template or ())
                items.append(value if literal else _read_yaml_value(value))
            else:
                items.append(item)
        if type_id is not None:
            return yaml_text(_coerce(here, entity, yaml_text(items), type_id))
        return yaml_text(items)
    template = here.template("value", entity) or ()
    text = evaluate(template, here)
    if type_id is not None:
        return yaml_text(_coerce(here, entity, text, type_id))
    if not isinstance(raw, str):
        return yaml_text(raw)
    if not entity.xml and not has_substitutions(template):
        return yaml_text(raw)  # a YAML string stays a string ("8080" -> '8080'), as in ROS 2
    return text if text else "''"


def _parameter_rules(here: Here, entity: Entity, prefix: str = "") -> list[str]:
    """``name:=value`` rules (nested params joined with '.') and ``--params-file PATH`` entries."""
    check_attributes(entity, SUB_ATTRIBUTES["param"])
    if "from" in entity.attrs:
        if "name" in entity.attrs:
            raise entity.fail("'name' and 'from' exclude each other (from: a parameter file)")
        if here.text("allow_substs", entity=entity) not in (None, "false", "False", "0"):
            raise entity.fail(
                "allow_substs is not supported (embodia passes parameter files as they are); "
                "drop it and write the values into the file"
            )
        return [f"--params-file {here.required('from', entity=entity)}"]
    name = here.required("name", entity=entity)
    nested = entity.subs("param")
    if nested:
        if "value" in entity.attrs or "type" in entity.attrs:
            raise entity.fail(f"{name!r} has nested params and a value; give one of them")
        return [rule for n in nested for rule in _parameter_rules(here, n, f"{prefix}{name}.")]
    if "value" not in entity.attrs:
        raise entity.fail(f"{name!r} needs 'value' (or nested params, or 'from' a file)")
    return [f"{prefix}{name}:={_parameter_value(here, entity)}"]


# ---------------------------------------------------------------------- processes
def _configured_seconds(here: Here, name: str) -> float | None:
    """A timeout from the attribute, else from the launch configuration of the same name (as in ROS 2)."""
    value = here.seconds(name, None)
    if value is not None or name not in here.scope.configs:
        return value
    text = here.scope.configs[name]
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise here.fail(f"launch configuration {name} must be a finite number of seconds >= 0, got {text!r}")
    return number


def _process(here: Here, label: str, argv: list[str], shell: bool, **extra: Any) -> ProcessSpec:
    """The attributes nodes and executables share: environment, respawn, exit, prefix, tty, timeouts."""
    entity = here.entity
    prefix = here.text("launch-prefix")
    missing_prefix = None
    if prefix is None:
        prefix = here.scope.configs.get("launch-prefix", "")
        pattern = here.scope.configs.get("launch-prefix-filter", "")
        program = os.path.basename(argv[0].split()[0] if shell else argv[0])
        if prefix and pattern and re.match(pattern, program) is None:
            prefix = ""
    if prefix.strip():
        try:
            prefix_argv = shlex.split(prefix)
        except ValueError as error:
            raise here.fail(f"launch-prefix {prefix!r}: {error}") from error
        if not shell and not _findable(prefix_argv[0], None):
            missing_prefix = _not_found(prefix_argv[0]) + " (the launch-prefix)"
        argv = [f"{prefix} {argv[0]}"] if shell else [*prefix_argv, *argv]
    env = {k: v for k, v in here.scope.env.items() if v is not None}
    for item in entity.subs("env"):
        check_attributes(item, SUB_ATTRIBUTES["env"])
        env[here.required("name", entity=item)] = here.required("value", entity=item)
    unset = [k for k, v in here.scope.env.items() if v is None and k not in env]
    on_exit = here.text("on_exit")
    if on_exit not in (None, "shutdown"):
        raise here.fail(f"on_exit: {on_exit!r} is not supported; the one on_exit action is 'shutdown'")
    retries = here.text("respawn_max_retries", "-1") or "-1"
    if not re.fullmatch(r"-?\d+", retries.strip()) or int(retries) < -1:
        raise here.fail(f"respawn_max_retries must be an integer >= -1 (-1: no limit), got {retries!r}")
    emulate_tty = here.flag("emulate_tty", False)
    if "emulate_tty" in here.scope.configs:
        configured = parse_bool(here.scope.configs["emulate_tty"])
        if configured is None:
            raise here.fail(
                f"launch configuration emulate_tty must be true or false, got {here.scope.configs['emulate_tty']!r}"
            )
        emulate_tty = configured
    return ProcessSpec(
        name=label,
        argv=argv,
        env=env,
        unset_env=unset,
        cwd=here.text("cwd"),
        respawn=here.flag("respawn", False),
        respawn_delay=here.seconds("respawn_delay", 0.0) or 0.0,
        respawn_max_retries=int(retries),
        shutdown_on_exit=on_exit == "shutdown",
        shell=shell,
        emulate_tty=emulate_tty,
        sigterm_timeout=_configured_seconds(here, "sigterm_timeout"),
        sigkill_timeout=_configured_seconds(here, "sigkill_timeout"),
        output=here.text("output", "screen") or "screen",
        origin=entity.where,
        missing=missing_prefix,
        **extra,
    )


def node_spec(here: Here) -> ProcessSpec:
    """The process of a ``node`` action (``ros2 run PKG EXEC ARGS --ros-args ...``)."""
    executable = here.required("exec")
    package = here.text("pkg")
    missing = None  # a process that cannot start here is reported when it would start, as ros2 launch does
    if package:
        try:
            argv = resolve_executable(package, executable)
        except LaunchFileError as error:
            argv, missing = [executable], str(error)
    else:
        argv = [executable]
        if not _findable(executable, None):
            missing = _not_found(executable)
    argv += _cmdline(here, "args")
    ros_args = _cmdline(here, "ros_args")
    name = here.text("name")
    namespace = absolute_namespace(here.scope.namespace, here.text("namespace"))
    parameters = list(here.scope.global_params)
    for param in here.entity.subs("param"):
        parameters += _parameter_rules(here, param)
    remaps = list(here.scope.remaps)
    for remap in here.entity.subs("remap"):
        check_attributes(remap, SUB_ATTRIBUTES["remap"])
        remaps.append(f"{here.required('from', entity=remap)}:={here.required('to', entity=remap)}")
    rules = []
    if name:
        rules += ["-r", f"__node:={name}"]
    if namespace:
        rules += ["-r", f"__ns:={namespace}"]
    for rule in parameters:
        rules += rule.split(" ", 1) if rule.startswith("--params-file ") else ["-p", rule]
    for remap in remaps:
        rules += ["-r", remap]
    if ros_args:
        argv += ["--ros-args", *ros_args]
    if rules:
        argv += ["--ros-args", *rules]
    label = here.text("exec_name") or name or executable
    spec = _process(
        here, label, argv, False, node_name=name, namespace=namespace, parameters=parameters, remaps=remaps
    )
    spec.missing = spec.missing or missing
    return spec


def executable_spec(here: Here) -> ProcessSpec:
    """The process of an ``executable`` action (``cmd``, split as ROS 2 splits it, or run by a shell)."""
    template = here.template("cmd")
    if template is None:
        raise here.fail("needs 'cmd'")
    shell = here.flag("shell", False)
    argv = [evaluate(template, here)] if shell else split_cmdline(template, here)
    if not argv or not argv[0].strip():
        raise here.fail("'cmd' is empty")
    label = here.text("name") or Path(argv[0].split()[0]).name
    spec = _process(here, label, argv, shell)
    if not shell and not spec.missing and not _findable(argv[0], here.text("cwd")):
        spec.missing = _not_found(argv[0])
    return spec
