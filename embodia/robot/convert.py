"""ROS 2 messages <-> NumPy arrays: plain functions, tested without a running ROS graph.

Reading functions (``*_to_array``) only read attributes, so they accept rclpy messages and the message
objects ``rosbags`` deserialises from a bag alike. Building functions (``make_*``) create rclpy
messages. Every reading function validates what it reads and raises :class:`MessageError` with a
message that names what was wrong (joint names, encoding, sizes, non-finite values); the nodes log it
and drop the message.

Every reading function is registered as the converter of its type (:mod:`embodia.robot.converters`,
where the list of types lives; more sensor types are in :mod:`embodia.robot.convert_sensors`). Types
registered here (short names accepted wherever a type is named):

==========================  =================================================================
JointState                  ``position`` / ``velocity`` / ``effort``, reordered by joint name
                            (bags, recorder: every non-empty field, in that order)
Image                       rgb8, bgr8, rgba8, bgra8, mono8, mono16, 16UC1, 32FC1 -> (H, W[, C])
Odometry, PoseStamped       named components: x y z qx qy qz qw yaw (+ vx vy vz wx wy wz)
Twist, TwistStamped         components such as ``linear.x``, ``angular.z``
Float64MultiArray           ``data`` (reshaped by ``layout.dim`` when it has dims)
                            (Float*: bags and the recorder keep NaN / inf, nodes reject them)
JointTrajectory             positions of the first point, reordered by joint name
Float64, Float32, Bool      scalars
String                      text (instructions)
Clock                       seconds
==========================  =================================================================
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from embodia.robot.converters import converter_for, register_converter, short_names
from embodia.robot.errors import MessageError, RobotConfigError

JOINT_FIELDS = ("position", "velocity", "effort")

#: image encoding -> (dtype, channels)
IMAGE_ENCODINGS: dict[str, tuple[str, int]] = {
    "rgb8": ("uint8", 3),
    "bgr8": ("uint8", 3),
    "rgba8": ("uint8", 4),
    "bgra8": ("uint8", 4),
    "mono8": ("uint8", 1),
    "mono16": ("uint16", 1),
    "16UC1": ("uint16", 1),
    "32FC1": ("float32", 1),
}

POSE_FIELDS = ("x", "y", "z", "qx", "qy", "qz", "qw", "yaw")
TWIST_FIELDS = ("vx", "vy", "vz", "wx", "wy", "wz")
TWIST_COMPONENTS = ("linear.x", "linear.y", "linear.z", "angular.x", "angular.y", "angular.z")


def full_type_name(name: str) -> str:
    """Any type name as ``pkg/msg/Name``: registered short names (``Imu``) and ``pkg/Name`` expand."""
    short = short_names()
    if name in short:
        return short[name]
    parts = name.split("/")
    if len(parts) == 2 and all(parts):
        return f"{parts[0]}/msg/{parts[1]}"
    if len(parts) == 3 and all(parts):
        return name
    raise RobotConfigError(f"{name!r} is not a message type name (pkg/msg/Name, pkg/Name or e.g. JointState)")


def normalize_type(name: str) -> str:
    """``"JointState"``, ``"sensor_msgs/JointState"`` or ``"sensor_msgs/msg/JointState"`` -> the full name.

    Raises:
        RobotConfigError: the type has no registered converter.
    """
    if converter_for(name) is not None:  # a full name (the hot path of the nodes)
        return name
    short = short_names()
    if name in short:
        return short[name]
    parts = name.split("/")
    full = f"{parts[0]}/msg/{parts[1]}" if len(parts) == 2 else name
    if converter_for(full) is None:
        raise RobotConfigError(f"message type {full!r} is not supported; use one of {', '.join(short)}")
    return full


def message_class(type_name: str) -> type:
    """The rclpy message class of a type name (any installed type), e.g. ``sensor_msgs.msg.JointState``.

    Raises:
        RobotConfigError: the name is malformed or its package is not installed (not sourced).
    """
    package, kind, cls = full_type_name(type_name).split("/")
    try:
        return getattr(importlib.import_module(f"{package}.{kind}"), cls)
    except (ImportError, AttributeError):
        raise RobotConfigError(
            f"no message class for {type_name!r}: is its package installed and sourced?"
        ) from None


def type_name_of(msg_or_class: Any) -> str:
    """The full ROS 2 type name of an rclpy message (or class)."""
    cls = msg_or_class if isinstance(msg_or_class, type) else type(msg_or_class)
    package = cls.__module__.split(".")[0]
    return f"{package}/msg/{cls.__name__}"


# ---------------------------------------------------------------------- time stamps
def stamp_to_ns(stamp: Any) -> int:
    """A ``builtin_interfaces/Time`` as integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def set_stamp(stamp: Any, ns: int) -> None:
    """Write integer nanoseconds into a ``builtin_interfaces/Time``."""
    stamp.sec, stamp.nanosec = divmod(int(ns), 1_000_000_000)


