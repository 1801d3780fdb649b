"""habitat-lab's episode JSON and embodia's :class:`~embodia.envs.habitat.episodes.NavEpisode`, both ways.

Shapes, as habitat-lab's ``PointNav-v1`` and ``ObjectNav-v1`` datasets hold them (positions in Habitat's
Y-up frame, rotations ``[x, y, z, w]``; see :mod:`embodia.envs.habitat.coords`):

- **PointNav**: ``{"episodes": [{episode_id, scene_id, start_position, start_rotation,
  info: {geodesic_distance, ...}, goals: [{position, radius}], shortest_paths, start_room}]}``.
- **ObjectNav**: episodes add ``object_category``. Their goals are either the dataset's
  ``goals_by_category``, keyed ``"<basename of scene_id>_<category>"`` (``"apartment_0.glb_chair"``; the
  episodes' ``goals`` are then ``[]``), or inline per episode (older files, and habitat-lab's episodes in
  memory; the category may then be only in ``goals[0]``, as habitat-lab's ``dedup_goals`` reads it). A
  goal is ``{object_id, object_name, object_name_id, object_category, room_id, room_name, position,
  radius, view_points: [{agent_state: {position, rotation}, iou}]}``; the view points are the success
  region. Dataset keys ``category_to_task_category_id`` (the goal observation's ids) and
  ``category_to_scene_annotation_category_id`` (``category_to_mp3d_category_id`` in MP3D files).
- **VLN** (VLN-CE): ``instruction: {instruction_text, instruction_tokens}`` and ``reference_path``.
- **Multi-robot** (embodia's extension; habitat-lab does not read it): ``agents: [{start_position,
  start_rotation, goals, info}]``.

Scenes: habitat-lab keeps ``scene_id`` relative to its scenes directory (``SCENES_DIR`` replaces a
leading ``data/scene_datasets/``). embodia writes ``embodia/<scene>.glb`` (:func:`habitat_scene_paths`)
and, for scenes that are not shipped, the dataset key ``embodia_scene_refs`` mapping those paths to
embodia scene references (habitat-lab ignores dataset keys it does not know). Parsing leaves ``scene_id``
as in the file; :class:`embodia.envs.habitat.datasets.SceneResolver` decides which embodia scene it is.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embodia.envs.habitat.coords import (
    from_habitat_position,
    habitat_rotation_to_yaw,
    to_habitat_position,
    yaw_to_habitat_rotation,
)
from embodia.envs.habitat.episodes import OBJECTNAV_CATEGORIES, SUCCESS_DISTANCE, NavEpisode
from embodia.envs.habitat.errors import NavEpisodeError, NavSceneError
from embodia.envs.habitat.scene import Scene, SceneObject, load_scene, shipped_scene_names

#: habitat-lab strips this from ``scene_id`` and joins the rest to its scenes directory
DEFAULT_SCENE_PATH_PREFIX = "data/scene_datasets/"
#: the scene dataset folder embodia writes its scene paths under
SCENE_DATASET = "embodia"
#: dataset key: habitat scene path -> embodia scene reference, for scenes that are not shipped
SCENE_REFS_KEY = "embodia_scene_refs"
#: what a scene file name may end with; the scene's name is what comes before
SCENE_SUFFIXES = (".basis.glb", ".glb", ".ply", ".obj", ".json")
TASK_CATEGORY_KEY = "category_to_task_category_id"
ANNOTATION_CATEGORY_KEYS = ("category_to_scene_annotation_category_id", "category_to_mp3d_category_id")
#: embodia's ObjectNav category ids (HM3D's order)
DEFAULT_CATEGORY_IDS: dict[str, int] = {c: i for i, c in enumerate(OBJECTNAV_CATEGORIES)}


# ---------------------------------------------------------------------- scene paths
def strip_scene_prefix(scene_id: str) -> str:
    """``scene_id`` without habitat-lab's ``data/scene_datasets/`` prefix (what its scenes directory joins)."""
    return (
        scene_id[len(DEFAULT_SCENE_PATH_PREFIX) :]
        if scene_id.startswith(DEFAULT_SCENE_PATH_PREFIX)
        else scene_id
    )


