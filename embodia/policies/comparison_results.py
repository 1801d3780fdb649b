"""The offline-RL comparison's results files: one per environment, ``results/offline_rl/<environment>.json``.

Each file (the format of :mod:`embodia.core.results`) holds two tables, which the documentation renders:

- ``methods``: per method, the success averaged over the environment's tasks with its 95 % Wilson interval
  (pooled over every evaluation episode of every task and seed), then the success per task (over seeds)
  and per seed (over tasks);
- ``coverage``: per task, how often the play dataset the methods learn from reaches the task's goal
  (episodes that pass through it at least once, and steps at it), which bounds what any offline learner
  can pick up.

Its ``data`` keeps what the tables do not show: every run (task, seed, success, episodes, training time,
the commit it was measured at), the per-task Wilson intervals, each method's settings and their source, and
the comparison's budget.

A comparison too long for one sitting is run in parts (``embodia bench offline-rl --merge``): a part adds
its runs to the environment's results file, replacing runs of the same method, task and seed and keeping
the rest, provided the file was written at the same budget and each method it re-runs has the same settings
(else :class:`~embodia.core.errors.EmbodiaError` says why, before anything runs). The merged file's command
lists every part's command.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.core.results import Column, Table, interval, read_results, write_results
from embodia.policies.paper_settings import method_setting
from embodia.runner.evaluate import wilson_interval

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


def pooled_interval(runs: Sequence[Mapping[str, Any]]) -> list[float]:
    """95 % Wilson interval of the success over all evaluation episodes of ``runs``."""
    successes = sum(round(r["success"] * r["eval_episodes"]) for r in runs)
    return list(wilson_interval(successes, sum(r["eval_episodes"] for r in runs)))


def method_row(
    family: str,
    task_ids: Sequence[int],
    method: str,
    runs: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    setting: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One method's row on one environment from its finished runs (``eval.json`` records: task_id, seed,
    success, eval_episodes, steps_per_second, and optionally loss_drop and commit).

    Success is pooled over every evaluation episode of every run (so with equal episodes per run it is the
    average over tasks and seeds); ``per_task`` averages over seeds, ``per_seed`` over the tasks that seed
    ran (``None`` where a task or seed has no run). ``setting`` (label, settings, source) defaults to the
    settings table's for ``method``.
    """
    if setting is None:
        paper = method_setting(family, method)
        setting = {"label": paper.label or method, "settings": paper.config, "source": paper.source}
    runs = sorted(runs, key=lambda r: (r["task_id"], r["seed"]))
    trials = sum(r["eval_episodes"] for r in runs)
    per_task = {str(task): [r["success"] for r in runs if r["task_id"] == task] for task in task_ids}
    per_seed = [[r["success"] for r in runs if r["seed"] == seed] for seed in seeds]
    return {
        "case": family,
        "task_ids": list(task_ids),
        "method": method,
        "label": setting["label"],
        "settings": setting["settings"],
        "source": setting["source"],
        "success": sum(round(r["success"] * r["eval_episodes"]) for r in runs) / max(trials, 1),
        "interval": pooled_interval(runs),
        "per_task": {task: sum(v) / len(v) if v else None for task, v in per_task.items()},
        "per_task_interval": {
            str(task): pooled_interval([r for r in runs if r["task_id"] == task]) for task in task_ids
        },
        "per_seed": [sum(v) / len(v) if v else None for v in per_seed],
        "episodes": trials,
        "steps_per_second": sum(r["steps_per_second"] for r in runs) / max(len(runs), 1),
        "loss_drop": [r["loss_drop"] for r in runs if r.get("loss_drop")],
        "runs": [dict(r) for r in runs],
    }


def _previous_runs(entry: Mapping[str, Any], commit: str) -> list[dict[str, Any]]:
    """A results file's runs of one method, each with its loss drop and the commit it was measured at
    (files written before runs carried them: the method's loss drops in run order, the file's commit)."""
    runs = [dict(r) for r in entry["runs"]]
    drops = entry.get("loss_drop", [])
    for i, run in enumerate(runs):
        run.setdefault("commit", commit)
        if "loss_drop" not in run and len(drops) == len(runs):
            run["loss_drop"] = drops[i]
    return runs