def header_stamp_ns(msg: Any) -> int | None:
    """The header stamp of a stamped message, ``None`` for messages without a header."""
    header = getattr(msg, "header", None)
    return stamp_to_ns(header.stamp) if header is not None else None


# ---------------------------------------------------------------------- reading
def _finite(values: np.ndarray, what: str) -> np.ndarray:
    if not np.isfinite(values).all():
        raise MessageError(f"{what} holds non-finite values {values.tolist()}")
    return values


@register_converter(
    "sensor_msgs/msg/JointState", options=("joint_names", "fields"), bag_options={"fields": "present"}
)
def joint_state_to_array(
    msg: Any, joint_names: Sequence[str] | None = None, fields: Sequence[str] | str = ("position",)
) -> np.ndarray:
    """Concatenate the requested fields of a JointState, in the order of ``joint_names`` when given.

    ``fields="present"`` (bags, the recorder) takes every non-empty field of position, velocity,
    effort, in that order (position alone when all are empty).

    Raises:
        MessageError: a joint is missing, a field is empty or of the wrong length, or a value is not finite.
    """
    names = list(msg.name)
    if joint_names is not None:
        expected = list(joint_names)
        if names != expected:
            missing = [n for n in expected if n not in names]
            if missing or len(set(names)) != len(names):
                raise MessageError(
                    f"JointState has joints {names}, expected {expected} (missing: {missing or 'none'}); "
                    "check the joint_names in the node config"
                )
            order = [names.index(n) for n in expected]
        else:
            order = None
    else:
        order = None
    n = len(joint_names) if joint_names is not None else len(names)
    if isinstance(fields, str):
        if fields != "present":
            raise RobotConfigError(f"JointState fields must be a list or 'present', got {fields!r}")
        fields = [f for f in JOINT_FIELDS if len(getattr(msg, f))] or ["position"]
    parts = []
    for field in fields:
        if field not in JOINT_FIELDS:
            raise RobotConfigError(f"JointState field must be position, velocity or effort, got {field!r}")
        values = np.asarray(getattr(msg, field), dtype=np.float64)
        if names and len(values) != len(names):
            raise MessageError(f"JointState {field} has {len(values)} values for {len(names)} joints {names}")
        if not names and joint_names is None:
            n = len(values)
        if len(values) != n:
            raise MessageError(f"JointState {field} has {len(values)} values, expected {n}")
        parts.append(values[order] if order is not None else values)
    return _finite(np.concatenate(parts) if len(parts) > 1 else parts[0], "JointState")


