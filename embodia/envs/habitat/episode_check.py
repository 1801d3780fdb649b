"""Checking episodes against a scene's navigation mesh: every start and goal on the mesh and on the floor.

habitat-lab's episodes are made on a navigation mesh, so their points are navigable. An episode read from
a file whose start or goal is off the mesh (in furniture, outside the rooms), on another floor, or whose
goals cannot be reached from its start measures something else than it says (the start moved, a goal's
distance measured from elsewhere, a distance to goal of 0 at the start). So every episode that comes from
outside (a file, a dict, a given :class:`NavEpisode`) is checked before it runs:

- every point the robot stands at - starts, PointNav / VLN goals, ObjectNav view points - must be on the
  scene's floor (embodia's scenes have one, at height 0; a point more than :data:`FLOOR_TOLERANCE` above
  or below it is on another floor) and on the mesh, or within ``mesh_tolerance`` of it (then it is moved
  onto the mesh, and the move is reported);
- otherwise the episode is refused with one error naming it (episode id, scene), the point and how far
  off it is or at which height; with ``snap=True`` it is moved onto the mesh instead, each move reported
  (:class:`SnapRecord`, ``info["snapped"]`` in the environment) and logged as a warning;
- some goal must be reachable from each start; snapping cannot fix that, so it is always an error.

ObjectNav goal object positions (object centres) are not places to stand and are not checked.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.envs.habitat.coords import to_habitat_position
from embodia.envs.habitat.episodes import NavEpisode
from embodia.envs.habitat.errors import NavEpisodeError

logger = logging.getLogger(__name__)

#: floor heights of embodia's scenes (one floor, at 0 m)
FLOOR_HEIGHTS = (0.0,)
#: a point more than this (m) above or below a floor is on another floor (habitat-sim's ``is_navigable``)
FLOOR_TOLERANCE = 0.5
#: default distance (m) from the mesh within which a point is moved onto it without an error
MESH_TOLERANCE = 0.1


@dataclass(frozen=True)
class SnapRecord:
    """One point of an episode moved onto the navigation mesh."""

    episode_id: str
    scene_id: str
    point: str
    """Which point: ``"start"``, ``"goal"``, ``"view point 3 of 'chair_2'"``, ``"robot 1 start"``, ..."""
    original: tuple[float, float, float]
    """Where it was, in Habitat's frame (as in the file)."""
    snapped: tuple[float, float, float]
    """Where it is now, in Habitat's frame."""
    distance: float
    """How far it moved (m)."""
    beyond_tolerance: bool
    """Whether it was farther than ``mesh_tolerance`` from the mesh or on another floor (moved by ``snap=True``)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for ``info`` and JSON)."""
        return {
            "episode_id": self.episode_id,
            "scene_id": self.scene_id,
            "point": self.point,
            "from": list(self.original),
            "to": list(self.snapped),
            "distance": self.distance,
            "beyond_tolerance": self.beyond_tolerance,
        }


@dataclass
class _Placed:
    point: np.ndarray
    distance: float
    problem: str | None


def _habitat(point: np.ndarray) -> tuple[float, float, float]:
    x, y, z = to_habitat_position(point)
    return (round(x, 4), round(y, 4), round(z, 4))


def _place(point: np.ndarray, pathfinder: Any, tolerance: float) -> _Placed:
    """Where ``point`` goes on the mesh, how far, and what is wrong with it (``None`` if within tolerance)."""
    p = np.asarray(point, dtype=np.float64).reshape(-1)
    height = float(p[2]) if len(p) > 2 else 0.0
    floor = min(FLOOR_HEIGHTS, key=lambda h: abs(h - height))
    flat = np.array([p[0], p[1], floor])
    off_floor = abs(height - floor) > FLOOR_TOLERANCE
    if pathfinder.is_navigable(flat):
        if not off_floor:
            return _Placed(p if len(p) == 3 else flat, 0.0, None)
        snapped = flat
    else:
        snapped = np.asarray(pathfinder.snap_point(flat), dtype=np.float64).reshape(-1)[:3]
        if not np.isfinite(snapped).all():
            return _Placed(p, math.inf, "cannot be placed: the scene has no navigable area")
        snapped[2] = floor
        snapped = _toward(pathfinder, snapped, flat)
    horizontal = float(np.linalg.norm(snapped[:2] - p[:2]))
    full = np.append(p[:2], height)
    distance = float(np.linalg.norm(snapped - full))
    if off_floor:
        problem = (
            f"is at height {height:.2f} m, on another floor: the scene's only floor is at {floor:.2f} m "
            f"(points within {FLOOR_TOLERANCE} m of it count as on it)"
        )
    elif horizontal > tolerance:
        problem = f"is {horizontal:.2f} m from the navigation mesh (mesh_tolerance is {tolerance} m)"
    else:
        problem = None
    return _Placed(snapped, distance, problem)


def _toward(pathfinder: Any, inside: np.ndarray, target: np.ndarray, steps: int = 16) -> np.ndarray:
    """The navigable point nearest ``target`` on the segment from the navigable ``inside`` (bisection).

    A path finder's snap may land on a grid cell centre (embodia's: 5 cm cells); this moves the point to
    the mesh's edge, so that distances from the mesh are measured to the edge, not to a cell centre.
    """
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if pathfinder.is_navigable(inside + mid * (target - inside)):
            lo = mid
        else:
            hi = mid
    return inside + lo * (target - inside)