def check_mergeable(path: Path, budget: Mapping[str, Any], methods: Sequence[str], family: str) -> None:
    """Refuse to merge into ``path`` a part of another budget, or a method whose settings have changed
    since the file was written (a missing file is a fresh start).

    Raises:
        EmbodiaError: what differs, and what to do.
    """
    if not path.exists():
        return
    previous = read_results(path)["data"]
    differing = {
        key: (previous.get("budget", {}).get(key), value)
        for key, value in budget.items()
        if previous.get("budget", {}).get(key) != value
    }
    if differing:
        detail = ", ".join(f"{key} {old} there, {new} here" for key, (old, new) in differing.items())
        raise EmbodiaError(
            f"--merge: {path} was written at another budget ({detail}); run with its budget or write a new "
            "file with --results"
        )
    for method in methods:
        entry = previous.get("methods", {}).get(method)
        if entry is not None and entry["settings"] != method_setting(family, method).config:
            raise EmbodiaError(
                f"--merge: {method}'s settings on {family} changed since {path} was written; write a new file "
                "with --results"
            )


def merge_rows(
    rows: Sequence[Mapping[str, Any]], path: Path, family: str, task_ids: Sequence[int]
) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """This part's rows merged with the results file at ``path``: (rows, seeds, commands).

    A run of this part replaces the file's run of the same method, task and seed; the file's other runs and
    methods stay (methods in the file's order, then new ones).
    """
    previous = read_results(path)
    entries = previous["data"].get("methods", {})
    fresh = {row["method"]: row for row in rows}
    merged: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for method, entry in entries.items():
        setting = {k: entry[k] for k in ("label", "settings", "source")}
        merged[method] = (setting, _previous_runs(entry, previous["commit"]))
    for method, row in fresh.items():
        setting = {k: row[k] for k in ("label", "settings", "source")}
        replaced = {(r["task_id"], r["seed"]) for r in row["runs"]}
        kept = [r for r in merged.get(method, (setting, []))[1] if (r["task_id"], r["seed"]) not in replaced]
        merged[method] = (setting, kept + [dict(r) for r in row["runs"]])
    seeds = sorted({r["seed"] for _, runs in merged.values() for r in runs})
    commands = [c for c in previous["command"].split(COMMAND_SEPARATOR) if c]
    return (
        [method_row(family, task_ids, m, runs, seeds, setting) for m, (setting, runs) in merged.items()],
        seeds,
        commands,
    )


#: between the commands of a merged results file's parts
COMMAND_SEPARATOR = " ; "


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


def comparison_budget(config: ComparisonConfig) -> dict[str, Any]:
    """What makes runs comparable: everything in the config but the environments, methods, seeds and folder."""
    return {k: v for k, v in asdict(config).items() if k not in ("cases", "methods", "seeds", "out")}


def write_comparison_results(
    summary: Mapping[str, Any],
    config: ComparisonConfig,
    pattern: str | Path,
    merge: bool = False,
    command: str | None = None,
) -> list[Path]:
    """Write one results file per environment of ``summary`` (what ``run_comparison`` returned); with
    ``merge``, add its runs to the files already there (:func:`merge_rows`)."""
    from embodia.core.results import provenance

    paths = results_paths(pattern, [case.family for case in config.cases])
    command = command or provenance()["command"]
    written = []
    for case in config.cases:
        rows = [row for row in summary["rows"] if row["case"] == case.family]
        budget = comparison_budget(config)
        seeds, commands = list(config.seeds), []
        if merge and paths[case.family].exists():
            check_mergeable(paths[case.family], budget, [row["method"] for row in rows], case.family)
            rows, seeds, commands = merge_rows(rows, paths[case.family], case.family, case.task_ids)
        written.append(
            write_results(
                paths[case.family],
                {
                    "methods": methods_table(rows, case.task_ids, seeds),
                    "coverage": coverage_table(summary["coverage"][case.family]),
                },
                name=f"offline_rl/{environment_slug(case.family)}",
                title=f"DEAS and its baselines on {case.family}, tasks {', '.join(map(str, case.task_ids))}",
                seeds=seeds,
                command=COMMAND_SEPARATOR.join(dict.fromkeys([*commands, command])),
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
