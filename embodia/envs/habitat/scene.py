"""The navigation scene format (``embodia/sim_assets/nav``): rooms, doors, furniture and objects as JSON.

A scene is a floor plan of axis-aligned rectangular rooms that tile part of the plane, with typed
categories (kitchen, bedroom, corridor, ...), doors in the walls between rooms, and objects of named
categories (chair, bed, tv_monitor, cup, ...) standing on the floor or on other objects. Walls are not
stored: they are the rooms' edges minus the door openings (:func:`wall_segments`), so a scene is
consistent by construction. Coordinates are embodia's navigation frame (metres, Z up, see
:mod:`embodia.envs.habitat.coords`).

:func:`load_scene` accepts a :class:`Scene`, the name of a shipped scene (``"apartment_0"``), a JSON path,
or ``"procedural:<kind>:<seed>"`` (generated on the fly, see :mod:`embodia.envs.habitat.scene_gen`).
The format is versioned (``"format"``) and described in ``embodia/sim_assets/nav/README.md``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from embodia.envs.habitat.errors import NavSceneError
from embodia.sim_assets import asset_path

SCENE_FORMAT = 1
SCENES_DIR = asset_path("nav", "scenes")

#: floor finishes the MuJoCo builder knows (texture per finish)
FLOOR_FINISHES = ("wood", "tile", "carpet", "concrete")


@dataclass
class Room:
    """One rectangular room."""

    id: str
    """Unique id within the scene, e.g. ``"kitchen_0"``."""
    category: str
    """Room category (``kitchen``, ``living_room``, ``bedroom``, ``bathroom``, ``corridor``, ``office``, ...)."""
    bounds: tuple[float, float, float, float]
    """``(x_min, y_min, x_max, y_max)`` of the room's floor, measured to the wall centre lines."""
    floor: str = "wood"
    """Floor finish, one of :data:`FLOOR_FINISHES`."""

    @property
    def polygon(self) -> list[tuple[float, float]]:
        """The room outline, counter-clockwise from ``(x_min, y_min)``."""
        x0, y0, x1, y1 = self.bounds
        return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]

    @property
    def centroid(self) -> tuple[float, float]:
        x0, y0, x1, y1 = self.bounds
        return (0.5 * (x0 + x1), 0.5 * (y0 + y1))

    @property
    def area(self) -> float:
        x0, y0, x1, y1 = self.bounds
        return (x1 - x0) * (y1 - y0)

    def contains(self, x: float, y: float, margin: float = 0.0) -> bool:
        """Whether ``(x, y)`` lies in the room, shrunk by ``margin`` on every side."""
        x0, y0, x1, y1 = self.bounds
        return x0 + margin <= x <= x1 - margin and y0 + margin <= y <= y1 - margin


@dataclass
class Door:
    """An opening in the wall between two rooms, with a sliding leaf that can close it."""

    id: str
    """Unique id within the scene, e.g. ``"door_3"``."""
    rooms: tuple[str, str]
    """The two rooms it connects."""
    center: tuple[float, float]
    """Centre of the opening, on the wall centre line."""
    axis: str
    """Direction of the wall it sits in: ``"x"`` (a wall of constant y) or ``"y"`` (constant x)."""
    width: float
    """Width of the opening (m)."""
    open: bool = True
    """Whether the leaf is slid into the wall (open) or fills the opening (closed)."""
    pocket: int = 1
    """Which way the leaf slides when opened: +1 toward larger, -1 toward smaller coordinates."""

    def interval(self) -> tuple[float, float]:
        """The opening along the wall axis."""
        c = self.center[0] if self.axis == "x" else self.center[1]
        return (c - 0.5 * self.width, c + 0.5 * self.width)


@dataclass
class SceneObject:
    """A piece of furniture or a small object, a box footprint in the floor plane."""

    id: str
    """Unique id within the scene, e.g. ``"chair_4"``."""
    category: str
    """Object category (``chair``, ``bed``, ``sofa``, ``plant``, ``toilet``, ``tv_monitor``, ``cup``, ...)."""
    room: str
    """Id of the room it is in."""
    position: tuple[float, float, float]
    """Centre of its footprint and the height of its base (0 on the floor, the support's top otherwise)."""
    size: tuple[float, float, float]
    """Full extents ``(along its x, along its y, height)`` in its own frame (m)."""
    yaw: float = 0.0
    """Rotation about Z (rad); the generator uses multiples of pi/2."""
    color: tuple[float, float, float] = (0.6, 0.6, 0.6)
    """Main RGB colour in [0, 1]."""
    support: str | None = None
    """Id of the object it stands on, ``None`` for the floor."""

    @property
    def top(self) -> float:
        return self.position[2] + self.size[2]


