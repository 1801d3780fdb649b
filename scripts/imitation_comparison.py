"""The field's imitation baselines side by side: BC, flow BC, ACT and Diffusion Policy (and DEAS where it applies).

    python scripts/imitation_comparison.py [--quick] [--tasks Kitchen-PickPlaceCounterToSink Kitchen-OpenSingleDoor
        AlohaTransferCube] [--methods bc flow_bc act diffusion_policy deas] [--seeds 0 1 2] [--demos 50]
        [--steps 3000] [--eval-episodes 10] [--out runs/imitation] [--results PATH] [--merge]
    python scripts/imitation_comparison.py --results PATH --include PART [PART ...]

For each task: record ``--demos`` scripted-expert demonstrations once (the kitchens: state observations with
action noise 0.1; ALOHA: the top camera at ``--camera`` pixels and the joint positions, ACT's
``inject_noise``-sized action noise 0.01), train every method on the same store for the same number of
gradient steps with each training seed, and evaluate each policy on held-out episode seeds (new kitchens /
new cube poses, seeds 10000+). Per method and task: success over all seeds' episodes with its 95 % Wilson
interval, the per-seed rates, training time on this machine, and the time of one policy call in torch and,
where the policy exports, through ONNX Runtime (median of ``LATENCY_CALLS`` calls on the task's first
observation).

A long comparison runs in parts: ``--merge`` adds one part's rows to the results file after every policy, and
parts run at once (one per core or machine, each with its own ``--out`` and ``--results``) are joined afterwards
with ``--include``.

Methods keep their papers' settings (ACT: chunk 100, temporal ensembling 0.01, KL weight 10, a 512-wide
transformer; Diffusion Policy: T_p 16, T_o 2, T_a 8, DDIM with 8 steps), with one exception said in the table:
camera tasks use embodia's small image encoders at ``--camera`` pixels where the papers use ImageNet ResNet-18s
at 480 x 640. BC and flow BC on a camera task are embodia's ``pixel_bc`` and ``pixel_flow_bc`` (the same
heads under the image encoder); DEAS takes flat observations only, so it runs on the kitchens.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import embodia
from embodia.core.results import Column, Table, default_results_path, interval, provenance, write_results
from embodia.data.store import TrajectoryStore
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from embodia.runner.evaluate import evaluate_policy, wilson_interval

EVAL_SEED = 1  # episode seeds 10000 + i: kitchens / cube poses the demonstrations (seeds 0..N-1) never saw
LATENCY_CALLS = 50
METHODS = ("bc", "flow_bc", "act", "diffusion_policy", "deas")
#: the ACT paper's Table 1 (Zhao et al., RSS 2023, arXiv 2304.13705): ACT's success on the simulated tasks,
#: 50 demonstrations, scripted / human data, 480 x 640 images, 2000+ epochs on a GPU
ACT_PAPER = {
    "AlohaTransferCube": {"scripted": 0.90, "human": 0.50},
    "AlohaInsertion": {"scripted": 0.50, "human": 0.20},
}


def is_camera_task(task: str) -> bool:
    return task.startswith("Aloha")


def env_kwargs(task: str, camera: int, max_steps: int | None = None) -> dict[str, Any]:
    """The environment arguments of ``task``'s demonstrations and evaluations."""
    kwargs: dict[str, Any] = {} if max_steps is None else {"max_episode_steps": max_steps}
    if is_camera_task(task):
        kwargs.update(cameras=("top",), camera_width=camera, camera_height=camera)
    return kwargs


#: ``--quick``: small networks (the smoke run checks the pipeline, not the papers' sizes)
QUICK_OPTIONS = {
    "act": {"d_model": 32, "heads": 2, "feedforward": 64, "encoder_layers": 1, "vae_layers": 1, "chunk": 8},
    "diffusion_policy": {"down_dims": [16, 32, 64], "step_embed_dim": 16, "n_groups": 4},
    "bc": {"hidden": [32, 32]},
    "flow_bc": {"hidden": [32, 32]},
    "deas": {"hidden": [32, 32]},
}


