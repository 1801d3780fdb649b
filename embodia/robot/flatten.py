"""The generic converter: any message -> its numeric fields as one vector, its text fields as JSON text.

Used for message types without a registered converter (:mod:`embodia.robot.converters`). Fields are
visited in definition order, depth first; each numeric value gets a name:

==================================  ==============================================================
field                               names (values in this order)
==================================  ==============================================================
scalar ``temperature``              ``temperature``
nested message ``header.stamp``     ``header.stamp.sec``, ``header.stamp.nanosec``
fixed or variable array ``k``       ``k[0]``, ``k[1]``, ...
array of messages ``points``        ``points[0].x``, ``points[0].y``, ..., ``points[1].x``, ...
==================================  ==============================================================

Numbers (bool as 0 / 1, bytes and chars as their integer values, every integer and float type) become one
float64 vector, part ``""`` (store key ``KEY``); integers beyond 2**53 are rounded. String fields (and
string arrays, named the same way) become one JSON object ``{"header.frame_id": "base_link", ...}``,
part ``"text"`` (store key ``KEY.text``; ``json.loads`` of the decoded text gives the strings back
exactly). A message with only numbers has no text part and one with only strings no numeric part.
Arrays whose length changes between messages change the vector's length, which the recorder and the
import refuse (:class:`~embodia.robot.converters.ShapeError`).

Both rclpy messages (``get_fields_and_field_types``) and ``rosbags`` message objects (dataclasses) are
read, so a live recording and a bag import of the same topic give the same columns.
"""

from __future__ import annotations

import array
import dataclasses
import json
from typing import Any

import numpy as np

from embodia.robot.errors import MessageError

_NUMBER_KINDS = "biuf"


def message_fields(msg: Any) -> list[str] | None:
    """Field names of a message in definition order (None: not a message); constants are not fields.

    ``rosbags`` message classes list a definition's constants (``Log.DEBUG`` ... ``FATAL``) as dataclass
    fields too; ROS 2 requires constant names in upper case and field names in lower case (rosidl), so an
    upper-case name is a constant: the same value in every message, never a data column.
    """
    getter = getattr(msg, "get_fields_and_field_types", None)
    if getter is not None:
        return list(getter())
    if dataclasses.is_dataclass(msg) and not isinstance(msg, type):
        return [
            f.name for f in dataclasses.fields(msg) if not f.name.startswith("__") and not f.name.isupper()
        ]
    return None


class _Walk:
    """Collects numbers (chunks of float64 values), their names (when asked) and texts of one message."""

    def __init__(self, names: bool, skip: tuple[str, ...] = ()) -> None:
        self.chunks: list[np.ndarray] = []
        self.names: list[str] | None = [] if names else None
        self.texts: dict[str, str] = {}
        self.skip = skip

    def numbers(self, values: np.ndarray, path: str, scalar: bool) -> None:
        self.chunks.append(values.astype(np.float64, copy=False).reshape(-1))
        if self.names is not None:
            self.names.extend([path] if scalar else [f"{path}[{i}]" for i in range(values.size)])

    def visit(self, value: Any, path: str) -> None:
        fields = message_fields(value)
        if fields is not None:
            for name in fields:
                child = f"{path}.{name}" if path else name
                if child not in self.skip:
                    self.visit(getattr(value, name), child)
        elif isinstance(value, str):
            self.texts[path] = value
        elif isinstance(value, bool | int | float | np.bool_ | np.number):
            self.numbers(np.array([value], dtype=np.float64), path, scalar=True)
        elif isinstance(value, bytes | bytearray):  # rclpy: byte / char fields
            data = np.frombuffer(bytes(value), dtype=np.uint8)
            self.numbers(data, path, scalar=len(data) == 1)
        elif isinstance(value, np.ndarray | array.array):
            data = np.asarray(value)
            if data.dtype.kind in _NUMBER_KINDS:
                self.numbers(data, path, scalar=False)
            else:
                self._items(list(data.reshape(-1)), path)
        elif isinstance(value, list | tuple):
            self._items(value, path)
        else:
            raise MessageError(f"field {path} holds a {type(value).__name__}, which cannot be imported")

    def _items(self, items: list[Any] | tuple[Any, ...], path: str) -> None:
        if items and all(isinstance(x, bool | int | float | np.bool_ | np.number) for x in items):
            self.numbers(np.array(items, dtype=np.float64), path, scalar=False)
            return
        if items and all(isinstance(x, bytes) and len(x) == 1 for x in items):  # rclpy byte[]
            self.numbers(np.frombuffer(b"".join(items), dtype=np.uint8), path, scalar=False)
            return
        for index, item in enumerate(items):
            self.visit(item, f"{path}[{index}]")


def flatten_message(msg: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Parts of any message: ``""`` numeric float64 vector, ``"text"`` JSON of its strings (see module docstring).

    ``skip`` names fields (paths such as ``header``) left out.

    Raises:
        MessageError: the object is not a message, or it has neither numeric nor text fields.
    """
    if message_fields(msg) is None:
        raise MessageError(f"a {type(msg).__name__} is not a ROS message")
    walk = _Walk(names=False, skip=skip)
    walk.visit(msg, "")
    parts: dict[str, Any] = {}
    if walk.chunks:
        parts[""] = np.concatenate(walk.chunks)
    if walk.texts:
        parts["text"] = json.dumps(walk.texts, ensure_ascii=False, separators=(",", ":"))
    if not parts:
        raise MessageError(f"{type(msg).__name__} has neither numeric nor text fields")
    return parts


def field_names(msg: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """Names of the values of :func:`flatten_message`'s numeric part, in order."""
    walk = _Walk(names=True, skip=skip)
    walk.visit(msg, "")
    assert walk.names is not None
    return walk.names