@dataclass
class Scene:
    """A multi-room navigation scene."""

    name: str
    """Scene name; shipped scenes are found by it."""
    rooms: list[Room]
    doors: list[Door] = field(default_factory=list)
    objects: list[SceneObject] = field(default_factory=list)
    kind: str = "custom"
    """How it was made: ``apartment`` or ``office`` (procedural) or ``custom`` (by hand)."""
    seed: int | None = None
    """Generator seed (procedural scenes)."""
    wall_height: float = 2.5
    wall_thickness: float = 0.1

    # ------------------------------------------------------------------ lookups
    def room(self, room_id: str) -> Room:
        for room in self.rooms:
            if room.id == room_id:
                return room
        raise NavSceneError(
            f"scene {self.name!r} has no room {room_id!r}; rooms: {[r.id for r in self.rooms]}"
        )

    def door(self, door_id: str) -> Door:
        for door in self.doors:
            if door.id == door_id:
                return door
        raise NavSceneError(
            f"scene {self.name!r} has no door {door_id!r}; doors: {[d.id for d in self.doors]}"
        )

    def object(self, object_id: str) -> SceneObject:
        for obj in self.objects:
            if obj.id == object_id:
                return obj
        raise NavSceneError(f"scene {self.name!r} has no object {object_id!r}")

    def room_at(self, x: float, y: float) -> str | None:
        """Id of the room containing ``(x, y)``, or ``None`` outside every room."""
        for room in self.rooms:
            if room.contains(x, y):
                return room.id
        return None

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """Bounding box of all rooms."""
        xs0, ys0, xs1, ys1 = zip(*(r.bounds for r in self.rooms))
        return (min(xs0), min(ys0), max(xs1), max(ys1))

    def object_categories(self) -> list[str]:
        return sorted({o.category for o in self.objects})

    def with_doors(self, **open_by_id: bool) -> Scene:
        """A copy with the given doors opened (``True``) or closed (``False``)."""
        scene = copy.deepcopy(self)
        for door_id, is_open in open_by_id.items():
            scene.door(door_id).open = bool(is_open)
        return scene

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SCENE_FORMAT,
            "name": self.name,
            "kind": self.kind,
            "seed": self.seed,
            "wall_height": self.wall_height,
            "wall_thickness": self.wall_thickness,
            "rooms": [_rounded(asdict(r)) for r in self.rooms],
            "doors": [_rounded(asdict(d)) for d in self.doors],
            "objects": [_rounded(asdict(o)) for o in self.objects],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "<dict>") -> Scene:
        try:
            if data.get("format") != SCENE_FORMAT:
                raise NavSceneError(
                    f"{where}: scene format {data.get('format')!r}, embodia reads format {SCENE_FORMAT}; "
                    "regenerate the scene with this embodia version"
                )
            scene = cls(
                name=str(data["name"]),
                kind=str(data.get("kind", "custom")),
                seed=data.get("seed"),
                wall_height=float(data.get("wall_height", 2.5)),
                wall_thickness=float(data.get("wall_thickness", 0.1)),
                rooms=[
                    Room(r["id"], r["category"], tuple(r["bounds"]), r.get("floor", "wood"))
                    for r in data["rooms"]
                ],
                doors=[
                    Door(
                        d["id"],
                        tuple(d["rooms"]),
                        tuple(d["center"]),
                        d["axis"],
                        float(d["width"]),
                        bool(d.get("open", True)),
                        int(d.get("pocket", 1)),
                    )
                    for d in data.get("doors", [])
                ],
                objects=[
                    SceneObject(
                        o["id"],
                        o["category"],
                        o["room"],
                        tuple(o["position"]),
                        tuple(o["size"]),
                        float(o.get("yaw", 0.0)),
                        tuple(o.get("color", (0.6, 0.6, 0.6))),
                        o.get("support"),
                    )
                    for o in data.get("objects", [])
                ],
            )
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, NavSceneError):
                raise
            raise NavSceneError(
                f"{where}: not a valid embodia nav scene ({type(error).__name__}: {error})"
            ) from error
        scene.validate(where)
        return scene

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n")
        return path

    def digest(self) -> str:
        """SHA-256 of the canonical JSON: equal digests mean identical scenes."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    # ------------------------------------------------------------------ checks
    def validate(self, where: str | None = None) -> None:
        """Raise :class:`NavSceneError` if rooms overlap, ids repeat, or doors/objects refer to nothing."""
        where = where or f"scene {self.name!r}"
        if not self.rooms:
            raise NavSceneError(f"{where}: a scene needs at least one room")
        ids = [r.id for r in self.rooms] + [d.id for d in self.doors] + [o.id for o in self.objects]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise NavSceneError(f"{where}: ids must be unique, repeated: {duplicates}")
        room_ids = {r.id for r in self.rooms}
        for i, a in enumerate(self.rooms):
            x0, y0, x1, y1 = a.bounds
            if not (x1 > x0 and y1 > y0):
                raise NavSceneError(f"{where}: room {a.id!r} has empty bounds {a.bounds}")
            if a.floor not in FLOOR_FINISHES:
                raise NavSceneError(
                    f"{where}: room {a.id!r} floor {a.floor!r} is not one of {FLOOR_FINISHES}"
                )
            for b in self.rooms[i + 1 :]:
                bx0, by0, bx1, by1 = b.bounds
                if min(x1, bx1) - max(x0, bx0) > 1e-6 and min(y1, by1) - max(y0, by0) > 1e-6:
                    raise NavSceneError(f"{where}: rooms {a.id!r} and {b.id!r} overlap")
        for door in self.doors:
            if door.axis not in ("x", "y") or door.width <= 0:
                raise NavSceneError(f"{where}: door {door.id!r} needs axis 'x' or 'y' and a positive width")
            unknown = [r for r in door.rooms if r not in room_ids]
            if unknown:
                raise NavSceneError(f"{where}: door {door.id!r} refers to unknown rooms {unknown}")
        object_ids = {o.id for o in self.objects}
        for obj in self.objects:
            if obj.room not in room_ids:
                raise NavSceneError(f"{where}: object {obj.id!r} is in unknown room {obj.room!r}")
            if obj.support is not None and obj.support not in object_ids:
                raise NavSceneError(f"{where}: object {obj.id!r} stands on unknown object {obj.support!r}")


@dataclass(frozen=True)
class WallSegment:
    """A straight wall piece on a room edge, ``axis`` ``"x"`` (constant y = ``line``) or ``"y"``."""

    axis: str
    line: float
    start: float
    end: float
    extend_start: bool
    """Whether the box extends half a wall thickness past ``start`` (a corner, not a door jamb)."""
    extend_end: bool

    def box(self, thickness: float) -> tuple[float, float, float, float]:
        """The wall's footprint ``(x_min, y_min, x_max, y_max)``."""
        a = self.start - (0.5 * thickness if self.extend_start else 0.0)
        b = self.end + (0.5 * thickness if self.extend_end else 0.0)
        lo, hi = self.line - 0.5 * thickness, self.line + 0.5 * thickness
        return (a, lo, b, hi) if self.axis == "x" else (lo, a, hi, b)


