"""Navigation episodes: sampling them on a scene, and reading/writing habitat-lab's JSON episode format.

Sampling follows habitat-lab's dataset generators:

- **PointNav** (``pointnav_generator``): start and goal are random navigable points of the largest
  island, with geodesic distance in ``[1, 30]`` m; "easy" pairs whose geodesic/Euclidean ratio is below
  1.1 are kept only with probability ``20 (ratio - 0.98)^2``; the start heading is uniform.
- **ObjectNav**: a goal category present in the scene (HM3D's six: chair, bed, plant, toilet,
  tv_monitor, sofa); every instance of it is a goal, with *view points* - navigable points on a 15 cm
  lattice within 1 m of the object's footprint; distance to goal is the geodesic distance to the nearest
  view point, success needs it below 0.1 m. The start is at least 1 m (geodesic) from every view point.
- **InstructionNav** (VLN-CE style): the goal is a navigable point within 1 m of a landmark object in
  another room, at least 4 m away; the instruction describes the shortest path's rooms and the landmark
  (:mod:`embodia.envs.habitat.instructions`); ``reference_path`` is that path; success radius 3 m.
- **Multi-robot**: one PointNav episode per robot; starts 0.6 m and goals 1 m apart, goals with 0.45 m
  of free space around them (a robot parked at its goal leaves room to pass).

Files: habitat-lab's JSON episode datasets are read and written by :mod:`.habitat_format` (the JSON
shapes) and :mod:`.datasets` (files, the split layout with ``content/``, scene paths); episodes are
checked against a scene's navigation mesh by :mod:`.episode_check`. :func:`load_episodes` and
:func:`save_episodes` are importable from here as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.envs.habitat.errors import NavEpisodeError
from embodia.envs.habitat.instructions import rooms_along, route_instruction
from embodia.envs.habitat.pathfinder import MultiGoalShortestPath, ShortestPath
from embodia.envs.habitat.scene import Scene, SceneObject

TASKS = ("pointnav", "objectnav", "instructionnav", "multirobot")
#: habitat-lab's success distances (PointNav 0.2 m, ObjectNav 0.1 m to a view point, VLN-CE 3 m)
SUCCESS_DISTANCE = {"pointnav": 0.2, "objectnav": 0.1, "instructionnav": 3.0, "multirobot": 0.2}
#: HM3D ObjectNav goal categories, in task category id order
OBJECTNAV_CATEGORIES = ("chair", "bed", "plant", "toilet", "tv_monitor", "sofa")
VIEW_POINT_RADIUS = 1.0
VIEW_POINT_SPACING = 0.15


@dataclass
class NavEpisode:
    """One episode in embodia's frame; lists have one entry per robot (one robot except multi-robot)."""

    episode_id: str
    scene_id: str
    task: str
    start_positions: list[np.ndarray]
    start_yaws: list[float]
    goals: list[np.ndarray]
    """Per robot, the ``(G, 3)`` goal points (PointNav/VLN: one point; ObjectNav: every view point)."""
    geodesic_distances: list[float]
    object_category: str | None = None
    object_ids: list[str] = field(default_factory=list)
    """ObjectNav: the goal objects; instruction navigation: the landmark."""
    goal_object_of_view_point: list[int] = field(default_factory=list)
    """ObjectNav: for each view point, the index in ``object_ids`` of the object it views."""
    instruction: str | None = None
    reference_path: list[np.ndarray] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    habitat_scene_id: str | None = None
    """The scene path the episode had in a habitat-lab file (written back unchanged); ``None`` for
    episodes made here, which are written as ``embodia/<scene>.glb``."""
    goal_objects: list[dict[str, Any]] = field(default_factory=list)
    """ObjectNav: per entry of ``object_ids``, habitat-lab's goal fields other than the view points
    (``object_name``, ``object_name_id``, ``room_id``, ``room_name``, ``position`` in Habitat's frame),
    as read from a file; written back where the scene does not know the object."""

    @property
    def num_robots(self) -> int:
        """Robots in the episode (one except multi-robot)."""
        return len(self.start_positions)


