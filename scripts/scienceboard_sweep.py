"""The ScienceBoard sweep the ScienceBoard page reports: the oracle and its counterexamples on every task, the
GUI oracles on every GUI task, and an LM agent per interface and observation mode.

    python scripts/scienceboard_sweep.py --out runs/scienceboard --lm-sample 1  # the page's run
    python scripts/scienceboard_sweep.py --out runs/scienceboard              # every arm on every task
    python scripts/scienceboard_sweep.py --out runs/sb --agent http://127.0.0.1:8080/v1#model
    python scripts/scienceboard_sweep.py --quick --out /tmp/sb                # one task per domain (tests)

Writes the results file ``--results`` (default ``results/scienceboard/sweep.json``; ``--quick``: under
``runs/quick-results/``) with the tables the page renders, and in ``--out`` ``results.json`` (every
episode) and ``results.md`` (success per domain and difficulty for each arm); each arm's logs (actions,
outputs, screenshots) are in its own folder. Both are written after every arm.

Arms: ``oracle`` (api, every task; must be 100 %), ``wrong`` (api, every task; must be 0 %), ``oracle-gui``
(gui, every task with a GUI oracle; must be 100 %), and for ``--agent`` (default: the local SmolLM2, a weak
baseline) ``lm-api`` on every task and ``lm-gui-<mode>`` on the GUI tasks for the screenshot, a11y-tree,
both and set-of-marks observation modes; then the paper's modular agent (``--planner`` says the next step in
words, ``--grounder`` turns it into an action; both default to ``--agent``) as ``modular-api`` on every task
and ``modular-gui-set_of_marks`` on the GUI tasks. A text-only model gets nothing from screenshots (the
prompt says so). ``--lm-only`` (with ``--arms`` to pick LM arms) keeps the episodes of the arms it does not
run from ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from embodia.agents.scienceboard.agents import modular_spec
from embodia.agents.scienceboard.run import results_markdown, run_tasks, success_table, summarise
from embodia.agents.scienceboard.tasks import DIFFICULTIES, DOMAINS, Task, load_tasks
from embodia.core.results import Column, Table, default_results_path, read_results, write_results

RESULTS_NAME = "scienceboard/sweep"
#: the scripted arms and the table each one fills
SCRIPTED_TABLES = {"oracle": "oracle", "wrong": "wrong", "oracle-gui": "oracle_gui"}
#: the LM arms and their column in the ``lm`` table
LM_COLUMNS = {
    "lm-api": ("api", "api (every task)"),
    "lm-gui-screenshot": ("gui_screenshot", "gui, screenshot"),
    "lm-gui-a11y_tree": ("gui_a11y_tree", "gui, a11y tree"),
    "lm-gui-both": ("gui_both", "gui, both"),
    "lm-gui-set_of_marks": ("gui_set_of_marks", "gui, set-of-marks"),
    "modular-api": ("modular_api", "modular, api"),
    "modular-gui-set_of_marks": ("modular_gui_set_of_marks", "modular, gui, set-of-marks"),
}


def sample(tasks: list[Task], per_domain: int) -> list[Task]:
    """The first ``per_domain`` tasks of each domain, easiest first (all of them for 0)."""
    if per_domain <= 0:
        return tasks
    ordered = sorted(
        tasks, key=lambda task: (DOMAINS.index(task.domain), DIFFICULTIES.index(task.difficulty))
    )
    return [task for domain in DOMAINS for task in [t for t in ordered if t.domain == domain][:per_domain]]


def arms_table(arms: list[dict[str, Any]]) -> Table:
    """One row per arm that ran: who, through which interface, how many episodes it solved, how long it took."""
    table = Table(
        [
            Column("arm", "arm"),
            Column("agent", "agent"),
            Column("interface", "interface"),
            Column("observation", "observation"),
            Column("episodes", "episodes"),
            Column("solved", "solved"),
            Column("success", "success", ".0%"),
            Column("minutes", "minutes", ".1f"),
        ]
    )
    for arm in arms:
        table.add(**arm)
    return table


def lm_table(records: list[dict[str, Any]]) -> Table:
    """The LM agent's success per domain (rows) and arm (columns); ``None`` where an arm did not run."""
    per_arm = {arm: summarise([r for r in records if r["arm"] == arm]) for arm in LM_COLUMNS}
    columns = [Column(key, label, ".0%") for key, label in LM_COLUMNS.values()]
    table = Table(
        [
            Column("domain", "domain"),
            *columns,
            Column("episodes", "episodes (one per column, in order)"),
        ]
    )
    for domain in (*DOMAINS, "all"):
        counts = [per_arm[arm].get(domain, {}).get("total", [0, 0]) for arm in LM_COLUMNS]
        if not any(n for _, n in counts):
            continue
        rates = {key: done / n if n else None for (key, _), (done, n) in zip(LM_COLUMNS.values(), counts)}
        table.add(domain=domain, **rates, episodes=[n or None for _, n in counts])
    return table