#: ``--scale cpu``: ACT's and Diffusion Policy's networks narrowed to what this 2-core CPU trains in under an
#: hour per seed (at the papers' sizes an update takes seconds here); every other setting (chunk and horizons,
#: KL weight, noise schedule, learning rates, batch) stays the paper's
CPU_SCALE = {
    "act": {"d_model": 256, "feedforward": 1024, "encoder_layers": 2, "vae_layers": 2},
    "diffusion_policy": {"down_dims": [64, 128, 256]},
}
#: the batch size of a method's reference code where it is not ``--batch-size`` (ACT's ``imitate_episodes.py``
#: trains with batch 8; LeRobot's ACT recipe too)
PAPER_BATCH = {"act": 8}


def method_options(
    method: str, task: str, camera: int, quick: bool = False, scale: str = "paper"
) -> tuple[str, dict[str, Any]] | None:
    """(learner, its config) for ``method`` on ``task``, or None where the method does not apply."""
    chosen = _method_options(method, task, camera)
    if chosen is None:
        return None
    learner, options = chosen
    if scale == "cpu":
        options = {**options, **CPU_SCALE.get(method, {})}
    if quick:
        extra = {k: v for k, v in QUICK_OPTIONS[method].items() if learner != "pixel_bc" or k != "hidden"}
        options = {**options, **extra}
    return learner, options


def batch_size(method: str, args) -> int:
    """The method's batch: its reference code's (``PAPER_BATCH``), else ``--batch-size``; ``--quick``: 8."""
    return args.batch_size if args.quick else PAPER_BATCH.get(method, args.batch_size)


def _method_options(method: str, task: str, camera: int) -> tuple[str, dict[str, Any]] | None:
    if is_camera_task(task):
        images = {"image_keys": ["top_rgb"], "state_keys": ["state"]}
        return {
            "bc": ("pixel_bc", {**images, "chunk": 4}),
            "flow_bc": ("pixel_flow_bc", {**images, "chunk": 4}),
            "act": ("act", {**images, "image_size": camera}),
            "diffusion_policy": ("diffusion_policy", images),
        }.get(method)
    return {
        "bc": ("bc", {"chunk": 4}),
        "flow_bc": ("flow_bc", {"chunk": 4}),
        "act": ("act", {}),
        "diffusion_policy": ("diffusion_policy", {}),
        # the paper's settings, with sequences of 4 executed as chunks (FQL extraction, alpha 300)
        "deas": ("deas", {"horizon": 4}),
    }.get(method)


def record_demos(task: str, episodes: int, path: Path, camera: int, max_steps: int | None) -> None:
    kwargs = env_kwargs(task, camera, max_steps)
    env = embodia.make(f"embodia/{task}-v0", **kwargs)
    try:
        noise = 0.01 if is_camera_task(task) else 0.1
        expert = env.unwrapped.make_expert(noise=noise)
        rollout(env, expert, episodes=episodes, seed=0, record=path, env_kwargs=kwargs)
    finally:
        env.close()


def call_latency(
    policy_dir: Path, observation: dict[str, Any], runtime: str, calls: int = LATENCY_CALLS
) -> float | None:
    """Median seconds of one ``act`` call (the policy reset first), or None when ``runtime`` cannot run it."""
    from embodia.core.policy import PolicyError, load_policy

    try:
        policy = load_policy(policy_dir, runtime=runtime)
    except PolicyError:
        return None
    if hasattr(policy, "reset"):
        policy.reset()
    for _ in range(3):
        policy.act(observation)
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        policy.act(observation)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def onnx_latency(policy_dir: Path, observation: dict[str, Any], calls: int = LATENCY_CALLS) -> float | None:
    """Export the policy to ONNX (checked against torch) and time it; None when the policy does not export."""
    from embodia.core.policy import PolicyError
    from embodia.policies.onnx_export import export_onnx

    try:
        export_onnx(policy_dir, atol=1e-3)
    except PolicyError as error:
        print(f"  no ONNX for {policy_dir.name}: {error}", file=sys.stderr)
        return None
    return call_latency(policy_dir / "policy", observation, "onnx", calls)