def scene_stem(scene_id: str) -> str:
    """The scene's name in a path: ``.../apartment_0.basis.glb`` -> ``apartment_0``."""
    name = os.path.basename(scene_id.replace("\\", "/"))
    for suffix in SCENE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def goals_key(scene_id: str, category: str) -> str:
    """habitat-lab's ``goals_by_category`` key of an ObjectNav episode."""
    return f"{os.path.basename(scene_id)}_{category}"


def is_habitat_scene_path(scene_id: str) -> bool:
    """Whether ``scene_id`` is a habitat-style scene path rather than an embodia scene reference."""
    return scene_id.startswith(DEFAULT_SCENE_PATH_PREFIX) or scene_id.endswith(SCENE_SUFFIXES[:-1])


def habitat_scene_paths(refs: Iterable[str]) -> dict[str, str]:
    """A habitat scene path per embodia scene reference: ``embodia/<name>.glb``, unique per reference.

    ``apartment_0`` -> ``embodia/apartment_0.glb``; ``scenes/office.json`` -> ``embodia/office.glb``;
    ``procedural:office:7`` -> ``embodia/procedural_office_7.glb``; habitat paths stay as they are.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for ref in dict.fromkeys(refs):
        if is_habitat_scene_path(ref):
            out[ref] = ref
            continue
        stem = ref.replace(":", "_") if ref.startswith("procedural:") else scene_stem(ref)
        path, n = f"{SCENE_DATASET}/{stem}.glb", 1
        while path in taken:
            n += 1
            path = f"{SCENE_DATASET}/{stem}_{n}.glb"
        taken.add(path)
        out[ref] = path
    return out


# ---------------------------------------------------------------------- reading
@dataclass
class GoalSet:
    """ObjectNav goal objects (of one category in one scene), flattened to their view points."""

    view_points: np.ndarray
    """``(N, 3)`` view points in embodia's frame: the success region."""
    owners: list[int]
    """For each view point, the index of the object it views."""
    object_ids: list[str]
    objects: list[dict[str, Any]]
    """habitat-lab's fields of each object other than ``view_points``, as in the file."""


@dataclass
class HabitatFile:
    """What one habitat-lab dataset dictionary holds."""

    episodes: list[NavEpisode]
    objectnav: bool
    """Whether the file is an ObjectNav file (category maps, ``goals_by_category`` or categories)."""
    category_maps: dict[str, dict[str, int]]
    """The dataset's ``category_to_*`` maps, as in the file."""
    goal_sets: dict[str, GoalSet]
    """``goals_by_category``, parsed."""
    scene_refs: dict[str, str]
    """``embodia_scene_refs``: habitat scene path -> embodia scene reference."""


def _position(value: Any, what: str) -> np.ndarray:
    values = np.asarray(value, dtype=np.float64).reshape(-1)
    if values.shape != (3,) or not np.isfinite(values).all():
        raise ValueError(f"{what} must be 3 finite numbers [x, y, z] (Habitat frame), got {value!r}")
    return from_habitat_position(values)


def _yaw(value: Any, what: str) -> float:
    values = np.asarray(value, dtype=np.float64).reshape(-1)
    if values.shape != (4,) or not np.isfinite(values).all() or not np.linalg.norm(values) > 0:
        raise ValueError(f"{what} must be a quaternion [x, y, z, w], got {value!r}")
    return habitat_rotation_to_yaw(values)


def _distance(value: Any) -> float:
    return float("nan") if value is None else float(value)


def category_maps(data: Mapping[str, Any], where: str) -> dict[str, dict[str, int]]:
    """The dataset's ``category_to_*`` maps, checked: names to integer ids, and the task and scene
    annotation maps with the same categories (as habitat-lab asserts)."""
    maps: dict[str, dict[str, int]] = {}
    for key, value in data.items():
        if not key.startswith("category_to_"):
            continue
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()
        ):
            raise NavEpisodeError(f"{where}: {key} must map category names to integer ids, got {value!r}")
        maps[key] = dict(value)
    task = maps.get(TASK_CATEGORY_KEY)
    for key in ANNOTATION_CATEGORY_KEYS:
        if task is not None and key in maps and set(maps[key]) != set(task):
            raise NavEpisodeError(
                f"{where}: {TASK_CATEGORY_KEY} and {key} name different categories "
                f"({sorted(set(task) ^ set(maps[key]))}); habitat-lab needs the same keys in both"
            )
    return maps


