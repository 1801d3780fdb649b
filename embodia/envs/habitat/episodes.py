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

Files: habitat-lab's JSON (optionally gzipped) with positions in Habitat's Y-up frame
(:mod:`embodia.envs.habitat.coords`): PointNav ``{"episodes": [{episode_id, scene_id, start_position,
start_rotation, info: {geodesic_distance}, goals: [{position, radius}]}]}``; ObjectNav adds
``object_category`` and the dataset-level ``goals_by_category`` (keyed ``"<scene basename>_<category>"``,
with ``view_points``) and ``category_to_task_category_id``; VLN adds ``instruction`` (``instruction_text``,
``instruction_tokens``) and ``reference_path``. Multi-robot episodes use an embodia extension: a list
``agents`` of ``{start_position, start_rotation, goals, info}``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embodia.envs.habitat.coords import (
    from_habitat_position,
    habitat_rotation_to_yaw,
    to_habitat_position,
    yaw_to_habitat_rotation,
)
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

    @property
    def num_robots(self) -> int:
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


# ---------------------------------------------------------------------- habitat-lab JSON
def _pose(position: np.ndarray, yaw: float) -> dict[str, list[float]]:
    return {"start_position": to_habitat_position(position), "start_rotation": yaw_to_habitat_rotation(yaw)}


def _goals_key(scene_id: str, category: str) -> str:
    return f"{os.path.basename(scene_id)}_{category}"


def episodes_to_habitat(episodes: list[NavEpisode], scene: Scene | None = None) -> dict[str, Any]:
    """habitat-lab's dataset dictionary for ``episodes`` (``scene`` gives ObjectNav goal object positions)."""
    dataset: dict[str, Any] = {"episodes": []}
    words: dict[str, int] = {}
    for ep in episodes:
        record: dict[str, Any] = {"episode_id": ep.episode_id, "scene_id": ep.scene_id}
        if ep.task == "multirobot":
            record["agents"] = [
                {
                    **_pose(p, y),
                    "goals": [{"position": to_habitat_position(g[0]), "radius": None}],
                    "info": {"geodesic_distance": d},
                }
                for p, y, g, d in zip(ep.start_positions, ep.start_yaws, ep.goals, ep.geodesic_distances)
            ]
        else:
            record.update(_pose(ep.start_positions[0], ep.start_yaws[0]))
            record["info"] = {
                "geodesic_distance": ep.geodesic_distances[0],
                **{k: v for k, v in ep.info.items() if k != "rooms"},
            }
            record["shortest_paths"] = None
            record["start_room"] = None
        if ep.task in ("pointnav", "instructionnav"):
            radius = SUCCESS_DISTANCE["instructionnav"] if ep.task == "instructionnav" else None
            record["goals"] = [{"position": to_habitat_position(ep.goals[0][0]), "radius": radius}]
        if ep.task == "instructionnav":
            tokens = [
                words.setdefault(w, len(words))
                for w in ep.instruction.lower().replace(".", " .").replace(",", " ,").split()
            ]
            record["instruction"] = {"instruction_text": ep.instruction, "instruction_tokens": tokens}
            record["reference_path"] = [to_habitat_position(p) for p in ep.reference_path or []]
            record["trajectory_id"] = int(ep.episode_id) if ep.episode_id.isdigit() else 0
            record["info"]["landmark_object_id"] = ep.object_ids[0] if ep.object_ids else None
            record["info"]["landmark_category"] = ep.object_category
        if ep.task == "objectnav":
            record["goals"] = []
            record["object_category"] = ep.object_category
            key = _goals_key(ep.scene_id, ep.object_category)
            goals = dataset.setdefault("goals_by_category", {})
            if key not in goals:
                goals[key] = []
                for k, object_id in enumerate(ep.object_ids):
                    obj = scene.object(object_id) if scene is not None else None
                    center = (
                        (obj.position[0], obj.position[1], obj.position[2] + 0.5 * obj.size[2])
                        if obj
                        else ep.goals[0][0]
                    )
                    view_points = ep.goals[0][np.asarray(ep.goal_object_of_view_point) == k]
                    goals[key].append(
                        {
                            "object_id": object_id,
                            "object_name": object_id,
                            "object_category": ep.object_category,
                            "position": to_habitat_position(center),
                            "view_points": [
                                {
                                    "agent_state": {
                                        "position": to_habitat_position(v),
                                        "rotation": [0.0, 0.0, 0.0, 1.0],
                                    },
                                    "iou": 1.0,
                                }
                                for v in view_points
                            ],
                        }
                    )
        dataset["episodes"].append(record)
    if any(ep.task == "objectnav" for ep in episodes):
        dataset["category_to_task_category_id"] = {c: i for i, c in enumerate(OBJECTNAV_CATEGORIES)}
        dataset["category_to_scene_annotation_category_id"] = {
            c: i for i, c in enumerate(OBJECTNAV_CATEGORIES)
        }
    if words:
        dataset["instruction_vocab"] = {"word_list": sorted(words, key=words.get), "num_vocab": len(words)}
    return dataset


