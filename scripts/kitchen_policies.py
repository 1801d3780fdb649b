"""Action-chunking policies on kitchen demonstrations: BC with chunks, DEAS and QC-FQL, evaluated in simulation.

    python scripts/kitchen_policies.py [--quick] [--tasks OpenDrawer PressMicrowaveButton] [--methods ...]
        [--out runs/kitchen_policies] [--results PATH]

For each task: record noisy scripted-expert demonstrations (``embodia run ... --policy expert``
with action noise, state observations), train every arm (BC with action chunks; DEAS with action
sequences of the same length, executed as chunks, with several policy extractions; QC-FQL) for the same
number of gradient steps, and evaluate each on held-out seeds (new kitchens, seeds 10000+). Demonstrations
and policy folders go under ``--out``; the tables (``policies``: success with its 95 % Wilson interval;
``demonstrations``) go to ``results/kitchen/policies.json`` (``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import embodia
from embodia.core.results import Column, Table, default_results_path, interval, write_results
from embodia.data.store import TrajectoryStore
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from embodia.runner.evaluate import evaluate_policy

EVAL_SEEDS = [1]  # episode seeds 10000 + i: kitchens the demonstrations (seeds 0..N-1) never saw


def record_demos(task: str, episodes: int, path: Path, noise: float) -> None:
    env = embodia.make(f"embodia/Kitchen-{task}-v0")
    try:
        rollout(env, env.unwrapped.make_expert(noise=noise), episodes=episodes, seed=0, record=path)
    finally:
        env.close()


def arms(chunk: int) -> dict[str, tuple[str, dict, str]]:
    """The table's arms: label -> (method, options, description)."""
    # FQL-style extraction: alpha 300 carried over from FQL's cube setting (no paper states one for kitchens)
    deas = f"DEAS, sequences of {chunk},"
    return {
        "bc (chunks)": ("bc", {"chunk": chunk}, f"BC, chunks of {chunk}"),
        # DEAS's defaults before they became the paper's (FQL-style: the "deas (fql)" arm), kept for the table
        "deas": (
            "deas",
            {"horizon": chunk, "extraction": "ddpg_bc", "alpha": 1.0, "value_target": "hl_gauss"},
            f"{deas} DDPG+BC extraction (alpha 1)",
        ),
        "deas (awr)": (
            "deas",
            {"horizon": chunk, "extraction": "awr", "value_target": "hl_gauss"},
            f"{deas} AWR extraction",
        ),
        "deas (fql)": (
            "deas",
            {"horizon": chunk, "extraction": "fql", "alpha": 300.0},
            f"{deas} FQL extraction (alpha 300)",
        ),
        "deas (fql, normalized q)": (
            "deas",
            {"horizon": chunk, "extraction": "fql", "alpha": 300.0, "normalize_q_loss": True},
            f"{deas} FQL extraction (alpha 300) with `normalize_q_loss`",
        ),
        "deas (best-of-32)": (
            "deas",
            {"horizon": chunk, "extraction": "best_of_n", "candidates": 32},
            f"{deas} best-of-32 extraction",
        ),
        "qc-fql": ("fql", {"horizon": chunk, "alpha": 300.0}, f"QC-FQL, chunks of {chunk} (alpha 300)"),
    }


def train_and_evaluate(task: str, label: str, arm: tuple, demos: Path, out: Path, args) -> dict:
    """Train one arm on ``demos`` and evaluate it on new kitchens; returns the row of raw numbers."""
    method, options, _ = arm
    name = label.replace(" ", "").replace(",", "-").replace("(", "-").replace(")", "")
    run = out / f"{task}-{name}"
    started = time.perf_counter()
    log: list[dict] = []
    train(
        TrainConfig(
            method=method,
            dataset=str(demos),
            out=str(run),
            steps=args.steps,
            batch_size=256,
            seed=0,
            eval_every=0,
            eval_episodes=0,
            log_every=max(1, args.steps // 20),
            method_config=options,
        ),
        on_log=log.append,
    )
    seconds = time.perf_counter() - started
    report = evaluate_policy(run, f"embodia/Kitchen-{task}-v0", episodes=args.eval_episodes, seeds=EVAL_SEEDS)
    return {
        "task": task,
        "method": label,
        "options": options,
        "success": report.success_rate,
        "interval": report.interval,
        "episodes": report.episodes,
        "train_seconds": seconds,
        "training_log": [r for r in log if "eval" not in r],  # losses, mean Q, BC error every 5 %
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke version")
    parser.add_argument("--tasks", nargs="+", default=["OpenDrawer", "PressMicrowaveButton"])
    parser.add_argument("--out", default="runs/kitchen_policies", help="demonstrations and policy folders")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/kitchen/policies.json)"
    )
    parser.add_argument("--demos", type=int, default=50)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=list(arms(4)),
        help="arms to run (labels as in the table; default: all)",
    )
    args = parser.parse_args()
    unknown = [m for m in args.methods if m not in arms(args.chunk)]
    if unknown:
        parser.error(f"--methods {unknown}: not an arm; choose from {list(arms(args.chunk))}")
    if args.quick:
        args.tasks, args.demos, args.steps, args.eval_episodes = args.tasks[:1], 2, 50, 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = {label: arm for label, arm in arms(args.chunk).items() if label in args.methods}

    policies = Table(
        [
            Column("task", "task"),
            Column("method", "method"),
            Column("arm", "`--methods`"),
            Column("success", f"success, {args.eval_episodes} new kitchens [95 % interval]", ".0%"),
        ]
    )
    demonstrations = Table(
        [
            Column("task", "task"),
            Column("episodes", "demonstrations"),
            Column("steps", "steps"),
            Column("successes", "episodes ending in success"),
        ]
    )
    rows = []
    for task in args.tasks:
        demos = out / f"{task}-demos.zarr"
        if not (demos / "zarr.json").exists() or TrajectoryStore(demos).num_episodes < args.demos:
            shutil.rmtree(demos, ignore_errors=True)
            record_demos(task, args.demos, demos, args.noise)
        store = TrajectoryStore(demos)
        demonstrations.add(
            task=task,
            episodes=store.num_episodes,
            steps=store.num_steps,
            successes=int(store.episodes_table()["success"].sum()),
        )
        for label, arm in chosen.items():
            row = train_and_evaluate(task, label, arm, demos, out, args)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "training_log"}, default=float))
            policies.add(
                task=task, method=arm[2], arm=f"`{label}`", success=interval(row["success"], *row["interval"])
            )
    print(
        f"\n{args.demos} noisy expert demonstrations per task (action noise {args.noise}), {args.steps} "
        f"gradient steps at batch 256, chunks of {args.chunk} actions, {args.eval_episodes} evaluation "
        "episodes on new kitchens (seeds 10000+); 95 % Wilson intervals.\n"
    )
    print(demonstrations.markdown() + "\n")
    print(policies.markdown())
    path = write_results(
        args.results or default_results_path("kitchen/policies", quick=args.quick),
        {"policies": policies, "demonstrations": demonstrations},
        name="kitchen/policies",
        title="Policies learned from noisy expert demonstrations in the kitchens",
        seeds=[0],
        data={
            "rows": rows,
            "settings": {k: getattr(args, k) for k in ("demos", "steps", "chunk", "eval_episodes", "noise")},
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