def _goal_labels(episode: NavEpisode, robot: int, count: int) -> list[str]:
    prefix = f"robot {robot} " if episode.num_robots > 1 else ""
    if episode.task == "objectnav":
        owners = episode.goal_object_of_view_point
        names = episode.object_ids
        return [
            f"view point {j} of {names[owners[j]]!r}"
            if j < len(owners) and owners[j] < len(names)
            else f"view point {j}"
            for j in range(count)
        ]
    return [f"{prefix}goal" if count == 1 else f"{prefix}goal {j}" for j in range(count)]


def scene_label(episode: NavEpisode) -> str:
    """The episode's scene for messages: the file's path and the embodia scene it resolved to."""
    if episode.habitat_scene_id and episode.habitat_scene_id != episode.scene_id:
        return f"{episode.habitat_scene_id!r} = {episode.scene_id}"
    return repr(episode.scene_id)


def check_episode(
    episode: NavEpisode,
    pathfinder: Any,
    *,
    snap: bool = False,
    mesh_tolerance: float = MESH_TOLERANCE,
    where: str = "",
    cache: dict[int, tuple[np.ndarray, np.ndarray, list[_Placed]]] | None = None,
) -> tuple[NavEpisode, list[SnapRecord]]:
    """Check ``episode`` on ``pathfinder`` (its scene's mesh); returns the episode to run and the moves.

    Args:
        episode: in embodia's frame.
        pathfinder: the navigation mesh of the episode's scene (habitat-sim's ``PathFinder`` interface).
        snap: move points that are off the mesh or on another floor onto it instead of refusing them.
        mesh_tolerance: points within this distance (m) of the mesh are moved onto it in any case.
        where: prefix of error messages (the file).
        cache: shared between the episodes of one dataset, so that shared goal sets are checked once.

    Raises:
        NavEpisodeError: a point off the mesh or on another floor (without ``snap``), or goals that
            cannot be reached from a start.
    """
    cache = {} if cache is None else cache
    prefix = f"{where}: " if where else ""
    name = f"episode {episode.episode_id!r} (scene {scene_label(episode)})"
    problems: list[tuple[str, np.ndarray, str]] = []
    records: list[SnapRecord] = []

    def note(label: str, original: np.ndarray, placed: _Placed) -> None:
        if placed.problem is not None:
            problems.append((label, original, placed.problem))
        if placed.distance > 1e-9 and math.isfinite(placed.distance):
            records.append(
                SnapRecord(
                    episode.episode_id,
                    episode.habitat_scene_id or episode.scene_id,
                    label,
                    _habitat(original),
                    _habitat(placed.point),
                    round(placed.distance, 4),
                    placed.problem is not None,
                )
            )

    starts = []
    for i, start in enumerate(episode.start_positions):
        placed = _place(start, pathfinder, mesh_tolerance)
        note("start" if episode.num_robots == 1 else f"robot {i} start", np.asarray(start), placed)
        starts.append(placed.point)
    goals = []
    for i, goal_array in enumerate(episode.goals):
        array = np.asarray(goal_array, dtype=np.float64).reshape(-1, 3)
        key = id(goal_array)
        if key not in cache or cache[key][0] is not goal_array:
            placed_all = [_place(g, pathfinder, mesh_tolerance) for g in array]
            moved = np.array([p.point for p in placed_all]).reshape(-1, 3)
            if all(p.distance <= 1e-9 for p in placed_all):
                moved = goal_array  # nothing moved: keep the shared array
            cache[key] = (goal_array, moved, placed_all)
        _, moved, placed_all = cache[key]
        for label, original, placed in zip(_goal_labels(episode, i, len(array)), array, placed_all):
            note(label, original, placed)
        goals.append(moved)
    if problems and not snap:
        label, original, problem = problems[0]
        more = (
            f"; {len(problems) - 1} more point(s) of it are off the mesh or on another floor"
            if len(problems) > 1
            else ""
        )
        raise NavEpisodeError(
            f"{prefix}{name}: the {label} {list(_habitat(original))} (Habitat frame) {problem}{more}; "
            "fix the file, or pass snap=True to move such points onto the mesh (each move is reported in "
            "info['snapped'] and logged)"
        )
    checked = episode
    if records:
        checked = dataclasses.replace(episode, start_positions=starts, goals=goals)
    for i in range(checked.num_robots):
        distance = pathfinder.geodesic_distance(checked.start_positions[i], checked.goals[i])
        if not math.isfinite(distance):
            who = "" if checked.num_robots == 1 else f"robot {i}: "
            raise NavEpisodeError(
                f"{prefix}{name}: {who}no goal can be reached from the start "
                f"{list(_habitat(checked.start_positions[i]))} (they are on separate parts of the navigation "
                "mesh, e.g. behind a closed door); snapping cannot fix this: fix or drop the episode"
            )
    beyond = [r for r in records if r.beyond_tolerance]
    if beyond:
        farthest = max(beyond, key=lambda r: r.distance)
        logger.warning(
            "%s%s: moved %d point(s) onto the navigation mesh (snap=True), the farthest the %s by %.2f m",
            prefix,
            name,
            len(beyond),
            farthest.point,
            farthest.distance,
        )
    return checked, records
