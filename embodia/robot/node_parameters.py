"""The policy node's config as ROS parameters: declared with types and ranges, changed at runtime, validated.

Every field of :class:`~embodia.robot.config.PolicyNodeConfig` is a parameter of the node, named by its path
in the YAML file (``rate_hz``, ``command.low``, ``observations.0.topic``), so ``ros2 param list / get /
describe`` show the whole config and a parameters YAML (or ``-p name:=value``) can override any field at
start-up. Declaring a parameter whose value was given at start-up returns that value, so the config the node
runs is the file with those overrides, validated as one.

At runtime only the fields a running controller can take without rebuilding its topics may change
(:data:`RUNTIME_FIELDS`: the rate, the watchdog timeout, the status period and the command's limits, its
out-of-range rule and its safe command); a change of another is refused with that reason (their descriptions
say so; a lifecycle node's cleanup removes them and configure reads the file again). A change
is checked exactly like the YAML file (:func:`~embodia.robot.config.check_node_config`: NaN, ``low > high``,
a safe vector outside the limits, a rate out of range) and must keep the command's size; a refused change
answers the ``set_parameters`` call with the reason and leaves the running values as they were.

This is what ros2_control and Nav2 nodes do: their limits are parameters, ``ros2 param set`` changes them on
a running node, and a parameter callback refuses bad values with a reason.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

from embodia.core.validation import field_docs
from embodia.robot.config import (
    MAX_RATE_HZ,
    CommandTopic,
    ObservationTopic,
    PolicyNodeConfig,
    check_node_config,
)
from embodia.robot.errors import RobotConfigError

#: parameters a running node accepts changes of (the rest describe topics and types: read-only)
RUNTIME_FIELDS = (
    "rate_hz",
    "watchdog_timeout",
    "status_period",
    "command.low",
    "command.high",
    "command.out_of_range",
    "command.safe",
)

_TOP_DOCS = field_docs(PolicyNodeConfig)
_COMMAND_DOCS = field_docs(CommandTopic)
_OBSERVATION_DOCS = field_docs(ObservationTopic)


def config_parameters(config: PolicyNodeConfig) -> dict[str, Any]:
    """The config as flat ``name -> value`` parameters (fields left unset are left out)."""
    data = config.to_dict()
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key == "observations":
            for index, topic in enumerate(value):
                for field, item in topic.items():
                    flat[f"observations.{index}.{field}"] = item
        elif key == "command":
            for field, item in value.items():
                flat[f"command.{field}"] = item
        else:
            flat[key] = value
    return flat


def config_from_parameters(flat: dict[str, Any], where: str = "parameters") -> PolicyNodeConfig:
    """Rebuild and validate a config from flat parameters (inverse of :func:`config_parameters`).

    Raises:
        RobotConfigError: one line naming the invalid fields.
    """
    data: dict[str, Any] = {"command": {}, "observations": []}
    observations: dict[int, dict[str, Any]] = {}
    for name, value in flat.items():
        if isinstance(value, tuple):
            value = list(value)
        head, _, rest = name.partition(".")
        if head == "command":
            data["command"][rest] = value
        elif head == "observations":
            index, _, field = rest.partition(".")
            observations.setdefault(int(index), {})[field] = value
        else:
            data[name] = value
    data["observations"] = [observations[i] for i in sorted(observations)]
    return check_node_config(data, where)


def _doc(name: str) -> str:
    field = name.rsplit(".", 1)[-1]
    if name.startswith("command."):
        return _COMMAND_DOCS.get(field, "")
    if name.startswith("observations."):
        return _OBSERVATION_DOCS.get(field, "")
    return _TOP_DOCS.get(field, "")


def _descriptor(name: str, value: Any) -> Any:
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

    description = " ".join(_doc(name).split())
    if name not in RUNTIME_FIELDS:
        description += " [fixed while configured: change the config file, then cleanup and configure]"
    descriptor = ParameterDescriptor(
        description=description,
        # not rclpy's read_only: a read-only parameter cannot be undeclared, and cleanup removes them all so
        # that configure reads the file again; the node's set-parameters callback refuses the change instead
        # numbers accept ints and floats (-p rate_hz:=20), the safe command a name or a vector: the
        # config's own validation (below) checks them, as it checks the YAML file
        dynamic_typing=True,
    )
    if name == "rate_hz":
        descriptor.floating_point_range = [FloatingPointRange(from_value=0.0, to_value=MAX_RATE_HZ)]
        descriptor.additional_constraints = f"> 0 and <= {MAX_RATE_HZ:g} Hz"
    elif name in ("watchdog_timeout", "status_period"):
        descriptor.additional_constraints = "seconds, > 0, finite"
    elif name in ("qos_depth", "torch_threads"):
        descriptor.integer_range = [IntegerRange(from_value=1, to_value=1 << 20)]
    elif name in ("command.low", "command.high"):
        descriptor.additional_constraints = "one finite value per command entry; low <= high entry by entry"
    elif name == "command.safe":
        descriptor.additional_constraints = (
            "'zero', 'hold', or one value per command entry inside [low, high]"
        )
    elif name == "command.out_of_range":
        descriptor.additional_constraints = "'clip' or 'stop'"
    return descriptor


def _ros_value(value: Any) -> Any:
    """A config value as a ROS parameter value (lists of numbers as float arrays)."""
    if isinstance(value, list) and value and all(isinstance(v, int | float) for v in value):
        return [float(v) for v in value]
    return value


def declare_config_parameters(node: Any, config: PolicyNodeConfig) -> PolicyNodeConfig:
    """Declare every config field as a parameter of ``node``; return the config the parameters describe.

    Values given at start-up (``-p``, a parameters file, a launch file's ``param``) override the config's;
    the result is validated as a whole.

    Raises:
        RobotConfigError: the overridden config is invalid (one line naming the fields).
    """
    from rclpy.exceptions import ParameterException

    flat = config_parameters(config)
    values: dict[str, Any] = {}
    for name, value in flat.items():
        if isinstance(value, list) and not value:
            values[name] = value  # an empty list has no parameter type; it stays as the file has it
            continue
        try:
            declared = node.declare_parameter(name, _ros_value(value), _descriptor(name, value))
        except ParameterException as error:  # a start-up override outside the descriptor's range
            raise RobotConfigError(f"ROS parameters: {name}: {error}") from None
        values[name] = declared.value
    return config_from_parameters(values, "ROS parameters")


def changed_config(config: PolicyNodeConfig, changes: Iterable[tuple[str, Any]]) -> PolicyNodeConfig:
    """``config`` with runtime parameter ``changes`` applied, validated like the YAML file.

    Raises:
        RobotConfigError: a change names a field that cannot change at runtime, makes the config invalid,
            or changes the command's size; the message says which and why.
    """
    flat = config_parameters(config)
    for name, value in changes:
        if name not in flat and name not in RUNTIME_FIELDS:
            raise RobotConfigError(f"{name}: not a parameter of the policy node")
        if name not in RUNTIME_FIELDS:
            raise RobotConfigError(f"{name}: cannot change while the node runs (reconfigure it)")
        if isinstance(value, float) and not math.isfinite(value):
            raise RobotConfigError(f"{name}: must be a finite number (got {value})")
        flat[name] = list(value) if isinstance(value, tuple | list) else value
    new = config_from_parameters(copy.deepcopy(flat), "parameter change")
    if new.command.size != config.command.size:
        raise RobotConfigError(
            f"command.low / command.high: the command has {config.command.size} entries, "
            f"got {new.command.size} (the size cannot change at runtime)"
        )
    return new