# ---------------------------------------------------------------------- sampling
def _ratio_keep_probability(ratio: float, threshold: float) -> float:
    """habitat-lab keeps an easy (near-straight) episode with probability ``20 (ratio - 0.98)^2``."""
    return 1.0 if ratio >= threshold else 20.0 * (ratio - 0.98) ** 2


def sample_pointnav(
    pathfinder,
    scene_id: str,
    rng: np.random.Generator,
    episode_id: str = "0",
    distance_range: tuple[float, float] = (1.0, 30.0),
    ratio_threshold: float = 1.1,
    max_tries: int = 500,
) -> NavEpisode:
    """A PointNav episode (see module docstring)."""
    for _ in range(max_tries):
        start = pathfinder.get_random_navigable_point(island_index=0, rng=rng)
        goal = pathfinder.get_random_navigable_point(island_index=0, rng=rng)
        geodesic = pathfinder.geodesic_distance(start, goal)
        if not (distance_range[0] <= geodesic <= distance_range[1]):
            continue
        euclid = float(np.linalg.norm(goal[:2] - start[:2]))
        if rng.random() > _ratio_keep_probability(geodesic / max(euclid, 1e-9), ratio_threshold):
            continue
        return NavEpisode(
            episode_id,
            scene_id,
            "pointnav",
            [start],
            [float(rng.uniform(-math.pi, math.pi))],
            [goal[None]],
            [geodesic],
        )
    raise NavEpisodeError(
        f"no PointNav episode with a geodesic distance in {distance_range} found in {scene_id}"
    )


def object_view_points(pathfinder, obj: SceneObject, island: int = 0) -> np.ndarray:
    """Navigable lattice points within :data:`VIEW_POINT_RADIUS` of ``obj``'s footprint, ``(N, 3)``."""
    points = pathfinder.navigable_points(VIEW_POINT_SPACING, island_index=island)
    if not len(points):
        return points
    c, s = math.cos(obj.yaw), math.sin(obj.yaw)
    d = points[:, :2] - np.asarray(obj.position[:2])
    local = np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]], axis=1)
    q = np.abs(local) - 0.5 * np.asarray(obj.size[:2])
    distance = np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
    return points[distance <= VIEW_POINT_RADIUS]


def sample_objectnav(
    pathfinder,
    scene: Scene,
    scene_id: str,
    rng: np.random.Generator,
    episode_id: str = "0",
    max_tries: int = 200,
) -> NavEpisode:
    """An ObjectNav episode (see module docstring)."""
    by_category: dict[str, list[tuple[SceneObject, np.ndarray]]] = {}
    for obj in scene.objects:
        if obj.category in OBJECTNAV_CATEGORIES and obj.support is None:
            points = object_view_points(pathfinder, obj)
            if len(points):
                by_category.setdefault(obj.category, []).append((obj, points))
    if not by_category:
        raise NavEpisodeError(
            f"scene {scene.name!r} has no reachable object of the categories {OBJECTNAV_CATEGORIES}"
        )
    categories = sorted(by_category)
    for _ in range(max_tries):
        category = categories[int(rng.integers(len(categories)))]
        instances = by_category[category]
        view_points = np.vstack([p for _, p in instances])
        owner = np.concatenate([np.full(len(p), k) for k, (_, p) in enumerate(instances)])
        start = pathfinder.get_random_navigable_point(island_index=0, rng=rng)
        path = MultiGoalShortestPath(start, list(view_points))
        if not pathfinder.find_path(path) or path.geodesic_distance < 1.0:
            continue
        return NavEpisode(
            episode_id,
            scene_id,
            "objectnav",
            [start],
            [float(rng.uniform(-math.pi, math.pi))],
            [view_points],
            [path.geodesic_distance],
            object_category=category,
            object_ids=[o.id for o, _ in instances],
            goal_object_of_view_point=owner.tolist(),
            info={"closest_goal_object_id": instances[int(owner[path.closest_end_point_index])][0].id},
        )
    raise NavEpisodeError(f"no ObjectNav start found in {scene.name!r}")


