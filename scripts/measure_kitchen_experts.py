"""Measure the scripted kitchen experts' success rate: ``--seeds`` episodes per task (seeds 0..N-1).

Every episode has its own kitchen (layout, object, robot position drawn from the seed). Prints a Markdown
table (task, success rate, failed seeds, mean episode length; episodes end on success) and writes the
numbers to ``--json`` if given.

    .venv/bin/python scripts/measure_kitchen_experts.py --seeds 20
    .venv/bin/python scripts/measure_kitchen_experts.py --seeds 5 --tasks OpenDrawer TurnOnFaucet
    .venv/bin/python scripts/measure_kitchen_experts.py --quick          # 2 seeds x 2 tasks (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import embodia
from embodia.envs.kitchen import TASKS


def measure(task: str, seeds: int, robot: str) -> dict:
    """Run the expert on ``seeds`` episodes of ``task``; returns rate, failures, lengths and speed."""
    started = time.perf_counter()
    result = embodia.rollout(
        f"embodia/Kitchen-{task}-v0", "expert", episodes=seeds, seed=0, env_kwargs={"robot": robot}
    )
    return {
        "task": task,
        "robot": robot,
        "episodes": seeds,
        "success_rate": result.success_rate,
        "failed_seeds": [e.seed for e in result.episodes if not e.success],
        "mean_length": result.mean_length,
        "steps_per_second": result.steps_per_second,
        "seconds": time.perf_counter() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="episodes per task (seeds 0..N-1)")
    parser.add_argument(
        "--tasks", nargs="+", default=list(TASKS), choices=list(TASKS), help="tasks to measure"
    )
    parser.add_argument("--robot", default="Panda", help="robosuite robot")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--quick", action="store_true", help="2 seeds of 2 tasks (smoke run)")
    args = parser.parse_args(argv)
    tasks, seeds = (args.tasks[:2], 2) if args.quick else (args.tasks, args.seeds)

    rows = []
    for task in tasks:
        row = measure(task, seeds, args.robot)
        rows.append(row)
        failed = f" (failed seeds {row['failed_seeds']})" if row["failed_seeds"] else ""
        print(
            f"{task}: {row['success_rate']:.0%}{failed}, mean length {row['mean_length']:.0f}, "
            f"{row['steps_per_second']:.0f} steps/s",
            file=sys.stderr,
            flush=True,
        )
    print(f"\n{seeds} seeds per task, robot {args.robot}\n")
    print("| task | expert success | failed seeds | mean episode length |")
    print("|---|---|---|---|")
    for row in rows:
        failed = ", ".join(map(str, row["failed_seeds"])) or "-"
        print(f"| Kitchen-{row['task']} | {row['success_rate']:.0%} | {failed} | {row['mean_length']:.0f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
