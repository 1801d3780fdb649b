"""``embodia data generate | import | export | import-mcap``: make, import and export trajectory stores."""

from __future__ import annotations

import argparse
import json

from embodia.cli.data_edit import add_edit_commands
from embodia.cli.data_lerobot import add_lerobot_commands
from embodia.cli.data_rerender import add_rerender_commands
from embodia.core.cli_args import (
    add_parallel_arguments,
    add_video_codec_argument,
    nonnegative_float,
    output_file_path,
    positive_float,
    positive_int,
    seed,
)


def add_commands(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="generate, import and export datasets")
    data_sub = parser.add_subparsers(dest="data_command", required=True, metavar="DATA_COMMAND")
    p = data_sub.add_parser("generate", help="record a noisy-expert play dataset (OGBench-style)")
    p.add_argument("env_id", help="e.g. embodia/CubeSingle-v0 (its -Play-v0 variant is used)")
    p.add_argument("--episodes", type=positive_int, required=True)
    p.add_argument("--out", required=True, metavar="STORE.zarr")
    p.add_argument(
        "--noise", type=nonnegative_float, default=0.1, help="std of Gaussian action noise (default 0.1)"
    )
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument(
        "--task-id", type=positive_int, help="single task labelling rewards/terminals (default: ogbench's)"
    )
    p.add_argument(
        "--sparse",
        action="store_true",
        help="sparse rewards: -1 until the task is solved, 0 when it is (the Q-chunking code's --sparse)",
    )
    p.add_argument("--max-steps", type=positive_int, help="episode length (default: 1000)")
    p.add_argument("--overwrite", action="store_true")
    add_video_codec_argument(p)
    add_parallel_arguments(p)
    p.set_defaults(func=cmd_generate)

    p = data_sub.add_parser("import", help="import an official OGBench .npz dataset")
    p.add_argument("file")
    p.add_argument("--out", required=True, metavar="STORE.zarr")
    p.add_argument("--env", required=True, help="the embodia env id the data belongs to")
    p.add_argument(
        "--task-id", type=positive_int, help="label rewards for this single task (needs qpos in the file)"
    )
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_import)

    p = data_sub.add_parser("export", help="export a trajectory store (ROS 2 bag: --mcap OUT.mcap)")
    p.add_argument("store", help="STORE.zarr")
    p.add_argument(
        "--mcap",
        required=True,
        metavar="OUT.mcap",
        type=output_file_path,
        help="write a ROS 2 bag (MCAP) here",
    )
    p.add_argument("--prefix", default="/embodia", help="topic prefix (topics are PREFIX/<key>)")
    p.add_argument("--rate-hz", type=positive_float, default=20.0, help="steps per second of bag time")
    p.add_argument("--episode", type=int, action="append", help="episode index (repeatable; default all)")
    p.set_defaults(func=cmd_export)

    p = data_sub.add_parser("import-mcap", help="import a ROS 2 bag (MCAP file or rosbag2 folder) as a store")
    p.add_argument("bag", help="BAG.mcap or a rosbag2 directory")
    p.add_argument("--out", required=True, metavar="STORE.zarr", help="trajectory store to append to")
    p.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[=KEY]",
        help="topic to import (repeatable; default: every topic of a type with a default converter)",
    )
    p.add_argument("--action", metavar="TOPIC", help="command topic, stored as key 'action'")
    p.add_argument("--step-on", metavar="TOPIC", help="one row per message of this topic")
    p.add_argument("--episode-topic", metavar="TOPIC", help="std_msgs/String JSON episode events")
    p.add_argument("--env-id", help="env_id of episodes without a start event")
    p.set_defaults(func=cmd_import_mcap)
    add_edit_commands(data_sub)
    add_rerender_commands(data_sub)
    add_lerobot_commands(data_sub)


def cmd_generate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from embodia.data.store import TrajectoryStore
    from embodia.runner.datasets import generate_dataset

    result = generate_dataset(
        args.env_id,
        args.episodes,
        args.out,
        noise=args.noise,
        seed=args.seed,
        task_id=args.task_id,
        sparse=args.sparse,
        max_steps=args.max_steps,
        overwrite=args.overwrite,
        video_codec=args.video_codec,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=True,
    )
    store = TrajectoryStore(args.out)
    terminals = store.load(["terminated"])["terminated"]
    Console().print(
        f"{store.path}: {store.num_episodes} episodes, {store.num_steps} steps "
        f"({result.steps_per_second:.0f} steps/s); single-task terminal states: {terminals.mean():.2%}"
    )
    return 130 if result.interrupted else 0


def cmd_import(args: argparse.Namespace) -> int:
    from embodia.runner.datasets import import_ogbench_npz

    count = import_ogbench_npz(
        args.file, args.out, env_id=args.env, task_id=args.task_id, overwrite=args.overwrite
    )
    print(json.dumps({"store": args.out, "episodes": count}))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from embodia.robot.mcap import export_mcap

    result = export_mcap(
        args.store, args.mcap, prefix=args.prefix, rate_hz=args.rate_hz, episodes=args.episode, progress=True
    )
    print(f"wrote {result['episodes']} episodes ({result['messages']} messages) to {result['path']}")
    return 0


def cmd_import_mcap(args: argparse.Namespace) -> int:
    from rich.console import Console

    from embodia.robot.mcap import import_mcap

    err = Console(stderr=True)
    result = import_mcap(
        args.bag,
        args.out,
        topics=args.topic,
        action=args.action,
        step_on=args.step_on,
        episode_topic=args.episode_topic,
        env_id=args.env_id,
        progress=True,
        on_warning=lambda message: err.print(
            f"[yellow]warning:[/yellow] {message}", highlight=False, soft_wrap=True
        ),
    )
    notes = [f"{result['rejected']} messages rejected"] if result["rejected"] else []
    if result["skipped"]:
        notes.append(f"{result['skipped']} undecodable topics skipped")
    print(
        f"imported {result['episodes']} episodes ({result['steps']} steps, keys {', '.join(result['keys'])}) "
        f"to {result['path']}" + (f"; {', '.join(notes)}" if notes else "")
    )
    return 0
