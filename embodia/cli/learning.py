"""``embodia train``, ``embodia eval``, ``embodia export`` and ``embodia bench offline-rl``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from embodia.core.cli_args import (
    add_parallel_arguments,
    add_vector_arguments,
    nonnegative_int,
    output_file_path,
    positive_float,
    positive_int,
    seed,
)
from embodia.core.errors import EmbodiaError


def _json_arg(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object, e.g. '{\"horizon\": 8}'")
    return value


def add_commands(sub: argparse._SubParsersAction) -> None:
    from embodia.policies import learner_names  # the registry of methods (imports no learner, no torch)

    methods = learner_names()
    p = sub.add_parser("train", help=f"train {' | '.join(methods)} on a trajectory store")
    p.add_argument("method", choices=methods)
    p.add_argument("--dataset", required=True, metavar="STORE.zarr")
    p.add_argument("--env", dest="env_id", help="environment for periodic evaluation")
    p.add_argument("--task-id", type=positive_int, help="evaluation task (OGBench 1-5)")
    p.add_argument("--steps", type=positive_int, default=10_000)
    p.add_argument("--batch-size", type=positive_int, default=256)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--eval-every", type=nonnegative_int, default=2_000)
    p.add_argument("--eval-episodes", type=nonnegative_int, default=10)
    p.add_argument(
        "--config", type=_json_arg, default={}, metavar="JSON", help="method options, e.g. '{\"horizon\": 8}'"
    )
    p.add_argument("--out", required=True, metavar="RUN_DIR")
    p.set_defaults(func=cmd_train)
    # the methods' options need their modules (torch): read them only when the help is asked for
    p.format_help = lambda parser=p: type(parser).format_help(parser) + "\n" + _method_options()

    p = sub.add_parser("eval", help="success rate of a policy with a 95%% Wilson interval")
    p.add_argument("policy", help="a run directory or a policy folder")
    p.add_argument("--env", dest="env_id", help="default: the environment the policy was trained for")
    p.add_argument("--task-id", type=positive_int)
    p.add_argument("--episodes", type=positive_int, default=20, help="episodes per seed")
    p.add_argument("--seeds", type=seed, nargs="+", default=[0])
    p.add_argument("--record", metavar="STORE.zarr", help="record the evaluation episodes")
    p.add_argument("--video", type=output_file_path, metavar="OUT.mp4", help="render the evaluation episodes")
    p.add_argument(
        "--execute-steps",
        type=positive_int,
        metavar="N",
        help="actions of each predicted chunk to run before re-planning (1 = receding horizon)",
    )
    p.add_argument(
        "--runtime",
        choices=("auto", "torch", "onnx"),
        default="auto",
        help="run the policy's network with torch or its exported model.onnx (default: torch if installed)",
    )
    p.add_argument("--json", action="store_true")
    add_parallel_arguments(p)
    add_vector_arguments(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "export", help="export a trained policy for robots (--onnx: model.onnx, no torch needed)"
    )
    p.add_argument("policy", help="a run directory or a policy folder")
    p.add_argument(
        "--onnx",
        action="store_true",
        required=True,
        help="write model.onnx beside config.json, checked against torch in ONNX Runtime",
    )
    p.add_argument(
        "--atol",
        type=positive_float,
        default=1e-5,
        help="largest |onnx - torch| difference of any output value the check accepts (default 1e-5)",
    )
    p.set_defaults(func=cmd_export_policy)

    p = sub.add_parser("bench", help="reproducible comparisons")
    bench_sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    from embodia.policies.paper_settings import method_labels  # the comparison's methods (no torch)

    compared = method_labels()
    q = bench_sub.add_parser(
        "offline-rl", help="DEAS vs QC-FQL vs FQL vs IQL vs BC on generated OGBench data, five tasks each"
    )
    q.add_argument("--quick", action="store_true", help="seconds-long smoke version")
    q.add_argument("--out", default="runs/offline_rl")
    q.add_argument(
        "--results",
        metavar="PATH",
        help="results file per environment, {env} replaced by its name (default: "
        "results/offline_rl/{env}.json; with --quick under runs/quick-results/)",
    )
    q.add_argument(
        "--merge",
        action="store_true",
        help="add this part's runs to the results files already there (same budget; a run of the same "
        "method, task and seed replaces the file's, the rest stay): a comparison run in parts",
    )
    q.add_argument("--steps", type=positive_int, help="gradient steps per run")
    q.add_argument("--seeds", type=seed, nargs="+")
    q.add_argument(
        "--env", dest="families", nargs="+", metavar="FAMILY", help="subset, e.g. CubeSingle Scene"
    )
    q.add_argument("--methods", nargs="+", choices=compared, help="subset of the methods")
    q.add_argument(
        "--episodes",
        type=positive_int,
        help="play episodes in each task's dataset (each of 1000 steps; 1000 = OGBench's 1M transitions)",
    )
    q.add_argument("--eval-episodes", type=nonnegative_int)
    q.add_argument(
        "--matmul-precision",
        choices=["float32", "bfloat16"],
        help="precision of the networks' matrix products in training (bfloat16: mixed precision, ~2x faster "
        "on CPUs with bfloat16 instructions; default float32)",
    )
    add_parallel_arguments(q)
    q.set_defaults(func=cmd_bench_offline_rl)


def _method_options() -> str:
    """Every method's --config options: default, and what it is and where the default comes from."""
    import dataclasses

    from embodia.core.validation import field_docs
    from embodia.policies import learner_classes, learner_names

    lines = ["method options (--config JSON): name=default, then what it is and where the default comes from"]
    for name in learner_names():
        config = learner_classes(name)[1]
        docs = field_docs(config)
        lines.append(f"\n  {name} ({config.__name__}):")
        for field in dataclasses.fields(config):
            default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
            lines.append(f"    {field.name}={default!r}: {' '.join(docs.get(field.name, '').split())}")
    return "\n".join(lines) + "\n"