def train_and_evaluate(task: str, method: str, seed: int, demos: Path, out: Path, args) -> dict[str, Any]:
    learner, options = method_options(method, task, args.camera, args.quick, args.scale)
    run = out / f"{task}-{method}-seed{seed}"
    batch = batch_size(method, args)
    started = time.perf_counter()
    train(
        TrainConfig(
            method=learner,
            dataset=str(demos),
            out=str(run),
            steps=args.steps,
            batch_size=batch,
            seed=seed,
            eval_every=0,
            eval_episodes=0,
            log_every=max(1, args.steps // 10),
            method_config=options,
        )
    )
    seconds = time.perf_counter() - started
    calls = 5 if args.quick else LATENCY_CALLS
    kwargs = env_kwargs(task, args.camera, args.max_steps)
    report = evaluate_policy(
        run, f"embodia/{task}-v0", episodes=args.eval_episodes, seeds=[EVAL_SEED], env_kwargs=kwargs
    )
    env = embodia.make(f"embodia/{task}-v0", **kwargs)
    try:
        observation, _ = env.reset(seed=EVAL_SEED * 10_000)
    finally:
        env.close()
    return {
        "task": task,
        "method": method,
        "learner": learner,
        "options": options,
        "scale": args.scale if method in CPU_SCALE else "paper",
        "batch_size": batch,
        "seed": seed,
        "successes": report.successes,
        "episodes": report.episodes,
        "mean_length": report.mean_length,
        "train_seconds": seconds,
        "torch_call_seconds": call_latency(run / "policy", observation, "torch", calls),
        "onnx_call_seconds": onnx_latency(run, observation, calls),
    }


def summarise(rows: list[dict[str, Any]], args) -> Table:
    """One row per task and method (the tasks in the order first run, the methods in METHODS' order)."""
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    table = Table(
        [
            Column("task", "task"),
            Column("method", "method"),
            Column("success", f"success, every seed's {args.eval_episodes} episodes [95 % interval]", ".0%"),
            Column("per_seed", "per training seed"),
            Column("batch", "batch"),
            Column("train_minutes", f"training ({args.steps} steps), min per seed", ".1f"),
            Column("torch_ms", "one call, torch (ms)", ".2f"),
            Column("onnx_ms", "one call, ONNX Runtime (ms)", ".2f"),
        ]
    )
    for task in tasks:
        for method, scale in [(m, s) for m in methods for s in ("paper", "cpu")]:
            group = [
                r
                for r in rows
                if r["task"] == task and r["method"] == method and r.get("scale", "paper") == scale
            ]
            if not group:
                continue
            successes, episodes = sum(r["successes"] for r in group), sum(r["episodes"] for r in group)
            onnx = [r["onnx_call_seconds"] for r in group if r["onnx_call_seconds"] is not None]
            label = f"{method} ({group[0]['learner']})" if group[0]["learner"] != method else method
            if scale == "cpu":
                label += f", CPU scale ({', '.join(f'{k} {v}' for k, v in CPU_SCALE[method].items())})"
            table.add(
                task=task,
                method=label,
                batch=group[0].get("batch_size", args.batch_size),
                success=interval(successes / episodes, *wilson_interval(successes, episodes)),
                per_seed=", ".join(f"{r['seed']}: {r['successes'] / r['episodes']:.0%}" for r in group),
                train_minutes=float(np.mean([r["train_seconds"] for r in group]) / 60),
                torch_ms=1000 * float(np.median([r["torch_call_seconds"] for r in group])),
                onnx_ms=1000 * float(np.median(onnx)) if onnx else "no export",
            )
    return table


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="a minutes-long smoke version (one seed, tiny budgets)"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=["Kitchen-PickPlaceCounterToSink", "Kitchen-OpenSingleDoor", "AlohaTransferCube"],
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), help=f"subset of {', '.join(METHODS)}")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="training seeds")
    parser.add_argument("--demos", type=int, default=50, help="demonstrations per task (the ACT paper: 50)")
    parser.add_argument("--steps", type=int, default=3000, help="gradient steps of every method")
    parser.add_argument(
        "--batch-size", type=int, default=64, help="every method's batch but ACT's (8, as its reference code)"
    )
    parser.add_argument(
        "--scale",
        choices=["paper", "cpu"],
        default="paper",
        help="ACT and Diffusion Policy at the papers' network sizes, or narrowed to fit a CPU (CPU_SCALE)",
    )
    parser.add_argument("--eval-episodes", type=int, default=10, help="per training seed")
    parser.add_argument("--camera", type=int, default=64, help="camera tasks: image side in pixels")
    parser.add_argument(
        "--max-steps", type=int, default=None, help="episode step limit (default: each task's)"
    )
    parser.add_argument("--out", default="runs/imitation", help="demonstrations and policy folders")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/imitation/comparison.json)"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the results file's rows (same settings) that this run does not measure again, and write the "
        "file after every trained policy: a long comparison run in parts",
    )
    parser.add_argument(
        "--include",
        nargs="+",
        metavar="PATH",
        default=[],
        help="train nothing: join these results files of the comparison (same settings; each a part run elsewhere, "
        "say on another core or machine) into --results, a later file's row replacing an earlier one of the same "
        "task, method and seed",
    )
    args = parser.parse_args()
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        parser.error(f"--methods {unknown}: not a method here; choose from {', '.join(METHODS)}")
    if args.quick:
        args.seeds, args.demos, args.steps, args.eval_episodes, args.batch_size = args.seeds[:1], 2, 4, 1, 8
        args.max_steps = 30
        # one kitchen task (flat observations) and one camera task
        args.tasks = [t for t in args.tasks if not is_camera_task(t)][:1] + [
            t for t in args.tasks if is_camera_task(t)
        ][:1]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    demonstrations = Table(
        [
            Column("task", "task"),
            Column("episodes", "demonstrations"),
            Column("steps", "steps"),
            Column("successes", "episodes ending in success"),
        ]
    )
    results_path = Path(args.results or default_results_path("imitation/comparison", quick=args.quick))
    if args.include:
        return include(results_path, [Path(p) for p in args.include], demonstrations, args)
    rows, earlier_demos, parts = earlier_rows(results_path, args) if args.merge else ([], [], [])
    if rows is None:
        return 2
    this_part = {k: v for k, v in provenance().items() if k in ("command", "commit")}
    parts = [*parts, this_part]
    for row in earlier_demos:
        if row["task"] not in args.tasks:
            demonstrations.add(**row)
    for task in args.tasks:
        demos = out / f"{task}-demos.zarr"
        if not (demos / "zarr.json").exists():
            record_demos(task, args.demos, demos, args.camera, args.max_steps)
        store = TrajectoryStore(demos)
        if store.num_episodes != args.demos:
            parser.exit(
                2, f"{demos} holds {store.num_episodes} demonstrations, not {args.demos}: use another --out\n"
            )
        demonstrations.add(
            task=task,
            episodes=store.num_episodes,
            steps=store.num_steps,
            successes=int(store.episodes_table()["success"].sum()),
        )
        for method in args.methods:
            if method_options(method, task, args.camera, args.quick, args.scale) is None:
                continue
            for seed in args.seeds:
                row = {
                    **train_and_evaluate(task, method, seed, demos, out, args),
                    "commit": this_part["commit"],
                }
                rows = [r for r in rows if (r["task"], r["method"], r["seed"]) != (task, method, seed)]
                rows.append(row)
                print(
                    {k: row[k] for k in ("task", "method", "seed", "successes", "episodes", "train_seconds")}
                )
                if args.merge:
                    save(results_path, rows, demonstrations, parts, args)
    path = save(results_path, rows, demonstrations, parts, args)
    print(demonstrations.markdown() + "\n\n" + summarise(rows, args).markdown())
    print(f"results: {path}")
    return 0