@register_converter("sensor_msgs/msg/Image", options=("encoding", "height", "width"), heavy=True)
def image_to_array(
    msg: Any, encoding: str | None = None, height: int | None = None, width: int | None = None
) -> np.ndarray:
    """An Image as ``(H, W, C)`` (or ``(H, W)`` for one channel), checking encoding, size and row step.

    When the rows are not padded (``step`` is the row's bytes) and the byte order is the machine's, the array
    is a view of the message's buffer, not a copy: a camera frame reaches the policy without being copied
    (writable for rclpy messages, whose ``data`` is an ``array.array``; read-only for ``bytes``). Callers
    read it and never write into it. Padded rows are copied once; a foreign byte order is swapped in the
    same one copy.

    Raises:
        MessageError: unsupported or unexpected encoding, unexpected size, or data of the wrong length.
    """
    if msg.encoding not in IMAGE_ENCODINGS:
        raise MessageError(
            f"image encoding {msg.encoding!r} is not supported (supported: {', '.join(IMAGE_ENCODINGS)})"
        )
    if encoding is not None and msg.encoding != encoding:
        raise MessageError(f"image has encoding {msg.encoding!r}, expected {encoding!r}")
    h, w = int(msg.height), int(msg.width)
    if (height is not None and h != height) or (width is not None and w != width):
        raise MessageError(f"image is {h}x{w} (HxW), expected {height}x{width}")
    dtype_name, channels = IMAGE_ENCODINGS[msg.encoding]
    dtype = np.dtype(dtype_name).newbyteorder(">" if msg.is_bigendian else "<")
    row_bytes = w * channels * dtype.itemsize
    step = int(msg.step)
    raw = np.frombuffer(msg.data, dtype=np.uint8)
    if step < row_bytes or len(raw) != step * h:
        raise MessageError(
            f"image data has {len(raw)} bytes with step {step}; a {h}x{w} {msg.encoding} image needs "
            f"step >= {row_bytes} and {step}*{h} bytes"
        )
    # views so far: the rows without their padding, as pixels of the encoding's dtype
    pixels = raw.reshape(h, step)[:, :row_bytes].view(dtype).reshape(h, w, channels)
    if dtype.isnative:
        array = np.ascontiguousarray(pixels)  # copies only when rows are padded
    else:
        array = pixels.astype(dtype.newbyteorder("="))  # the one copy swaps the bytes
    return array[..., 0] if channels == 1 else array


def _yaw(q: Any) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def _pose_component(pose: Any, name: str) -> float:
    p, q = pose.position, pose.orientation
    table = {"x": p.x, "y": p.y, "z": p.z, "qx": q.x, "qy": q.y, "qz": q.z, "qw": q.w}
    return _yaw(q) if name == "yaw" else float(table[name])


def _twist_component(twist: Any, name: str) -> float:
    if name in TWIST_FIELDS:
        group = twist.linear if name[0] == "v" else twist.angular
        return float(getattr(group, name[1]))
    group_name, _, axis = name.partition(".")
    return float(getattr(getattr(twist, group_name), axis))


@register_converter("nav_msgs/msg/Odometry", options=("fields",))
def odometry_to_array(msg: Any, fields: Sequence[str] = ("x", "y", "yaw", "vx", "vy", "wz")) -> np.ndarray:
    """Named pose / twist components of an Odometry (see ``POSE_FIELDS`` and ``TWIST_FIELDS``)."""
    values = []
    for name in fields:
        if name in POSE_FIELDS:
            values.append(_pose_component(msg.pose.pose, name))
        elif name in TWIST_FIELDS:
            values.append(_twist_component(msg.twist.twist, name))
        else:
            raise RobotConfigError(f"Odometry field {name!r} unknown; use {POSE_FIELDS + TWIST_FIELDS}")
    return _finite(np.array(values), "Odometry")


@register_converter("geometry_msgs/msg/PoseStamped", options=("fields",))
def pose_stamped_to_array(
    msg: Any, fields: Sequence[str] = ("x", "y", "z", "qx", "qy", "qz", "qw")
) -> np.ndarray:
    """Named pose components of a PoseStamped."""
    unknown = [f for f in fields if f not in POSE_FIELDS]
    if unknown:
        raise RobotConfigError(f"PoseStamped fields {unknown} unknown; use {POSE_FIELDS}")
    return _finite(np.array([_pose_component(msg.pose, f) for f in fields]), "PoseStamped")


@register_converter("geometry_msgs/msg/TwistStamped", options=("components",))
@register_converter("geometry_msgs/msg/Twist", options=("components",))
def twist_to_array(msg: Any, components: Sequence[str] = TWIST_COMPONENTS) -> np.ndarray:
    """Components (``linear.x`` ...) of a Twist or TwistStamped."""
    twist = msg.twist if hasattr(msg, "twist") else msg
    return _finite(np.array([_twist_component(twist, c) for c in components]), "Twist")


