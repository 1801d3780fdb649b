"""Reading the actions of a launch file into a :class:`~.plan.LaunchPlan`, with ROS 2's semantics.

Launch configurations (``arg``, ``let``, include arguments, the ROS namespace, ``set_parameter`` /
``set_remap`` rules) and the environment (``set_env`` ...) live in one scope, as in ROS 2: an ``include``
shares it (what the included file sets stays set), a ``group`` copies it (``scoped``, the default) or
starts from an empty one (``forwarding: false``, keeping its ``keep`` entries), ``timer`` children see a
copy taken where the timer is. Every action may carry ``if`` / ``unless``: the condition's value, after
substitution, must be ``true``/``false``/``1``/``0`` (any case); a false one skips the action and
everything in it. Processes are described by :mod:`.processes`.
"""

from __future__ import annotations

import math
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch.frontend import Entity, read_launch_file
from embodia.robot.launch.plan import LaunchPlan, TimedMessage
from embodia.robot.launch.substitutions import (
    Template,
    TemplateSyntaxError,
    environ_get,
    evaluate,
    parse_bool,
    parse_template,
)

PROCESS_ATTRIBUTES = frozenset(
    [
        "cwd",
        "env",
        "respawn",
        "respawn_delay",
        "respawn_max_retries",
        "on_exit",
        "launch-prefix",
        "output",
        "emulate_tty",
        "sigterm_timeout",
        "sigkill_timeout",
    ]
)
#: the attributes of every supported action (besides ``if`` / ``unless``)
ATTRIBUTES: dict[str, frozenset[str]] = {
    "arg": frozenset({"name", "default", "description", "choice"}),
    "let": frozenset({"name", "value"}),
    "node": PROCESS_ATTRIBUTES
    | {"pkg", "exec", "name", "namespace", "args", "ros_args", "exec_name", "param", "remap"},
    # launch_ros's LifecycleNode: a node whose transitions the launch drives (autostart: configure, activate)
    "lifecycle_node": PROCESS_ATTRIBUTES
    | {"pkg", "exec", "name", "namespace", "args", "ros_args", "exec_name", "param", "remap", "autostart"},
    "executable": PROCESS_ATTRIBUTES | {"cmd", "name", "shell"},
    "group": frozenset({"scoped", "forwarding", "keep"}),
    "include": frozenset({"file", "arg", "let"}),
    "push-ros-namespace": frozenset({"namespace"}),
    "push_ros_namespace": frozenset({"namespace"}),
    "timer": frozenset({"period", "cancel_on_shutdown"}),
    "set_env": frozenset({"name", "value"}),
    "unset_env": frozenset({"name"}),
    "append_env": frozenset({"name", "value", "prepend", "separator"}),
    "reset_env": frozenset(),
    "reset": frozenset({"keep"}),
    "log": frozenset({"message"}),
    "shutdown": frozenset({"reason"}),
    "set_parameter": frozenset({"name", "value"}),
    "set_parameters_from_file": frozenset({"filename"}),
    "set_remap": frozenset({"from", "to"}),
}
SUB_ATTRIBUTES: dict[str, frozenset[str]] = {
    "param": frozenset({"name", "value", "type", "from", "allow_substs", "param"}),
    "remap": frozenset({"from", "to"}),
    "env": frozenset({"name", "value"}),
    "arg": frozenset({"name", "value"}),
    "let": frozenset({"name", "value"}),
    "keep": frozenset({"name", "value"}),
    "choice": frozenset({"value"}),
}
_CONTAINERS = frozenset({"group", "timer"})
_COMPOSABLE = (
    "composable nodes run inside a C++ component container (rclcpp_components), which embodia's "
    "supervisor cannot host; start each component's own executable with a node action, or use ros2 launch"
)
_EVENTS = "event handlers are not supported; use on_exit: shutdown on the process, or a timer"
#: ROS 2 launch actions embodia knows and refuses, with what to do instead
REFUSED: dict[str, str] = {
    "node_container": _COMPOSABLE,
    "composable_node": _COMPOSABLE,
    "load_composable_node": _COMPOSABLE,
    "ros_timer": "it counts ROS time; use a timer action (wall-clock seconds)",
    "set_use_sim_time": "set the use_sim_time parameter instead (set_parameter {name: use_sim_time, value: true})",
    "set_ros_log_dir": "embodia's launch keeps no ROS log directory; set ROS_LOG_DIR with set_env",
    **{name: _EVENTS for name in ("on_process_exit", "on_process_start", "on_process_io", "on_shutdown")},
    **{
        name: _EVENTS for name in ("register_event_handler", "event_handler", "emit_event", "opaque_function")
    },
}


