"""The offline-RL comparison's results files: one per environment, ``results/offline_rl/<environment>.json``.

Each file (the format of :mod:`embodia.core.results`) holds two tables, which the documentation renders:

- ``methods``: per method, the success averaged over the environment's tasks with its 95 % Wilson interval
  (pooled over every evaluation episode of every task and seed), then the success per task (over seeds)
  and per seed (over tasks);
- ``coverage``: per task, how often the play dataset the methods learn from reaches the task's goal
  (episodes that pass through it at least once, and steps at it), which bounds what any offline learner
  can pick up.

Its ``data`` keeps what the tables do not show: every run (task, seed, success, episodes, training time),
the per-task Wilson intervals, each method's settings and their source, and the comparison's budget.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.core.results import Column, Table, interval, write_results

if TYPE_CHECKING:
    from embodia.policies.comparison import ComparisonConfig

#: what ``--results`` replaces by the environment's name in a results path
ENV_FIELD = "{env}"


def environment_slug(family: str) -> str:
    """The environment's name in results paths: ``CubeSingle`` -> ``cube_single``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", family).lower()


def results_paths(pattern: str | Path, families: Sequence[str]) -> dict[str, Path]:
    """family -> results file: ``{env}`` in ``pattern`` becomes each family's slug.

    Raises:
        EmbodiaError: a pattern without ``{env}`` for more than one environment (the files would overwrite
            each other).
    """
    pattern = str(pattern)
    if ENV_FIELD not in pattern and len(families) > 1:
        raise EmbodiaError(
            f"--results {pattern}: {len(families)} environments need {ENV_FIELD} in the path "
            "(one results file each)"
        )
    return {family: Path(pattern.replace(ENV_FIELD, environment_slug(family))) for family in families}


def dataset_coverage(store_path: str | Path, task_id: int) -> dict[str, int]:
    """How often a play dataset reaches its task's goal: episodes that do at least once, and goal steps
    (``success`` is the per-step task-success flag the dataset is labelled with)."""
    from embodia.data.store import TrajectoryStore

    store = TrajectoryStore(store_path)
    success = store.load(["success"])["success"].astype(bool)
    starts = np.concatenate([[0], store.episode_ends[:-1]]).astype(int)
    reached = np.logical_or.reduceat(success, starts) if len(success) else np.zeros(0, bool)
    return {
        "task": task_id,
        "episodes_with_goal": int(reached.sum()),
        "episodes": store.num_episodes,
        "goal_steps": int(success.sum()),
        "steps": store.num_steps,
    }


def methods_table(rows: Sequence[Mapping[str, Any]], task_ids: Sequence[int], seeds: Sequence[int]) -> Table:
    """The ``methods`` table of one environment from :func:`~embodia.policies.comparison.run_comparison`'s
    rows for it."""
    table = Table(
        [
            Column("method", "method"),
            Column("success", "success (mean over tasks) [95 % interval]", ".1%"),
            Column("per_task", f"per task ({', '.join(map(str, task_ids))})", ".0%"),
            Column("per_seed", f"per seed ({', '.join(map(str, seeds))})", ".0%"),
        ]
    )
    for row in rows:
        table.add(
            method=row["label"],
            success=interval(row["success"], *row["interval"]),
            per_task=[row["per_task"][str(task)] for task in task_ids],
            per_seed=list(row["per_seed"]),
        )
    return table


def coverage_table(coverage: Sequence[Mapping[str, int]]) -> Table:
    """The ``coverage`` table: one row per task's play dataset."""
    table = Table(
        [
            Column("task", "task"),
            Column("episodes_with_goal", "play episodes that reach the goal"),
            Column("episodes", "play episodes"),
            Column("goal_steps", "steps at the goal"),
            Column("steps", "steps", ","),
        ]
    )
    for row in coverage:
        table.add(**{c.key: row[c.key] for c in table.columns})
    return table


def write_comparison_results(
    summary: Mapping[str, Any], config: ComparisonConfig, pattern: str | Path
) -> list[Path]:
    """Write one results file per environment of ``summary`` (what ``run_comparison`` returned)."""
    paths = results_paths(pattern, [case.family for case in config.cases])
    written = []
    for case in config.cases:
        rows = [row for row in summary["rows"] if row["case"] == case.family]
        budget = {k: v for k, v in asdict(config).items() if k not in ("cases", "methods", "seeds", "out")}
        written.append(
            write_results(
                paths[case.family],
                {
                    "methods": methods_table(rows, case.task_ids, config.seeds),
                    "coverage": coverage_table(summary["coverage"][case.family]),
                },
                name=f"offline_rl/{environment_slug(case.family)}",
                title=f"DEAS and its baselines on {case.family}, tasks {', '.join(map(str, case.task_ids))}",
                seeds=config.seeds,
                data={
                    "budget": budget,
                    "task_ids": list(case.task_ids),
                    "methods": {
                        row["method"]: {
                            k: row[k]
                            for k in (
                                "label",
                                "settings",
                                "source",
                                "episodes",
                                "per_task_interval",
                                "steps_per_second",
                                "loss_drop",
                                "runs",
                            )
                        }
                        for row in rows
                    },
                },
            )
        )
    return written
