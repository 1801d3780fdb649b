"""Travel costs for NavCraft: geodesic distances, paths, times and the doors a path goes through.

:class:`Travel` wraps a scene's path finder (embodia's navigation mesh, doors in a given state) with the
robot speed of the time model in :mod:`embodia.agents.navcraft.mission`:

    time(a, b) = geodesic_distance(a, b) / speed          (inf when b cannot be reached from a)

Paths are habitat-sim style polylines (``(K, 3)`` points). ``door_crossings`` lists where a path passes
through a doorway (the narrow passages where two robots interfere), as arc length along the path, so a
schedule's step times say *when* each robot is in each doorway. Results are cached per point pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from embodia.envs.habitat.pathfinder import ShortestPath
from embodia.envs.habitat.scene import Scene, load_scene
from embodia.envs.habitat.scene_graph import SceneGraph, build_scene_graph

#: robot speed (m/s): 0.25 m per 0.5 s step of the discrete action space
DEFAULT_SPEED = 0.5


def _key(point) -> tuple[float, float]:
    return (round(float(point[0]), 3), round(float(point[1]), 3))


class Travel:
    """Distances, times, paths and doorway crossings in one scene with given doors closed."""

    def __init__(
        self, scene: Scene, pathfinder, speed: float = DEFAULT_SPEED, closed_doors: Iterable[str] = ()
    ) -> None:
        self.scene = scene
        self.pathfinder = pathfinder
        self.speed = float(speed)
        self.closed_doors = tuple(sorted(closed_doors))
        self._paths: dict[tuple, tuple[float, np.ndarray]] = {}
        self._graph: SceneGraph | None = None

    @classmethod
    def for_scene(
        cls, scene: Scene | str, closed_doors: Iterable[str] = (), speed: float = DEFAULT_SPEED
    ) -> Travel:
        """Travel in ``scene`` (a :class:`Scene` or a reference: shipped name, JSON path,
        ``procedural:<kind>:<seed>``) with ``closed_doors`` shut (the navigation mesh is rebuilt for them)."""
        closed = tuple(sorted(closed_doors))
        return _cached_travel(scene if isinstance(scene, str) else scene, closed, float(speed))

    # ------------------------------------------------------------------ queries
    def _shortest(self, a, b) -> tuple[float, np.ndarray]:
        """Distance and path; each unordered pair is searched once, from its smaller endpoint, so that
        results do not depend on the order of queries (the cache is shared by every caller)."""
        ka, kb = _key(a), _key(b)
        first, second = (a, b) if ka <= kb else (b, a)
        key = (min(ka, kb), max(ka, kb))
        if key not in self._paths:
            path = ShortestPath(np.array([first[0], first[1], 0.0]), np.array([second[0], second[1], 0.0]))
            self.pathfinder.find_path(path)
            points = np.array(path.points, dtype=np.float64).reshape(-1, 3)
            self._paths[key] = (float(path.geodesic_distance), points)
        distance, points = self._paths[key]
        return (distance, points) if ka <= kb else (distance, points[::-1].copy())

    def distance(self, a, b) -> float:
        """Geodesic distance (m) from point ``a`` to point ``b``; ``inf`` if unreachable."""
        return self._shortest(a, b)[0]

    def time(self, a, b) -> float:
        """Travel time (s) at ``speed``; ``inf`` if unreachable."""
        d = self.distance(a, b)
        return d / self.speed if math.isfinite(d) else math.inf

    def reachable(self, a, b) -> bool:
        return math.isfinite(self.distance(a, b))

    def path(self, a, b) -> np.ndarray:
        """The shortest path's points ``(K, 3)`` (empty if unreachable)."""
        return self._shortest(a, b)[1]

    def door_crossings(self, a, b) -> list[tuple[str, float]]:
        """``(door_id, arc length in m)`` for each doorway the shortest path from ``a`` to ``b`` passes,
        in order."""
        points = self.path(a, b)
        crossings: list[tuple[str, float]] = []
        travelled = 0.0
        for p0, p1 in zip(points[:-1], points[1:]):
            seg = float(np.linalg.norm(p1[:2] - p0[:2]))
            for door in self.scene.doors:
                axis = 1 if door.axis == "x" else 0  # the coordinate that is constant along the wall
                c = door.center[axis]
                d0, d1 = p0[axis] - c, p1[axis] - c
                if d0 == d1 or d0 * d1 > 0:
                    continue
                f = d0 / (d0 - d1)
                along = p0[1 - axis] + f * (p1[1 - axis] - p0[1 - axis])
                lo, hi = door.interval()
                if lo - 0.05 <= along <= hi + 0.05:
                    crossings.append((door.id, float(travelled + f * seg)))
            travelled += seg
        crossings.sort(key=lambda c: c[1])
        return crossings

    def room_of(self, point) -> str | None:
        return self.scene.room_at(float(point[0]), float(point[1]))

    @property
    def graph(self) -> SceneGraph:
        """The scene graph with these doors' states (travel times at ``speed``)."""
        if self._graph is None:
            self._graph = build_scene_graph(
                self.scene, self.pathfinder, self.speed, door_open={d: False for d in self.closed_doors}
            )
        return self._graph


@lru_cache(maxsize=32)
def _cached_travel(scene_ref, closed: tuple[str, ...], speed: float) -> Travel:
    from embodia.envs.habitat.backend import make_backend

    scene = load_scene(scene_ref) if isinstance(scene_ref, str) else scene_ref
    backend = make_backend("mujoco", scene, num_robots=1)
    for door_id in closed:
        backend.set_door_open(door_id, False)
    return Travel(scene, backend.pathfinder, speed, closed)