@register_converter("std_msgs/msg/Float64MultiArray", options=("size",), bag_options={"finite": False})
def float64_multi_array_to_array(msg: Any, size: int | None = None, finite: bool = True) -> np.ndarray:
    """The data of a Float64MultiArray, reshaped by its layout dims when it has any.

    ``finite=False`` (bags, the recorder: data, kept as it is) accepts NaN and inf.
    """
    data = np.asarray(msg.data, dtype=np.float64)
    offset = int(msg.layout.data_offset)
    dims = [int(d.size) for d in msg.layout.dim]
    if dims:
        count = int(np.prod(dims))
        if len(data) < offset + count:
            raise MessageError(f"Float64MultiArray has {len(data)} values, its layout {dims} needs {count}")
        data = data[offset : offset + count].reshape(dims)
    if size is not None and data.size != size:
        raise MessageError(f"Float64MultiArray has {data.size} values, expected {size}")
    return _finite(data, "Float64MultiArray") if finite else data


@register_converter("trajectory_msgs/msg/JointTrajectory", options=("joint_names",))
def joint_trajectory_to_array(msg: Any, joint_names: Sequence[str] | None = None) -> np.ndarray:
    """Positions of the first trajectory point, in the order of ``joint_names`` when given."""
    if not msg.points:
        raise MessageError("JointTrajectory has no points")
    names = list(msg.joint_names)
    positions = np.asarray(msg.points[0].positions, dtype=np.float64)
    if len(positions) != len(names):
        raise MessageError(f"JointTrajectory point has {len(positions)} positions for joints {names}")
    if joint_names is not None and names != list(joint_names):
        if sorted(names) != sorted(joint_names):
            raise MessageError(f"JointTrajectory has joints {names}, expected {list(joint_names)}")
        positions = positions[[names.index(n) for n in joint_names]]
    return _finite(positions, "JointTrajectory")


@register_converter("std_msgs/msg/Float32", bag_options={"finite": False})
@register_converter("std_msgs/msg/Float64", bag_options={"finite": False})
def float_to_array(msg: Any, finite: bool = True) -> np.ndarray:
    """A Float64 or Float32 as a one-value float64 array (``finite=False``: NaN and inf accepted)."""
    value = np.array([float(msg.data)])
    return _finite(value, "Float") if finite else value


@register_converter("std_msgs/msg/Bool")
def bool_to_array(msg: Any) -> np.ndarray:
    """A Bool as a one-value bool array."""
    return np.array([bool(msg.data)])


@register_converter("std_msgs/msg/String", auto=False)
def string_to_text(msg: Any) -> str:
    """The text of a String (instructions); bags and the recorder store it as a text column."""
    return str(msg.data)


@register_converter("rosgraph_msgs/msg/Clock", auto=False)
def clock_to_array(msg: Any) -> np.ndarray:
    """A Clock as seconds."""
    return np.array([stamp_to_ns(msg.clock) / 1e9])


def to_array(msg: Any, type_name: str, **options: Any) -> np.ndarray | str:
    """Read a message with the converter registered for its type; ``options`` go to the reading function.

    Unknown options are an error (a config typo must not be ignored silently). Types whose converter
    returns several parts (TFMessage, CameraInfo) give their main part here.
    """
    converter = converter_for(normalize_type(type_name))
    assert converter is not None  # normalize_type refuses types without one
    options = {k: v for k, v in options.items() if v is not None}
    extra = set(options) - set(converter.options)
    if extra:
        if not converter.options:
            raise RobotConfigError(f"{converter.short_name} topics take no options, got {sorted(options)}")
        raise RobotConfigError(
            f"{converter.short_name} topics take options {converter.options}, got {sorted(extra)}"
        )
    value = converter.read(msg, **options)
    return value[""] if isinstance(value, dict) else value


# ---------------------------------------------------------------------- building (rclpy messages)
def _float_array(values: np.ndarray) -> Any:
    import array

    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def make_joint_state(values: np.ndarray, names: Sequence[str], stamp_ns: int = 0, frame_id: str = "") -> Any:
    """A JointState with ``position = values``."""
    msg = message_class("JointState")()
    set_stamp(msg.header.stamp, stamp_ns)
    msg.header.frame_id = frame_id
    values = np.ravel(values)
    if len(names) != len(values):
        raise MessageError(f"{len(values)} joint values for {len(names)} names")
    msg.name = list(names)
    msg.position = _float_array(values)
    return msg


