"""Measure the scripted kitchen experts' success rate: ``--seeds`` episodes per task (seeds 0..N-1).

Every episode has its own kitchen (layout and style ids, object, robot position drawn from the seed). Prints
a Markdown table (task, success rate, failed seeds, mean episode length; episodes end on success) and writes
it to a results file: ``results/kitchen/experts.json`` for the Panda without action noise,
``results/kitchen/experts_<robot>.json`` for another arm, ``..._noise<sigma>.json`` with ``--noise``,
``..._layouts.json`` with ``--layouts`` (``--quick``: under ``runs/quick-results/``; ``--results PATH``
elsewhere). ``--layouts 0 1 ...`` measures each task in each of those catalogue layouts (``--seeds``
episodes each; one row per task and layout); ``--style`` fixes the style.

    .venv/bin/python scripts/measure_kitchen_experts.py --seeds 50
    .venv/bin/python scripts/measure_kitchen_experts.py --robot UR5e --seeds 3
    .venv/bin/python scripts/measure_kitchen_experts.py --noise 0.2 --seeds 4 --tasks OpenDrawer PickPlaceCounterToSink
    .venv/bin/python scripts/measure_kitchen_experts.py --quick          # 2 seeds x 2 tasks (a smoke run)
    .venv/bin/python scripts/measure_kitchen_experts.py --seeds 2 --layouts 0 1 2 3 4 5 6 7 8 9
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import embodia
from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.envs.kitchen import TASKS
from embodia.runner import rollout


def measure(
    task: str, seeds: int, robot: str, noise: float, layout: int | None = None, style: int | None = None
) -> dict:
    """Run the expert on ``seeds`` episodes of ``task`` (in catalogue ``layout`` / ``style`` if given, else
    drawn per episode); returns rate, failures, lengths and speed."""
    started = time.perf_counter()
    env = embodia.make(f"embodia/Kitchen-{task}-v0", robot=robot, layout=layout, style=style)
    try:
        result = rollout(env, env.unwrapped.make_expert(noise=noise), episodes=seeds, seed=0)
    finally:
        env.close()
    return {
        "task": task,
        "layout": layout,
        "style": style,
        "robot": robot,
        "noise": noise,
        "episodes": seeds,
        "success_rate": result.success_rate,
        "failed_seeds": [e.seed for e in result.episodes if not e.success],
        "mean_length": result.mean_length,
        "steps_per_second": result.steps_per_second,
        "seconds": time.perf_counter() - started,
    }


def results_name(robot: str, noise: float, per_layout: bool = False) -> str:
    """``kitchen/experts`` for the Panda without noise; the arm, the noise and ``_layouts`` (one row per
    task and layout) appended otherwise."""
    name = "kitchen/experts"
    if robot != "Panda":
        name += f"_{robot.lower()}"
    if noise:
        name += f"_noise{noise:g}"
    if per_layout:
        name += "_layouts"
    return name


def experts_table(rows: list[dict], seeds: int) -> Table:
    """One row per task: success rate, failed seeds, mean episode length."""
    table = Table(
        [
            Column("task", "task"),
            Column("success", f"expert success ({seeds} seeds)", ".0%"),
            Column("failed_seeds", "failed seeds"),
            Column("mean_length", "mean episode length (steps)", ".0f"),
        ]
    )
    for row in rows:
        table.add(
            task=row["task"],
            success=row["success_rate"],
            failed_seeds=row["failed_seeds"] or "none",
            mean_length=row["mean_length"],
        )
    return table


def layouts_table(rows: list[dict], layouts: list[int], seeds: int) -> Table:
    """One row per task: success over all layouts, per layout, and the failed episodes (layout: seeds)."""
    columns = [
        Column("task", "task"),
        Column("success", f"all ({len(layouts)} layouts x {seeds} seeds)", ".0%"),
    ]
    columns += [Column(f"layout{layout}", f"layout {layout}", ".0%") for layout in layouts]
    table = Table([*columns, Column("failed", "failed (layout: seeds)")])
    for task in dict.fromkeys(row["task"] for row in rows):
        mine = {row["layout"]: row for row in rows if row["task"] == task}
        failed = [
            f"{layout}: {mine[layout]['failed_seeds']}" for layout in layouts if mine[layout]["failed_seeds"]
        ]
        table.add(
            task=task,
            success=float(np.mean([mine[layout]["success_rate"] for layout in layouts])),
            **{f"layout{layout}": mine[layout]["success_rate"] for layout in layouts},
            failed="; ".join(failed) or "none",
        )
    return table


def merge_parts(args: argparse.Namespace) -> int:
    """Write one results file from parts that measured disjoint task sets, or with ``--replace`` from a table
    and the tasks measured again (rows in the registry's order; per-layout parts stay per layout)."""
    from embodia.core.results import read_results

    parts = [read_results(path) for path in args.merge_from]
    for part in parts:  # each row keeps the commit it was measured at
        for row in part["data"]["rows"]:
            row.setdefault("commit", part["commit"])
    rows = [row for part in parts for row in part["data"]["rows"]]
    keys = [(row["task"], row.get("layout")) for row in rows]  # one row per task (and layout)
    if args.replace:  # a later part's row replaces an earlier part's row of the same task (and layout)
        rows = list({(row["task"], row.get("layout")): row for row in rows}.values())
    elif len(set(keys)) != len(keys):
        twice = ", ".join(sorted({task for task, layout in keys if keys.count((task, layout)) > 1}))
        print(
            f"error: the parts measured some tasks twice ({twice}); merge disjoint parts, or pass --replace "
            "to let later parts replace earlier rows",
            file=sys.stderr,
        )
        return 2
    labels = {part["tables"]["experts"]["columns"][1]["label"] for part in parts}
    if len(labels) != 1:
        print(f"error: the parts measured different settings ({'; '.join(sorted(labels))})", file=sys.stderr)
        return 2
    order = {task: i for i, task in enumerate(TASKS)}
    rows.sort(key=lambda row: (order.get(row["task"], len(order)), row.get("layout") or 0))
    seeds = rows[0]["episodes"]
    name = parts[0]["name"]
    layouts = sorted({row["layout"] for row in rows if row.get("layout") is not None})
    table = layouts_table(rows, layouts, seeds) if layouts else experts_table(rows, seeds)
    path = write_results(
        args.results or default_results_path(name),
        {"experts": table},
        name=name,
        title=parts[0]["title"],
        command=" ; ".join(part["command"] for part in parts),
        seeds=[0],
        data={
            "rows": rows,
            "parts": [{"command": p["command"], "commit": p["commit"]} for p in parts],
            "replaced": bool(args.replace),
        },
    )
    print(f"results: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50, help="episodes per task (seeds 0..N-1)")
    parser.add_argument(
        "--tasks", nargs="+", default=list(TASKS), choices=list(TASKS), help="tasks to measure"
    )
    parser.add_argument("--robot", default="Panda", help="robosuite robot")
    parser.add_argument(
        "--noise", type=float, default=0.0, help="std of Gaussian noise on the expert's arm actions"
    )
    parser.add_argument(
        "--layouts", nargs="+", type=int, default=None, help="measure each task in each of these layout ids"
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="with --merge-from: a later file's row replaces an earlier file's row of the same task (tasks "
        "measured again after a fix; every row keeps its commit)",
    )
    parser.add_argument("--style", type=int, default=None, help="style id (default: drawn per episode)")
    parser.add_argument("--quick", action="store_true", help="2 seeds of 2 tasks (smoke run)")
    parser.add_argument("--results", default=None, help="results file (default: see above)")
    parser.add_argument(
        "--merge-from",
        nargs="+",
        default=None,
        metavar="FILE",
        help="measure nothing: one table from results files of this script that measured disjoint task sets "
        "with the same settings (runs split over processes)",
    )
    args = parser.parse_args(argv)
    if args.merge_from:
        return merge_parts(args)
    tasks, seeds = (args.tasks[:2], 2) if args.quick else (args.tasks, args.seeds)

    rows = []
    for task in tasks:
        for layout in args.layouts or [None]:
            row = measure(task, seeds, args.robot, args.noise, layout, args.style)
            rows.append(row)
            failed = f" (failed seeds {row['failed_seeds']})" if row["failed_seeds"] else ""
            where = "" if layout is None else f" in layout {layout}"
            print(
                f"{task}{where}: {row['success_rate']:.0%}{failed}, mean length {row['mean_length']:.0f}, "
                f"{row['steps_per_second']:.0f} steps/s",
                file=sys.stderr,
                flush=True,
            )
    per_layout = args.layouts is not None
    table = layouts_table(rows, args.layouts, seeds) if per_layout else experts_table(rows, seeds)
    noise = f", action noise {args.noise:g}" if args.noise else ""
    print(f"\n{seeds} seeds per task{' and layout' if per_layout else ''}, robot {args.robot}{noise}\n")
    print(table.markdown())
    name = results_name(args.robot, args.noise, per_layout)
    path = write_results(
        args.results or default_results_path(name, quick=args.quick),
        {"experts": table},
        name=name,
        title=f"Scripted kitchen experts ({args.robot}{noise}), one kitchen per seed"
        + (", in each catalogue layout" if per_layout else ""),
        seeds=[0],  # episode seeds 0..N-1
        data={"rows": rows},
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
