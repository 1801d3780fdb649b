"""Action-chunking policies on kitchen demonstrations: BC with chunks and DEAS, evaluated in simulation.

    python scripts/kitchen_policies.py [--quick] [--tasks OpenDrawer PressMicrowaveButton] [--out runs/kitchen_policies]

For each task: record noisy scripted-expert demonstrations (``embodia run ... --policy expert``
with action noise, state observations), train BC with action chunks and DEAS (action sequences of the
same length, executed as chunks) for the same number of gradient steps, and evaluate both on
held-out seeds (new kitchens). Writes ``results.md`` / ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import embodia
from embodia.data.store import TrajectoryStore
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from embodia.runner.evaluate import evaluate_policy


def record_demos(task: str, episodes: int, path: Path, noise: float) -> dict:
    env = embodia.make(f"embodia/Kitchen-{task}-v0")
    try:
        result = rollout(env, env.unwrapped.make_expert(noise=noise), episodes=episodes, seed=0, record=path)
    finally:
        env.close()
    return {"demo_success": result.success_rate, "demo_mean_length": result.mean_length}


def arms(chunk: int) -> dict[str, tuple[str, dict]]:
    """The table's arms: label -> (method, options)."""
    # FQL-style extraction: alpha 300 carried over from FQL's cube setting (no paper states one for kitchens)
    return {
        "bc (chunks)": ("bc", {"chunk": chunk}),
        "deas": ("deas", {"horizon": chunk}),
        "deas (fql)": ("deas", {"horizon": chunk, "extraction": "fql", "alpha": 300.0}),
        "deas (fql, normalized q)": (
            "deas",
            {"horizon": chunk, "extraction": "fql", "alpha": 300.0, "normalize_q_loss": True},
        ),
        "deas (best-of-32)": (
            "deas",
            {"horizon": chunk, "extraction": "best_of_n", "candidates": 32},
        ),
        "qc-fql": ("fql", {"horizon": chunk, "alpha": 300.0}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke version")
    parser.add_argument("--tasks", nargs="+", default=["OpenDrawer", "PressMicrowaveButton"])
    parser.add_argument("--out", default="runs/kitchen_policies")
    parser.add_argument("--demos", type=int, default=50)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["bc (chunks)", "deas", "deas (fql)", "qc-fql"],
        help="arms to run (labels as in the table)",
    )
    args = parser.parse_args()
    unknown = [m for m in args.methods if m not in arms(args.chunk)]
    if unknown:
        parser.error(f"--methods {unknown}: not an arm; choose from {list(arms(args.chunk))}")
    if args.quick:
        args.tasks, args.demos, args.steps, args.eval_episodes = args.tasks[:1], 2, 50, 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for task in args.tasks:
        demos = out / f"{task}-demos.zarr"
        if not (demos / "zarr.json").exists() or TrajectoryStore(demos).num_episodes < args.demos:
            import shutil

            shutil.rmtree(demos, ignore_errors=True)
            demo_stats = record_demos(task, args.demos, demos, args.noise)
        else:
            demo_stats = {}
        store = TrajectoryStore(demos)
        methods = {label: arm for label, arm in arms(args.chunk).items() if label in args.methods}
        for label, (method, options) in methods.items():
            name = label.replace(" ", "").replace(",", "-").replace("(", "-").replace(")", "")
            run = out / f"{task}-{name}"
            started = time.perf_counter()
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
                )
            )
            seconds = time.perf_counter() - started
            report = evaluate_policy(
                run, f"embodia/Kitchen-{task}-v0", episodes=args.eval_episodes, seeds=[1]
            )
            rows.append(
                {
                    "task": task,
                    "method": label,
                    "success": report.success_rate,
                    "interval": report.interval,
                    "episodes": report.episodes,
                    "demos": store.num_episodes,
                    "demo_steps": store.num_steps,
                    "train_seconds": seconds,
                    **demo_stats,
                }
            )
            print(json.dumps(rows[-1]))
    lines = [
        f"{args.demos} noisy expert demonstrations per task (action noise {args.noise}), {args.steps} gradient "
        f"steps, chunks of {args.chunk} actions, {args.eval_episodes} evaluation episodes on new kitchens "
        "(seeds 10000+); 95 % Wilson intervals.",
        "",
        "| task | method | success | 95 % interval |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['method']} | {r['success']:.0%} | [{r['interval'][0]:.0%}, {r['interval'][1]:.0%}] |"
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
