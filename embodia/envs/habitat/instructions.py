"""Natural-language route instructions for instruction navigation (R2R-style, generated from a path).

Given the shortest path from a start to a goal next to a landmark object, the rooms the path passes
through (``Scene.room_at`` every 10 cm, consecutive repeats merged) are turned into an instruction from
templates: leave the start room, pass the rooms in between, enter the goal room, stop by the landmark,
e.g. *"Leave the bedroom and walk along the corridor. Go into the kitchen and stop next to the
refrigerator."* Templates are drawn from a seeded generator, so an episode's text is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embodia.envs.habitat.scene import Scene

_ROOM_NAMES = {"living_room": "living room", "dining_room": "dining room", "meeting_room": "meeting room"}
_OBJECT_NAMES = {"tv_monitor": "TV", "chest_of_drawers": "chest of drawers"}
_LEAVE = ("Leave the {room}", "Walk out of the {room}", "Exit the {room}", "Head out of the {room}")
_PASS = ("go through the {room}", "walk across the {room}", "pass through the {room}")
_CORRIDOR = ("walk along the corridor", "follow the corridor", "go down the corridor")
_ENTER = ("Go into the {room}", "Enter the {room}", "Turn into the {room}", "Continue into the {room}")
_STOP = (
    "stop next to the {object}",
    "wait by the {object}",
    "stop in front of the {object}",
    "stop near the {object}",
)
_SAME_ROOM = (
    "Walk over to the {object} in the {room} and stop there.",
    "Go to the {object} in this {room} and wait.",
)


def room_name(category: str) -> str:
    return _ROOM_NAMES.get(category, category.replace("_", " "))


def object_name(category: str) -> str:
    return _OBJECT_NAMES.get(category, category.replace("_", " "))


def rooms_along(scene: Scene, points: Sequence[Sequence[float]], spacing: float = 0.1) -> list[str]:
    """Ids of the rooms a polyline passes through, in order, consecutive repeats merged."""
    rooms: list[str] = []
    pts = np.asarray(points, dtype=np.float64)[:, :2]
    for a, b in zip(pts[:-1], pts[1:]):
        n = max(2, int(np.ceil(np.linalg.norm(b - a) / spacing)) + 1)
        for t in np.linspace(0.0, 1.0, n):
            room = scene.room_at(*(a + t * (b - a)))
            if room is not None and (not rooms or rooms[-1] != room):
                rooms.append(room)
    return rooms


def route_instruction(
    scene: Scene, room_sequence: Sequence[str], landmark_category: str, rng: np.random.Generator
) -> str:
    """An instruction for a route through ``room_sequence`` (room ids) ending at a ``landmark_category`` object."""
    categories = [scene.room(r).category for r in room_sequence]
    target = object_name(landmark_category)
    pick = lambda options: str(options[int(rng.integers(len(options)))])  # noqa: E731
    if len(categories) <= 1:
        return pick(_SAME_ROOM).format(object=target, room=room_name(categories[0] if categories else "room"))
    first = pick(_LEAVE).format(room=room_name(categories[0]))
    middle = [
        pick(_CORRIDOR) if c == "corridor" else pick(_PASS).format(room=room_name(c))
        for c in categories[1:-1]
    ]
    if middle:
        first += " and " + ", then ".join(middle)
    last = pick(_ENTER).format(room=room_name(categories[-1])) + " and " + pick(_STOP).format(object=target)
    return f"{first}. {last}."


def encode_instruction(text: str, length: int) -> np.ndarray:
    """UTF-8 bytes of ``text``, zero-padded or truncated to ``length`` (the observation form)."""
    data = text.encode("utf-8")[:length]
    out = np.zeros(length, dtype=np.uint8)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def decode_instruction(tokens: np.ndarray) -> str:
    """Inverse of :func:`encode_instruction`."""
    data = bytes(np.asarray(tokens, dtype=np.uint8).tolist()).rstrip(b"\x00")
    return data.decode("utf-8", errors="ignore")