def parse_goal_set(goals: Any, where: str) -> GoalSet:
    """habitat-lab ObjectNav goals (a list of ``ObjectGoal`` dicts) as a :class:`GoalSet`."""
    try:
        if not isinstance(goals, list):
            raise TypeError(f"goals must be a list of ObjectGoal dicts, got {type(goals).__name__}")
        points, owners, ids, objects = [], [], [], []
        for k, goal in enumerate(goals):
            ids.append(str(goal["object_id"]))
            objects.append({key: value for key, value in goal.items() if key != "view_points"})
            for j, view in enumerate(goal.get("view_points") or []):
                points.append(_position(view["agent_state"]["position"], f"goal {k} view point {j}"))
                owners.append(k)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise NavEpisodeError(
            f"{where} is malformed ({type(error).__name__}: {error}); a goal is habitat-lab's ObjectGoal "
            "{object_id, position, view_points: [{agent_state: {position, rotation}}], ...}"
        ) from error
    return GoalSet(np.array(points, dtype=np.float64).reshape(-1, 3), owners, ids, objects)


def _has_object_goals(record: Mapping[str, Any]) -> bool:
    goals = record.get("goals")
    return isinstance(goals, list) and any(
        isinstance(g, Mapping) and ("view_points" in g or "object_id" in g) for g in goals
    )


