"""Configuration of the policy node: which topics become which observation keys, the command, safety.

A node config is a YAML file (or dict) mirroring :class:`PolicyNodeConfig`::

    rate_hz: 50                 # control rate
    trigger: timer              # or "observation": act as soon as a complete new observation arrived
    watchdog_timeout: 0.5
    observations:
      - {topic: /joint_states, type: JointState, key: state, joint_names: [j1, j2], fields: [position, velocity]}
      - {topic: /camera/image_raw, type: Image, key: rgb, encoding: rgb8, height: 64, width: 64}
      - {topic: /instruction, type: String, key: instruction, required: false}
    command:
      topic: /cmd_vel
      type: Twist
      components: [linear.x, angular.z]
      low: [-0.5, -1.0]
      high: [0.5, 1.0]
      out_of_range: clip        # or "stop"
      safe: zero                # or "hold", or a vector

Unknown fields are errors (a typo must not silently change what runs on a robot).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embodia.robot.convert import IMAGE_ENCODINGS, TWIST_COMPONENTS, normalize_type
from embodia.robot.errors import RobotConfigError
from embodia.robot.safety import CommandLimits

OBSERVATION_TYPES = (
    "JointState",
    "Image",
    "Odometry",
    "PoseStamped",
    "Float64MultiArray",
    "String",
    "Twist",
    "TwistStamped",
    "Float64",
    "Bool",
)
COMMAND_TYPES = ("Float64MultiArray", "Twist", "TwistStamped", "JointTrajectory")


@dataclass
class ObservationTopic:
    """One subscribed topic and how it becomes (part of) an observation key."""

    topic: str
    """topic name; relative names resolve in the node's namespace (and follow remaps)"""
    type: str
    """message type (``JointState``, ``Image``, ``Odometry``, ``PoseStamped``, ``Float64MultiArray``, ``String``, ...)"""
    key: str
    """observation key the policy reads; topics sharing a key are concatenated in config order"""
    joint_names: list[str] | None = None
    """JointState: joints in the order the policy expects (messages are reordered; missing joints rejected)"""
    fields: list[str] | None = None
    """JointState: position / velocity / effort; Odometry, PoseStamped: x y z qx qy qz qw yaw vx vy vz wx wy wz"""
    components: list[str] | None = None
    """Twist: components such as linear.x"""
    encoding: str | None = None
    """Image: the required encoding (others are rejected)"""
    height: int | None = None
    """Image: the required height"""
    width: int | None = None
    """Image: the required width"""
    size: int | None = None
    """Float64MultiArray: the required number of values"""
    required: bool = True
    """required topics are watched by the watchdog and must arrive before the policy runs"""
    dtype: str | None = None
    """dtype given to the policy (default float32 for vectors, the message's for images)"""

    def __post_init__(self) -> None:
        self.type = normalize_type(self.type)
        short = self.type.rsplit("/", 1)[1]
        if short not in OBSERVATION_TYPES:
            raise RobotConfigError(f"observation topic {self.topic!r}: type {short} cannot be an observation")
        if self.encoding is not None and self.encoding not in IMAGE_ENCODINGS:
            raise RobotConfigError(
                f"observation topic {self.topic!r}: unknown image encoding {self.encoding!r}"
            )

    @property
    def short_type(self) -> str:
        return self.type.rsplit("/", 1)[1]

    def reader_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`embodia.robot.convert.to_array`."""
        return {
            "joint_names": self.joint_names,
            "fields": self.fields,
            "components": self.components,
            "encoding": self.encoding,
            "height": self.height,
            "width": self.width,
            "size": self.size,
        }


@dataclass
class CommandTopic:
    """The published command and its safety limits."""

    low: list[float]
    """lower bound per command entry (the command has as many entries as this list)"""
    high: list[float]
    """upper bound per command entry"""
    topic: str = "cmd"
    """topic name"""
    type: str = "Float64MultiArray"
    """Float64MultiArray | Twist | TwistStamped | JointTrajectory"""
    components: list[str] | None = None
    """Twist(Stamped): which component each command entry drives (default linear.x, linear.y, ... in order)"""
    joint_names: list[str] | None = None
    """JointTrajectory: joint names (one per command entry)"""
    time_from_start: float = 0.0
    """JointTrajectory: seconds to reach the point (0: one control period)"""
    out_of_range: str = "clip"
    """``clip`` values outside [low, high], or ``stop``: publish the safe command instead"""
    safe: Any = "zero"
    """safe command on faults and stale observations: ``zero``, ``hold`` (last good command) or a vector"""

    def __post_init__(self) -> None:
        self.type = normalize_type(self.type)
        if self.short_type not in COMMAND_TYPES:
            raise RobotConfigError(f"command type must be one of {COMMAND_TYPES}, got {self.short_type}")
        if len(self.low) != len(self.high):
            raise RobotConfigError(f"command low has {len(self.low)} entries, high has {len(self.high)}")
        n = len(self.low)
        if self.short_type.startswith("Twist"):
            if self.components is None:
                if n > 6:
                    raise RobotConfigError(f"a Twist has 6 components, the command has {n} entries")
                self.components = list(TWIST_COMPONENTS[:n])
            bad = [c for c in self.components if c not in TWIST_COMPONENTS]
            if bad or len(self.components) != n:
                raise RobotConfigError(
                    f"command components {self.components} must be {n} of {TWIST_COMPONENTS}"
                )
        if self.short_type == "JointTrajectory" and (self.joint_names is None or len(self.joint_names) != n):
            raise RobotConfigError(f"a JointTrajectory command needs joint_names with {n} entries")
        self.limits()  # validate bounds and the safe command now

    @property
    def short_type(self) -> str:
        return self.type.rsplit("/", 1)[1]

    @property
    def size(self) -> int:
        return len(self.low)

    @property
    def stamped(self) -> bool:
        return self.short_type in ("TwistStamped", "JointTrajectory")

    def limits(self) -> CommandLimits:
        return CommandLimits(np.asarray(self.low), np.asarray(self.high), self.out_of_range, self.safe)


@dataclass
class PolicyNodeConfig:
    """Everything the policy node needs besides the policy."""

    observations: list[ObservationTopic]
    """subscribed topics (see :class:`ObservationTopic`)"""
    command: CommandTopic
    """published command (see :class:`CommandTopic`)"""
    rate_hz: float = 50.0
    """control rate: timer mode runs the policy at this rate; both modes check the watchdog at it"""
    trigger: str = "timer"
    """``timer``: act every control period on the newest observation; ``observation``: act once per new
    complete observation (every required topic updated, stamped topics with equal stamps: lockstep)"""
    watchdog_timeout: float = 0.5
    """seconds without a valid message on a required topic before the safe command is published"""
    reset_topic: str | None = "episode"
    """std_msgs/String JSON events; ``{"event": "start", "seed": s}`` resets the policy (None: no resets)"""
    status_period: float = 1.0
    """seconds between JSON status messages on ``~/status`` (counters, rate statistics)"""
    qos_depth: int = 10
    """history depth of every subscription and publisher"""
    torch_threads: int | None = 1
    """threads torch may use for inference (1: lowest latency, no thread hand-offs; None: torch's default)"""

    def __post_init__(self) -> None:
        if not self.observations:
            raise RobotConfigError("the node config lists no observations")
        if self.trigger not in ("timer", "observation"):
            raise RobotConfigError(f"trigger must be 'timer' or 'observation', got {self.trigger!r}")
        if not self.rate_hz > 0 or not self.watchdog_timeout > 0:
            raise RobotConfigError("rate_hz and watchdog_timeout must be positive")
        if not any(o.required for o in self.observations):
            raise RobotConfigError("at least one observation topic must be required")

    @property
    def required_keys(self) -> list[str]:
        return list(dict.fromkeys(o.key for o in self.observations if o.required))

    def to_dict(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items() if v is not None}
            if isinstance(value, list):
                return [clean(v) for v in value]
            return value

        return clean(dataclasses.asdict(self))


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise RobotConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise RobotConfigError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(names)}")
    try:
        return cls(**data)
    except TypeError as error:
        raise RobotConfigError(f"{where}: {error}") from error
    except RobotConfigError as error:
        raise RobotConfigError(f"{where}: {error}") from error


