"""Measure the scripted ALOHA experts' success rate: ``--seeds`` episodes per task (seeds 0..N-1).

Each seed places the objects as gym-aloha's ``reset(seed)`` does. An episode succeeds when gym-aloha's
reward reaches its maximum, 4 (transfer cube: the left gripper holds the cube off the table; insertion:
the peg touches the pin inside the socket). Prints a Markdown table and writes
``results/envs/aloha_experts.json`` (``--noise``: ``aloha_experts_noise<half-width>.json``; ``--quick``:
under ``runs/quick-results/``; ``--results PATH`` elsewhere).

    .venv/bin/python scripts/measure_aloha_experts.py --seeds 20
    .venv/bin/python scripts/measure_aloha_experts.py --noise 0.01 --seeds 20   # ACT's inject_noise
    .venv/bin/python scripts/measure_aloha_experts.py --quick                   # 2 seeds per task
"""

from __future__ import annotations

import argparse
import sys
import time

import embodia
from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.runner import rollout

TASKS = ("AlohaTransferCube", "AlohaInsertion")


def measure(task: str, seeds: int, noise: float) -> dict:
    """Run the expert on ``seeds`` episodes of ``task``; returns rate, failures, lengths and speed."""
    started = time.perf_counter()
    env = embodia.make(f"embodia/{task}-v0")
    try:
        result = rollout(env, env.unwrapped.make_expert(noise=noise), episodes=seeds, seed=0)
    finally:
        env.close()
    return {
        "task": task,
        "noise": noise,
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
    parser.add_argument(
        "--noise", type=float, default=0.0, help="half-width (m) of uniform noise on the end-effector targets"
    )
    parser.add_argument("--quick", action="store_true", help="2 seeds per task (smoke run)")
    parser.add_argument("--results", default=None, help="results file (default: see above)")
    args = parser.parse_args(argv)
    seeds = 2 if args.quick else args.seeds

    rows = []
    for task in args.tasks:
        row = measure(task, seeds, args.noise)
        rows.append(row)
        failed = f" (failed seeds {row['failed_seeds']})" if row["failed_seeds"] else ""
        print(
            f"{task}: {row['success_rate']:.0%}{failed}, mean length {row['mean_length']:.0f}, "
            f"{row['steps_per_second']:.0f} steps/s",
            file=sys.stderr,
            flush=True,
        )
    table = Table(
        [
            Column("task", "task"),
            Column("success", f"expert success ({seeds} seeds)", ".0%"),
            Column("failed_seeds", "failed seeds"),
            Column("mean_length", "mean episode length (steps; ends on success)", ".0f"),
        ]
    )
    for row in rows:
        table.add(
            task=row["task"],
            success=row["success_rate"],
            failed_seeds=row["failed_seeds"] or "none",
            mean_length=row["mean_length"],
        )
    noise = f", end-effector noise {args.noise:g} m" if args.noise else ""
    print(f"\n{seeds} seeds per task{noise}\n")
    print(table.markdown())
    name = "envs/aloha_experts" + (f"_noise{args.noise:g}" if args.noise else "")
    path = write_results(
        args.results or default_results_path(name, quick=args.quick),
        {"experts": table},
        name=name,
        title=f"Scripted ALOHA experts (ACT's end-effector scripts replayed in joint space{noise})",
        seeds=[0],  # episode seeds 0..N-1
        data={"rows": rows},
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
