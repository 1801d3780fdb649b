"""NavCraft's benchmark generation: missions and their collaboration over many scenes, reproducibly, in this
process or on Ray.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform). Per scene and episode: a base mission
(:func:`~embodia.agents.navcraft.generate.sample_mission`), helper robots placed apart from the primary
(:func:`sample_helpers`) and the collaboration stage (:func:`~embodia.agents.navcraft.generate.collaborate`);
each episode has its own random generator ``default_rng([seed, scene index, episode index])``. CoNavBench has
single-robot episodes beside the collaborative ones: a share of the missions is posed without helpers
(:func:`single_robot`), and a mission whose collaboration does not beat its solo plan stays single-robot
(``info["single_robot"]`` says which). The agentic generator (:mod:`.agentic`) makes episodes of the same
form.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.agents.navcraft.generate import (
    Collaboration,
    GeneratorConfig,
    NavCraftError,
    collaborate,
    random_place,
    sample_mission,
)
from embodia.agents.navcraft.mission import Mission, NavCraftEpisode, RobotStart
from embodia.agents.navcraft.timing import travel_for_scene
from embodia.agents.navcraft.travel import Travel
from embodia.envs.habitat.scene import shipped_scene_names


@dataclass
class GenerationResult:
    """Episodes and statistics of :func:`generate`."""

    episodes: list[NavCraftEpisode]
    stats: dict[str, Any]


def scene_refs(n: int, seed: int) -> list[str]:
    """``n`` scene references: the shipped scenes first, then procedural apartments and offices."""
    refs = shipped_scene_names()[:n]
    kinds = ("apartment", "office")
    refs += [f"procedural:{kinds[k % 2]}:{seed * 1000 + k}" for k in range(n - len(refs))]
    return refs


def sample_helpers(
    travel: Travel, rng: np.random.Generator, taken: list, count: int, clearance: float = 0.6
) -> list[RobotStart]:
    """``count`` helper starts in the main island, at least ``clearance`` m from ``taken`` and each other
    (200 random points tried)."""
    out: list[RobotStart] = []
    points = [p[:2] for p in taken]
    for _ in range(200):
        if len(out) == count:
            return out
        place = random_place(travel, rng)
        if place is None or any(math.dist(place.position[:2], p) < clearance for p in points):
            continue
        out.append(RobotStart(place, float(rng.uniform(-math.pi, math.pi))))
        points.append(place.position[:2])
    if len(out) < count:
        raise NavCraftError(f"no room for {count} helper starts {clearance} m apart in {travel.scene.name!r}")
    return out


def scene_episodes(
    scene: str,
    scene_index: int,
    episodes_per_scene: int,
    seed: int,
    helpers: Sequence[int],
    num_items: Sequence[int],
    config: GeneratorConfig,
) -> tuple[list[NavCraftEpisode], dict[str, int]]:
    """The episodes of one scene (what :func:`generate` runs per scene, in this process or on a Ray worker)
    and the candidates rejected, by reason."""
    travel_for = travel_for_scene(scene)
    travel = travel_for(())
    episodes, rejected = [], Counter()
    for index in range(episodes_per_scene):
        rng = np.random.default_rng([seed, scene_index, index])
        count = int(rng.choice(list(num_items)))
        episode_id = f"{scene}#{index}"
        mission = sample_mission(
            travel,
            rng,
            episode_id,
            num_items=count,
            min_room_hops=config.min_room_hops,
            max_tries=config.max_tries,
            scene_id=scene,
        )
        single = single_robot(seed, scene_index, index, config.single_robot_share)
        helper_count = 0 if single else int(rng.choice(list(helpers)))
        starts = sample_helpers(travel, rng, [mission.start.position], helper_count, config.helper_clearance)
        result = collaborate(mission, starts, travel_for, rng, types=config.types, config=config)
        rejected.update(result.rejected)
        info = episode_info(result, mission, seed, scene, single, generator="rules")
        episodes.append(NavCraftEpisode(episode_id, mission, result.schedule, result.solo, info))
    return episodes, dict(rejected)


def single_robot(seed: int, scene_index: int, index: int, share: float) -> bool:
    """Whether episode ``index`` of a scene is posed without helpers (a single-robot episode), drawn with
    probability ``share`` from its own generator ``default_rng([seed, scene index, index, 1])``, so the
    missions of the other episodes stay what they would be without single-robot ones."""
    return share > 0 and float(np.random.default_rng([seed, scene_index, index, 1]).random()) < share


def episode_info(
    result: Collaboration, mission: Mission, seed: int, scene: str, single: bool, generator: str
) -> dict[str, Any]:
    """An episode's annotations: taxonomy, planned makespans and gain, repairs, room hops, why it is a
    single-robot episode (``no_helpers``: posed without helpers; ``no_gain``: no collaboration beat the
    solo plan; ``None``: collaborative), which generator made it."""
    return {
        "taxonomy": result.taxonomy,
        "makespan": result.schedule.makespan,
        "solo_makespan": result.solo.makespan,
        "gain": result.solo.makespan - result.schedule.makespan,
        "repairs": result.repairs,
        "room_hops": [leg.room_hops for leg in mission.legs],
        "seed": seed,
        "scene": scene,
        "accepted": result.accepted,
        "rejected": result.rejected,
        "single_robot": None if result.accepted else ("no_helpers" if single else "no_gain"),
        "generator": generator,
        "validated": result.validated,
        "valid_as_built": result.valid_as_built,
    }


def generate(
    scenes: Sequence[str],
    episodes_per_scene: int,
    seed: int,
    *,
    helpers: Sequence[int] = (1, 2),
    num_items: Sequence[int] = (1, 2),
    config: GeneratorConfig | None = None,
    workers: int = 1,
    ray_address: str | None = None,
) -> GenerationResult:
    """NavCraft episodes: per scene and episode, a mission (stage 1) with ``num_items`` items and
    ``helpers`` helpers (each drawn from the given choices) and its collaboration (stage 2). Each episode
    has its own generator ``default_rng([seed, scene index, episode index])``, so it does not depend on
    which others are made, nor on ``workers``: with ``workers > 1`` (or a Ray address) scenes run as Ray
    tasks (:func:`embodia.runner.parallel.map_tasks`), results in scene order."""
    from embodia.agents.navcraft.stats import generation_stats

    config = config or GeneratorConfig()
    began = time.perf_counter()
    arguments = [
        (scene, i, episodes_per_scene, seed, tuple(helpers), tuple(num_items), config)
        for i, scene in enumerate(scenes)
    ]
    if workers > 1 or ray_address:
        from embodia.runner.parallel import map_tasks

        parts = map_tasks(scene_episodes, arguments, workers, ray_address)
    else:
        parts = [scene_episodes(*args) for args in arguments]
    episodes, rejected = [], Counter()
    for scene_part, scene_rejected in parts:
        episodes.extend(scene_part)
        rejected.update(scene_rejected)
    return GenerationResult(episodes, generation_stats(episodes, rejected, time.perf_counter() - began))
