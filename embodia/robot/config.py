"""Configuration of the policy node: which topics become which observation keys, the command, safety.

A node config is a YAML file (or dict) mirroring :class:`PolicyNodeConfig`::

    rate_hz: 50                 # control rate
    trigger: timer              # or "observation": act as soon as a complete new observation arrived
    watchdog_timeout: 0.5
    observations:
      - {topic: /joint_states, type: JointState, key: state, joint_names: [j1, j2], fields: [position, velocity]}
      - {topic: /camera/image_raw, type: Image, key: rgb, encoding: rgb8, height: 64, width: 64}
      - {topic: /instruction, type: String, key: instruction, required: false}
      - {topic: /tf, type: TFMessage, key: ee, parent_frame: base_link, child_frame: tool0, fields: [x, y, z]}
    command:
      topic: /cmd_vel
      type: Twist
      components: [linear.x, angular.z]
      low: [-0.5, -1.0]
      high: [0.5, 1.0]
      out_of_range: clip        # or "stop"
      safe: zero                # or "hold", or a vector

Unknown fields are errors (a typo must not silently change what runs on a robot), and so are NaN and
infinite numbers, out-of-range rates and periods, ``low > high`` and a safe vector outside the limits. The
config is validated with :func:`embodia.core.validation.validate` (field types and ranges are declared on
the fields below; cross-field rules live in ``__post_init__``) whether it comes from YAML, ROS parameters
or Python (:func:`check_node_config`), and every problem is reported in one line naming the field::

    node.yaml: command.low.0: Input should be a finite number (got nan)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Discriminator, Field, Tag

from embodia.core.validation import validate
from embodia.robot.convert import IMAGE_ENCODINGS, POSE_FIELDS, TWIST_COMPONENTS, normalize_type
from embodia.robot.errors import RobotConfigError
from embodia.robot.safety import CommandLimits

#: the fastest control rate a node accepts (a Python node cannot keep a faster deadline)
MAX_RATE_HZ = 1000.0
#: a control rate in Hz: (0, MAX_RATE_HZ]
RateHz = Annotated[float, Field(gt=0, le=MAX_RATE_HZ)]
#: a period or timeout in seconds: positive (and, like every validated float, finite)
Seconds = Annotated[float, Field(gt=0)]
#: a count, size or depth of at least one
PositiveInt = Annotated[int, Field(ge=1)]
#: a topic name or an observation key
Name = Annotated[str, Field(min_length=1)]
#: one finite bound per command entry
Bounds = Annotated[list[float], Field(min_length=1)]
#: ``zero``, ``hold`` or a vector (finite, one entry per command entry, inside [low, high]: checked with them)
SafeCommand = Annotated[
    Annotated[Literal["zero", "hold"], Tag("name")] | Annotated[list[float], Tag("vector")],
    Discriminator(lambda value: "name" if isinstance(value, str) else "vector"),
]

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
    "CompressedImage",
    "TFMessage",
)
#: image observation types: their arrays keep the message's dtype unless ``dtype`` says otherwise
IMAGE_TYPES = ("Image", "CompressedImage")
COMMAND_TYPES = ("Float64MultiArray", "Twist", "TwistStamped", "JointTrajectory")


@dataclass
class ObservationTopic:
    """One subscribed topic and how it becomes (part of) an observation key."""

    topic: Name
    """topic name; relative names resolve in the node's namespace (and follow remaps)"""
    type: str
    """message type (``JointState``, ``Image``, ``Odometry``, ``PoseStamped``, ``Float64MultiArray``, ``String``, ...)"""
    key: Name
    """observation key the policy reads; topics sharing a key are concatenated in config order"""
    joint_names: list[str] | None = None
    """JointState: joints in the order the policy expects (messages are reordered; missing joints rejected)"""
    fields: list[str] | None = None
    """JointState: position / velocity / effort; Odometry, PoseStamped: x y z qx qy qz qw yaw vx vy vz wx wy wz;
    TFMessage: x y z qx qy qz qw yaw (default the first seven)"""
    components: list[str] | None = None
    """Twist: components such as linear.x"""
    encoding: str | None = None
    """Image: the required encoding (others are rejected)"""
    height: PositiveInt | None = None
    """Image, CompressedImage: the required height (pixels, >= 1)"""
    width: PositiveInt | None = None
    """Image, CompressedImage: the required width (pixels, >= 1)"""
    parent_frame: str | None = None
    """TFMessage: the frame the pose is expressed in (tf2's target frame), e.g. ``base_link``"""
    child_frame: str | None = None
    """TFMessage: the frame whose pose is read (tf2's source frame), e.g. ``tool0``; the node subscribes to
    ``topic`` (``/tf``) and ``topic`` + ``_static`` (``/tf_static``, transient local) and composes the chain"""
    size: PositiveInt | None = None
    """Float64MultiArray: the required number of values (>= 1)"""
    required: bool = True
    """required topics are watched by the watchdog and must arrive before the policy runs"""
    dtype: str | None = None
    """dtype given to the policy (default float32 for vectors, the message's for images)"""

    def __post_init__(self) -> None:
        self.type = normalize_type(self.type)
        short = self.type.rsplit("/", 1)[1]
        if short not in OBSERVATION_TYPES:
            raise RobotConfigError(f"type {short} cannot be an observation (topic {self.topic!r})")
        if self.encoding is not None and self.encoding not in IMAGE_ENCODINGS:
            raise RobotConfigError(
                f"encoding: unknown image encoding {self.encoding!r} (topic {self.topic!r})"
            )
        if self.components is not None:
            bad = [c for c in self.components if c not in TWIST_COMPONENTS]
            if bad:
                raise RobotConfigError(f"components: {bad} are not Twist components {TWIST_COMPONENTS}")
        if short == "TFMessage":
            if not self.parent_frame or not self.child_frame:
                raise RobotConfigError(
                    f"a TFMessage observation needs parent_frame and child_frame (topic {self.topic!r})"
                )
            if self.fields is None:
                self.fields = list(POSE_FIELDS[:7])
            unknown = [name for name in self.fields if name not in POSE_FIELDS]
            if unknown:
                raise RobotConfigError(f"fields: {unknown} are not transform fields {list(POSE_FIELDS)}")
        elif self.parent_frame is not None or self.child_frame is not None:
            raise RobotConfigError(
                f"parent_frame and child_frame are for TFMessage topics (topic {self.topic!r})"
            )
        if self.dtype is not None:
            try:
                np.dtype(self.dtype)
            except TypeError:
                raise RobotConfigError(f"dtype: {self.dtype!r} is not a numpy dtype") from None

    @property
    def short_type(self) -> str:
        return self.type.rsplit("/", 1)[1]

    @property
    def is_transform(self) -> bool:
        """Read from the transform tree (``/tf`` and ``/tf_static``), not converted message by message."""
        return self.short_type == "TFMessage"

    @property
    def label(self) -> str:
        """How logs and diagnostics name this input: the topic, and for transforms the two frames."""
        if self.is_transform:
            return f"{self.topic} {self.parent_frame}->{self.child_frame}"
        return self.topic

    def reader_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`embodia.robot.convert.to_array`."""
        if self.short_type == "CompressedImage":  # sizes are checked on the decoded array
            return {}
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

    low: Bounds
    """lower bound per command entry (the command has as many entries as this list; finite numbers)"""
    high: Bounds
    """upper bound per command entry (finite, ``low <= high`` entry by entry)"""
    topic: Name = "cmd"
    """topic name"""
    type: str = "Float64MultiArray"
    """Float64MultiArray | Twist | TwistStamped | JointTrajectory"""
    components: list[str] | None = None
    """Twist(Stamped): which component each command entry drives (default linear.x, linear.y, ... in order)"""
    joint_names: list[str] | None = None
    """JointTrajectory: joint names (one per command entry)"""
    time_from_start: Annotated[float, Field(ge=0)] = 0.0
    """JointTrajectory: seconds to reach the point (>= 0; 0: one control period)"""
    out_of_range: Literal["clip", "stop"] = "clip"
    """``clip`` values outside [low, high], or ``stop``: publish the safe command instead"""
    safe: SafeCommand = "zero"
    """safe command on faults and stale observations: ``zero``, ``hold`` (last good command) or a vector
    (one finite value per command entry, inside [low, high])"""

    def __post_init__(self) -> None:
        self.type = normalize_type(self.type)
        if self.short_type not in COMMAND_TYPES:
            raise RobotConfigError(f"type must be one of {COMMAND_TYPES}, got {self.short_type}")
        self.limits()  # bounds (same length, finite, low <= high) and the safe command, named by field
        n = len(self.low)
        if self.short_type.startswith("Twist"):
            if self.components is None:
                if n > 6:
                    raise RobotConfigError(f"a Twist has 6 components, the command has {n} entries")
                self.components = list(TWIST_COMPONENTS[:n])
            bad = [c for c in self.components if c not in TWIST_COMPONENTS]
            if bad or len(self.components) != n:
                raise RobotConfigError(f"components {self.components} must be {n} of {TWIST_COMPONENTS}")
        if self.short_type == "JointTrajectory" and (self.joint_names is None or len(self.joint_names) != n):
            raise RobotConfigError(f"a JointTrajectory command needs joint_names with {n} entries")

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

    observations: Annotated[list[ObservationTopic], Field(min_length=1)]
    """subscribed topics (at least one, see :class:`ObservationTopic`)"""
    command: CommandTopic
    """published command (see :class:`CommandTopic`)"""
    rate_hz: RateHz = 50.0
    """control rate in (0, 1000] Hz: timer mode runs the policy at this rate; both modes check the watchdog
    at it"""
    trigger: Literal["timer", "observation"] = "timer"
    """``timer``: act every control period on the newest observation; ``observation``: act once per new
    complete observation (every required topic updated, stamped topics with equal stamps: lockstep)"""
    watchdog_timeout: Seconds = 0.5
    """seconds (> 0) without a valid message on a required topic before the safe command is published"""
    reset_topic: str | None = "episode"
    """std_msgs/String JSON events; ``{"event": "start", "seed": s}`` resets the policy (None: no resets)"""
    status_period: Seconds = 1.0
    """seconds (> 0) between JSON status messages on ``~/status`` (counters, rate statistics)"""
    qos_depth: PositiveInt = 10
    """history depth (>= 1) of every subscription and publisher (the command publisher keeps at least
    ``ros.PUBLISHER_DEPTH`` for slow subscribers such as recorders)"""
    sync_window: Annotated[float, Field(ge=0)] = 0.0
    """observation trigger: stamped required topics whose stamps lie within this many seconds (>= 0) of each
    other form one observation (``message_filters``' approximate-time slop); 0: the stamps must be equal"""
    max_stamp_age: Seconds | None = None
    """a message stamped more than this many seconds (> 0) before the node's clock (ROS time: simulated time
    with ``use_sim_time``) is rejected as stale, like a malformed one (the watchdog then decides); None: no
    age check. Messages older than the newest on their topic are always rejected (out of order)"""
    torch_threads: PositiveInt | None = 1
    """threads (>= 1) torch may use for inference (1: lowest latency, no thread hand-offs; None: torch's
    default)"""

    def __post_init__(self) -> None:
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


def check_node_config(
    config: PolicyNodeConfig | Mapping[str, Any], where: str = "node config"
) -> PolicyNodeConfig:
    """``config`` (plain data, or a :class:`PolicyNodeConfig` built in Python) validated field by field.

    Every node entry point passes its config through here, so a config built in Python gets the checks
    a YAML file gets (ranges, finiteness, unknown fields) and not only its ``__post_init__`` rules.

    Raises:
        RobotConfigError: one line naming every invalid field, e.g.
            ``node.yaml: command.low.0: Input should be a finite number (got nan)``.
    """
    if not isinstance(config, PolicyNodeConfig | Mapping):
        raise RobotConfigError(f"{where}: expected a mapping at the top level, got {type(config).__name__}")
    return validate(PolicyNodeConfig, config, where=where, error=RobotConfigError)


def node_config_from_dict(data: dict[str, Any], where: str = "node config") -> PolicyNodeConfig:
    """Build and validate a :class:`PolicyNodeConfig` from plain data (as parsed from YAML)."""
    if not isinstance(data, Mapping):
        raise RobotConfigError(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    return check_node_config(data, where)


def load_node_config(path: str | Path, overrides: dict[str, Any] | None = None) -> PolicyNodeConfig:
    """Read a node config YAML file; ``overrides`` replace top-level fields (e.g. ROS parameters)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise RobotConfigError(
            f"node config {str(path)!r} does not exist; write one (see docs/guides/ros2.md, or `embodia robot node-config ENV --out FILE`)"
        )
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise RobotConfigError(f"{path} is not valid YAML: {error}") from error
    if isinstance(data, dict):
        data.update(overrides or {})
    return node_config_from_dict(data, str(path))