def lm_actions_table(records: list[dict[str, Any]], out: Path) -> Table:
    """What the LM agent did, per interface, read from the step logs: actions, refused ones, clicks, typing."""
    table = Table(
        [
            Column("interface", "interface"),
            Column("actions", "actions"),
            Column("refused", "refused by the sandbox"),
            Column("clicks", "clicks"),
            Column("typed", "typed text"),
        ]
    )
    for interface in ("api", "gui"):
        counts = dict.fromkeys(("actions", "refused", "clicks", "typed"), 0)
        logs = [
            out / r["arm"] / r["task"] / "steps.jsonl"
            for r in records
            if r["arm"] in LM_COLUMNS and r["interface"] == interface and not r["arm"].startswith("modular")
        ]
        for log in filter(Path.is_file, logs):
            for line in log.read_text().splitlines():
                step = json.loads(line)
                if step["action"] is None:  # the observation after reset
                    continue
                counts["actions"] += 1
                counts["refused"] += bool(step["info"].get("refused"))
                counts["clicks"] += step["action"]["type"] == "click"
                counts["typed"] += step["action"]["type"] == "type"
        if logs:
            table.add(interface=interface, **counts)
    return table


def arm_row(arm: str, records: list[dict[str, Any]], minutes: float | None) -> dict[str, Any] | None:
    """An arm's row of the ``arms`` table (``None`` when it has no episodes)."""
    if not records:
        return None
    solved = sum(r["success"] for r in records)
    first = records[0]
    return {
        "arm": arm,
        "agent": first["agent"],
        "interface": first["interface"],
        "observation": first["observation"],
        "episodes": len(records),
        "solved": solved,
        "success": solved / len(records),
        "minutes": minutes,
    }


