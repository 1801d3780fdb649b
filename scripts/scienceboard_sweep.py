"""The ScienceBoard sweep the README reports: the oracle and its counterexamples on every task, the GUI
oracles on every GUI task, and an LM agent per interface and observation mode.

    python scripts/scienceboard_sweep.py --out runs/scienceboard              # everything (~15 min on 2 cores)
    python scripts/scienceboard_sweep.py --out runs/sb --agent http://127.0.0.1:8080/v1#model
    python scripts/scienceboard_sweep.py --quick --out /tmp/sb                # one task per domain (tests)

Writes ``results.json`` (every episode) and ``results.md`` (success per domain and difficulty for each
arm) in ``--out``; each arm's logs (actions, outputs, screenshots) are in its own folder.

Arms: ``oracle`` (api, every task; must be 100 %), ``wrong`` (api, every task; must be 0 %), ``oracle-gui``
(gui, every task with a GUI oracle; must be 100 %), and for ``--agent`` (default: the local SmolLM2, a weak
baseline) ``lm-api`` on every task and ``lm-gui-<mode>`` on the GUI tasks for the screenshot, a11y-tree and
both observation modes. A text-only model gets nothing from screenshots (the prompt says so).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from embodia.agents.scienceboard.run import results_markdown, run_tasks
from embodia.agents.scienceboard.tasks import DOMAINS, load_tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--agent", default="smollm2", help="the LM agent's model (default: smollm2)")
    parser.add_argument(
        "--quick", action="store_true", help="one easy task per domain, oracle and wrong only"
    )
    parser.add_argument("--no-lm", action="store_true", help="skip the LM arms")
    parser.add_argument(
        "--lm-only", action="store_true", help="only the LM arms (the scripted ones ran before)"
    )
    parser.add_argument("--workers", type=int, default=1, help="Ray workers for the api arms")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

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
        arms.append(("lm-api", args.agent, tasks, "api", "both"))
        for mode in ("screenshot", "a11y_tree", "both"):
            arms.append((f"lm-gui-{mode}", args.agent, gui_tasks, "gui", mode))

    everything = []
    sections = []
    for name, agent, selected, interface, observation in arms:
        started = time.monotonic()
        workers = args.workers if interface == "api" else 1  # GUI episodes each run a display and a program
        records = run_tasks(
            selected, agent, interface=interface, observation=observation, out=out / name, workers=workers
        )
        for record in records:
            record["arm"] = name
        everything += records
        minutes = (time.monotonic() - started) / 60
        solved = sum(r["success"] for r in records)
        print(f"{name}: {solved}/{len(records)} in {minutes:.1f} min", flush=True)
        sections.append(
            f"### {name} ({agent}, {interface}, {observation}; {minutes:.1f} min)\n\n{results_markdown(records)}"
        )
        (out / "results.json").write_text(json.dumps(everything, indent=2, default=str) + "\n")
        (out / "results.md").write_text("\n".join(sections))
    bad = [r for r in everything if r["arm"].startswith("oracle") and not r["success"]]
    bad += [r for r in everything if r["arm"] == "wrong" and r["success"]]
    for record in bad:
        print(
            f"unexpected: {record['arm']} {record['task']} success={record['success']} {record.get('error')}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
