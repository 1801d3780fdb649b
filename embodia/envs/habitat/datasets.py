"""habitat-lab episode datasets as files: one file or the split layout, scene paths, and writing them.

**Reading** (:meth:`NavDataset.load`, :func:`load_episodes`): ``{split}.json(.gz)`` holds the episodes,
or, as in every large habitat-lab dataset, its ``"episodes"`` list is empty and the episodes are in
``content/<scene>.json.gz`` next to it (the path pattern is the file's ``content_scenes_path``, default
``{data_path}/content/{scene}.json.gz``). As in habitat-lab, when that folder exists its files are read
(all of them, or ``content_scenes``) and the top-level episodes are not. A dataset without any episode is
an error. Every file's JSON shapes: :mod:`embodia.envs.habitat.habitat_format`.

**Scenes** (:class:`SceneResolver`): an episode's ``scene_id`` is a habitat scene path
(``data/scene_datasets/embodia/apartment_0.glb``, ``hm3d/val/00800-TEEsavR23oF/TEEsavR23oF.basis.glb``)
or an embodia scene reference. It resolves, in order, through ``scene_map`` (keys: the path as in the
file, without ``data/scene_datasets/``, or the scene's name), the file's ``embodia_scene_refs``, an
embodia reference as it is (shipped name, scene JSON, ``procedural:<kind>:<seed>``), the scene JSON at the
same place under ``scenes_dir`` (habitat-lab's ``SCENES_DIR``: ``<scenes_dir>/embodia/apartment_0.json``),
and last a shipped scene of the same name. A scene that resolves nowhere is a one-line error naming the
scenes embodia has and how to map one.

**Checking** against a scene's navigation mesh happens per scene, when it is loaded
(:meth:`NavDataset.check_scene`, :mod:`embodia.envs.habitat.episode_check`).

**Writing** (:func:`save_episodes`): one file, or the split layout (``split=True``); scene paths are
``embodia/<scene>.glb``, and ``scenes_dir=`` exports each scene there (``.glb`` for habitat-sim and the
scene JSON embodia reads back), so that habitat-lab with ``SCENES_DIR=<scenes_dir>`` finds them.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embodia.envs.habitat.episode_check import MESH_TOLERANCE, SnapRecord, check_episode, scene_label
from embodia.envs.habitat.episodes import NavEpisode
from embodia.envs.habitat.errors import NavEpisodeError, NavSceneError
from embodia.envs.habitat.habitat_format import (
    DEFAULT_CATEGORY_IDS,
    TASK_CATEGORY_KEY,
    GoalSet,
    episodes_to_habitat,
    habitat_scene_paths,
    parse_habitat,
    scene_stem,
    strip_scene_prefix,
)
from embodia.envs.habitat.scene import Scene, load_scene, shipped_scene_names

logger = logging.getLogger(__name__)

#: habitat-lab's default place of a split's per-scene files
CONTENT_SCENES_PATH = "{data_path}/content/{scene}.json.gz"
#: habitat-lab's "every scene" value of ``content_scenes``
ALL_SCENES = "*"


# ---------------------------------------------------------------------- scenes
class SceneResolver:
    """Which embodia scene a habitat ``scene_id`` means (see module docstring)."""

    def __init__(
        self,
        scenes_dir: str | Path | None = None,
        scene_map: Mapping[str, str] | None = None,
        file_refs: Mapping[str, str] | None = None,
        base_dir: str | Path | None = None,
    ) -> None:
        self.scenes_dir = Path(scenes_dir) if scenes_dir is not None else None
        self.scene_map = dict(scene_map or {})
        self.file_refs = dict(file_refs or {})
        self.base_dir = Path(base_dir) if base_dir is not None else None

    def with_file(self, file_refs: Mapping[str, str], base_dir: str | Path) -> SceneResolver:
        """This resolver plus a dataset file's ``embodia_scene_refs`` (JSON paths relative to ``base_dir``)."""
        return SceneResolver(self.scenes_dir, self.scene_map, {**self.file_refs, **file_refs}, base_dir)

    def _json(self, ref: str, file_relative: bool = False) -> str | None:
        """An existing scene JSON: ``ref`` from the working directory, or (first, for the file's own
        references) relative to the dataset file."""
        candidates = [Path(ref)]
        if self.base_dir is not None and not Path(ref).is_absolute():
            candidates.insert(0 if file_relative else 1, self.base_dir / ref)
        return next((str(c) for c in candidates if c.is_file()), None)

    def resolve(self, scene_id: str) -> str | None:
        """The embodia scene reference for ``scene_id``, or ``None`` when it resolves nowhere."""
        normalized, stem = strip_scene_prefix(scene_id), scene_stem(scene_id)
        for key in (scene_id, normalized, stem):
            if key in self.scene_map:
                return self.scene_map[key]
        for key in (scene_id, normalized):
            if key in self.file_refs:
                ref = self.file_refs[key]
                return (self._json(ref, file_relative=True) or ref) if ref.endswith(".json") else ref
        if scene_id.startswith("procedural:") or scene_id in shipped_scene_names():
            return scene_id
        if scene_id.endswith(".json") and self._json(scene_id):
            return self._json(scene_id)
        if self.scenes_dir is not None:
            candidate = self.scenes_dir / Path(normalized).parent / f"{stem}.json"
            if candidate.is_file():
                return str(candidate)
        if stem in shipped_scene_names():
            return stem
        return None

    def error(self, where: str, scene_id: str, others: int = 0) -> NavSceneError:
        """The one-line error for a scene that resolves nowhere."""
        more = f" (and {others} more scene(s))" if others else ""
        relative = str(Path(strip_scene_prefix(scene_id)).parent / f"{scene_stem(scene_id)}.json")
        looked = ""
        if self.scenes_dir is not None:
            looked = f", nor is there a scene JSON at {str(self.scenes_dir / relative)!r}"
        return NavSceneError(
            f"{where}: scene {scene_id!r}{more} is not an embodia scene{looked}; embodia has "
            f"{shipped_scene_names()}, scene JSON files and 'procedural:<kind>:<seed>'; map it with "
            f"scene_map={{{scene_id!r}: 'apartment_0'}} (or a scene JSON path), or pass scenes_dir= a folder "
            f"holding {relative!r}"
        )