def episodes_from_habitat(dataset: dict[str, Any], where: str = "<dataset>") -> list[NavEpisode]:
    """Parse habitat-lab's dataset dictionary (PointNav, ObjectNav, VLN, or embodia's multi-robot extension)."""
    if not isinstance(dataset, dict) or not isinstance(dataset.get("episodes"), list):
        raise NavEpisodeError(f"{where}: not a habitat-lab episode dataset (no 'episodes' list)")
    goals_by_category = dataset.get("goals_by_category", {})
    episodes = []
    for n, record in enumerate(dataset["episodes"]):
        try:
            episodes.append(_episode_from_record(record, goals_by_category))
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise NavEpisodeError(
                f"{where}: episode #{n} is malformed ({type(error).__name__}: {error})"
            ) from error
    return episodes


def _episode_from_record(record: dict[str, Any], goals_by_category: dict[str, Any]) -> NavEpisode:
    episode_id, scene_id = str(record["episode_id"]), str(record["scene_id"])
    if "agents" in record:
        agents = record["agents"]
        return NavEpisode(
            episode_id,
            scene_id,
            "multirobot",
            [from_habitat_position(a["start_position"]) for a in agents],
            [habitat_rotation_to_yaw(a["start_rotation"]) for a in agents],
            [np.array([from_habitat_position(a["goals"][0]["position"])]) for a in agents],
            [float(a.get("info", {}).get("geodesic_distance", float("nan"))) for a in agents],
        )
    start = from_habitat_position(record["start_position"])
    yaw = habitat_rotation_to_yaw(record["start_rotation"])
    info = dict(record.get("info") or {})
    geodesic = float(info.pop("geodesic_distance", float("nan")))
    if "object_category" in record:
        category = record["object_category"]
        objects = goals_by_category.get(_goals_key(scene_id, category), [])
        if not objects:
            raise ValueError(f"no goals_by_category entry {_goals_key(scene_id, category)!r}")
        points, owners = [], []
        for k, obj in enumerate(objects):
            for view in obj.get("view_points", []):
                points.append(from_habitat_position(view["agent_state"]["position"]))
                owners.append(k)
        return NavEpisode(
            episode_id,
            scene_id,
            "objectnav",
            [start],
            [yaw],
            [np.array(points).reshape(-1, 3)],
            [geodesic],
            object_category=category,
            object_ids=[str(o["object_id"]) for o in objects],
            goal_object_of_view_point=owners,
            info=info,
        )
    goal = np.array([from_habitat_position(record["goals"][0]["position"])])
    if "instruction" in record:
        return NavEpisode(
            episode_id,
            scene_id,
            "instructionnav",
            [start],
            [yaw],
            [goal],
            [geodesic],
            object_category=info.get("landmark_category"),
            object_ids=[info["landmark_object_id"]] if info.get("landmark_object_id") else [],
            instruction=str(record["instruction"]["instruction_text"]),
            reference_path=[from_habitat_position(p) for p in record.get("reference_path") or []],
            info=info,
        )
    return NavEpisode(episode_id, scene_id, "pointnav", [start], [yaw], [goal], [geodesic], info=info)


def save_episodes(episodes: list[NavEpisode], path: str | Path, scene: Scene | None = None) -> Path:
    """Write habitat-lab JSON (gzipped when the name ends in ``.gz``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(episodes_to_habitat(episodes, scene))
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def load_episodes(path: str | Path) -> list[NavEpisode]:
    """Read a habitat-lab JSON episode file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    if not path.is_file():
        raise NavEpisodeError(f"no episode file at {str(path)!r}")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt") as handle:
                data = json.load(handle)
        else:
            data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise NavEpisodeError(f"{path} is not a readable habitat-lab JSON file ({error})") from error
    return episodes_from_habitat(data, where=str(path))