SETTINGS = ("demos", "steps", "batch_size", "eval_episodes", "camera")


def earlier_rows(
    path: Path, args
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]], list[dict[str, str]]]:
    """``--merge``: the rows, demonstration rows and parts (command and commit of each run) of the results
    file at ``path`` (none when it does not exist yet); (None, [], []) after one line on stderr when it was
    measured with other settings."""
    from embodia.core.results import read_results

    if not path.exists():
        return [], [], []
    earlier = read_results(path)
    settings = earlier["data"]["settings"]
    differ = [
        f"{k} {settings.get(k)} there, {getattr(args, k)} here"
        for k in SETTINGS
        if settings.get(k) != getattr(args, k)
    ]
    if differ:
        print(
            f"error: {path} was measured with other settings ({'; '.join(differ)}): use --results",
            file=sys.stderr,
        )
        return None, [], []
    parts = earlier["data"].get("parts") or [{"command": earlier["command"], "commit": earlier["commit"]}]
    return earlier["data"]["rows"], earlier["tables"]["demonstrations"]["rows"], parts


def include(results_path: Path, paths: list[Path], demonstrations: Table, args) -> int:
    """``--include``: the rows, demonstration rows and parts of ``results_path`` (when it exists) and of each file
    in ``paths`` joined into ``results_path``; 2 after one line on stderr when a file is missing or was measured
    with other settings."""
    rows: list[dict[str, Any]] = []
    demos: dict[str, dict[str, Any]] = {}
    parts: list[dict[str, str]] = []
    for path in [results_path, *paths]:
        if path != results_path and not path.exists():
            print(f"error: --include {path}: no such results file", file=sys.stderr)
            return 2
        their_rows, their_demos, their_parts = earlier_rows(path, args)
        if their_rows is None:
            return 2
        keys = {(r["task"], r["method"], r["seed"]) for r in their_rows}
        rows = [r for r in rows if (r["task"], r["method"], r["seed"]) not in keys] + their_rows
        demos.update({row["task"]: row for row in their_demos})
        parts += [part for part in their_parts if part not in parts]
    for row in demos.values():
        demonstrations.add(**row)
    path = save(results_path, rows, demonstrations, parts, args)
    print(f"{len(rows)} rows from {1 + len(paths)} files: {path}")
    return 0