# ---------------------------------------------------------------------- files
def read_json(path: Path) -> Any:
    """A JSON (``.json``) or gzipped JSON (``.gz``) file."""
    if not path.is_file():
        raise NavEpisodeError(f"no episode file at {str(path)!r}")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt") as handle:
                return json.load(handle)
        return json.loads(path.read_text())
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise NavEpisodeError(f"{path} is not a readable habitat-lab JSON file ({error})") from error


def _write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def content_files(path: Path, data: Mapping[str, Any]) -> tuple[Path, dict[str, Path]] | None:
    """The split's content folder and its files by scene name, or ``None`` when there is no such folder."""
    pattern = str(data.get("content_scenes_path") or CONTENT_SCENES_PATH)
    if "{scene}" not in pattern:
        raise NavEpisodeError(f"{path}: content_scenes_path {pattern!r} has no '{{scene}}'")
    head, _, tail = pattern.partition("{scene}")
    try:
        folder = Path(head.format(data_path=str(path.parent)))
    except (KeyError, IndexError, ValueError) as error:
        raise NavEpisodeError(
            f"{path}: content_scenes_path {pattern!r} is not a valid pattern ({error})"
        ) from error
    if not folder.is_dir():
        return None
    files = {
        p.name[: -len(tail)]: p
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name.endswith(tail) and len(p.name) > len(tail)
    }
    return folder, files


