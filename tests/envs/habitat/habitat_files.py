"""Test fixtures in the exact shapes of habitat-lab's dataset files, built here by hand (not by embodia's
writer): ``PointNav-v1`` and ``ObjectNav-v1`` episodes, ``goals_by_category``, the split layout.

Positions are given in embodia's frame (x east, y north, floor at 0) and written in Habitat's Y-up frame,
``[x, height, -y]``; rotations are quaternions ``[x, y, z, w]`` about Habitat's +Y.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

from embodia.envs.habitat.scene import Room, Scene, SceneObject

#: HM3D ObjectNav v1's category ids
HM3D_CATEGORIES = {"chair": 0, "bed": 1, "plant": 2, "toilet": 3, "tv_monitor": 4, "sofa": 5}
#: MP3D ObjectNav v1's 21 categories, in task category id order
MP3D_CATEGORIES = [
    "chair",
    "table",
    "picture",
    "cabinet",
    "cushion",
    "sofa",
    "bed",
    "chest_of_drawers",
    "plant",
    "sink",
    "toilet",
    "stool",
    "towel",
    "tv_monitor",
    "shower",
    "bathtub",
    "counter",
    "fireplace",
    "gym_equipment",
    "seating",
    "clothes",
]
#: MP3D's category_to_mp3d_category_id (the scene annotation ids)
MP3D_ANNOTATION_IDS = dict(
    zip(MP3D_CATEGORIES, (3, 5, 6, 7, 8, 10, 11, 13, 14, 15, 18, 19, 20, 22, 23, 25, 26, 27, 33, 34, 38))
)


def habitat(x: float, y: float, height: float = 0.0) -> list[float]:
    """embodia ``(x, y)`` at ``height`` -> Habitat ``[x, y_up, z]``."""
    return [float(x), float(height), -float(y)]


def rotation(yaw: float) -> list[float]:
    """Habitat quaternion ``[x, y, z, w]`` of an agent facing embodia heading ``yaw`` (identity faces -Z = +y)."""
    half = 0.5 * (yaw - math.pi / 2)
    return [0.0, math.sin(half), 0.0, math.cos(half)]


def write_gz(path: Path, data: Any) -> Path:
    """Write JSON, gzipped as habitat-lab's files are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    return path


def read_gz(path: Path) -> Any:
    """Read a gzipped JSON file."""
    with gzip.open(path, "rt") as handle:
        return json.load(handle)


def pointnav_episode(
    episode_id: str, scene_id: str, start: tuple, goal: tuple, yaw: float = 0.0
) -> dict[str, Any]:
    """A PointNav-v1 episode as in ``pointnav/hm3d/v1/val/content/<scene>.json.gz``."""
    return {
        "episode_id": episode_id,
        "scene_id": scene_id,
        "start_position": habitat(*start),
        "start_rotation": rotation(yaw),
        "info": {"geodesic_distance": 1.0, "difficulty": "easy"},
        "goals": [{"position": habitat(*goal), "radius": None}],
        "shortest_paths": None,
        "start_room": None,
    }


def object_goal(object_id: str, category: str, center: tuple, view_points: list[tuple]) -> dict[str, Any]:
    """An ObjectNav-v1 goal (``ObjectGoal``) with view points facing north."""
    return {
        "object_id": object_id,
        "object_name": f"{category}_{object_id}",
        "object_name_id": 7,
        "object_category": category,
        "room_id": "3",
        "room_name": "office",
        "position": habitat(*center),
        "radius": None,
        "view_points": [
            {"agent_state": {"position": habitat(*v), "rotation": rotation(math.pi / 2)}, "iou": 0.1}
            for v in view_points
        ],
    }


def objectnav_episode(
    episode_id: str, scene_id: str, start: tuple, category: str | None, goals: list | None = None
) -> dict[str, Any]:
    """An ObjectNav-v1 episode (``goals: []`` for the ``goals_by_category`` layout)."""
    record: dict[str, Any] = {
        "episode_id": episode_id,
        "scene_id": scene_id,
        "scene_dataset_config": "./data/scene_datasets/hm3d/hm3d_annotated_basis.scene_dataset_config.json",
        "additional_obj_config_paths": [],
        "start_position": habitat(*start),
        "start_rotation": rotation(0.0),
        "info": {"geodesic_distance": 2.0, "euclidean_distance": 1.5, "closest_goal_object_id": "12"},
        "goals": goals or [],
        "start_room": None,
        "shortest_paths": None,
    }
    if category is not None:
        record["object_category"] = category
    return record


def room_scene(name: str = "room") -> Scene:
    """One 6 x 4 m office with a chair at (4, 2) and a plant at (0.6, 3.4): free space for exact checks.

    The navigable area is x in [0.23, 5.77], y in [0.23, 3.77] (walls 0.1 m thick, robot radius 0.18 m)
    minus the objects' footprints grown by the radius (chair: x in [3.57, 4.43], y in [1.57, 2.43]).
    """
    return Scene(
        name,
        rooms=[Room("r", "office", (0.0, 0.0, 6.0, 4.0))],
        objects=[
            SceneObject("chair_0", "chair", "r", (4.0, 2.0, 0.0), (0.5, 0.5, 0.8)),
            SceneObject("plant_0", "plant", "r", (0.6, 3.4, 0.0), (0.4, 0.4, 0.9)),
        ],
    )
