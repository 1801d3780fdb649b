"""Procedural apartments and offices: seeded floor plans with typed rooms, doors, furniture and objects.

The generator (:func:`generate_scene`) works in four steps, all drawn from one seeded generator so that a
``(kind, seed)`` pair always gives the same scene, byte for byte:

1. **Footprint and corridor.** A rectangle of a size drawn for the kind; offices always, apartments
   often, get a corridor strip along the long axis that splits the rest into two bands.
2. **Rooms.** Each band is cut by binary space partitioning (split the largest piece across its long
   side at 35-65 %, on a 10 cm grid, never below :attr:`GeneratorConfig.min_room_side`), then rooms get
   categories by size (apartments: the largest is the living room, the smallest a bathroom, then kitchen,
   bedrooms, ...; offices: meeting room, offices, kitchen, bathroom).
3. **Doors.** Rooms sharing at least ``door_width + 0.6`` m of wall are adjacent; a random spanning tree of
   the adjacency graph (Kruskal, with edges to corridors and living rooms preferred) gets doors, so every
   room is reachable, plus a few extra doors that create loops.
4. **Furniture and objects.** Per room category, templates (sofa against a wall, table in the middle,
   plant in a corner, ...) are placed by rejection sampling: inside the room, clear of other furniture and
   of a 1 m zone in front of each door, and only if the room's free space (inflated by a robot radius plus
   slack) stays connected to all of its doors. Small objects (cup, book, laptop, ...) stand on tables,
   desks and counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from embodia.envs.habitat.errors import NavSceneError
from embodia.envs.habitat.scene import Door, Room, Scene, SceneObject

KINDS = ("apartment", "office")


@dataclass(frozen=True)
class GeneratorConfig:
    """Sizes and limits of the procedural generator (defaults give 5-9 room scenes of ~70-150 m^2)."""

    min_room_side: float = 2.4
    """No room is narrower than this (m); corridors are the exception."""
    corridor_width: tuple[float, float] = (1.4, 1.8)
    """Range of corridor widths (m)."""
    door_width: float = 0.9
    """Width of door openings (m)."""
    extra_door_probability: float = 0.3
    """Chance that an adjacent pair outside the spanning tree gets a door too (loops)."""
    clearance: float = 0.25
    """Robot radius plus slack used to keep rooms traversable while placing furniture (m)."""
    wall_thickness: float = 0.1
    wall_height: float = 2.5


# footprint ranges (m) and room counts per band, per kind
_FOOTPRINT = {"apartment": ((8.5, 12.0), (6.5, 9.0)), "office": ((11.0, 15.0), (8.0, 10.5))}
_CORRIDOR_PROBABILITY = {"apartment": 0.6, "office": 1.0}
_FLOORS = {
    "kitchen": "tile",
    "bathroom": "tile",
    "bedroom": "carpet",
    "office": "carpet",
    "meeting_room": "carpet",
    "living_room": "wood",
    "dining_room": "wood",
    "corridor": "concrete",
}

# furniture templates: category -> (width, depth, height) in m, and base colour
_SIZES = {
    "sofa": ((2.0, 0.9, 0.85), (0.35, 0.42, 0.6)),
    "tv_monitor": ((1.2, 0.45, 1.15), (0.12, 0.12, 0.14)),
    "coffee_table": ((1.0, 0.6, 0.45), (0.55, 0.38, 0.22)),
    "plant": ((0.5, 0.5, 1.2), (0.2, 0.5, 0.22)),
    "chair": ((0.55, 0.55, 0.9), (0.6, 0.4, 0.25)),
    "bookshelf": ((1.0, 0.35, 1.8), (0.5, 0.34, 0.2)),
    "counter": ((2.0, 0.6, 0.9), (0.85, 0.85, 0.82)),
    "refrigerator": ((0.7, 0.7, 1.8), (0.92, 0.92, 0.95)),
    "table": ((1.2, 0.8, 0.75), (0.6, 0.42, 0.26)),
    "bed": ((1.6, 2.0, 0.6), (0.75, 0.72, 0.85)),
    "chest_of_drawers": ((1.0, 0.5, 0.9), (0.55, 0.36, 0.22)),
    "cabinet": ((1.2, 0.6, 1.9), (0.7, 0.62, 0.5)),
    "toilet": ((0.45, 0.7, 0.8), (0.95, 0.95, 0.97)),
    "sink": ((0.6, 0.5, 0.9), (0.9, 0.9, 0.92)),
    "bathtub": ((1.6, 0.75, 0.55), (0.95, 0.95, 0.97)),
    "desk": ((1.4, 0.7, 0.75), (0.45, 0.32, 0.2)),
}
# room category -> [(furniture category, placement, min count, max count)]
_PROGRAM = {
    "living_room": [
        ("sofa", "wall", 1, 1),
        ("tv_monitor", "wall", 1, 1),
        ("coffee_table", "center", 0, 1),
        ("plant", "corner", 1, 2),
        ("chair", "wall", 0, 1),
        ("bookshelf", "wall", 0, 1),
    ],
    "kitchen": [
        ("counter", "wall", 1, 1),
        ("refrigerator", "corner", 1, 1),
        ("table", "center", 0, 1),
        ("chair", "wall", 1, 2),
        ("plant", "corner", 0, 1),
    ],
    "dining_room": [
        ("table", "center", 1, 1),
        ("chair", "wall", 2, 3),
        ("cabinet", "wall", 0, 1),
        ("plant", "corner", 0, 1),
    ],
    "bedroom": [
        ("bed", "wall", 1, 1),
        ("chest_of_drawers", "wall", 0, 1),
        ("cabinet", "wall", 0, 1),
        ("plant", "corner", 0, 1),
        ("tv_monitor", "wall", 0, 1),
        ("chair", "wall", 0, 1),
    ],
    "bathroom": [("toilet", "wall", 1, 1), ("sink", "wall", 1, 1), ("bathtub", "wall", 0, 1)],
    "office": [
        ("desk", "wall", 1, 2),
        ("chair", "wall", 1, 2),
        ("bookshelf", "wall", 0, 1),
        ("plant", "corner", 0, 1),
        ("tv_monitor", "wall", 0, 1),
    ],
    "meeting_room": [
        ("table", "center", 1, 1),
        ("chair", "wall", 2, 4),
        ("tv_monitor", "wall", 1, 1),
        ("plant", "corner", 0, 2),
    ],
    "corridor": [("plant", "corner", 0, 1)],
}
#: furniture whose top carries small objects
_SURFACES = ("table", "coffee_table", "desk", "counter", "chest_of_drawers")
_SMALL = {
    "cup": ((0.09, 0.09, 0.11), (0.85, 0.2, 0.2)),
    "book": ((0.22, 0.16, 0.04), (0.2, 0.3, 0.65)),
    "laptop": ((0.34, 0.24, 0.03), (0.25, 0.25, 0.28)),
    "bowl": ((0.18, 0.18, 0.08), (0.9, 0.75, 0.3)),
    "vase": ((0.12, 0.12, 0.3), (0.3, 0.55, 0.75)),
    "lamp": ((0.2, 0.2, 0.45), (0.95, 0.85, 0.5)),
}


def generate_scene(kind: str = "apartment", seed: int = 0, config: GeneratorConfig | None = None) -> Scene:
    """Generate the ``kind`` (``"apartment"`` or ``"office"``) scene number ``seed``.

    Raises:
        NavSceneError: an unknown kind.
    """
    if kind not in KINDS:
        raise NavSceneError(f"unknown scene kind {kind!r}; the generator makes {KINDS}")
    config = config or GeneratorConfig()
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, KINDS.index(kind)])
    for _ in range(50):
        rooms = _floor_plan(kind, rng, config)
        doors = _doors(rooms, rng, config)
        if doors is not None:
            break
    else:  # pragma: no cover - the splits always leave adjacent rooms in practice
        raise NavSceneError(f"could not lay out a connected {kind} for seed {seed}")
    scene = Scene(
        name=f"{kind}_{seed}",
        rooms=rooms,
        doors=doors,
        kind=kind,
        seed=int(seed),
        wall_height=config.wall_height,
        wall_thickness=config.wall_thickness,
    )
    scene.objects = _furnish(scene, rng, config)
    # normalise through the JSON form so a generated scene equals the same scene loaded from disk
    return Scene.from_dict(scene.to_dict(), where=f"generated {kind} {seed}")


# ---------------------------------------------------------------------- 1-2: rooms
def _snap(value: float, step: float = 0.1) -> float:
    return round(round(value / step) * step, 4)


def _floor_plan(kind: str, rng: np.random.Generator, config: GeneratorConfig) -> list[Room]:
    (w_lo, w_hi), (h_lo, h_hi) = _FOOTPRINT[kind]
    width, height = _snap(rng.uniform(w_lo, w_hi)), _snap(rng.uniform(h_lo, h_hi))
    bands: list[tuple[float, float, float, float]] = []
    corridor = None
    if rng.random() < _CORRIDOR_PROBABILITY[kind]:
        cw = _snap(rng.uniform(*config.corridor_width))
        lo = 2.6 if kind == "apartment" else height / 2 - cw / 2 - 0.4
        y0 = _snap(
            rng.uniform(lo, max(lo, height - 2.6 - cw)) if kind == "apartment" else rng.uniform(lo, lo + 0.8)
        )
        corridor = (0.0, y0, width, y0 + cw)
        bands = [(0.0, 0.0, width, y0), (0.0, y0 + cw, width, height)]
        target = (
            [int(rng.integers(2, 4)), int(rng.integers(2, 4))]
            if kind == "apartment"
            else [
                int(rng.integers(3, 5)),
                int(rng.integers(3, 5)),
            ]
        )
    else:
        bands = [(0.0, 0.0, width, height)]
        target = [int(rng.integers(5, 7))]
    pieces: list[tuple[float, float, float, float]] = []
    for band, count in zip(bands, target):
        pieces += _bsp(band, count, rng, config.min_room_side)
    categories = _categories(kind, pieces, rng)
    rooms = []
    counters: dict[str, int] = {}
    for bounds, category in zip(pieces, categories):
        n = counters.get(category, 0)
        counters[category] = n + 1
        rooms.append(Room(f"{category}_{n}", category, bounds, _FLOORS[category]))
    if corridor is not None:
        rooms.append(Room("corridor_0", "corridor", corridor, _FLOORS["corridor"]))
    return rooms


def _bsp(
    rect: tuple[float, float, float, float], count: int, rng: np.random.Generator, min_side: float
) -> list:
    pieces = [rect]
    while len(pieces) < count:
        splittable = [p for p in pieces if max(p[2] - p[0], p[3] - p[1]) >= 2 * min_side]
        if not splittable:
            break
        piece = max(splittable, key=lambda p: (p[2] - p[0]) * (p[3] - p[1]))
        x0, y0, x1, y1 = piece
        vertical = (x1 - x0) >= (y1 - y0)  # cut across the long side
        lo, hi = (x0, x1) if vertical else (y0, y1)
        cut = _snap(lo + (hi - lo) * rng.uniform(0.35, 0.65))
        cut = min(max(cut, _snap(lo + min_side + 0.05)), _snap(hi - min_side - 0.05))
        pieces.remove(piece)
        pieces += (
            [(x0, y0, cut, y1), (cut, y0, x1, y1)] if vertical else [(x0, y0, x1, cut), (x0, cut, x1, y1)]
        )
    return pieces


def _categories(kind: str, pieces: list, rng: np.random.Generator) -> list[str]:
    """Room categories by size: the largest is the living (meeting) room, the smallest a bathroom."""
    order = sorted(
        range(len(pieces)), key=lambda i: -(pieces[i][2] - pieces[i][0]) * (pieces[i][3] - pieces[i][1])
    )
    names = [""] * len(pieces)
    names[order[-1]] = "bathroom"
    if kind == "apartment":
        sequence = [
            "living_room",
            "kitchen",
            "bedroom",
            *rng.permutation(["bedroom", "dining_room", "office"]),
        ]
        middle = order[:-1]
    else:
        sequence = ["meeting_room"] + ["office"] * len(pieces)
        names[order[-2]] = "kitchen"
        middle = order[:-2]
    for i, index in enumerate(middle):
        names[index] = str(sequence[i % len(sequence)])
    return names


# ---------------------------------------------------------------------- 3: doors
def _shared_wall(a: Room, b: Room) -> tuple[str, float, float, float] | None:
    """``(axis, line, lo, hi)`` of the wall ``a`` and ``b`` share, or ``None``."""
    ax0, ay0, ax1, ay1 = a.bounds
    bx0, by0, bx1, by1 = b.bounds
    for line_a, line_b, axis in ((ax1, bx0, "y"), (ax0, bx1, "y"), (ay1, by0, "x"), (ay0, by1, "x")):
        if abs(line_a - line_b) < 1e-6:
            lo, hi = (max(ay0, by0), min(ay1, by1)) if axis == "y" else (max(ax0, bx0), min(ax1, bx1))
            if hi > lo:
                return axis, line_a, lo, hi
    return None


def _doors(rooms: list[Room], rng: np.random.Generator, config: GeneratorConfig) -> list[Door] | None:
    width = config.door_width
    candidates = []
    for i, a in enumerate(rooms):
        for j in range(i + 1, len(rooms)):
            wall = _shared_wall(a, rooms[j])
            if wall is not None and wall[3] - wall[2] >= width + 0.6:
                hub = {"corridor", "living_room"} & {a.category, rooms[j].category}
                weight = (
                    rng.random()
                    + (0.0 if hub else 0.6)
                    + (0.8 if "bathroom" in (a.category, rooms[j].category) else 0.0)
                )
                candidates.append((weight, i, j, wall))
    candidates.sort(key=lambda c: c[0])
    parent = list(range(len(rooms)))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    chosen = []
    for _, i, j, wall in candidates:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            chosen.append((i, j, wall))
        elif (
            "bathroom" not in (rooms[i].category, rooms[j].category)
            and rng.random() < config.extra_door_probability
        ):
            chosen.append((i, j, wall))
    if len({find(k) for k in range(len(rooms))}) > 1:
        return None
    doors = []
    for n, (i, j, (axis, line, lo, hi)) in enumerate(chosen):
        c = _snap(rng.uniform(lo + 0.3 + width / 2, hi - 0.3 - width / 2), 0.05)
        pocket = 1 if (hi - c) >= (c - lo) else -1
        center = (c, line) if axis == "x" else (line, c)
        doors.append(Door(f"door_{n}", (rooms[i].id, rooms[j].id), center, axis, width, True, pocket))
    return doors


# ---------------------------------------------------------------------- 4: furniture and objects
_GRID = 0.1


def _furnish(scene: Scene, rng: np.random.Generator, config: GeneratorConfig) -> list[SceneObject]:
    objects: list[SceneObject] = []
    counters: dict[str, int] = {}

    def new_id(category: str) -> str:
        n = counters.get(category, 0)
        counters[category] = n + 1
        return f"{category}_{n}"

    for room in scene.rooms:
        placed: list[tuple[float, float, float, float]] = []
        zones = _door_zones(scene, room)
        for category, placement, lo, hi in _PROGRAM[room.category]:
            for _ in range(int(rng.integers(lo, hi + 1))):
                (w, d, h), color = _SIZES[category]
                jitter = rng.uniform(0.9, 1.1, size=3)
                size = (_snap(w * jitter[0], 0.05), _snap(d * jitter[1], 0.05), _snap(h * jitter[2], 0.05))
                spot = _place(room, size, placement, placed, zones, rng, config, scene)
                if spot is None:
                    continue
                x, y, yaw, box = spot
                placed.append(box)
                tint = np.clip(np.asarray(color) * rng.uniform(0.85, 1.1), 0.0, 1.0)
                label = "table" if category == "coffee_table" else category
                objects.append(
                    SceneObject(new_id(label), label, room.id, (x, y, 0.0), size, yaw, tuple(tint.tolist()))
                )
    # small objects on surfaces
    for surface in [o for o in objects if o.category in _SURFACES]:
        for _ in range(int(rng.integers(0, 3))):
            name = str(rng.choice(sorted(_SMALL)))
            (w, d, h), color = _SMALL[name]
            sx, sy = (
                (surface.size[0], surface.size[1])
                if abs(math.sin(surface.yaw)) < 0.5
                else (surface.size[1], surface.size[0])
            )
            if sx < w + 0.1 or sy < d + 0.1:
                continue
            x = surface.position[0] + rng.uniform(-(sx - w) / 2 + 0.05, (sx - w) / 2 - 0.05)
            y = surface.position[1] + rng.uniform(-(sy - d) / 2 + 0.05, (sy - d) / 2 - 0.05)
            objects.append(
                SceneObject(
                    new_id(name),
                    name,
                    surface.room,
                    (_snap(x, 0.01), _snap(y, 0.01), surface.top),
                    (w, d, h),
                    0.0,
                    color,
                    surface.id,
                )
            )
    return objects


def _door_zones(scene: Scene, room: Room) -> list[tuple[float, float, float, float]]:
    """Boxes in front of the room's doors (1 m deep, door width + 0.4) that must stay free."""
    zones = []
    for door in scene.doors:
        if room.id not in door.rooms:
            continue
        a, b = door.interval()
        cx, cy = door.center
        if door.axis == "x":
            zones.append((a - 0.2, cy - 1.0, b + 0.2, cy + 1.0))
        else:
            zones.append((cx - 1.0, a - 0.2, cx + 1.0, b + 0.2))
    return zones


