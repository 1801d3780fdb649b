"""The message converter registry: one converter per ROS 2 message type, a generic fallback for the rest.

A converter is a reading function registered next to its definition with :func:`register_converter`
(``embodia/robot/convert.py``, ``embodia/robot/convert_sensors.py``; the modules are listed once, in
``_CONVERTER_MODULES``). It turns a message (an rclpy message or a ``rosbags`` message object alike)
into a value: an array, a text (``str``), or named *parts* (a dict: ``""`` is the main array, other
names are extra parts such as the frame names of a TFMessage). The policy node calls a converter with
the options of its config (:func:`embodia.robot.convert.to_array`); the recorder and the bag import call
it with the converter's ``bag_options`` (:func:`convert_message`), and fall back to
:func:`embodia.robot.flatten.flatten_message` for types without a converter, so any message with
numeric or text fields can be recorded and imported.

Values become store columns with :class:`TopicValues`: a topic with key ``KEY`` fills ``KEY`` with its
main part and ``KEY.<part>`` with the others. Text is stored as UTF-8 bytes zero-padded to a fixed width
(a ``uint8`` row of ``width`` bytes, read back with :func:`decode_text`), as the kitchen's
``instruction`` observation is: the store's arrays hold one dtype and row shape per key, zarr v3 has no
specified variable-length string type, and numpy's fixed-width ``S`` / ``U`` dtypes are stored by zarr
only under an unstable, warned-about extension; a ``uint8`` array is plain zarr, readable everywhere,
and exact (ROS strings hold no NUL character; a text holding one is rejected). Every value of a topic
must keep its shape: a message whose shape differs from the first (a LaserScan with another number of
ranges, a TFMessage with another number of transforms) raises :class:`ShapeError`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from embodia.robot.errors import MessageError

#: modules whose import registers converters (the one list of them)
_CONVERTER_MODULES = ("embodia.robot.convert", "embodia.robot.convert_sensors")
#: converted value: an array, a text, or named parts ("" is the main one)
Value = Any
#: default width (bytes) of a text column when nothing else decides it (live recording)
TEXT_BYTES = 256
_TEXT_STEP = 64  # bag import: text widths are rounded up to a multiple of this

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Converter:
    """One registered message type: its reading function and how bags and the recorder call it."""

    type_name: str
    """full ROS 2 type name, e.g. ``sensor_msgs/msg/Imu``"""
    read: Callable[..., Any]
    """``read(msg, **options)`` -> array, text or parts; raises MessageError for a bad message"""
    options: tuple[str, ...] = ()
    """keyword options a node config may pass (unknown ones are config errors)"""
    bag_options: Mapping[str, Any] = field(default_factory=dict)
    """options used by the bag import and the recorder (no config there)"""
    auto: bool = True
    """imported when no topic is named (False: only when named, e.g. /tf, long texts)"""
    heavy: bool = False
    """large values (images): the bag import does not pre-scan them"""

    @property
    def short_name(self) -> str:
        return self.type_name.rsplit("/", 1)[1]


_REGISTRY: dict[str, Converter] = {}
_loaded = False


def register_converter(
    type_name: str,
    *,
    options: tuple[str, ...] = (),
    bag_options: Mapping[str, Any] | None = None,
    auto: bool = True,
    heavy: bool = False,
) -> Callable[[F], F]:
    """Decorator: register the decorated reading function as the converter of ``type_name``."""
    if type_name.count("/") != 2:
        raise ValueError(f"register a full type name such as sensor_msgs/msg/Imu, got {type_name!r}")

    def decorate(function: F) -> F:
        if type_name in _REGISTRY and _REGISTRY[type_name].read is not function:
            raise ValueError(f"{type_name} already has a converter ({_REGISTRY[type_name].read.__name__})")
        _REGISTRY[type_name] = Converter(type_name, function, options, dict(bag_options or {}), auto, heavy)
        return function

    return decorate


def _load() -> None:
    global _loaded
    if not _loaded:
        for name in _CONVERTER_MODULES:
            importlib.import_module(name)
        _loaded = True


def converters() -> dict[str, Converter]:
    """Every registered converter, by full type name."""
    _load()
    return dict(_REGISTRY)


def short_names() -> dict[str, str]:
    """Short type name -> full name of every registered type (``Imu`` -> ``sensor_msgs/msg/Imu``)."""
    return {c.short_name: name for name, c in converters().items()}


def converter_for(type_name: str) -> Converter | None:
    """The converter registered for a full type name (None: the generic fallback applies)."""
    _load()
    return _REGISTRY.get(type_name)


def convert_message(msg: Any, type_name: str) -> dict[str, Value]:
    """A message as parts (``{"": value, ...}``): its registered converter with bag options, else generic.

    Raises:
        MessageError: the message cannot become arrays or text.
    """
    converter = converter_for(type_name)
    if converter is None:
        from embodia.robot.flatten import flatten_message

        return flatten_message(msg)
    value = converter.read(msg, **converter.bag_options)
    return dict(value) if isinstance(value, dict) else {"": value}


# ---------------------------------------------------------------------- text columns
def encode_text(text: str, width: int) -> np.ndarray:
    """UTF-8 bytes of ``text`` zero-padded to ``width`` (uint8); inverse of :func:`decode_text`.

    Raises:
        MessageError: the text holds a NUL character or is longer than ``width`` bytes.
    """
    raw = text.encode("utf-8")
    if b"\0" in raw:
        raise MessageError("text holds a NUL character, which a zero-padded text column cannot keep")
    if len(raw) > width:
        raise MessageError(f"text of {len(raw)} bytes does not fit its {width}-byte column: {text[:40]!r}...")
    out = np.zeros(width, dtype=np.uint8)
    out[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


def decode_text(data: np.ndarray) -> str | list[str]:
    """Text from a stored text column: one row (``(width,)``) -> ``str``, several rows -> a list."""
    data = np.asarray(data, dtype=np.uint8)
    if data.ndim > 1:
        return [decode_text(row) for row in data.reshape(-1, data.shape[-1])]  # type: ignore[misc]
    return bytes(data.tolist()).rstrip(b"\0").decode("utf-8")


def text_width(max_bytes: int) -> int:
    """Width of a text column for texts of up to ``max_bytes`` (rounded up, so later bags fit too)."""
    return max(_TEXT_STEP, math.ceil(max_bytes / _TEXT_STEP) * _TEXT_STEP)


def store_key(key: str, part: str) -> str:
    """Store key of a part: ``KEY`` for the main part, ``KEY.<part>`` for the others."""
    return f"{key}.{part}" if part else key


def _shape_text(shapes: list[tuple[int, ...]]) -> str:
    if all(len(s) == 1 for s in shapes):
        return "lengths " + ", ".join(str(s[0]) for s in shapes)
    return "shapes " + ", ".join(str(s) for s in shapes)


class ShapeError(MessageError):
    """Values of one topic with different shapes: one store key holds one row shape."""


class TopicValues:
    """One topic's converted messages as store rows: text to fixed-width bytes, one shape per part.

    ``text_width(store_key)`` gives the width of a text column (the store's, the bag's longest text or
    :data:`TEXT_BYTES`). :meth:`encode` returns an array (a single part) or ``{store_key: array}``.
    """

    def __init__(self, key: str, text_width: Callable[[str], int]) -> None:
        self.key = key
        self.text_width = text_width
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.widths: dict[str, int] = {}

    def encode(self, parts: dict[str, Value]) -> np.ndarray | dict[str, np.ndarray]:
        """Arrays for the store (see class docstring).

        Raises:
            ShapeError: a part has another shape than in earlier messages, or the parts changed.
            MessageError: a text does not fit its column.
        """
        if self.shapes and set(parts) != set(self.shapes):
            raise ShapeError(f"message parts changed from {sorted(self.shapes)} to {sorted(parts)}")
        out: dict[str, np.ndarray] = {}
        for part, value in parts.items():
            name = store_key(self.key, part)
            if isinstance(value, str):
                if name not in self.widths:
                    self.widths[name] = self.text_width(name)
                array = encode_text(value, self.widths[name])
            else:
                array = np.asarray(value)
            seen = self.shapes.setdefault(part, array.shape)
            if array.shape != seen:
                raise ShapeError(
                    f"{name} has values of {_shape_text([seen, array.shape])}; one store key holds one shape"
                )
            out[name] = array
        if list(out) == [self.key]:
            return out[self.key]
        return out


@dataclass
class TopicScan:
    """What a pre-scan of one topic saw: shapes per part and the longest text per part (bytes)."""

    shapes: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    text_bytes: dict[str, int] = field(default_factory=dict)
    parts: set[frozenset[str]] = field(default_factory=set)

    def add(self, parts: dict[str, Value]) -> None:
        """Record one message's parts."""
        self.parts.add(frozenset(parts))
        for part, value in parts.items():
            if isinstance(value, str):
                size = len(value.encode("utf-8"))
                self.text_bytes[part] = max(self.text_bytes.get(part, 0), size)
                shape: tuple[int, ...] = ("text",)  # type: ignore[assignment]
            else:
                shape = np.shape(value)
            seen = self.shapes.setdefault(part, [])
            if shape not in seen:
                seen.append(shape)

    def problem(self) -> str | None:
        """Why these values cannot become store columns (None: they can)."""
        if len(self.parts) > 1:
            return f"its messages have different parts {sorted(sorted(p) for p in self.parts)}"
        for part, shapes in self.shapes.items():
            if len(shapes) > 1:
                where = f"part {part!r} has" if part else "values have"
                return f"its {where} {_shape_text(shapes)} (one store key holds one shape)"
        return None