@dataclass
class NavDataset:
    """A habitat-lab episode dataset, read and resolved (see module docstring)."""

    path: Path
    episodes: list[NavEpisode]
    """Every episode, in file order (content files sorted by scene); ``scene_id`` is embodia's reference."""
    category_maps: dict[str, dict[str, int]] = field(default_factory=dict)
    """The ``category_to_*`` maps of the files (ObjectNav)."""
    goal_sets: dict[str, GoalSet] = field(default_factory=dict)
    """``goals_by_category`` of every file."""
    resolver: SceneResolver = field(default_factory=SceneResolver)
    snapped: dict[int, list[SnapRecord]] = field(default_factory=dict)
    """Per episode index, the points moved onto the mesh when its scene was checked."""
    _checked: set[str] = field(default_factory=set)
    _cache: dict[int, Any] = field(default_factory=dict)

    @property
    def category_to_task_category_id(self) -> dict[str, int]:
        """ObjectNav category ids of the goal observation: the files', else embodia's (HM3D's six)."""
        return self.category_maps.get(TASK_CATEGORY_KEY) or dict(DEFAULT_CATEGORY_IDS)

    @property
    def scenes(self) -> list[str]:
        """The embodia scene references of the episodes, in order of first use."""
        return list(dict.fromkeys(ep.scene_id for ep in self.episodes))

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        scenes_dir: str | Path | None = None,
        scene_map: Mapping[str, str] | None = None,
        content_scenes: Iterable[str] = (ALL_SCENES,),
        task: str | None = None,
        scene_loader: Callable[[str], Scene] = load_scene,
    ) -> NavDataset:
        """Read ``path`` (one file, or the top-level file of a split with ``content/``) and resolve its scenes.

        Args:
            path: a habitat-lab ``.json`` / ``.json.gz`` episode file.
            scenes_dir: habitat-lab's scenes directory, where scene paths resolve to scene JSON files.
            scene_map: habitat scene paths (or scene names) -> embodia scene references.
            content_scenes: the split's scenes to read (content file names without the extension), or ``"*"``.
            task: the task the episodes must have (``None``: any).
            scene_loader: loads an embodia scene reference (to check ObjectNav categories against it).

        Raises:
            NavEpisodeError: unreadable or malformed files, no episodes, episodes of another task,
                ObjectNav categories without an id or absent from their scene.
            NavSceneError: a scene that resolves nowhere.
        """
        path = Path(path)
        data = read_json(path)
        if not isinstance(data, Mapping) or not isinstance(data.get("episodes"), list):
            raise NavEpisodeError(f"{path}: not a habitat-lab episode dataset (no 'episodes' list)")
        split = content_files(path, data)
        if split is None:
            top = parse_habitat(data, str(path))
            parts = [(path, top)]
        else:
            top = parse_habitat({**data, "episodes": []}, str(path))
            parts = [
                (p, parse_habitat(d, str(p), objectnav=top.objectnav))
                for p, d in cls._content(path, data, split, content_scenes)
            ]
        resolver = SceneResolver(scenes_dir, scene_map)
        dataset = cls(path, [], dict(top.category_maps), dict(top.goal_sets), resolver)
        for file_path, parsed in parts:
            dataset._merge_maps(parsed.category_maps, file_path)
            dataset.goal_sets.update(parsed.goal_sets)
            file_resolver = resolver.with_file({**top.scene_refs, **parsed.scene_refs}, file_path.parent)
            dataset._add(parsed.episodes, file_resolver, file_path)
        if not dataset.episodes:
            where = (
                f"{path}" if split is None else f"{path} and its {len(parts)} content file(s) in {split[0]}"
            )
            raise NavEpisodeError(
                f"{where}: no episodes; point dataset= at a habitat-lab file with episodes, or at a split's "
                "top-level file next to its content/<scene>.json.gz files"
            )
        dataset._check_tasks(task)
        dataset._check_scenes(scene_loader)
        return dataset

    @staticmethod
    def _content(
        path: Path,
        data: Mapping[str, Any],
        split: tuple[Path, dict[str, Path]],
        content_scenes: Iterable[str],
    ) -> list[tuple[Path, Any]]:
        folder, files = split
        wanted = [content_scenes] if isinstance(content_scenes, str) else list(content_scenes)
        if not files:
            raise NavEpisodeError(
                f"{path}: its content folder {str(folder)!r} holds no per-scene episode files "
                f"(habitat-lab's split layout: {CONTENT_SCENES_PATH})"
            )
        if ALL_SCENES not in wanted:
            unknown = [s for s in wanted if s not in files]
            if unknown:
                raise NavEpisodeError(
                    f"{path}: content_scenes {unknown} are not in {str(folder)!r}; it has {sorted(files)}"
                )
            files = {s: files[s] for s in wanted}
        if data["episodes"]:
            logger.warning(
                "%s: its %d top-level episodes are ignored: the episodes are read from %s, as habitat-lab does",
                path,
                len(data["episodes"]),
                folder,
            )
        return [(p, read_json(p)) for p in files.values()]

    def _merge_maps(self, maps: Mapping[str, dict[str, int]], where: Path) -> None:
        for key, value in maps.items():
            if key in self.category_maps and self.category_maps[key] != value:
                raise NavEpisodeError(
                    f"{where}: {key} differs from the one of {self.path} "
                    f"({value} vs {self.category_maps[key]}); one dataset has one category id per category"
                )
            self.category_maps[key] = value

    def _add(self, episodes: list[NavEpisode], resolver: SceneResolver, where: Path) -> None:
        refs: dict[str, str | None] = {}
        for ep in episodes:
            if ep.scene_id not in refs:
                refs[ep.scene_id] = resolver.resolve(ep.scene_id)
        unknown = [s for s, ref in refs.items() if ref is None]
        if unknown:
            raise resolver.error(str(where), unknown[0], len(unknown) - 1)
        for ep in episodes:
            ep.scene_id = refs[ep.scene_id] or ep.scene_id
            self.episodes.append(ep)
        self.resolver = resolver

    def _check_tasks(self, task: str | None) -> None:
        if task is None:
            return
        wrong = [ep for ep in self.episodes if ep.task != task]
        if wrong:
            first = wrong[0]
            raise NavEpisodeError(
                f"{self.path}: episode {first.episode_id!r} (scene {scene_label(first)}) is of task {first.task} "
                f"({len(wrong)} of {len(self.episodes)} episodes are not {task}), this environment's task is "
                f"{task}; use the environment of task {first.task!r}"
            )

    def _check_scenes(self, scene_loader: Callable[[str], Scene]) -> None:
        """Load every scene (a bad ``scene_map`` target fails here), and check ObjectNav categories: each
        needs a task category id and an object of it in the episode's scene."""
        ids = self.category_to_task_category_id
        categories: dict[str, set[str]] = {}
        for ep in self.episodes:
            if ep.scene_id not in categories:
                try:
                    categories[ep.scene_id] = set(scene_loader(ep.scene_id).object_categories())
                except NavSceneError as error:
                    raise NavSceneError(
                        f"{self.path}: episode {ep.episode_id!r} (scene {scene_label(ep)}): {error}"
                    ) from error
            if ep.task == "objectnav":
                check_category(ep, ids, str(self.path))
                if ep.object_category not in categories[ep.scene_id]:
                    raise category_absent_error(ep, sorted(categories[ep.scene_id]), str(self.path))

    # ------------------------------------------------------------------ per scene
    def indices(self, scene_ref: str) -> list[int]:
        """Indices of the episodes in ``scene_ref``."""
        return [i for i, ep in enumerate(self.episodes) if ep.scene_id == scene_ref]

    def check_scene(
        self, scene_ref: str, pathfinder: Any, *, snap: bool = False, mesh_tolerance: float = MESH_TOLERANCE
    ) -> None:
        """Check the episodes of one scene on its navigation mesh, once (see :mod:`.episode_check`)."""
        if scene_ref in self._checked:
            return
        for i in self.indices(scene_ref):
            episode, records = check_episode(
                self.episodes[i],
                pathfinder,
                snap=snap,
                mesh_tolerance=mesh_tolerance,
                where=str(self.path),
                cache=self._cache,
            )
            self.episodes[i] = episode
            if records:
                self.snapped[i] = records
        self._checked.add(scene_ref)