def act_paper_table(rows: list[dict[str, Any]], args) -> Table:
    """The ACT paper's success on its simulated tasks beside embodia's ACT on the same task (where measured)."""
    table = Table(
        [
            Column("task", "task"),
            Column("paper_scripted", "ACT paper, scripted demonstrations", ".0%"),
            Column("paper_human", "ACT paper, human demonstrations", ".0%"),
            Column("embodia", "embodia's ACT [95 % interval]", ".0%"),
            Column("scale", "embodia's scale"),
        ]
    )
    for task, paper in ACT_PAPER.items():
        mine = [r for r in rows if r["task"] == task and r["method"] == "act"]
        successes, episodes = sum(r["successes"] for r in mine), sum(r["episodes"] for r in mine)
        network = "CPU-scale" if any(r.get("scale") == "cpu" for r in mine) else "the paper's"
        batch = mine[0].get("batch_size", args.batch_size) if mine else PAPER_BATCH["act"]
        table.add(
            task=task,
            paper_scripted=paper["scripted"],
            paper_human=paper["human"],
            embodia=interval(successes / episodes, *wilson_interval(successes, episodes))
            if mine
            else "not run",
            scale=f"{args.demos} scripted demonstrations, {args.camera} x {args.camera} top camera, "
            f"{network} transformers, {args.steps} gradient steps at batch {batch} on a CPU (the paper: 480 x 640 cameras, "
            "ImageNet ResNet-18s, 2000 epochs on a GPU)",
        )
    return table


def save(
    path: Path, rows: list[dict[str, Any]], demonstrations: Table, parts: list[dict[str, str]], args
) -> Path:
    """The results file: the tables, every row, and the runs (parts) that measured them."""
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    return write_results(
        path,
        {
            "comparison": summarise(rows, args),
            "demonstrations": demonstrations,
            "act_paper": act_paper_table(rows, args),
        },
        name="imitation/comparison",
        title="BC, flow BC, ACT and Diffusion Policy on the same demonstrations",
        command=" ; ".join(part["command"] for part in parts),
        seeds=sorted({r["seed"] for r in rows}),
        data={
            "parts": parts,
            "rows": rows,
            "act_paper": ACT_PAPER,
            "settings": {**{k: getattr(args, k) for k in SETTINGS}, "tasks": tasks},
        },
    )


if __name__ == "__main__":
    sys.exit(main())
