"""``embodia scienceboard tasks | run | validate``: computer-use agents on real scientific programs.

::

    embodia scienceboard tasks                                  # every task: domain, difficulty, interfaces
    embodia scienceboard tasks --domain coq --difficulty hard
    embodia scienceboard run --agent oracle --out runs/sb-oracle          # the scripted solutions, all tasks
    embodia scienceboard run --agent smollm2 --domain kalgebra --out runs/sb-smol
    embodia scienceboard run --agent modular --planner http://127.0.0.1:8080/v1#planner \\
        --grounder http://127.0.0.1:8081/v1#grounder --interface gui --observation set_of_marks --out runs/sb-mod
    embodia scienceboard run --agent http://127.0.0.1:8080/v1#qwen --interface gui --observation a11y_tree \\
        --domain stellarium --out runs/sb-gui
    embodia scienceboard validate my_tasks/                     # check task files, one line per problem

``run`` writes per-task logs (actions, outputs, screenshots as PNG) and ``results.json`` / ``results.md``
(success per domain and difficulty) under ``--out``. ``--agent`` is ``oracle``, ``wrong`` (the deliberate
counterexamples: must score 0), ``smollm2``, a local model folder, or an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import argparse

from embodia.core.cli_args import add_parallel_arguments


def _select(args: argparse.Namespace, interface: str | None = None) -> list:
    from embodia.agents.scienceboard.tasks import load_tasks

    return load_tasks(
        args.tasks,
        domains=args.domain,
        difficulties=args.difficulty,
        ids=args.id,
        interface=interface,
    )


def cmd_tasks(args: argparse.Namespace) -> int:
    from embodia.agents.scienceboard.tasks import task_counts

    tasks = _select(args)
    for task in tasks:
        print(
            f"{task.id:<44} {task.domain:<11} {task.difficulty:<7} {','.join(task.interfaces):<8} {task.max_steps:>3} steps"
        )
    counts = task_counts(tasks)
    summary = ", ".join(
        f"{domain} {row['total']} ({row['easy']}/{row['medium']}/{row['hard']})"
        for domain, row in counts.items()
    )
    print(f"{len(tasks)} tasks: {summary} (easy/medium/hard)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from embodia.agents.scienceboard.run import results_markdown, run_tasks

    tasks = _select(args, interface=args.interface)
    if args.unsafe_no_sandbox:
        print(
            "warning: --unsafe-no-sandbox: the programs run without the operating-system boundary", flush=True
        )

    def report(record: dict) -> None:
        mark = "ok  " if record["success"] else "FAIL"
        extra = f"  ({record['error']})" if record.get("error") else ""
        print(
            f"{mark} {record['task']:<44} {record['steps']:>3} steps {record.get('seconds', 0):>6.1f} s{extra}",
            flush=True,
        )

    agent = args.agent
    if agent == "modular":
        from embodia.agents.scienceboard.agents import modular_spec

        agent = modular_spec(args.planner, args.grounder)
    records = run_tasks(
        tasks,
        agent,
        interface=args.interface,
        observation=args.observation,
        out=args.out,
        workers=args.workers,
        ray_address=args.ray_address,
        on_result=report,
        sandboxed=not args.unsafe_no_sandbox,
    )
    print(results_markdown(records), end="")
    print(f"-> {args.out}/results.json")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from embodia.agents.scienceboard.tasks import validate_task_file
    from embodia.core.errors import ConfigError

    files: list[Path] = []
    for name in args.paths:
        path = Path(name)
        if not path.exists():
            raise ConfigError(f"{path}: no such task file or folder")
        files += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    bad = 0
    for path in files:
        for problem in validate_task_file(path):
            print(problem)
            bad += 1
    print(f"{len(files) - bad} of {len(files)} task files valid")
    return 2 if bad else 0


def _add_selection(parser: argparse.ArgumentParser) -> None:
    from embodia.agents.scienceboard.tasks import DIFFICULTIES, DOMAINS

    parser.add_argument("--tasks", help="a task file or folder (default: the shipped tasks)")
    parser.add_argument("--domain", action="append", choices=DOMAINS, help="only this domain (repeatable)")
    parser.add_argument("--difficulty", action="append", choices=DIFFICULTIES, help="only this difficulty")
    parser.add_argument("--id", action="append", help="only tasks whose id matches (glob, repeatable)")


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``scienceboard`` with ``tasks``, ``run`` and ``validate`` to the ``embodia`` command."""
    board = subparsers.add_parser("scienceboard", help="computer-use agents on real scientific programs")
    sub = board.add_subparsers(dest="scienceboard_command", required=True, metavar="SUBCOMMAND")

    tasks = sub.add_parser("tasks", help="list tasks (domain, difficulty, interfaces, step budget)")
    _add_selection(tasks)
    tasks.set_defaults(func=cmd_tasks)

    run = sub.add_parser("run", help="run an agent on tasks; logs and a results table per domain")
    _add_selection(run)
    run.add_argument(
        "--agent",
        required=True,
        help="oracle | wrong | smollm2 | a local model folder | http://host:port/v1#model | modular (a planner "
        "and a grounding model: --planner, --grounder)",
    )
    run.add_argument(
        "--planner",
        default="smollm2",
        help="with --agent modular: the model that says the next step (smollm2, a folder, or an endpoint URL)",
    )
    run.add_argument(
        "--grounder",
        default="smollm2",
        help="with --agent modular: the model that turns a step into an action (same choices)",
    )
    run.add_argument("--out", required=True, help="folder for the logs and results (created)")
    run.add_argument("--interface", choices=("api", "gui"), default="api", help="command interface or GUI")
    run.add_argument(
        "--observation",
        choices=("screenshot", "a11y_tree", "both", "set_of_marks"),
        default="both",
        help="what the gui interface shows the agent (set_of_marks: numbered boxes on the screenshot from the "
        "accessibility tree, and click_mark actions)",
    )
    run.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run the programs without the operating-system boundary (bubblewrap), where it cannot run: "
        "an agent's commands then reach everything the user can",
    )
    add_parallel_arguments(run)
    run.set_defaults(func=cmd_run)

    validate = sub.add_parser("validate", help="check task files (one line per problem)")
    validate.add_argument("paths", nargs="+", help="task files or folders")
    validate.set_defaults(func=cmd_validate)
