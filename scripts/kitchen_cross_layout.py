"""Behaviour cloning trained in one kitchen layout, evaluated in its own layout and in others.

    python scripts/kitchen_cross_layout.py [--quick] [--tasks OpenSingleDoor PickPlaceCounterToSink]
        [--train-layout 0] [--eval-layouts 0 3 8] [--demos 50] [--steps 3000] [--eval-episodes 20]
        [--out runs/kitchen_cross_layout] [--results PATH]

RoboCasa's question: does a policy learned in some kitchens work in kitchens it never saw? Per task:
``--demos`` noisy scripted-expert demonstrations (action noise 0.1, state observations) recorded in layout
``--train-layout`` (every style, drawn by the seed), BC with chunks of 4 trained on them, then evaluated on
held-out seeds (episode seeds 10000+) in each of ``--eval-layouts``: the training layout itself (new seeds:
other object poses, styles and robot positions) and layouts it never saw. Demonstrations and policy folders
go under ``--out``; the table (success with its 95 % Wilson interval per task and evaluation layout) goes to
``results/kitchen/cross_layout.json`` (``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import embodia
from embodia.core.results import Column, Table, default_results_path, interval, write_results
from embodia.data.store import TrajectoryStore
from embodia.envs.kitchen.layout import LAYOUT_NAMES
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from embodia.runner.evaluate import evaluate_policy

EVAL_SEED = 1  # episode seeds 10000 + i: seeds the demonstrations (0..N-1) never used


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a minutes-long smoke version")
    parser.add_argument("--tasks", nargs="+", default=["OpenSingleDoor", "PickPlaceCounterToSink"])
    parser.add_argument("--train-layout", type=int, default=0, help="the demonstrations' layout id")
    parser.add_argument("--eval-layouts", type=int, nargs="+", default=None, help="default: all layouts")
    parser.add_argument("--demos", type=int, default=50)
    parser.add_argument("--steps", type=int, default=3000, help="gradient steps at batch 256")
    parser.add_argument("--eval-episodes", type=int, default=20, help="per task and evaluation layout")
    parser.add_argument(
        "--max-steps", type=int, default=None, help="episode step limit (default: each task's)"
    )
    parser.add_argument(
        "--out", default="runs/kitchen_cross_layout", help="demonstrations and policy folders"
    )
    parser.add_argument(
        "--results", default=None, help="results file (default: results/kitchen/cross_layout.json)"
    )
    args = parser.parse_args()
    layouts = range(len(LAYOUT_NAMES))
    for layout in [args.train_layout, *(args.eval_layouts or [])]:
        if layout not in layouts:
            parser.error(f"layout {layout} does not exist; layout ids are 0..{len(LAYOUT_NAMES) - 1}")
    if args.eval_layouts is None:
        args.eval_layouts = list(layouts)
    if args.quick:
        args.tasks, args.demos, args.steps, args.eval_episodes, args.max_steps = args.tasks[:1], 2, 20, 1, 30
        args.eval_layouts = [args.train_layout, next(i for i in layouts if i != args.train_layout)]
    steps_limit = {} if args.max_steps is None else {"max_episode_steps": args.max_steps}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    table = Table(
        [
            Column("task", "task"),
            Column("layout", "evaluation layout"),
            Column("seen", "seen in training"),
            Column("success", f"success, {args.eval_episodes} episodes [95 % interval]", ".0%"),
        ]
    )
    rows = []
    for task in args.tasks:
        env_id = f"embodia/Kitchen-{task}-v0"
        demos = out / f"{task}-layout{args.train_layout}-demos.zarr"
        if not (demos / "zarr.json").exists():
            kwargs = {"layout": args.train_layout, **steps_limit}
            env = embodia.make(env_id, **kwargs)
            try:
                expert = env.unwrapped.make_expert(noise=0.1)
                rollout(env, expert, episodes=args.demos, seed=0, record=demos, env_kwargs=kwargs)
            finally:
                env.close()
        store = TrajectoryStore(demos)
        run = out / f"{task}-layout{args.train_layout}-bc"
        started = time.perf_counter()
        train(
            TrainConfig(
                method="bc",
                dataset=str(demos),
                out=str(run),
                steps=args.steps,
                batch_size=256,
                seed=0,
                eval_every=0,
                eval_episodes=0,
                log_every=max(1, args.steps // 10),
                method_config={"chunk": 4},
            )
        )
        train_seconds = time.perf_counter() - started
        for layout in args.eval_layouts:
            report = evaluate_policy(
                run,
                env_id,
                episodes=args.eval_episodes,
                seeds=[EVAL_SEED],
                env_kwargs={"layout": layout, **steps_limit},
            )
            seen = layout == args.train_layout
            rows.append(
                {
                    "task": task,
                    "layout": layout,
                    "layout_name": LAYOUT_NAMES[layout],
                    "seen": seen,
                    "successes": report.successes,
                    "episodes": report.episodes,
                    "demonstrations": store.num_episodes,
                    "demo_successes": int(store.episodes_table()["success"].sum()),
                    "train_seconds": train_seconds,
                }
            )
            table.add(
                task=task,
                layout=f"{layout}: {LAYOUT_NAMES[layout]}",
                seen="yes" if seen else "no",
                success=interval(report.success_rate, *report.interval),
            )
            print(rows[-1])
    print(table.markdown())
    path = write_results(
        args.results or default_results_path("kitchen/cross_layout", quick=args.quick),
        {"cross_layout": table},
        name="kitchen/cross_layout",
        title="Behaviour cloning trained in one kitchen layout, evaluated in others",
        seeds=[0],
        data={
            "rows": rows,
            "settings": {
                k: getattr(args, k)
                for k in (
                    "tasks",
                    "train_layout",
                    "eval_layouts",
                    "demos",
                    "steps",
                    "eval_episodes",
                    "max_steps",
                )
            },
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