@dataclass
class LaunchScope:
    """Launch configurations and environment changes, as seen by the action being read."""

    configs: dict[str, str]
    env: dict[str, str | None] = field(default_factory=dict)
    """environment overlay over ``os.environ``; None: unset"""
    namespace: str | None = None
    global_params: list[str] = field(default_factory=list)
    remaps: list[str] = field(default_factory=list)

    def copy(self) -> LaunchScope:
        """An independent copy (a scoped group, a timer)."""
        return LaunchScope(
            dict(self.configs), dict(self.env), self.namespace, list(self.global_params), list(self.remaps)
        )


class Here:
    """One entity being read in one scope: what substitutions need (:class:`.substitutions.Scope`)."""

    def __init__(self, entity: Entity, scope: LaunchScope, reader: Reader) -> None:
        self.entity, self.scope, self.reader = entity, scope, reader
        self.file = entity.file

    def variable(self, name: str) -> str | None:
        return self.scope.configs.get(name)

    def environ(self, name: str) -> str | None:
        return environ_get(self.scope.env, name)

    def anon(self, name: str) -> str:
        if name not in self.reader.anon_names:
            self.reader.anon_names[name] = re.sub(
                r"[.:-]", "_", f"{name}_{os.getpid()}_{secrets.token_hex(4)}"
            )
        return self.reader.anon_names[name]

    def fail(self, message: str) -> LaunchFileError:
        return self.entity.fail(message)

    def runs_commands(self) -> bool:
        return self.reader.run_commands

    def unevaluated(self, text: str) -> None:
        self.reader.plan.unevaluated.append(f"{self.entity.where}: {text}")

    # ------------------------------------------------------------ attribute access
    def template(self, name: str, entity: Entity | None = None) -> Template | None:
        """Attribute ``name`` parsed as a substitution template, or None when absent."""
        entity = entity or self.entity
        value = entity.attrs.get(name)
        if value is None:
            return None
        if isinstance(value, (list, dict)):
            raise entity.fail(f"'{name}' must be a single value, got {value!r}")
        text = str(value).lower() if isinstance(value, bool) else str(value)
        try:
            return parse_template(text)
        except TemplateSyntaxError as error:
            raise entity.fail(f"'{name}': {error}") from error

    def text(self, name: str, default: str | None = None, entity: Entity | None = None) -> str | None:
        """Attribute ``name`` with its substitutions performed, or ``default`` when absent."""
        template = self.template(name, entity)
        return default if template is None else evaluate(template, self)

    def required(self, name: str, entity: Entity | None = None) -> str:
        """Attribute ``name`` (substituted); an error naming it when absent."""
        entity = entity or self.entity
        value = self.text(name, entity=entity)
        if value is None:
            raise entity.fail(f"needs '{name}' (got {sorted(entity.attrs) or 'no attributes'})")
        return value

    def flag(self, name: str, default: bool) -> bool:
        """A boolean attribute (``true``/``false``/``1``/``0``, YAML booleans)."""
        value = self.text(name)
        if value is None:
            return default
        parsed = parse_bool(value)
        if parsed is None:
            raise self.fail(f"'{name}' must be true or false, got {value!r}")
        return parsed

    def seconds(self, name: str, default: float | None) -> float | None:
        """A duration attribute: finite seconds >= 0 (NaN would never fire, inf neither)."""
        value = self.text(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number >= 0):
            raise self.fail(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        return number


def check_attributes(entity: Entity, known: frozenset[str]) -> None:
    """Refuse attributes the action does not have (a typo would otherwise be ignored silently)."""
    unknown = sorted(set(entity.attrs) - known)
    if unknown:
        raise entity.fail(
            f"unknown attribute {unknown[0]!r}; {entity.kind} takes {', '.join(sorted(known)) or 'none'}"
        )
    if entity.children and entity.kind not in _CONTAINERS and entity.kind != "launch":
        raise entity.fail(
            f"unexpected nested <{entity.children[0].kind}>: {entity.kind} has no nested actions"
        )


def _prefix_namespace(base: str | None, namespace: str | None) -> str | None:
    """ROS 2's rule: a relative namespace goes under ``base``; one starting with '/' stays absolute."""
    if namespace is None:
        return base
    if not base or namespace.startswith("/"):
        return namespace
    return ("" if base == "/" else base.rstrip("/")) + "/" + namespace


def absolute_namespace(base: str | None, namespace: str | None) -> str | None:
    """``namespace`` under ``base``, made absolute, without a trailing '/' (None when neither is set)."""
    combined = _prefix_namespace(base, namespace)
    if combined is None:
        return None
    combined = "/" + combined.strip("/")
    return combined


class Reader:
    """Reads launch files into one :class:`LaunchPlan` (the state shared by every included file)."""

    def __init__(self, plan: LaunchPlan, run_commands: bool = True) -> None:
        self.plan = plan
        self.run_commands = run_commands
        self.anon_names: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def walk(
        self, entities: list[Entity], scope: LaunchScope, delay: float, includers: tuple[Path, ...]
    ) -> None:
        """Read ``entities`` in order: conditions first, then the action."""
        for entity in entities:
            here = Here(entity, scope, self)
            if entity.kind in REFUSED:
                raise entity.fail(f"not supported by embodia's launch: {REFUSED[entity.kind]}")
            if entity.kind not in ATTRIBUTES:
                raise entity.fail(
                    f"not a ROS 2 launch action embodia knows (supported: {', '.join(sorted(ATTRIBUTES))})"
                )
            check_attributes(entity, ATTRIBUTES[entity.kind] | {"if", "unless"})
            if not self._condition(here):
                continue
            getattr(self, "_" + entity.kind.replace("-", "_"))(here, delay, includers)

    def _condition(self, here: Here) -> bool:
        entity = here.entity
        if "if" in entity.attrs and "unless" in entity.attrs:
            raise entity.fail("has both 'if' and 'unless'; ROS 2 allows one of them")
        for key, wanted in (("if", True), ("unless", False)):
            if key in entity.attrs:
                value = here.required(key)
                expanded = value.strip().lower()
                if expanded not in ("true", "1", "false", "0"):
                    raise entity.fail(
                        f"{key}: condition {value!r} is not true/false/1/0 (ROS 2 refuses it too); "
                        "use $(equals ...) or $(eval ...) for comparisons"
                    )
                if (expanded in ("true", "1")) != wanted:
                    label = (
                        entity.attrs.get("name") or entity.attrs.get("exec") or entity.attrs.get("cmd") or ""
                    )
                    label = f" {label}" if isinstance(label, str) and label else ""
                    self.plan.skipped.append(f"{entity.where}: {entity.kind}{label} ({key}: {value.strip()})")
                    return False
        return True

    # ------------------------------------------------------------ configurations
    def _arg(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        entity = here.entity
        name = str(entity.attrs.get("name") or "")
        if not name:
            raise entity.fail("needs 'name'")
        configs = here.scope.configs
        if name not in configs:
            default = here.text("default")
            if default is None:
                raise entity.fail(f"argument {name!r} has no default; pass {name}:=VALUE")
            configs[name] = default
        choices = []
        for choice in entity.subs("choice"):
            check_attributes(choice, SUB_ATTRIBUTES["choice"])
            choices.append(here.required("value", entity=choice))
        if choices and configs[name] not in choices:
            raise entity.fail(f"argument {name!r} is {configs[name]!r}; it must be one of {choices}")
        self.plan.arguments.setdefault(name, configs[name])

    def _let(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.configs[here.required("name")] = here.required("value")

    def _keeps(self, here: Here) -> dict[str, str]:
        keeps = {}
        for keep in here.entity.subs("keep"):
            check_attributes(keep, SUB_ATTRIBUTES["keep"])
            keeps[here.required("name", entity=keep)] = here.required("value", entity=keep)
        return keeps

    def _reset(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        keeps = self._keeps(here)
        here.scope.configs.clear()
        here.scope.configs.update(keeps)
        here.scope.namespace, here.scope.global_params, here.scope.remaps = None, [], []

    def _push_ros_namespace(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.namespace = absolute_namespace(here.scope.namespace, here.required("namespace"))

    def _set_env(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.env[here.required("name")] = here.required("value")

    def _unset_env(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.env[here.required("name")] = None

    def _append_env(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        name, value = here.required("name"), here.required("value")
        separator = here.text("separator", os.pathsep) or os.pathsep
        current = here.environ(name)
        if current:
            value = (
                value + separator + current if here.flag("prepend", False) else current + separator + value
            )
        here.scope.env[name] = value

    def _reset_env(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.env.clear()

    def _set_parameter(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        value = here.required("value")
        here.scope.global_params.append(f"{here.required('name')}:={value if value else chr(39) * 2}")

    def _set_parameters_from_file(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.global_params.append(f"--params-file {here.required('filename')}")

    def _set_remap(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        here.scope.remaps.append(f"{here.required('from')}:={here.required('to')}")

    # ------------------------------------------------------------ structure
    def _group(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        scoped, forwarding = here.flag("scoped", True), here.flag("forwarding", True)
        keeps = self._keeps(here)
        if not scoped:
            here.scope.configs.update(keeps)
            self.walk(here.entity.actions(), here.scope, delay, includers)
            return
        inner = here.scope.copy() if forwarding else LaunchScope(configs={})
        inner.configs.update(keeps)
        self.walk(here.entity.actions(), inner, delay, includers)

    def _timer(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        period = here.seconds("period", None)
        if period is None:
            raise here.fail("needs 'period' (seconds)")
        here.flag("cancel_on_shutdown", True)  # checked; pending timers never fire after a shutdown
        self.walk(here.entity.actions(), here.scope.copy(), delay + period, includers)

    def _include(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        entity = here.entity
        path = Path(here.required("file"))
        if not path.is_absolute():
            path = entity.file.parent / path
        chain = (*includers, entity.file)
        if path.resolve() in {p.resolve() for p in chain}:
            cycle = " -> ".join(p.name for p in (*chain, path))
            raise entity.fail(f"include cycle ({cycle}); a launch file cannot include itself")
        for argument in [*entity.subs("arg"), *entity.subs("let")]:
            check_attributes(argument, SUB_ATTRIBUTES[argument.kind])
            name = here.required("name", entity=argument)
            here.scope.configs[name] = here.required("value", entity=argument)
        root = read_launch_file(path, where=f"{entity.where}: include")
        check_attributes(root, frozenset({"deprecated", "version"}))
        self.walk(root.actions(), here.scope, delay, chain)

    def _log(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        self.plan.logs.append(TimedMessage(delay, here.required("message"), here.entity.where))

    def _shutdown(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        reason = here.text("reason", "shutdown action") or "shutdown action"
        self.plan.shutdowns.append(TimedMessage(delay, reason, here.entity.where))

    # ------------------------------------------------------------ processes
    def _node(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        from embodia.robot.launch.processes import node_spec

        self._add(node_spec(here), delay)

    def _lifecycle_node(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        from embodia.robot.launch.processes import node_spec

        for required in ("name", "namespace"):  # launch_ros requires both (the services are found by them)
            if here.text(required) is None:
                raise here.fail(
                    f"a lifecycle_node needs '{required}' (launch_ros requires name and namespace)"
                )
        spec = node_spec(here)
        spec.lifecycle, spec.autostart = True, here.flag("autostart", False)
        self._add(spec, delay)

    def _executable(self, here: Here, delay: float, includers: tuple[Path, ...]) -> None:
        from embodia.robot.launch.processes import executable_spec

        self._add(executable_spec(here), delay)

    def _add(self, spec: Any, delay: float) -> None:
        self.counts[spec.name] = self.counts.get(spec.name, 0) + 1
        spec.name = f"{spec.name}-{self.counts[spec.name]}"
        spec.delay = delay
        self.plan.processes.append(spec)


def plan_launch(
    path: str | Path, arguments: dict[str, str] | None = None, *, run_commands: bool = True
) -> LaunchPlan:
    """Everything the launch file at ``path`` describes, with ``arguments`` (``name -> value``) applied.

    ``run_commands=False`` (a dry run, ``--print``): ``$(command ...)`` substitutions are not run but kept
    as written, and listed in ``plan.unevaluated``; nothing else a launch file can say has side effects.

    Raises:
        LaunchFileError: one line naming the file, the line, the construct and what to do.
    """
    path = Path(path).resolve()
    plan = LaunchPlan(file=path)
    root = read_launch_file(path)
    check_attributes(root, frozenset({"deprecated", "version"}))
    if root.attrs.get("deprecated"):
        plan.logs.append(
            TimedMessage(0.0, f"{path.name} is deprecated: {root.attrs['deprecated']}", root.where)
        )
    try:
        Reader(plan, run_commands).walk(root.actions(), LaunchScope(configs=dict(arguments or {})), 0.0, ())
    except (KeyError, TypeError, AttributeError) as error:  # a shape no check above foresaw: still one line
        raise LaunchFileError(
            f"{path}: malformed launch file ({type(error).__name__}: {error}); check the shape of its actions"
        ) from error
    return plan