def wall_segments(scene: Scene) -> list[WallSegment]:
    """The walls of ``scene``: every room edge, merged along each line, minus the door openings."""
    edges: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for room in scene.rooms:
        x0, y0, x1, y1 = room.bounds
        for axis, line, a, b in (("x", y0, x0, x1), ("x", y1, x0, x1), ("y", x0, y0, y1), ("y", x1, y0, y1)):
            edges.setdefault((axis, round(line, 6)), []).append((a, b))
    doors: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for door in scene.doors:
        line = door.center[1] if door.axis == "x" else door.center[0]
        doors.setdefault((door.axis, round(line, 6)), []).append(door.interval())
    segments = []
    for (axis, line), intervals in sorted(edges.items()):
        for start, end in _union(intervals):
            pieces = [(start, end, True, True)]
            for d0, d1 in sorted(doors.get((axis, line), [])):
                cut = []
                for a, b, ea, eb in pieces:
                    if d1 <= a or d0 >= b:
                        cut.append((a, b, ea, eb))
                        continue
                    if d0 > a:
                        cut.append((a, d0, ea, False))
                    if d1 < b:
                        cut.append((d1, b, False, eb))
                pieces = cut
            segments += [WallSegment(axis, line, a, b, ea, eb) for a, b, ea, eb in pieces if b - a > 1e-6]
    return segments


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1] + 1e-9:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _rounded(value: Any) -> Any:
    """Round floats to 4 decimals (0.1 mm) so that JSON files are stable and readable."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def shipped_scene_names() -> list[str]:
    """Names of the scenes shipped in ``embodia/sim_assets/nav/scenes``."""
    return sorted(p.stem for p in SCENES_DIR.glob("*.json"))


def load_scene(ref: Scene | str | Path) -> Scene:
    """Resolve a scene reference (see module docstring) to a :class:`Scene`."""
    if isinstance(ref, Scene):
        return ref
    text = str(ref)
    if text.startswith("procedural:"):
        from embodia.envs.habitat.scene_gen import generate_scene

        parts = text.split(":")
        if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
            raise NavSceneError(
                f"procedural scene reference {text!r} must look like 'procedural:apartment:7'"
            )
        return generate_scene(parts[1], int(parts[2]))
    path = Path(text)
    if path.suffix != ".json":
        path = SCENES_DIR / f"{text}.json"
    if not path.is_file():
        raise NavSceneError(
            f"no nav scene {text!r}: shipped scenes are {shipped_scene_names()}; pass a scene JSON path or "
            "'procedural:<apartment|office>:<seed>'"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise NavSceneError(f"{path} is not valid JSON ({error})") from error
    return Scene.from_dict(data, where=str(path))