def write_everything(
    everything: list[dict[str, Any]],
    summary: list[dict[str, Any]],
    out: Path,
    results_path: Path,
    args: argparse.Namespace,
) -> dict[str, Table]:
    """``results.json`` and ``results.md`` in ``out``, and the results file; returns its tables."""
    (out / "results.json").write_text(json.dumps(everything, indent=2, default=str) + "\n")
    sections = []
    for arm in summary:
        minutes = "" if arm["minutes"] is None else f"; {arm['minutes']:.1f} min"
        heading = f"### {arm['arm']} ({arm['agent']}, {arm['interface']}, {arm['observation']}{minutes})"
        sections.append(f"{heading}\n\n{results_markdown([r for r in everything if r['arm'] == arm['arm']])}")
    (out / "results.md").write_text("\n".join(sections))
    tables = {"arms": arms_table(summary)}
    for arm, key in SCRIPTED_TABLES.items():
        tables[key] = success_table([r for r in everything if r["arm"] == arm])
    tables["lm"] = lm_table(everything)
    tables["lm_actions"] = lm_actions_table(everything, out)
    write_results(
        results_path,
        tables,
        name=RESULTS_NAME,
        title="ScienceBoard: scripted oracles, their counterexamples and an LM agent on embodia's tasks",
        data={
            "agent": args.agent,
            "lm_sample": args.lm_sample or "every task",
            "planner": args.planner or args.agent,
            "grounder": args.grounder or args.agent,
            "quick": args.quick,
            "out": str(out),
        },
    )
    return tables


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument(
        "--results", default=None, help=f"results file (default: results/{RESULTS_NAME}.json)"
    )
    parser.add_argument("--agent", default="smollm2", help="the LM agent's model (default: smollm2)")
    parser.add_argument(
        "--quick", action="store_true", help="one easy task per domain, oracle and wrong only"
    )
    parser.add_argument("--planner", default=None, help="the modular agent's planner (default: --agent)")
    parser.add_argument("--grounder", default=None, help="the modular agent's grounder (default: --agent)")
    parser.add_argument(
        "--lm-sample",
        type=int,
        default=0,
        metavar="N",
        help="run the LM arms on N tasks per domain (the first by difficulty, easy first; default: every task)",
    )
    parser.add_argument("--no-lm", action="store_true", help="skip the LM arms")
    parser.add_argument(
        "--lm-only",
        action="store_true",
        help="only the LM arms; the episodes of every arm not run now are kept from --out's results.json",
    )
    parser.add_argument(
        "--arms", nargs="+", choices=list(LM_COLUMNS), default=None, help="only these LM arms (default: all)"
    )
    parser.add_argument("--workers", type=int, default=1, help="Ray workers for the api arms")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = args.results or default_results_path(RESULTS_NAME, quick=args.quick)

    tasks = load_tasks()
    gui_tasks = [task for task in tasks if "gui" in task.interfaces]
    if args.quick:
        tasks = [
            next(t for t in tasks if t.domain == domain and t.difficulty == "easy") for domain in DOMAINS
        ]
        tasks = [t for t in tasks if t.domain in ("kalgebra", "grass", "pymol", "coq")]
        gui_tasks = []
    arms: list[tuple[str, str, list, str, str]] = []
    if not args.lm_only:
        arms += [("oracle", "oracle", tasks, "api", "both"), ("wrong", "wrong", tasks, "api", "both")]
        if gui_tasks:
            arms.append(("oracle-gui", "oracle", gui_tasks, "gui", "both"))
    if not (args.quick or args.no_lm):
        lm_tasks, lm_gui_tasks = sample(tasks, args.lm_sample), sample(gui_tasks, args.lm_sample)
        arms.append(("lm-api", args.agent, lm_tasks, "api", "both"))
        for mode in ("screenshot", "a11y_tree", "both", "set_of_marks"):
            arms.append((f"lm-gui-{mode}", args.agent, lm_gui_tasks, "gui", mode))
        modular = modular_spec(args.planner or args.agent, args.grounder or args.agent)
        arms.append(("modular-api", modular, lm_tasks, "api", "both"))
        arms.append(("modular-gui-set_of_marks", modular, lm_gui_tasks, "gui", "set_of_marks"))
        if args.arms:
            arms = [arm for arm in arms if arm[0] in SCRIPTED_TABLES or arm[0] in args.arms]

    everything: list[dict[str, Any]] = []
    running = {arm[0] for arm in arms}
    if args.lm_only and (out / "results.json").is_file():  # the arms of an earlier run not run again
        everything = [r for r in json.loads((out / "results.json").read_text()) if r["arm"] not in running]
    kept = list(dict.fromkeys(r["arm"] for r in everything))
    minutes = {}  # how long the kept arms took, from the results file they were written to
    if kept and Path(results_path).is_file():
        minutes = {row["arm"]: row["minutes"] for row in read_results(results_path)["tables"]["arms"]["rows"]}
    summary = [arm_row(arm, [r for r in everything if r["arm"] == arm], minutes.get(arm)) for arm in kept]
    summary = [row for row in summary if row is not None]
    tables: dict[str, Table] = {}
    for name, agent, selected, interface, observation in arms:
        started = time.monotonic()
        workers = args.workers if interface == "api" else 1  # GUI episodes each run a display and a program
        records = run_tasks(
            selected, agent, interface=interface, observation=observation, out=out / name, workers=workers
        )
        for record in records:
            record["arm"] = name
        everything += records
        row = arm_row(name, records, (time.monotonic() - started) / 60)
        if row is not None:
            summary.append(row)
            print(f"{name}: {row['solved']}/{row['episodes']} in {row['minutes']:.1f} min", flush=True)
        # after every arm, so that an interrupted sweep keeps the arms it finished
        tables = write_everything(everything, summary, out, results_path, args)
    for name, table in tables.items():
        print(f"\n{name}\n\n{table.markdown()}")
    print(f"\nresults: {results_path}")
    bad = [r for r in everything if r["arm"].startswith("oracle") and not r["success"]]
    bad += [r for r in everything if r["arm"] == "wrong" and r["success"]]
    for record in bad:
        print(
            f"unexpected: {record['arm']} {record['task']} success={record['success']} {record.get('error')}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