def node_config_from_dict(data: dict[str, Any], where: str = "node config") -> PolicyNodeConfig:
    """Build and validate a :class:`PolicyNodeConfig` from plain data (as parsed from YAML)."""
    if not isinstance(data, dict):
        raise RobotConfigError(f"{where}: expected a mapping at the top level")
    data = dict(data)
    observations = data.pop("observations", None)
    command = data.pop("command", None)
    if not isinstance(observations, list) or command is None:
        raise RobotConfigError(f"{where}: needs 'observations' (a list) and 'command'")
    topics = [_build(ObservationTopic, o, f"{where}: observations[{i}]") for i, o in enumerate(observations)]
    data["observations"] = topics
    data["command"] = _build(CommandTopic, command, f"{where}: command")
    return _build(PolicyNodeConfig, data, where)


def load_node_config(path: str | Path, overrides: dict[str, Any] | None = None) -> PolicyNodeConfig:
    """Read a node config YAML file; ``overrides`` replace top-level fields (e.g. ROS parameters)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise RobotConfigError(
            f"node config {str(path)!r} does not exist; write one (see README, section ROS 2 deployment)"
        )
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise RobotConfigError(f"{path} is not valid YAML: {error}") from error
    if isinstance(data, dict):
        data.update(overrides or {})
    return node_config_from_dict(data, str(path))
