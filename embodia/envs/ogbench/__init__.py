"""OGBench environments through the real ``ogbench`` package, registered as ``embodia/<Name>-v0``.

Registering costs nothing: the ids name their entry points as strings, so neither ogbench nor MuJoCo is
imported until an environment is made.

- :mod:`.env`: :class:`~embodia.envs.ogbench.env.OGBenchEnv`, the adapter (observations, seeding, exact
  state, rendering); goal-conditioned ids and reward-based ``-SingleTask-v0`` ids;
- :mod:`.play`: the "play" / "navigate" data-collection variants (``-Play-v0``) that datasets come from;
- :mod:`.experts`, :mod:`.manip_experts`: scripted experts built on the oracles in the ogbench wheel.
"""

from __future__ import annotations

from embodia.envs.registration import register_env

#: embodia name -> (ogbench id, ogbench's episode limit, description)
FAMILIES = {
    "PointMaze-Medium": ("pointmaze-medium-v0", 1000, "point mass in the medium maze"),
    "PointMaze-Large": ("pointmaze-large-v0", 1000, "point mass in the large maze"),
    "PointMaze-Giant": ("pointmaze-giant-v0", 1000, "point mass in the giant maze"),
    "AntMaze-Medium": ("antmaze-medium-v0", 1000, "quadruped ant in the medium maze (no scripted expert)"),
    "AntMaze-Large": ("antmaze-large-v0", 1000, "quadruped ant in the large maze (no scripted expert)"),
    "CubeSingle": ("cube-single-v0", 200, "UR5e arm, pick and place one cube"),
    "CubeDouble": ("cube-double-v0", 500, "UR5e arm, two cubes: place and stack"),
    "Scene": ("scene-v0", 750, "UR5e arm: cube, drawer, window, two lock buttons"),
    "Puzzle3x3": ("puzzle-3x3-v0", 500, "UR5e arm, 3x3 lights-out button puzzle"),
    "Puzzle4x4": ("puzzle-4x4-v0", 500, "UR5e arm, 4x4 lights-out button puzzle"),
}
#: pixel variants (64x64 RGB from ogbench's pixel camera); cheap enough for the manipulation tasks
VISUAL = ("CubeSingle", "Puzzle3x3", "Scene")
#: families with a play / navigate data-collection variant (antmaze needs a trained expert, not shipped)
PLAY = tuple(name for name in FAMILIES if not name.startswith("AntMaze"))


def singletask_id(ogbench_id: str, task_id: int | None) -> str:
    """``cube-single-v0`` -> ``cube-single-singletask-task2-v0`` (ogbench's reward-based ids)."""
    base = ogbench_id.removesuffix("-v0")
    suffix = "" if task_id is None else f"-task{task_id}"
    return f"{base}-singletask{suffix}-v0"


def _register() -> None:
    entry = "embodia.envs.ogbench.env:OGBenchEnv"
    for name, (ogbench_id, steps, description) in FAMILIES.items():
        register_env(
            f"embodia/{name}-v0",
            entry,
            kwargs={"ogbench_id": ogbench_id},
            max_episode_steps=steps,
            description=f"OGBench {ogbench_id}: {description}; goal-conditioned, 5 evaluation tasks",
        )
        register_env(
            f"embodia/{name}-SingleTask-v0",
            entry,
            kwargs={"ogbench_id": ogbench_id, "single_task": True},
            max_episode_steps=steps,
            description=f"OGBench {singletask_id(ogbench_id, None)}: {description}; reward-based (task_id=1..5)",
        )
    for name in VISUAL:
        ogbench_id, steps, description = FAMILIES[name]
        register_env(
            f"embodia/Visual-{name}-v0",
            entry,
            kwargs={"ogbench_id": "visual-" + ogbench_id},
            max_episode_steps=steps,
            description=f"OGBench visual-{ogbench_id}: {description}; 64x64 RGB observations",
        )
    for name in PLAY:
        ogbench_id, _, description = FAMILIES[name]
        kind = "navigate" if "Maze" in name else "play"
        register_env(
            f"embodia/{name}-Play-v0",
            "embodia.envs.ogbench.play:OGBenchPlayEnv",
            kwargs={"ogbench_id": ogbench_id},
            max_episode_steps=1000,
            description=f"OGBench {ogbench_id} {kind} data collection: {description}; random targets, "
            "rewards of single task task_id",
        )


_register()
