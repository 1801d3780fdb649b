"""Where does an offline-RL method leave the floor? One task of one environment, trained far past the comparison's
budget, evaluated along the way.

The comparison (``embodia bench offline-rl``) trains every method for 10k steps on 100k transitions per task; on
Scene, CubeDouble and Puzzle3x3 every method ends at 0 % there. This script locates that absence: it trains one
method with the environment's paper settings (:mod:`embodia.policies.paper_settings`, sparse rewards where the
Q-chunking authors use them) on the same kind of play dataset as the comparison (the same file name under
``--out/data``, so a comparison's dataset is reused) and evaluates the policy every ``--eval-every`` steps on the
task (``--eval-episodes`` episodes, seeds 100000 + 1000 * seed onwards, never the comparison's final-evaluation
seeds). It writes the success curve with 95 % Wilson intervals, the dataset's goal coverage and the training speed
to ``results/offline_rl/<env>_budget.json`` (``scene_budget.json``, ``cube_double_budget.json``).

    .venv/bin/python scripts/offline_rl_budget.py --env Scene --task-id 1 --method qc_fql --steps 60000 \\
        --eval-every 10000 --matmul-precision bfloat16
    .venv/bin/python scripts/offline_rl_budget.py --quick      # seconds: the pipeline, not a measurement
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from embodia.core.errors import ConfigError
from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.data.store import TrajectoryStore
from embodia.policies.comparison_results import dataset_coverage, environment_slug
from embodia.policies.paper_settings import PAPER_SETTINGS, method_setting, sparse_rewards
from embodia.policies.train import TrainConfig, train
from embodia.runner.datasets import generate_dataset
from embodia.runner.evaluate import wilson_interval

#: play episodes per task in the comparison's data sets (``embodia bench offline-rl --episodes``)
COMPARISON_EPISODES = 100


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Scene", choices=list(PAPER_SETTINGS), help="environment family")
    parser.add_argument("--task-id", type=int, default=1, choices=[1, 2, 3, 4, 5])
    parser.add_argument(
        "--method", default="qc_fql", help="a method label of the comparison (e.g. qc_fql, deas)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=60_000, help="gradient steps")
    parser.add_argument("--eval-every", type=int, default=10_000, help="steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=20, help="episodes per evaluation")
    parser.add_argument(
        "--episodes",
        type=int,
        default=COMPARISON_EPISODES,
        help="play episodes of 1000 steps in the dataset (another count writes <env>_budget_<N>_episodes.json)",
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--matmul-precision", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--out", default="runs/offline_rl_fix", help="datasets (data/) and the run folder")
    parser.add_argument("--results", help="results file (default: results/offline_rl/<env>_budget.json)")
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke run (numbers mean nothing)")
    args = parser.parse_args(argv)
    if args.quick:  # toy sizes for what the command line leaves at its default
        quick = {"env": "CubeSingle", "steps": 40, "eval_every": 20, "eval_episodes": 1, "episodes": 2}
        for name, value in {**quick, "batch_size": 32}.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    if args.steps < 1 or args.eval_every < 1 or args.eval_episodes < 1 or args.episodes < 1:
        parser.error("--steps, --eval-every, --eval-episodes and --episodes must be at least 1")
    try:
        args.setting = method_setting(args.env, args.method)
    except ConfigError as error:  # an unknown method label, said in one line
        parser.error(str(error))
    return args


def report_evaluation(record: dict) -> None:
    """Print an evaluation as soon as it is logged (a long run's log file shows the curve as it grows)."""
    if "eval" in record:
        print(
            f"step {record['step']}: success {record['eval']['success_rate']:.0%}",
            file=sys.stderr,
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    sparse = sparse_rewards(args.env)
    dataset = out / "data" / f"{args.env}-task{args.task_id}-play-{'sparse' if sparse else 'dense'}.zarr"
    if args.quick:
        dataset = dataset.with_name(f"quick-{dataset.name}")
    if not (dataset / "zarr.json").exists() or TrajectoryStore(dataset).num_episodes < args.episodes:
        # missing, or cut short by an interrupted run: generated again (as the comparison does)
        generate_dataset(
            f"embodia/{args.env}-Play-v0",
            args.episodes,
            dataset,
            noise=0.1,
            task_id=args.task_id,
            sparse=sparse,
            max_steps=200 if args.quick else 1000,
            overwrite=True,
        )
    coverage = dataset_coverage(dataset, args.task_id)
    if coverage["episodes"] != args.episodes:
        print(
            f"{dataset} holds {coverage['episodes']} episodes, more than --episodes {args.episodes}: "
            "pass its count or another --out",
            file=sys.stderr,
        )
        return 2
    run = out / "budget" / f"{args.env}-task{args.task_id}-{args.method}-seed{args.seed}-{args.steps}"
    started = time.perf_counter()
    result = train(
        TrainConfig(
            method=args.setting.learner,
            dataset=str(dataset),
            out=str(run),
            env_id=f"embodia/{args.env}-SingleTask-v0",
            env_kwargs={"task_id": args.task_id, **({"sparse": True} if sparse else {})},
            steps=args.steps,
            batch_size=args.batch_size,
            seed=args.seed,
            eval_every=args.eval_every,
            eval_episodes=args.eval_episodes,
            log_every=max(1, min(250, args.steps // 10)),
            method_config={**args.setting.config, "matmul_precision": args.matmul_precision},
        ),
        progress=not args.quick,
        on_log=report_evaluation,
    )
    seconds = time.perf_counter() - started
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    curve = Table(
        [
            Column("step", "gradient step"),
            Column("success", "success", ".0%"),
            Column("interval", "95 % interval", ".0%"),
            Column("episodes", "episodes"),
        ]
    )
    for record in records:
        if "eval" in record:
            rate = record["eval"]["success_rate"]
            low, high = wilson_interval(round(rate * args.eval_episodes), args.eval_episodes)
            curve.add(step=record["step"], success=rate, interval=[low, high], episodes=args.eval_episodes)
    label = args.setting.label or args.method
    name = f"offline_rl/{environment_slug(args.env)}_budget"
    if args.episodes != COMPARISON_EPISODES:  # another data set: its own file, never the comparison-sized one
        name += f"_{args.episodes}_episodes"
    path = write_results(
        args.results or default_results_path(name, quick=args.quick),
        {"curve": curve},
        name=name,
        title=f"{label} on {args.env} task {args.task_id}: success along training",
        seeds=[args.seed],
        data={
            "env": args.env,
            "task_id": args.task_id,
            "method": args.method,
            "label": label,
            "settings": args.setting.config,
            "source": args.setting.source,
            "sparse_rewards": sparse,
            "dataset_episodes": args.episodes,
            "coverage": coverage,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "matmul_precision": args.matmul_precision,
            "steps_per_second": result["steps_per_second"],
            "seconds": seconds,
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