def parse_habitat(data: Any, where: str, objectnav: bool = False) -> HabitatFile:
    """Parse one habitat-lab dataset dictionary (``objectnav``: the file is known to be ObjectNav)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("episodes"), list):
        raise NavEpisodeError(f"{where}: not a habitat-lab episode dataset (no 'episodes' list)")
    maps = category_maps(data, where)
    raw_goals = data.get("goals_by_category") or {}
    if not isinstance(raw_goals, Mapping):
        raise NavEpisodeError(f"{where}: goals_by_category must be a dict of goal lists")
    goal_sets = {
        str(key): parse_goal_set(goals, f"{where}: goals_by_category[{key!r}]")
        for key, goals in raw_goals.items()
    }
    records = data["episodes"]
    objectnav = (
        objectnav
        or bool(maps)
        or bool(raw_goals)
        or any(isinstance(r, Mapping) and ("object_category" in r or _has_object_goals(r)) for r in records)
    )
    episodes = [
        episode_from_habitat(record, goal_sets=goal_sets, objectnav=objectnav, where=f"{where}: episode #{n}")
        for n, record in enumerate(records)
    ]
    refs = data.get(SCENE_REFS_KEY) or {}
    if not isinstance(refs, Mapping):
        raise NavEpisodeError(f"{where}: {SCENE_REFS_KEY} must map habitat scene paths to embodia scenes")
    return HabitatFile(episodes, objectnav, maps, goal_sets, {str(k): str(v) for k, v in refs.items()})


def episodes_from_habitat(dataset: Any, where: str = "<dataset>") -> list[NavEpisode]:
    """The episodes of a habitat-lab dataset dictionary (PointNav, ObjectNav, VLN or multi-robot).

    Scene ids stay as in the file; :func:`embodia.envs.habitat.datasets.load_episodes` also resolves them.
    """
    return parse_habitat(dataset, where).episodes


def episode_from_habitat(
    record: Any,
    *,
    goal_sets: Mapping[str, GoalSet] | None = None,
    objectnav: bool = False,
    where: str = "episode",
) -> NavEpisode:
    """One habitat-lab episode dict as a :class:`NavEpisode` (``scene_id`` as in the dict).

    Args:
        record: the episode, as in a file or habitat-lab's episode as a dict (inline goals).
        goal_sets: the dataset's parsed ``goals_by_category`` (ObjectNav episodes with ``goals: []``).
        objectnav: the episode comes from an ObjectNav file: it must have an ``object_category``.
        where: names the episode in error messages.
    """
    if not isinstance(record, Mapping):
        raise NavEpisodeError(
            f"{where}: an episode must be a habitat-lab episode dict or a NavEpisode, got {type(record).__name__}"
        )
    label = f"episode_id {record.get('episode_id')!r}, scene {record.get('scene_id')!r}"
    try:
        return _parse_episode(record, goal_sets or {}, objectnav, f"{where} ({label})")
    except NavEpisodeError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
        raise NavEpisodeError(
            f"{where} is malformed ({label}: {type(error).__name__}: {error}); "
            "compare it with habitat-lab's episode format"
        ) from error


def _parse_episode(
    record: Mapping[str, Any], goal_sets: Mapping[str, GoalSet], objectnav: bool, where: str
) -> NavEpisode:
    episode_id, scene_id = str(record["episode_id"]), str(record["scene_id"])
    if "agents" in record:
        agents = record["agents"]
        return NavEpisode(
            episode_id,
            scene_id,
            "multirobot",
            [_position(a["start_position"], f"agents[{i}].start_position") for i, a in enumerate(agents)],
            [_yaw(a["start_rotation"], f"agents[{i}].start_rotation") for i, a in enumerate(agents)],
            [
                np.array([_position(a["goals"][0]["position"], f"agents[{i}].goals[0]")])
                for i, a in enumerate(agents)
            ],
            [_distance((a.get("info") or {}).get("geodesic_distance")) for a in agents],
            habitat_scene_id=scene_id,
        )
    start = _position(record["start_position"], "start_position")
    yaw = _yaw(record["start_rotation"], "start_rotation")
    info = dict(record.get("info") or {})
    geodesic = _distance(info.pop("geodesic_distance", None))
    goals = record.get("goals") or []
    category = record.get("object_category")
    if category is None and goals and isinstance(goals[0], Mapping) and _has_object_goals(record):
        category = goals[0].get("object_category")  # habitat-lab's dedup_goals reads it from here
    if objectnav or category is not None or _has_object_goals(record):
        if category is None:
            raise NavEpisodeError(
                f"{where}: no object_category, in an ObjectNav file; embodia does not read an ObjectNav "
                "episode as PointNav: give every episode its object_category (or its goals' object_category)"
            )
        category = str(category)
        if goals:
            goal_set = parse_goal_set(goals, f"{where}: goals")
        else:
            key = goals_key(scene_id, category)
            if key not in goal_sets:
                same_scene = [k for k in goal_sets if k.startswith(f"{os.path.basename(scene_id)}_")]
                raise NavEpisodeError(
                    f"{where}: no goals for category {category!r}: the episode's goals are empty and "
                    f"goals_by_category has no {key!r} (keys for this scene: {same_scene}); "
                    "add the goals inline or to goals_by_category"
                )
            goal_set = goal_sets[key]
        if not len(goal_set.view_points):
            raise NavEpisodeError(
                f"{where}: the goal objects of {category!r} ({goal_set.object_ids}) have no view points; "
                "ObjectNav success is measured to view points, so each goal needs view_points"
            )
        return NavEpisode(
            episode_id,
            scene_id,
            "objectnav",
            [start],
            [yaw],
            [goal_set.view_points],
            [geodesic],
            object_category=category,
            object_ids=list(goal_set.object_ids),
            goal_object_of_view_point=list(goal_set.owners),
            info=info,
            habitat_scene_id=scene_id,
            goal_objects=[dict(o) for o in goal_set.objects],
        )
    if not goals:
        raise NavEpisodeError(f"{where}: no goals; a PointNav episode needs goals: [{{position, radius}}]")
    goal = np.array([_position(goals[0]["position"], "goals[0].position")])
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
            reference_path=[_position(p, "reference_path") for p in record.get("reference_path") or []],
            info=info,
            habitat_scene_id=scene_id,
        )
    return NavEpisode(
        episode_id,
        scene_id,
        "pointnav",
        [start],
        [yaw],
        [goal],
        [geodesic],
        info=info,
        habitat_scene_id=scene_id,
    )


# ---------------------------------------------------------------------- writing
def _pose(position: np.ndarray, yaw: float) -> dict[str, list[float]]:
    return {"start_position": to_habitat_position(position), "start_rotation": yaw_to_habitat_rotation(yaw)}


def _json_float(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _scene_object(scene: Scene | None, object_id: str) -> SceneObject | None:
    if scene is None:
        return None
    return next((o for o in scene.objects if o.id == object_id), None)


def _goal_objects(ep: NavEpisode, scene: Scene | None) -> list[dict[str, Any]]:
    """habitat-lab ObjectGoal dicts for an ObjectNav episode; view points rotated to face their object."""
    owners = np.asarray(ep.goal_object_of_view_point, dtype=int)
    view_points = np.asarray(ep.goals[0], dtype=np.float64).reshape(-1, 3)
    out = []
    for k, object_id in enumerate(ep.object_ids):
        mine = view_points[owners == k] if len(owners) == len(view_points) else view_points
        obj = _scene_object(scene, object_id)
        if obj is not None and scene is not None:
            center = np.array([obj.position[0], obj.position[1], obj.position[2] + 0.5 * obj.size[2]])
            room = next((r for r in scene.rooms if r.id == obj.room), None)
            goal: dict[str, Any] = {
                "object_id": obj.id,
                "object_name": obj.id,
                "object_name_id": scene.objects.index(obj),
                "object_category": ep.object_category,
                "room_id": obj.room,
                "room_name": room.category if room is not None else None,
                "position": to_habitat_position(center),
                "radius": None,
            }
        else:
            known = ep.goal_objects[k] if k < len(ep.goal_objects) else {}
            goal = {"radius": None, **known, "object_id": object_id, "object_category": ep.object_category}
            try:
                center = _position(known["position"], f"goal object {object_id!r} position")
            except (KeyError, ValueError, TypeError):  # no usable position: the view points' centre
                center = mine.mean(axis=0) if len(mine) else view_points.mean(axis=0)
                goal["position"] = to_habitat_position(center)
        goal["view_points"] = [
            {
                "agent_state": {
                    "position": to_habitat_position(v),
                    "rotation": yaw_to_habitat_rotation(math.atan2(center[1] - v[1], center[0] - v[0])),
                },
                "iou": None,
            }
            for v in mine
        ]
        out.append(goal)
    return out


def _scene_ref_for_file(ref: str, base_dir: Path | None) -> str:
    if base_dir is not None and ref.endswith(".json"):
        return os.path.relpath(Path(ref).resolve(), base_dir.resolve())
    return ref


def episodes_to_habitat(
    episodes: list[NavEpisode],
    scene: Scene | None = None,
    *,
    category_maps: Mapping[str, Mapping[str, int]] | None = None,
    base_dir: str | Path | None = None,
    scene_paths: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """habitat-lab's dataset dictionary for ``episodes``.

    Args:
        episodes: what to write.
        scene: the scene of the ObjectNav episodes whose name it has (else each episode's scene is loaded),
            for the goal objects' positions, rooms and ids.
        category_maps: the ``category_to_*`` maps (default embodia's: HM3D's six categories).
        base_dir: where the file goes; scene JSON references are written relative to it.
        scene_paths: the habitat scene path of each embodia scene reference (default
            :func:`habitat_scene_paths` of these episodes' scenes).
    """
    dataset: dict[str, Any] = {"episodes": []}
    words: dict[str, int] = {}
    own = [ep.scene_id for ep in episodes if ep.habitat_scene_id is None]
    paths = {ref: path for ref, path in (scene_paths or habitat_scene_paths(own)).items() if ref in own}
    scenes: dict[str, Scene | None] = {}
    goal_owner: dict[str, NavEpisode] = {}
    for ep in episodes:
        scene_path = ep.habitat_scene_id or paths[ep.scene_id]
        record: dict[str, Any] = {"episode_id": ep.episode_id, "scene_id": scene_path}
        if ep.task == "multirobot":
            record["agents"] = [
                {
                    **_pose(p, y),
                    "goals": [{"position": to_habitat_position(g[0]), "radius": None}],
                    "info": {"geodesic_distance": _json_float(d)},
                }
                for p, y, g, d in zip(ep.start_positions, ep.start_yaws, ep.goals, ep.geodesic_distances)
            ]
        else:
            record.update(_pose(ep.start_positions[0], ep.start_yaws[0]))
            record["info"] = {
                "geodesic_distance": _json_float(ep.geodesic_distances[0]),
                **{k: v for k, v in ep.info.items() if k not in ("rooms", "geodesic_distance")},
            }
            record["shortest_paths"] = None
            record["start_room"] = None
        if ep.task in ("pointnav", "instructionnav"):
            radius = SUCCESS_DISTANCE["instructionnav"] if ep.task == "instructionnav" else None
            record["goals"] = [{"position": to_habitat_position(ep.goals[0][0]), "radius": radius}]
        if ep.task == "instructionnav":
            tokens = [
                words.setdefault(w, len(words))
                for w in (ep.instruction or "").lower().replace(".", " .").replace(",", " ,").split()
            ]
            record["instruction"] = {"instruction_text": ep.instruction, "instruction_tokens": tokens}
            record["reference_path"] = [to_habitat_position(p) for p in ep.reference_path or []]
            record["trajectory_id"] = int(ep.episode_id) if ep.episode_id.isdigit() else 0
            record["info"]["landmark_object_id"] = ep.object_ids[0] if ep.object_ids else None
            record["info"]["landmark_category"] = ep.object_category
        if ep.task == "objectnav":
            _objectnav_record(ep, record, dataset, scene, scenes, goal_owner)
        dataset["episodes"].append(record)
    if any(ep.task == "objectnav" for ep in episodes):
        _write_category_maps(episodes, dataset, category_maps)
    refs: dict[str, str] = {}
    shipped = shipped_scene_names()
    for ep in episodes:  # paths that do not name their embodia scene by themselves
        path = ep.habitat_scene_id or paths[ep.scene_id]
        if path != ep.scene_id and not (ep.scene_id in shipped and scene_stem(path) == ep.scene_id):
            refs.setdefault(path, _scene_ref_for_file(ep.scene_id, Path(base_dir) if base_dir else None))
    if refs:
        dataset[SCENE_REFS_KEY] = refs
    if words:
        dataset["instruction_vocab"] = {"word_list": sorted(words, key=words.get), "num_vocab": len(words)}
    return dataset


def _objectnav_record(
    ep: NavEpisode,
    record: dict[str, Any],
    dataset: dict[str, Any],
    scene: Scene | None,
    scenes: dict[str, Scene | None],
    goal_owner: dict[str, NavEpisode],
) -> None:
    record["goals"] = []
    record["object_category"] = ep.object_category
    view_points = np.asarray(ep.goals[0], dtype=np.float64).reshape(-1, 3)
    if len(view_points):
        record["info"]["euclidean_distance"] = float(
            np.linalg.norm(view_points - ep.start_positions[0], axis=1).min()
        )
    key = goals_key(record["scene_id"], ep.object_category or "")
    goals = dataset.setdefault("goals_by_category", {})
    if key in goals:
        first = goal_owner[key]
        if first.object_ids != ep.object_ids or not np.array_equal(
            np.asarray(first.goals[0]).reshape(-1, 3), view_points
        ):
            raise NavEpisodeError(
                f"episodes {first.episode_id!r} and {ep.episode_id!r} share the goals key {key!r} but have "
                "different goals; habitat-lab keeps one goal list per scene and category: write them to "
                "separate files"
            )
        return
    if ep.scene_id not in scenes:
        try:
            loaded = load_scene(ep.scene_id)
        except NavSceneError:
            loaded = None
        use_given = scene is not None and (loaded is None or loaded.name == scene.name)
        scenes[ep.scene_id] = scene if use_given else loaded
    goals[key] = _goal_objects(ep, scenes[ep.scene_id])
    goal_owner[key] = ep


def _write_category_maps(
    episodes: list[NavEpisode], dataset: dict[str, Any], category_maps: Mapping[str, Mapping[str, int]] | None
) -> None:
    maps = {k: dict(v) for k, v in (category_maps or {}).items()}
    task = maps.setdefault(TASK_CATEGORY_KEY, dict(DEFAULT_CATEGORY_IDS))
    if not any(key in maps for key in ANNOTATION_CATEGORY_KEYS):
        maps[ANNOTATION_CATEGORY_KEYS[0]] = dict(task)
    missing = sorted({ep.object_category for ep in episodes if ep.task == "objectnav"} - set(task))
    if missing:
        raise NavEpisodeError(
            f"ObjectNav categories {missing} have no id in {TASK_CATEGORY_KEY} ({sorted(task)}); "
            "pass category_maps with ids for them"
        )
    dataset.update(maps)
