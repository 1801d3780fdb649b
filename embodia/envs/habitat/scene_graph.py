"""Scene graphs: rooms, objects, doors and room connectivity with geodesic travel times.

This is the interface collaborative navigation (NavCraft-style mission generation) builds on:

- **rooms**: id, category, polygon (counter-clockwise outline), centroid, area, and an *anchor* - the
  navigable point of the room nearest to its centroid (in the scene's main island), where travel
  between rooms is measured from;
- **objects**: id, category, position (footprint centre, base height), size, room, support (the object
  it stands on, if any);
- **doors**: id, the two rooms, position, width, open;
- **connections**: pairs of rooms joined by at least one open door, with the doors, the geodesic
  distance from one anchor to the other *through* the (best) door, and the travel time
  ``distance / travel_speed``;
- **travel times**: the geodesic travel time between the anchors of *every* pair of rooms
  (``inf`` when unreachable), from the path finder, so that routes with room hops are costed exactly.

Build it with :func:`build_scene_graph` (scene + path finder of a back end); save / load it as JSON
(:meth:`SceneGraph.save`, :meth:`SceneGraph.load`), or turn it into networkx graphs
(:meth:`SceneGraph.to_networkx`: rooms, objects and doors as nodes; :meth:`SceneGraph.room_graph`:
rooms only, weighted by travel time).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from embodia.envs.habitat.errors import NavSceneError
from embodia.envs.habitat.scene import Scene

GRAPH_FORMAT = 1


@dataclass
class RoomNode:
    id: str
    category: str
    polygon: list[tuple[float, float]]
    centroid: tuple[float, float]
    area: float
    anchor: tuple[float, float, float] | None
    """Navigable point nearest the centroid (``None`` if the room has no navigable floor)."""


@dataclass
class ObjectNode:
    id: str
    category: str
    room: str
    position: tuple[float, float, float]
    size: tuple[float, float, float]
    support: str | None = None


@dataclass
class DoorNode:
    id: str
    rooms: tuple[str, str]
    position: tuple[float, float]
    width: float
    open: bool


@dataclass
class Connection:
    rooms: tuple[str, str]
    doors: list[str]
    distance: float
    """Geodesic distance from one room's anchor through the door to the other's (m)."""
    travel_time: float
    """``distance / travel_speed`` (s)."""


@dataclass
class SceneGraph:
    """Rooms, objects, doors and travel costs of one scene (see module docstring)."""

    scene: str
    travel_speed: float
    rooms: list[RoomNode] = field(default_factory=list)
    objects: list[ObjectNode] = field(default_factory=list)
    doors: list[DoorNode] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    travel_times: dict[str, dict[str, float]] = field(default_factory=dict)
    """``travel_times[a][b]``: geodesic travel time (s) between the anchors of rooms a and b."""

    # ------------------------------------------------------------------ queries
    def room(self, room_id: str) -> RoomNode:
        for room in self.rooms:
            if room.id == room_id:
                return room
        raise NavSceneError(f"scene graph of {self.scene!r} has no room {room_id!r}")

    def room_of(self, point) -> str | None:
        """The room whose polygon contains ``point`` (x, y), or ``None``."""
        x, y = float(point[0]), float(point[1])
        for room in self.rooms:
            xs, ys = zip(*room.polygon)
            if min(xs) <= x <= max(xs) and min(ys) <= y <= max(ys):
                return room.id
        return None

    def objects_in(self, room_id: str) -> list[ObjectNode]:
        return [o for o in self.objects if o.room == room_id]

    def objects_of(self, category: str) -> list[ObjectNode]:
        return [o for o in self.objects if o.category == category]

    def travel_time(self, a: str, b: str) -> float:
        """Geodesic travel time (s) between two rooms' anchors; ``inf`` if one cannot reach the other."""
        return self.travel_times[a][b]

    def reachable(self, a: str, b: str) -> bool:
        return math.isfinite(self.travel_time(a, b))

    def route(self, a: str, b: str) -> list[str]:
        """Rooms visited going from ``a`` to ``b`` through open doors (fewest seconds); [] if unreachable."""
        try:
            return list(nx.shortest_path(self.room_graph(), a, b, weight="travel_time"))
        except nx.NetworkXNoPath:
            return []

    # ------------------------------------------------------------------ networkx
    def room_graph(self) -> nx.Graph:
        """Rooms as nodes, connections as edges (``doors``, ``distance``, ``travel_time``)."""
        graph = nx.Graph(scene=self.scene)
        for room in self.rooms:
            graph.add_node(
                room.id, category=room.category, centroid=room.centroid, area=room.area, anchor=room.anchor
            )
        for c in self.connections:
            graph.add_edge(*c.rooms, doors=list(c.doors), distance=c.distance, travel_time=c.travel_time)
        return graph

    def to_networkx(self) -> nx.Graph:
        """Everything as one graph: nodes typed ``room``/``object``/``door``; edges typed ``connects``
        (room-room, with costs), ``in`` (object-room), ``on`` (object-support) and ``door_of`` (door-room)."""
        graph = self.room_graph()
        for node in graph.nodes:
            graph.nodes[node]["type"] = "room"
        for edge in graph.edges:
            graph.edges[edge]["type"] = "connects"
        for obj in self.objects:
            graph.add_node(
                obj.id,
                type="object",
                category=obj.category,
                position=obj.position,
                size=obj.size,
                room=obj.room,
            )
            graph.add_edge(obj.id, obj.room, type="in")
        for obj in self.objects:
            if obj.support is not None:
                graph.add_edge(obj.id, obj.support, type="on")
        for door in self.doors:
            graph.add_node(door.id, type="door", position=door.position, width=door.width, open=door.open)
            for room in door.rooms:
                graph.add_edge(door.id, room, type="door_of")
        return graph

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        ids = [r.id for r in self.rooms]
        matrix = [[_finite_or_none(self.travel_times[a][b]) for b in ids] for a in ids]
        return {
            "format": GRAPH_FORMAT,
            "scene": self.scene,
            "travel_speed": self.travel_speed,
            "rooms": [asdict(r) for r in self.rooms],
            "objects": [asdict(o) for o in self.objects],
            "doors": [asdict(d) for d in self.doors],
            "connections": [asdict(c) for c in self.connections],
            "travel_times": {"rooms": ids, "seconds": matrix},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SceneGraph:
        if data.get("format") != GRAPH_FORMAT:
            raise NavSceneError(
                f"scene graph format {data.get('format')!r}; embodia reads format {GRAPH_FORMAT}"
            )
        ids = data["travel_times"]["rooms"]
        seconds = data["travel_times"]["seconds"]
        return cls(
            scene=data["scene"],
            travel_speed=float(data["travel_speed"]),
            rooms=[
                RoomNode(
                    r["id"],
                    r["category"],
                    [tuple(p) for p in r["polygon"]],
                    tuple(r["centroid"]),
                    r["area"],
                    tuple(r["anchor"]) if r["anchor"] else None,
                )
                for r in data["rooms"]
            ],
            objects=[
                ObjectNode(
                    o["id"],
                    o["category"],
                    o["room"],
                    tuple(o["position"]),
                    tuple(o["size"]),
                    o.get("support"),
                )
                for o in data["objects"]
            ],
            doors=[
                DoorNode(d["id"], tuple(d["rooms"]), tuple(d["position"]), d["width"], d["open"])
                for d in data["doors"]
            ],
            connections=[
                Connection(tuple(c["rooms"]), list(c["doors"]), c["distance"], c["travel_time"])
                for c in data["connections"]
            ],
            travel_times={
                a: {b: (math.inf if v is None else float(v)) for b, v in zip(ids, row)}
                for a, row in zip(ids, seconds)
            },
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> SceneGraph:
        path = Path(path)
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except FileNotFoundError as error:
            raise NavSceneError(f"no scene graph at {str(path)!r}") from error
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise NavSceneError(
                f"{path} is not an embodia scene graph ({type(error).__name__}: {error})"
            ) from error


def _finite_or_none(value: float) -> float | None:
    return round(float(value), 4) if math.isfinite(value) else None


def build_scene_graph(
    scene: Scene, pathfinder, travel_speed: float = 0.5, door_open: dict[str, bool] | None = None
) -> SceneGraph:
    """The scene graph of ``scene`` with travel costs from ``pathfinder`` (its doors' current states).

    Args:
        travel_speed: robot speed (m/s) turning distances into travel times; 0.5 m/s is a typical
            indoor robot (and 0.25 m per 0.5 s step of the discrete action space).
        door_open: door states when they differ from the scene file (e.g. ``backend.door_open``).
    """
    door_open = door_open or {d.id: d.open for d in scene.doors}
    points = pathfinder.navigable_points(pathfinder.settings.cell_size, island_index=0)
    rooms = []
    for room in scene.rooms:
        x0, y0, x1, y1 = room.bounds
        inside = (points[:, 0] >= x0) & (points[:, 0] <= x1) & (points[:, 1] >= y0) & (points[:, 1] <= y1)
        anchor = None
        if inside.any():
            candidates = points[inside]
            best = candidates[
                int(np.argmin(np.linalg.norm(candidates[:, :2] - np.asarray(room.centroid), axis=1)))
            ]
            anchor = (round(float(best[0]), 4), round(float(best[1]), 4), 0.0)
        rooms.append(
            RoomNode(room.id, room.category, list(room.polygon), room.centroid, round(room.area, 4), anchor)
        )
    ids = [r.id for r in rooms]
    distance = {a: {b: math.inf for b in ids} for a in ids}
    for i, a in enumerate(rooms):
        distance[a.id][a.id] = 0.0 if a.anchor else math.inf
        for b in rooms[i + 1 :]:
            if a.anchor and b.anchor:
                d = float(pathfinder.geodesic_distance(a.anchor, b.anchor))
                distance[a.id][b.id] = distance[b.id][a.id] = d
    connections: dict[tuple[str, str], list[str]] = {}
    for door in scene.doors:
        if door_open.get(door.id, door.open):
            connections.setdefault(tuple(sorted(door.rooms)), []).append(door.id)
    through: dict[tuple[str, str], float] = {}
    anchors = {r.id: r.anchor for r in rooms}
    for pair, doors in connections.items():
        a, b = anchors[pair[0]], anchors[pair[1]]
        if a is None or b is None:
            continue
        costs = []
        for door_id in doors:
            center = np.array([*scene.door(door_id).center, 0.0])
            costs.append(pathfinder.geodesic_distance(a, center) + pathfinder.geodesic_distance(center, b))
        through[pair] = float(min(costs))
    return SceneGraph(
        scene=scene.name,
        travel_speed=float(travel_speed),
        rooms=rooms,
        objects=[
            ObjectNode(o.id, o.category, o.room, tuple(o.position), tuple(o.size), o.support)
            for o in scene.objects
        ],
        doors=[
            DoorNode(d.id, tuple(d.rooms), tuple(d.center), d.width, bool(door_open.get(d.id, d.open)))
            for d in scene.doors
        ],
        connections=[
            Connection(pair, doors, round(through[pair], 4), round(through[pair] / travel_speed, 4))
            for pair, doors in sorted(connections.items())
            if math.isfinite(through.get(pair, math.inf))
        ],
        travel_times={
            a: {b: (v / travel_speed if math.isfinite(v) else math.inf) for b, v in row.items()}
            for a, row in distance.items()
        },
    )