def sample_instructionnav(
    pathfinder,
    scene: Scene,
    scene_id: str,
    rng: np.random.Generator,
    episode_id: str = "0",
    max_tries: int = 300,
) -> NavEpisode:
    """An instruction-following episode (see module docstring)."""
    landmarks = [o for o in scene.objects if o.support is None]
    for _ in range(max_tries):
        start = pathfinder.get_random_navigable_point(island_index=0, rng=rng)
        landmark = landmarks[int(rng.integers(len(landmarks)))]
        start_room = scene.room_at(*start[:2])
        if start_room is None or landmark.room == start_room:
            continue
        candidates = object_view_points(pathfinder, landmark)
        candidates = [p for p in candidates if scene.room_at(*p[:2]) == landmark.room]
        if not candidates:
            continue
        goal = candidates[int(rng.integers(len(candidates)))]
        path = ShortestPath(start, goal)
        if not pathfinder.find_path(path) or path.geodesic_distance < 4.0:
            continue
        rooms = rooms_along(scene, path.points)
        if len(rooms) < 2 or rooms[0] != start_room or rooms[-1] != landmark.room:
            continue
        text = route_instruction(scene, rooms, landmark.category, rng)
        return NavEpisode(
            episode_id,
            scene_id,
            "instructionnav",
            [start],
            [float(rng.uniform(-math.pi, math.pi))],
            [goal[None]],
            [path.geodesic_distance],
            object_category=landmark.category,
            object_ids=[landmark.id],
            instruction=text,
            reference_path=[np.asarray(p) for p in path.points],
            info={"rooms": rooms},
        )
    raise NavEpisodeError(f"no instruction episode found in {scene.name!r}")


def sample_multirobot(
    pathfinder, scene_id: str, rng: np.random.Generator, num_robots: int, episode_id: str = "0"
) -> NavEpisode:
    """One PointNav episode per robot. Starts and goals are at least 0.6 m (starts) and 1 m (goals) apart,
    and goals have 0.45 m of free space around them, so that a robot waiting at its goal does not wall
    off another robot's route."""
    robots: list[NavEpisode] = []
    for _ in range(300 * num_robots):
        candidate = sample_pointnav(pathfinder, scene_id, rng, episode_id)
        start, goal = candidate.start_positions[0][:2], candidate.goals[0][0][:2]
        if pathfinder.distance_to_closest_obstacle(goal) < 0.45:
            continue
        if all(
            np.linalg.norm(start - r.start_positions[0][:2]) >= 0.6
            and np.linalg.norm(goal - r.goals[0][0][:2]) >= 1.0
            and np.linalg.norm(start - r.goals[0][0][:2]) >= 0.6
            and np.linalg.norm(goal - r.start_positions[0][:2]) >= 0.6
            for r in robots
        ):
            robots.append(candidate)
            if len(robots) == num_robots:
                break
    if len(robots) < num_robots:
        raise NavEpisodeError(f"could not place {num_robots} robots apart from each other in {scene_id}")
    return NavEpisode(
        episode_id,
        scene_id,
        "multirobot",
        [r.start_positions[0] for r in robots],
        [r.start_yaws[0] for r in robots],
        [r.goals[0] for r in robots],
        [r.geodesic_distances[0] for r in robots],
    )


def sample_episode(
    task: str,
    pathfinder,
    scene: Scene,
    scene_id: str,
    rng: np.random.Generator,
    num_robots: int = 1,
    episode_id: str = "0",
) -> NavEpisode:
    """Sample an episode of ``task`` (one of :data:`TASKS`) on a loaded scene."""
    if task == "pointnav":
        return sample_pointnav(pathfinder, scene_id, rng, episode_id)
    if task == "objectnav":
        return sample_objectnav(pathfinder, scene, scene_id, rng, episode_id)
    if task == "instructionnav":
        return sample_instructionnav(pathfinder, scene, scene_id, rng, episode_id)
    if task == "multirobot":
        return sample_multirobot(pathfinder, scene_id, rng, num_robots, episode_id)
    raise NavEpisodeError(f"unknown navigation task {task!r}; tasks are {TASKS}")


def __getattr__(name: str) -> Any:
    # the file functions live in modules that import this one; they are importable from here too
    if name in ("load_episodes", "save_episodes"):
        from embodia.envs.habitat import datasets

        return getattr(datasets, name)
    if name in ("episodes_to_habitat", "episodes_from_habitat"):
        from embodia.envs.habitat import habitat_format

        return getattr(habitat_format, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
