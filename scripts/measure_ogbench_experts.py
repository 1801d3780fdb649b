"""Measure the scripted manipulation experts' success rate on ogbench's evaluation tasks.

For every environment and every one of its five evaluation tasks, runs ``--seeds`` episodes of the
expert (``embodia.rollout(..., "expert", env_kwargs={"task_id": k})``, seeds 0..N-1) and prints a
Markdown table: environment, task, success rate, mean episode length (episodes end on success).

    .venv/bin/python scripts/measure_ogbench_experts.py --seeds 4
    .venv/bin/python scripts/measure_ogbench_experts.py --seeds 2 --envs CubeSingle Puzzle3x3
"""

from __future__ import annotations

import argparse
import sys
import time

import embodia

ENVS = ("CubeSingle", "CubeDouble", "Scene", "Puzzle3x3", "Puzzle4x4")
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
    parser.add_argument("--seeds", type=int, default=4, help="episodes per task (seeds 0..N-1)")
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=ENVS, help="environments to measure")
    args = parser.parse_args(argv)

    rows = []
    started = time.perf_counter()
    for env_name in args.envs:
        successes = []
        for task in TASKS:
            rate, length, failed = measure(env_name, task, args.seeds)
            successes.append(rate)
            note = f" (failed seeds {failed})" if failed else ""
            rows.append(f"| {env_name} | task{task} | {rate:.0%}{note} | {length:.0f} |")
            print(
                f"{env_name} task{task}: {rate:.0%}, mean length {length:.0f}{note}",
                file=sys.stderr,
                flush=True,
            )
        rows.append(f"| **{env_name}** | all | **{sum(successes) / len(successes):.0%}** | |")
    print(f"\n{args.seeds} seeds per task, {time.perf_counter() - started:.0f} s\n")
    print("| env | task | success | mean length |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
