"""Letting a blocked robot pass: where a robot steps aside so another can go by (the executor's
step-aside, :mod:`embodia.agents.navcraft.executor`).

The shortest-path follower does not steer around other robots, and a robot parked in a corridor or doorway
walls off the route of the one behind it. :func:`aside_point` picks a navigable point near the parked robot,
reachable without passing the blocked one, as far as possible from the blocked robot's path to its goal.
"""

from __future__ import annotations

import math

import numpy as np

from embodia.envs.habitat.pathfinder import ShortestPath


def _dense_path(pathfinder, a, b) -> np.ndarray:
    """The shortest path from ``a`` to ``b`` as (x, y) points, 8 per segment."""
    path = ShortestPath(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    pathfinder.find_path(path)
    p = np.asarray(path.points, dtype=np.float64).reshape(-1, 3)[:, :2]
    steps = [u + f * (v - u) for u, v in zip(p[:-1], p[1:]) for f in np.linspace(0, 1, 8)]
    return np.asarray([np.asarray(a)[:2], *steps])


def aside_point(pathfinder, here: np.ndarray, there: np.ndarray, goal) -> np.ndarray | None:
    """A navigable point within 0.8-1.6 m of ``here`` (at most 2.5 m away by path), reached without passing
    the robot at ``there``, farthest from that robot's path to ``goal`` (at least 0.45 m); ``None`` if none."""
    route = _dense_path(pathfinder, there, goal)[:40]
    best, best_score = None, 0.45
    for radius in (0.8, 1.2, 1.6):
        for angle in np.linspace(0, 2 * math.pi, 12, endpoint=False):
            wanted = here + radius * np.array([math.cos(angle), math.sin(angle), 0.0])
            point = pathfinder.snap_point(wanted)
            if not np.isfinite(point).all() or np.linalg.norm(point[:2] - wanted[:2]) > 0.15:
                continue
            if float(pathfinder.geodesic_distance(np.asarray(here, float), point[None])) > 2.5:
                continue
            score = float(np.min(np.linalg.norm(route - point[:2], axis=1)))
            gaps = np.linalg.norm(_dense_path(pathfinder, here, point) - there[:2], axis=1)
            if score > best_score and gaps.min() >= min(0.4, gaps[0]) - 0.01:
                best, best_score = point, score
    return best