def _overlaps(a: tuple, b: tuple, gap: float = 0.0) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def _place(room, size, placement, placed, zones, rng, config: GeneratorConfig, scene: Scene):
    """A collision-free pose ``(x, y, yaw, box)`` for a piece of furniture, or ``None``."""
    w, d, _ = size
    x0, y0, x1, y1 = room.bounds
    inner = 0.5 * config.wall_thickness + 0.02
    for _ in range(30):
        if placement == "center":
            yaw = float(rng.choice([0.0, math.pi / 2]))
            ex, ey = (w, d) if yaw == 0.0 else (d, w)
            margin = inner + config.clearance * 2 + 0.2
            if x1 - x0 - 2 * margin < ex or y1 - y0 - 2 * margin < ey:
                return None
            x = rng.uniform(x0 + margin + ex / 2, x1 - margin - ex / 2)
            y = rng.uniform(y0 + margin + ey / 2, y1 - margin - ey / 2)
        else:
            side = int(rng.integers(4))  # 0 south, 1 north, 2 east, 3 west: the wall its back is against
            yaw = (0.0, math.pi, math.pi / 2, -math.pi / 2)[side]
            ex, ey = (w, d) if side < 2 else (d, w)
            if x1 - x0 - 2 * inner < ex or y1 - y0 - 2 * inner < ey:
                continue
            if side < 2:
                y = y0 + inner + ey / 2 if side == 0 else y1 - inner - ey / 2
                lo, hi = x0 + inner + ex / 2, x1 - inner - ex / 2
                x = (lo if rng.random() < 0.5 else hi) if placement == "corner" else rng.uniform(lo, hi)
            else:
                x = x1 - inner - ex / 2 if side == 2 else x0 + inner + ex / 2
                lo, hi = y0 + inner + ey / 2, y1 - inner - ey / 2
                y = (lo if rng.random() < 0.5 else hi) if placement == "corner" else rng.uniform(lo, hi)
        x, y = _snap(x, 0.05), _snap(y, 0.05)
        box = (x - ex / 2, y - ey / 2, x + ex / 2, y + ey / 2)
        if any(_overlaps(box, other, 0.05) for other in placed) or any(_overlaps(box, z) for z in zones):
            continue
        if placement == "center" and any(
            _overlaps(box, other, 2 * config.clearance + 0.1) for other in placed
        ):
            continue
        if not _room_stays_traversable(room, placed + [box], scene, config):
            continue
        return x, y, yaw, box
    return None


