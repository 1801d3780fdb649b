"""Indoor navigation with Habitat's conventions, on procedural multi-room scenes in MuJoCo.

Environments (registered below, next to the class they use):

- ``embodia/Nav-PointNav-v0``: go to a point given relative to the robot (GPS + compass), STOP within 0.2 m;
- ``embodia/Nav-ObjectNav-v0``: find an object of a category (chair, bed, plant, toilet, tv_monitor, sofa);
- ``embodia/Nav-InstructionNav-v0``: follow a natural-language route instruction (VLN-CE conventions);
- ``embodia/Nav-MultiRobot-v0``: three robots in one scene, each with its PointNav goal, one action each.

The pieces, one module each: scene format (:mod:`.scene`) and generator (:mod:`.scene_gen`); MuJoCo
model (:mod:`.mjcf`); navigation mesh and path finder (:mod:`.footprints`, :mod:`.pathfinder`);
metrics (:mod:`.metrics`); episodes (:mod:`.episodes`, :mod:`.instructions`) and habitat-lab's dataset files
(:mod:`.habitat_format`: the JSON shapes; :mod:`.datasets`: files, the split layout, scene paths;
:mod:`.episode_check`: episodes checked on the navigation mesh);
scene graphs (:mod:`.scene_graph`); back ends (:mod:`.backend`, :mod:`.mujoco_backend`,
:mod:`.habitat_sim_backend`, :mod:`.glb`); the environment (:mod:`.env`) and its expert (:mod:`.expert`).
"""

from __future__ import annotations

import importlib
from typing import Any

from embodia.envs.registration import register_env

__all__ = [
    "MultiGoalShortestPath",
    "NavDataset",
    "NavConfig",
    "NavEnv",
    "NavMeshSettings",
    "PathFinder",
    "Scene",
    "ShortestPath",
    "generate_scene",
    "load_episodes",
    "load_scene",
    "save_episodes",
]

#: public names, imported on first use (registering the ids imports no simulator)
_LAZY = {
    "MultiGoalShortestPath": "pathfinder",
    "NavDataset": "datasets",
    "NavConfig": "env",
    "NavEnv": "env",
    "NavMeshSettings": "pathfinder",
    "PathFinder": "pathfinder",
    "Scene": "scene",
    "ShortestPath": "pathfinder",
    "generate_scene": "scene_gen",
    "load_episodes": "datasets",
    "load_scene": "scene",
    "save_episodes": "datasets",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ENTRY = "embodia.envs.habitat.env:NavEnv"
#: habitat-lab's episode limit for these tasks
MAX_EPISODE_STEPS = 500

register_env(
    "embodia/Nav-PointNav-v0",
    _ENTRY,
    kwargs={"task": "pointnav"},
    max_episode_steps=MAX_EPISODE_STEPS,
    description="Habitat PointNav in procedural apartments/offices (MuJoCo): RGB-D + GPS/compass, stop within 0.2 m",
)
register_env(
    "embodia/Nav-ObjectNav-v0",
    _ENTRY,
    kwargs={"task": "objectnav"},
    max_episode_steps=MAX_EPISODE_STEPS,
    description="Habitat ObjectNav: find a chair/bed/plant/toilet/tv_monitor/sofa, stop within 0.1 m of a view point",
)
register_env(
    "embodia/Nav-InstructionNav-v0",
    _ENTRY,
    kwargs={"task": "instructionnav"},
    max_episode_steps=MAX_EPISODE_STEPS,
    description="VLN-CE-style instruction following: a route instruction through rooms to a landmark, success within 3 m",
)
register_env(
    "embodia/Nav-MultiRobot-v0",
    _ENTRY,
    kwargs={"task": "multirobot", "num_robots": 3},
    max_episode_steps=MAX_EPISODE_STEPS,
    description="Three robots in one scene, each with a PointNav goal; MultiDiscrete action, one per robot",
)
