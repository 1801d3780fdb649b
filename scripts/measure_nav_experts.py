"""Measure the navigation expert (shortest-path follower) with Habitat's metrics on every navigation task.

Each row is what ``embodia nav eval --task T --episodes N`` prints (episode seeds 0..N-1, a scene drawn
per episode, no rendering): success, SPL, soft-SPL, collisions and steps per episode. Prints the table and
writes ``results/nav/experts.json`` (``--quick``: 5 episodes per row, under ``runs/quick-results/``).

    .venv/bin/python scripts/measure_nav_experts.py              # 100 episodes per row, about a minute
    .venv/bin/python scripts/measure_nav_experts.py --quick
"""

from __future__ import annotations

import argparse
import sys

from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.runner.evaluate import evaluate_policy
from embodia.runner.hooks import NAV_METRICS

#: row label -> (environment id, action mode)
ROWS = {
    "PointNav": ("embodia/Nav-PointNav-v0", "discrete"),
    "PointNav, velocity actions": ("embodia/Nav-PointNav-v0", "velocity"),
    "ObjectNav": ("embodia/Nav-ObjectNav-v0", "discrete"),
    "InstructionNav": ("embodia/Nav-InstructionNav-v0", "discrete"),
    "MultiRobot (3 robots; collisions of all robots)": ("embodia/Nav-MultiRobot-v0", "discrete"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100, help="episodes per row (seeds 0..N-1)")
    parser.add_argument("--quick", action="store_true", help="5 episodes per row (smoke run)")
    parser.add_argument("--results", default=None, help="results file (default: results/nav/experts.json)")
    args = parser.parse_args(argv)
    episodes = 5 if args.quick else args.episodes

    table = Table(
        [
            Column("task", "task"),
            Column("success", "success", ".0%"),
            Column("spl", "SPL", ".3f"),
            Column("soft_spl", "soft-SPL", ".3f"),
            Column("collisions", "collisions / episode", ".1f"),
            Column("steps", "steps / episode", ".1f"),
        ]
    )
    raw = {}
    for label, (env_id, action_mode) in ROWS.items():
        result = evaluate_policy(
            "expert",
            env_id,
            episodes=episodes,
            seeds=[0],
            seed_stride=1,  # episode i has seed i, as `embodia nav eval`
            env_kwargs={"sensors": "none", "action_mode": action_mode},
            metrics=NAV_METRICS,
        )
        table.add(
            task=label,
            success=result.success_rate,
            spl=result.metrics["spl"],
            soft_spl=result.metrics["soft_spl"],
            collisions=result.metrics["collisions"],
            steps=result.mean_length,
        )
        raw[label] = {k: v for k, v in result.to_dict().items() if k != "episode_stats"}
        print(f"{label}: {result.success_rate:.0%}, SPL {result.metrics['spl']:.3f}", file=sys.stderr)
    print(f"\nthe expert on {episodes} episodes per task (seeds 0-{episodes - 1})\n")
    print(table.markdown())
    path = write_results(
        args.results or default_results_path("nav/experts", quick=args.quick),
        {"experts": table},
        name="nav/experts",
        title="The shortest-path expert on the navigation tasks, Habitat's metrics",
        seeds=[0],  # episode seeds 0..N-1
        data={"results": raw},
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