def _room_stays_traversable(room: Room, boxes: list, scene: Scene, config: GeneratorConfig) -> bool:
    """Whether the room's free space (boxes inflated by the clearance) connects all its doors and keeps
    at least 85 % of the free cells in that one piece."""
    x0, y0, x1, y1 = room.bounds
    margin = 0.5 * config.wall_thickness + config.clearance
    xs = np.arange(x0 + _GRID / 2, x1, _GRID)
    ys = np.arange(y0 + _GRID / 2, y1, _GRID)
    gx, gy = np.meshgrid(xs, ys, indexing="xy")
    free = (gx > x0 + margin) & (gx < x1 - margin) & (gy > y0 + margin) & (gy < y1 - margin)
    c = config.clearance
    for bx0, by0, bx1, by1 in boxes:
        free &= ~((gx > bx0 - c) & (gx < bx1 + c) & (gy > by0 - c) & (gy < by1 + c))
    # each door's opening, one cell inside the free band
    seeds = []
    for door in scene.doors:
        if room.id not in door.rooms:
            continue
        cx, cy = door.center
        px = min(max(cx, x0 + margin + _GRID), x1 - margin - _GRID)
        py = min(max(cy, y0 + margin + _GRID), y1 - margin - _GRID)
        seeds.append(
            (
                int(np.clip((py - y0) // _GRID, 0, len(ys) - 1)),
                int(np.clip((px - x0) // _GRID, 0, len(xs) - 1)),
            )
        )
    labels, count = ndimage.label(free)
    if count == 0:
        return False
    door_labels = {int(labels[i, j]) for i, j in seeds}
    if 0 in door_labels or len(door_labels) > 1:
        return False
    main = door_labels.pop() if door_labels else int(np.argmax(np.bincount(labels.ravel())[1:]) + 1)
    return float((labels == main).sum()) >= 0.85 * float(free.sum())
