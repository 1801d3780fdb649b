"""Measure the scripted experts' success rate on ogbench's evaluation tasks.

For every environment and every one of its five evaluation tasks, runs ``--seeds`` episodes of the
expert (``embodia.rollout(..., "expert", env_kwargs={"task_id": k})``, seeds 0..N-1) and prints two
Markdown tables: per environment (success over all tasks, mean episode length by task) and per task
(success rate, mean episode length, failed seeds; episodes end on success). Writes them to
``results/envs/ogbench_experts.json`` (``--quick``: one seed, two environments, under
``runs/quick-results/``).

    .venv/bin/python scripts/measure_ogbench_experts.py --seeds 4
    .venv/bin/python scripts/measure_ogbench_experts.py --seeds 2 --envs CubeSingle Puzzle3x3
"""

from __future__ import annotations

import argparse
import sys
import time

import embodia
from embodia.core.results import Column, Table, default_results_path, write_results

ENVS = ("PointMaze-Medium", "CubeSingle", "CubeDouble", "Scene", "Puzzle3x3", "Puzzle4x4")
QUICK_ENVS = ("PointMaze-Medium", "CubeSingle")
TASKS = (1, 2, 3, 4, 5)


def measure(env_name: str, task: int, seeds: int) -> tuple[float, float, list[int]]:
    """Success rate, mean length and the failed seeds of ``seeds`` expert episodes on one task."""
    result = embodia.rollout(
        f"embodia/{env_name}-v0", "expert", episodes=seeds, seed=0, env_kwargs={"task_id": task}
    )
    failed = [e.seed for e in result.episodes if not e.success]
    return result.success_rate, result.mean_length, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="episodes per task, seeds 0..N-1 (default 4)")
    parser.add_argument("--envs", nargs="+", default=None, choices=ENVS, help="environments to measure")
    parser.add_argument("--quick", action="store_true", help="one seed, PointMaze-Medium and CubeSingle")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/envs/ogbench_experts.json)"
    )
    args = parser.parse_args(argv)
    seeds = args.seeds or (1 if args.quick else 4)
    envs = args.envs or list(QUICK_ENVS if args.quick else ENVS)

    experts = Table(
        [
            Column("environment", "environment"),
            Column("episodes", "episodes"),
            Column("success", "success", ".0%"),
            Column("lengths", "mean episode length by task (1-5)", ".0f"),
        ]
    )
    tasks = Table(
        [
            Column("environment", "environment"),
            Column("task", "task"),
            Column("success", "success", ".0%"),
            Column("length", "mean length", ".0f"),
            Column("failed_seeds", "failed seeds"),
        ]
    )
    started = time.perf_counter()
    for env_name in envs:
        successes, lengths = [], []
        for task in TASKS:
            rate, length, failed = measure(env_name, task, seeds)
            successes.append(rate)
            lengths.append(length)
            tasks.add(environment=env_name, task=task, success=rate, length=length, failed_seeds=failed)
            note = f" (failed seeds {failed})" if failed else ""
            print(
                f"{env_name} task{task}: {rate:.0%}, mean length {length:.0f}{note}",
                file=sys.stderr,
                flush=True,
            )
        experts.add(
            environment=env_name,
            episodes=seeds * len(TASKS),
            success=sum(successes) / len(successes),
            lengths=lengths,
        )
    seconds = time.perf_counter() - started
    print(f"\n{seeds} seeds per task, {seconds:.0f} s\n")
    print(experts.markdown(), tasks.markdown(), sep="\n\n")
    path = write_results(
        args.results or default_results_path("envs/ogbench_experts", quick=args.quick),
        {"experts": experts, "tasks": tasks},
        name="envs/ogbench_experts",
        title="The scripted experts on ogbench's five evaluation tasks",
        seeds=range(seeds),
        data={"seconds": seconds},
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