def check_category(episode: NavEpisode, category_ids: Mapping[str, int], where: str) -> None:
    """Raise unless the ObjectNav ``episode``'s category has a task category id."""
    if episode.object_category not in category_ids:
        raise NavEpisodeError(
            f"{where}: episode {episode.episode_id!r} (scene {scene_label(episode)}) asks for "
            f"{episode.object_category!r}, which has no id in {TASK_CATEGORY_KEY} {sorted(category_ids)}; "
            "add it to the file's category_to_task_category_id"
        )


def category_absent_error(episode: NavEpisode, categories: list[str], where: str) -> NavEpisodeError:
    """The error for an ObjectNav episode whose category its (embodia) scene does not have."""
    return NavEpisodeError(
        f"{where}: episode {episode.episode_id!r} asks for {episode.object_category!r}, but scene "
        f"{scene_label(episode)} has no object of that category (it has {categories}); map the episode's "
        "scene to one that has it (scene_map=) or drop the episode"
    )


# ---------------------------------------------------------------------- reading and writing, simply
def load_episodes(
    path: str | Path,
    *,
    scenes_dir: str | Path | None = None,
    scene_map: Mapping[str, str] | None = None,
    content_scenes: Iterable[str] = (ALL_SCENES,),
) -> list[NavEpisode]:
    """The episodes of a habitat-lab file or split (see :meth:`NavDataset.load`), scenes resolved."""
    return NavDataset.load(
        path, scenes_dir=scenes_dir, scene_map=scene_map, content_scenes=content_scenes
    ).episodes