def cmd_train(args: argparse.Namespace) -> int:
    from rich.console import Console

    from embodia.policies.train import TrainConfig, train

    env_kwargs = {} if args.task_id is None else {"task_id": args.task_id}
    result = train(
        TrainConfig(
            method=args.method,
            dataset=args.dataset,
            out=args.out,
            env_id=args.env_id,
            env_kwargs=env_kwargs,
            steps=args.steps,
            batch_size=args.batch_size,
            seed=args.seed,
            eval_every=args.eval_every,
            eval_episodes=args.eval_episodes if args.env_id else 0,
            method_config=args.config,
        ),
        progress=True,
    )
    console = Console()
    summary = f"{args.method}: {result['step']} steps ({result['steps_per_second']:.1f}/s)"
    if "eval" in result:
        summary += f", final success {result['eval']['success_rate']:.0%}"
    console.print(summary)
    console.print(
        f"policy: {args.out}/policy   curve: {args.out}/learning_curve.png   metrics: {args.out}/metrics.jsonl"
    )
    if result["interrupted"]:
        console.print("interrupted: the last checkpoint was saved")
        return 130
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from embodia.runner.evaluate import evaluate_policy

    env_kwargs = None if args.task_id is None else {"task_id": args.task_id}
    result = evaluate_policy(
        args.policy,
        args.env_id,
        episodes=args.episodes,
        seeds=args.seeds,
        env_kwargs=env_kwargs,
        record=args.record,
        video=args.video,
        execute_steps=args.execute_steps,
        workers=args.workers,
        ray_address=args.ray_address,
        num_envs=args.num_envs,
        vector_mode=args.vector_mode,
        progress=not args.json,
        runtime=args.runtime,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=float))
    else:
        low, high = result.interval
        print(
            f"{result.env_id}: success {result.success_rate:.1%} ({result.successes}/{result.episodes}), "
            f"95% Wilson interval [{low:.1%}, {high:.1%}], mean return {result.mean_return:.2f}"
        )
    return 0


def cmd_export_policy(args: argparse.Namespace) -> int:
    from embodia.policies.onnx_export import export_onnx

    path = export_onnx(args.policy, atol=args.atol)
    record = json.loads((path.parent / "config.json").read_text())["onnx"]
    print(f"{path} (opset {record['opset']}, max |onnx - torch| = {record['max_abs_diff']:.2g})")
    return 0


def cmd_bench_offline_rl(args: argparse.Namespace) -> int:
    from embodia.policies.comparison import ComparisonConfig, quick_config, run_comparison

    config = quick_config(args.out) if args.quick else ComparisonConfig(out=args.out)
    for name, value in (
        ("steps", args.steps),
        ("dataset_episodes", args.episodes),
        ("eval_episodes", args.eval_episodes),
        ("matmul_precision", args.matmul_precision),
    ):
        if value is not None:
            setattr(config, name, value)
    if args.seeds:
        config.seeds = tuple(args.seeds)
    if args.methods:
        from embodia.policies.paper_settings import method_labels

        compared = method_labels()
        if not set(args.methods) <= set(compared):
            raise EmbodiaError(
                f"--methods {' '.join(m for m in args.methods if m not in compared)}: not in the comparison "
                f"(single-task data); choose from {', '.join(compared)}"
            )
        config.methods = tuple(args.methods)
    if args.families:
        known = {case.family: case for case in ComparisonConfig().cases}
        unknown = sorted(set(args.families) - set(known))
        if unknown:
            raise EmbodiaError(
                f"--env {' '.join(unknown)}: not in the comparison; choose from {', '.join(known)}"
            )
        config.cases = [known[family] for family in args.families]
    if config.steps <= 0:
        raise EmbodiaError("--steps must be positive")
    from embodia.core.results import default_results_path
    from embodia.policies.comparison import markdown
    from embodia.policies.comparison_results import (
        ENV_FIELD,
        check_mergeable,
        comparison_budget,
        results_paths,
        write_comparison_results,
    )

    pattern = args.results or default_results_path(f"offline_rl/{ENV_FIELD}", quick=args.quick)
    paths = results_paths(pattern, [case.family for case in config.cases])  # a bad pattern fails first
    if args.merge:  # so does a part that cannot join its results file
        for case in config.cases:
            check_mergeable(paths[case.family], comparison_budget(config), config.methods, case.family)
    summary = run_comparison(config, progress=True, workers=args.workers, ray_address=args.ray_address)
    print(markdown(summary["rows"], config))
    print(f"written: {args.out}/results.md, results.json, results.png")
    for path in write_comparison_results(summary, config, pattern, merge=args.merge):
        print(f"results: {path}")
    return 0
