"""NavCraft episode files: habitat-lab's episode dataset JSON, extended for several robots.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). A file (``.json``, or gzipped ``.json.gz``) is habitat-lab's
dataset dictionary ``{"episodes": [...]}``; each episode has habitat-lab's fields - ``episode_id``,
``scene_id`` (``embodia/<scene>.glb``, :func:`embodia.envs.habitat.habitat_format.habitat_scene_paths`),
``start_position`` / ``start_rotation`` of the primary robot in Habitat's Y-up frame
(:mod:`embodia.envs.habitat.coords`), ``goals`` (one per subgoal, Habitat frame), ``instruction``
(VLN-CE's ``{instruction_text}``) and ``info`` - plus NavCraft's: ``robots`` (every robot's start pose,
Habitat frame), ``mission``, ``schedule`` and ``solo`` (plain dicts in embodia's frame, as
:func:`~embodia.agents.navcraft.mission.to_plain` writes them), ``taxonomy`` and ``embodia_scene`` (the
scene reference). The dataset has a ``format`` version, the ``embodia_scene_refs`` map of habitat-lab
scene paths to embodia references, and optionally ``scene_graphs`` (scene reference -> scene graph dict).
Reading rebuilds the episodes from the embodia-frame fields; a malformed file raises
:class:`NavCraftFileError` naming the file and the problem.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from embodia.agents.navcraft.generate import NavCraftError
from embodia.agents.navcraft.mission import NavCraftEpisode, episode_from_plain, to_plain
from embodia.envs.habitat.coords import to_habitat_position, yaw_to_habitat_rotation
from embodia.envs.habitat.habitat_format import SCENE_REFS_KEY, habitat_scene_paths

#: version of the NavCraft episode file layout
EPISODE_FORMAT = 1
#: radius (m) of a subgoal's goal region
GOAL_RADIUS = 0.2


class NavCraftFileError(NavCraftError):
    """A NavCraft episode file that is missing, unreadable or malformed."""


def _finite(value: Any) -> Any:
    """JSON-safe: non-finite floats become ``None`` (JSON has no infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _pose(position: Sequence[float], yaw: float) -> dict[str, list[float]]:
    return {"start_position": to_habitat_position(position), "start_rotation": yaw_to_habitat_rotation(yaw)}


def episode_record(episode: NavCraftEpisode, scene_path: str) -> dict[str, Any]:
    """One episode as a habitat-lab episode dict with NavCraft's fields."""
    mission = episode.mission
    return {
        "episode_id": episode.episode_id,
        "scene_id": scene_path,
        **_pose(mission.start.position, mission.start_yaw),
        "goals": [
            {
                "position": to_habitat_position(s.place.position),
                "radius": GOAL_RADIUS,
                "subgoal": s.id,
                "kind": s.kind,
                "item": s.item,
            }
            for s in mission.subgoals
        ],
        "instruction": {"instruction_text": mission.instruction},
        "info": _finite(to_plain(episode.info)),
        "robots": [_pose(r.place.position, r.yaw) for r in episode.schedule.robots],
        "taxonomy": episode.schedule.collaboration,
        "embodia_scene": mission.scene_id,
        "mission": to_plain(mission),
        "schedule": to_plain(episode.schedule),
        "solo": to_plain(episode.solo),
    }


def save_episodes(
    path: str | Path, episodes: Sequence[NavCraftEpisode], *, scene_graphs: Mapping[str, Any] | None = None
) -> Path:
    """Write ``episodes`` (gzipped when ``path`` ends in ``.gz``); ``scene_graphs``: scene reference ->
    :class:`~embodia.envs.habitat.scene_graph.SceneGraph` (or its dict) to store alongside. Returns ``path``."""
    path = Path(path)
    paths = habitat_scene_paths(ep.mission.scene_id for ep in episodes)
    data: dict[str, Any] = {
        "format": EPISODE_FORMAT,
        "episodes": [episode_record(ep, paths[ep.mission.scene_id]) for ep in episodes],
        SCENE_REFS_KEY: {habitat: ref for ref, habitat in paths.items()},
    }
    if scene_graphs:
        data["scene_graphs"] = {
            ref: graph.to_dict() if hasattr(graph, "to_dict") else graph
            for ref, graph in scene_graphs.items()
        }
    text = json.dumps(_finite(data), allow_nan=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def _read(path: Path) -> Any:
    from embodia.envs.habitat.datasets import read_json
    from embodia.envs.habitat.errors import NavEpisodeError

    try:
        return read_json(path)
    except NavEpisodeError as error:
        raise NavCraftFileError(str(error).replace("episode file", "NavCraft episode file")) from error


def load_episodes(path: str | Path) -> list[NavCraftEpisode]:
    """The episodes of a file written by :func:`save_episodes`."""
    path = Path(path)
    data = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), list):
        raise NavCraftFileError(f"{path}: not an episode dataset (needs a top-level 'episodes' list)")
    if data.get("format") != EPISODE_FORMAT:
        raise NavCraftFileError(
            f"{path}: NavCraft episode format {data.get('format')!r}; this version reads format {EPISODE_FORMAT}"
        )
    episodes = []
    for k, record in enumerate(data["episodes"]):
        label = f"{path}: episode {k} ({record.get('episode_id') if isinstance(record, dict) else record!r})"
        if not isinstance(record, dict):
            raise NavCraftFileError(f"{label} is not an object")
        missing = [key for key in ("episode_id", "mission", "schedule", "solo") if key not in record]
        if missing:
            raise NavCraftFileError(f"{label} lacks {', '.join(repr(m) for m in missing)}")
        try:
            episode = episode_from_plain(record)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise NavCraftFileError(f"{label} is malformed ({type(error).__name__}: {error})") from error
        robots = record.get("robots")
        if robots is not None and len(robots) != len(episode.schedule.robots):
            raise NavCraftFileError(
                f"{label} lists {len(robots)} robots but its schedule has {len(episode.schedule.robots)}"
            )
        episodes.append(episode)
    return episodes