def export_habitat_scenes(refs: Iterable[str], scenes_dir: str | Path) -> dict[str, Path]:
    """Write each scene as ``<scenes_dir>/<its habitat path>`` (``.glb``, what habitat-sim loads) and the
    scene JSON next to it (what embodia resolves it to); returns the ``.glb`` paths by reference."""
    from embodia.envs.habitat.habitat_sim_backend import export_scene_glb

    out = {}
    for ref, habitat_path in habitat_scene_paths(refs).items():
        glb = Path(scenes_dir) / strip_scene_prefix(habitat_path)
        scene = load_scene(ref)
        glb.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(export_scene_glb(scene), glb)
        scene.save(glb.parent / f"{scene_stem(habitat_path)}.json")
        out[ref] = glb
    return out


def save_episodes(
    episodes: list[NavEpisode],
    path: str | Path,
    scene: Scene | None = None,
    *,
    split: bool = False,
    scenes_dir: str | Path | None = None,
    category_maps: Mapping[str, Mapping[str, int]] | None = None,
) -> Path:
    """Write habitat-lab JSON (gzipped when the name ends in ``.gz``); returns ``path``.

    Args:
        episodes: what to write.
        path: the file; with ``split``, the split's top-level file (``val/val.json.gz``).
        scene: the scene of the ObjectNav episodes (else loaded from their scene references).
        split: habitat-lab's split layout: ``path`` with no episodes and ``content/<scene>.json.gz``.
        scenes_dir: also export the scenes under it (see :func:`export_habitat_scenes`).
        category_maps: the ``category_to_*`` maps (default embodia's).
    """
    path = Path(path)
    if scenes_dir is not None:
        export_habitat_scenes([ep.scene_id for ep in episodes if ep.habitat_scene_id is None], scenes_dir)
    if not split:
        return _write_json(
            path, episodes_to_habitat(episodes, scene, category_maps=category_maps, base_dir=path.parent)
        )
    paths = habitat_scene_paths(ep.scene_id for ep in episodes if ep.habitat_scene_id is None)
    by_scene: dict[str, list[NavEpisode]] = {}
    for ep in episodes:
        by_scene.setdefault(scene_stem(ep.habitat_scene_id or paths[ep.scene_id]), []).append(ep)
    content = path.parent / "content"
    maps: dict[str, Any] = {}
    for name, group in by_scene.items():
        data = episodes_to_habitat(
            group, scene, category_maps=category_maps, base_dir=content, scene_paths=paths
        )
        maps.update({k: v for k, v in data.items() if k.startswith("category_to_")})
        _write_json(content / f"{name}.json.gz", data)
    return _write_json(path, {"episodes": [], **maps})
