"""Navigation speed: env steps with and without RGB-D rendering, geodesic queries, scene generation.

    python -m benchmarks.bench_nav [--quick] [--results PATH]

1. **Env steps/s**, PointNav, the same seeded random actions (forward-heavy, resets included) with
   ``sensors="rgbd"`` at 128x128 (two renders per step) vs ``sensors="none"`` (no rendering);
   interleaved repeats, median ratio.
2. **Geodesic queries/s** on apartment_0: embodia's visibility-graph path finder (a) with the goal
   fixed, as an environment asks every step, and (b) for fresh random start/goal pairs, against a
   baseline in the same process: scipy's C Dijkstra on the 8-connected navigable grid (one
   single-source run per query). The table also gives how much longer the grid's paths are.
3. **Scene generation**: seconds per scene for the procedural floor plan + furniture, the MuJoCo
   compile, and the navigation mesh (grid, islands, visibility graph), median over seeds.

Writes ``results/benchmarks/nav.json`` (tables ``steps``, ``geodesic``, ``generation``; ``--quick``: under
``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
from embodia.envs.habitat.mjcf import scene_to_mjcf
from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.pathfinder import NavMeshSettings, PathFinder
from embodia.envs.habitat.scene import load_scene
from embodia.envs.habitat.scene_gen import generate_scene


def bench_steps(steps: int, repeats: int) -> dict:
    envs = {
        name: embodia.make("embodia/Nav-PointNav-v0", sensors=name, width=128, height=128)
        for name in ("none", "rgbd")
    }
    actions = np.random.default_rng(0).choice([1, 1, 1, 2, 3], size=steps)

    def runner(env):
        def run() -> float:
            env.reset(seed=0)
            for action in actions:
                _, _, terminated, truncated, _ = env.step(int(action))
                if terminated or truncated:
                    env.reset()
            return len(actions)

        return run

    rates = interleaved({"none": runner(envs["none"]), "rgbd": runner(envs["rgbd"])}, repeats)
    for env in envs.values():
        env.close()
    return rates


def _grid_graph(pathfinder: PathFinder):
    """8-connected graph over the navigable cells (the baseline planner's graph)."""
    mask = pathfinder.strict
    index = -np.ones(mask.shape, dtype=np.int64)
    rows, cols = np.nonzero(mask)
    index[rows, cols] = np.arange(len(rows))
    cell = pathfinder.settings.cell_size
    src, dst, weight = [], [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        r2, c2 = rows + dr, cols + dc
        ok = (r2 >= 0) & (r2 < mask.shape[0]) & (c2 >= 0) & (c2 < mask.shape[1])
        ok[ok] &= mask[r2[ok], c2[ok]]
        if dr and dc:  # no corner cutting
            ok[ok] &= mask[rows[ok] + dr, cols[ok]] & mask[rows[ok], cols[ok] + dc]
        src.append(index[rows[ok], cols[ok]])
        dst.append(index[r2[ok], c2[ok]])
        weight.append(np.full(ok.sum(), cell * np.hypot(dr, dc)))
    n = len(rows)
    graph = coo_matrix(
        (np.concatenate(weight), (np.concatenate(src), np.concatenate(dst))), shape=(n, n)
    ).tocsr()
    return graph, index


def bench_geodesic(queries: int, repeats: int) -> dict:
    scene = load_scene("apartment_0")
    backend = MuJoCoBackend(scene, num_robots=0)
    pathfinder = backend.pathfinder
    rng = np.random.default_rng(0)
    starts = [pathfinder.get_random_navigable_point(island_index=0, rng=rng) for _ in range(queries)]
    goals = [pathfinder.get_random_navigable_point(island_index=0, rng=rng) for _ in range(queries)]
    graph, index = _grid_graph(pathfinder)

    def cell_index(point) -> int:
        rows, cols = pathfinder.world_to_cell(np.asarray(point)[None])
        r, c = pathfinder._nearest[0][rows[0], cols[0]], pathfinder._nearest[1][rows[0], cols[0]]
        return int(index[r, c])

    def ours_fixed_goal() -> float:
        pathfinder._recent.clear()
        for start in starts:
            pathfinder.geodesic_distance(start, goals[0])
        return len(starts)

    def ours_fresh_pairs() -> float:
        pathfinder._recent.clear()
        pathfinder._goal_cache.clear()
        pathfinder._snap_cache.clear()
        for start, goal in zip(starts, goals):
            pathfinder.geodesic_distance(start, goal)
        return len(starts)

    def grid_dijkstra() -> float:
        for start, goal in zip(starts, goals):
            dijkstra(graph, directed=False, indices=cell_index(start))[cell_index(goal)]
        return len(starts)

    rates = interleaved(
        {
            "grid_dijkstra": grid_dijkstra,
            "ours_fresh_pairs": ours_fresh_pairs,
            "ours_fixed_goal": ours_fixed_goal,
        },
        repeats,
    )
    ours = np.array([pathfinder.geodesic_distance(s, g) for s, g in zip(starts, goals)])
    grid = np.array(
        [dijkstra(graph, directed=False, indices=cell_index(s))[cell_index(g)] for s, g in zip(starts, goals)]
    )
    backend.close()
    finite = np.isfinite(ours) & np.isfinite(grid)
    assert finite.all(), "start and goal are always in the main island"
    rates["grid_excess_mean"] = float(np.mean(grid / ours - 1.0))
    rates["grid_excess_max"] = float(np.max(grid / ours - 1.0))
    return rates


def bench_generation(seeds: int) -> dict:
    import mujoco  # after embodia, which selects headless rendering

    times: dict[str, list[float]] = {
        "floor plan + furniture": [],
        "MuJoCo compile": [],
        "navigation mesh": [],
    }
    for kind in ("apartment", "office"):
        for seed in range(100, 100 + seeds):
            t0 = time.perf_counter()
            scene = generate_scene(kind, seed)
            t1 = time.perf_counter()
            model = mujoco.MjModel.from_xml_string(scene_to_mjcf(scene, num_robots=0))
            data = mujoco.MjData(model)
            for door in scene.doors:
                data.qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, door.id)]] = (
                    door.pocket * door.width
                )
            mujoco.mj_kinematics(model, data)
            t2 = time.perf_counter()
            PathFinder.from_mujoco(model, data, NavMeshSettings())
            t3 = time.perf_counter()
            times["floor plan + furniture"].append(t1 - t0)
            times["MuJoCo compile"].append(t2 - t1)
            times["navigation mesh"].append(t3 - t2)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--results", default=None, help="results file (default: results/benchmarks/nav.json)")
    args = parser.parse_args(argv)
    steps = bench_steps(60 if args.quick else 400, 2 if args.quick else 7)
    geodesic = bench_geodesic(20 if args.quick else 200, 2 if args.quick else 5)
    generation = bench_generation(2 if args.quick else 10)

    step_table = Table(
        [
            Column("observations", "PointNav observations"),
            Column("steps_per_second", "env steps/s", ",.0f"),
            Column("ratio", "ratio to no rendering", ".3f"),
        ]
    )
    step_table.add(observations='no rendering (`sensors="none"`)', steps_per_second=steps["none"], ratio=1.0)
    step_table.add(observations="RGB-D 128×128", steps_per_second=steps["rgbd"], ratio=steps["rgbd/none"])

    geodesic_table = Table(
        [
            Column("planner", "geodesic query (apartment_0)"),
            Column("queries_per_second", "queries/s", ",.0f"),
            Column("ratio", "ratio to grid Dijkstra", ".2f"),
            Column("excess_mean", "path longer than the exact one, mean", ".1%"),
            Column("excess_max", "path longer, max", ".1%"),
        ]
    )
    geodesic_table.add(
        planner="grid Dijkstra, 8-connected (scipy; baseline)",
        queries_per_second=geodesic["grid_dijkstra"],
        ratio=1.0,
        excess_mean=geodesic["grid_excess_mean"],
        excess_max=geodesic["grid_excess_max"],
    )
    for key, label in (
        ("ours_fresh_pairs", "embodia, exact any-angle: fresh start/goal pairs"),
        ("ours_fixed_goal", "embodia, exact any-angle: fixed goal (as per env step)"),
    ):
        geodesic_table.add(
            planner=label,
            queries_per_second=geodesic[key],
            ratio=geodesic[f"{key}/grid_dijkstra"],
            excess_mean=0.0,
            excess_max=0.0,
        )

    total = sum(generation.values())
    generation_table = Table(
        [
            Column("stage", "scene generation stage"),
            Column("ms", "median time (ms)", ".0f"),
            Column("scenes_per_second", "scenes/s", ".1f"),
        ]
    )
    for stage, seconds in generation.items():
        generation_table.add(stage=stage, ms=1000 * seconds, scenes_per_second=None)
    generation_table.add(stage="total per scene", ms=1000 * total, scenes_per_second=1 / total)

    tables = {"steps": step_table, "geodesic": geodesic_table, "generation": generation_table}
    for table in tables.values():
        print(table.markdown() + "\n")
    save_results(
        "nav",
        tables,
        quick=args.quick,
        path=args.results,
        data={"steps": steps, "geodesic": geodesic, "generation_seconds": generation},
        title="Navigation speed: rendering, geodesic queries, scene generation",
    )


if __name__ == "__main__":
    main()