def make_float64_multi_array(values: np.ndarray, labels: Sequence[str] | None = None) -> Any:
    """A Float64MultiArray holding ``values`` (row-major), its shape in ``layout.dim``."""
    cls = message_class("Float64MultiArray")
    from std_msgs.msg import MultiArrayDimension

    values = np.asarray(values, dtype=np.float64)
    msg = cls()
    dims = []
    stride = int(values.size)
    for axis, size in enumerate(values.shape):
        dim = MultiArrayDimension()
        dim.label = labels[axis] if labels else f"dim{axis}"
        dim.size = int(size)
        dim.stride = stride
        stride //= max(int(size), 1)
        dims.append(dim)
    msg.layout.dim = dims
    msg.data = _float_array(values.ravel())
    return msg


def image_encoding_for(dtype: Any, shape: Sequence[int]) -> str:
    """The encoding that carries pixels of this dtype and shape: rgb8, rgba8, mono8, 16UC1 or 32FC1."""
    dtype = np.dtype(dtype)
    channels = shape[2] if len(shape) == 3 else 1
    if dtype == np.uint8:
        encoding = {1: "mono8", 3: "rgb8", 4: "rgba8"}.get(channels)
    elif dtype == np.uint16 and channels == 1:
        encoding = "16UC1"
    elif dtype.kind == "f" and channels == 1:
        encoding = "32FC1"
    else:
        encoding = None
    if encoding is None or len(shape) not in (2, 3):
        raise MessageError(f"no image encoding carries {dtype} pixels of shape {tuple(shape)}")
    return encoding


def make_image(array: np.ndarray, encoding: str = "rgb8", stamp_ns: int = 0, frame_id: str = "") -> Any:
    """An Image from ``(H, W[, C])`` pixels in ``encoding`` (see ``IMAGE_ENCODINGS``)."""
    if encoding not in IMAGE_ENCODINGS:
        raise MessageError(f"image encoding {encoding!r} is not supported ({', '.join(IMAGE_ENCODINGS)})")
    dtype, channels = IMAGE_ENCODINGS[encoding]
    array = np.asarray(array)
    if array.ndim == 2:
        array = array[..., None]
    if array.ndim != 3 or array.shape[2] != channels:
        raise MessageError(f"a {encoding} image needs (H, W, {channels}) pixels, got {array.shape}")
    msg = message_class("Image")()
    set_stamp(msg.header.stamp, stamp_ns)
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    data = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    msg.step = int(msg.width * channels * data.itemsize)
    msg.data = data.tobytes()
    return msg


def _fill_twist(twist: Any, values: np.ndarray, components: Sequence[str]) -> None:
    for name, value in zip(components, np.ravel(values), strict=True):
        group_name, _, axis = name.partition(".")
        if group_name not in ("linear", "angular") or axis not in ("x", "y", "z"):
            raise RobotConfigError(f"twist component {name!r} unknown; use {TWIST_COMPONENTS}")
        setattr(getattr(twist, group_name), axis, float(value))


def make_twist(values: np.ndarray, components: Sequence[str]) -> Any:
    """A Twist whose ``components`` (``linear.x`` ...) take ``values``; the rest are zero."""
    msg = message_class("Twist")()
    _fill_twist(msg, values, components)
    return msg


def make_twist_stamped(
    values: np.ndarray, components: Sequence[str], stamp_ns: int = 0, frame_id: str = ""
) -> Any:
    """A TwistStamped; the stamp names the observation the command answers (lockstep simulation)."""
    msg = message_class("TwistStamped")()
    set_stamp(msg.header.stamp, stamp_ns)
    msg.header.frame_id = frame_id
    _fill_twist(msg.twist, values, components)
    return msg


def make_joint_trajectory(
    values: np.ndarray, joint_names: Sequence[str], stamp_ns: int = 0, time_from_start: float = 0.0
) -> Any:
    """A one-point JointTrajectory reaching ``values`` after ``time_from_start`` seconds."""
    from trajectory_msgs.msg import JointTrajectoryPoint

    values = np.ravel(values)
    if len(values) != len(joint_names):
        raise MessageError(f"{len(values)} positions for {len(joint_names)} joints {list(joint_names)}")
    msg = message_class("JointTrajectory")()
    set_stamp(msg.header.stamp, stamp_ns)
    msg.joint_names = list(joint_names)
    point = JointTrajectoryPoint()
    point.positions = _float_array(values)
    point.time_from_start.sec, point.time_from_start.nanosec = divmod(
        int(time_from_start * 1e9), 1_000_000_000
    )
    msg.points = [point]
    return msg
