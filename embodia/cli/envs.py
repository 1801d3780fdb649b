"""``embodia envs | run | info | replay | demo``: environments, episodes and trajectory stores."""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from embodia.core.cli_args import (
    add_parallel_arguments,
    add_vector_arguments,
    add_video_codec_argument,
    nonnegative_float,
    output_file_path,
    parse_kwargs,
    positive_int,
    seed,
)

console = Console()
err_console = Console(stderr=True)


# ---------------------------------------------------------------------- envs
def cmd_envs(args: argparse.Namespace) -> int:
    from embodia.envs import describe, env_ids

    ids = [i for i in env_ids() if not args.filter or args.filter.lower() in i.lower()]
    if args.ids:
        for env_id in ids:
            print(env_id)
        return 0
    infos = [describe(env_id, build=args.build) for env_id in ids]  # the shipped catalog: nothing is built
    if args.json:
        print(json.dumps([info.__dict__ for info in infos], indent=2))
        return 0
    table = Table(title=f"{len(infos)} embodia environments")
    for column in ("id", "observation space", "action space", "steps", "renders", "expert"):
        table.add_column(column, overflow="fold")
    for info in infos:
        table.add_row(
            info.id,
            info.observation_space,
            info.action_space,
            str(info.max_episode_steps or "-"),
            "yes" if info.renders else "no",
            "yes" if info.has_expert else "no",
        )
    console.print(table)
    return 0


# ---------------------------------------------------------------------- run
def cmd_run(args: argparse.Namespace) -> int:
    from embodia.runner import rollout

    env_kwargs = parse_kwargs(args.env_kwarg)
    view_hooks = _view_hooks(args)
    if args.task_id is not None:
        env_kwargs["task_id"] = args.task_id
    policy = args.policy
    if args.expert_noise is not None:
        from embodia.core.errors import ConfigError
        from embodia.runner.datasets import noisy_expert

        if args.policy != "expert":
            raise ConfigError(f"--expert-noise applies to --policy expert, not to --policy {args.policy!r}")
        policy = functools.partial(noisy_expert, noise=args.expert_noise)
    record = args.record
    if record and args.video_codec:  # a new store's codec; an existing store must have it
        from embodia.data.store import TrajectoryStore

        record = TrajectoryStore(record, mode="a", video_codec=args.video_codec)
    try:
        result = rollout(
            args.env_id,
            policy,
            episodes=args.episodes,
            seed=args.seed,
            record=record,
            record_sim_state=args.record_sim_state,
            commit_every=args.commit_every,
            video=args.video,
            max_steps=args.max_steps,
            env_kwargs=env_kwargs,
            workers=args.workers,
            ray_address=args.ray_address,
            num_envs=args.num_envs,
            vector_mode=args.vector_mode,
            hooks=view_hooks,
            progress=not args.quiet and not args.json,
        )
    finally:
        for hook in view_hooks:
            hook.close()  # finishes the .rrd, an interrupted episode included
        if record is not args.record:
            record.close()
    if args.expert_noise is not None:
        result.policy = f"expert(noise={args.expert_noise})"
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        table = Table(title=f"{result.env_id} | policy {result.policy}")
        for column in ("episode", "seed", "return", "length", "success"):
            table.add_column(column, justify="right")
        for ep in result.episodes:
            table.add_row(
                str(ep.index),
                str(ep.seed),
                f"{ep.return_:.2f}",
                str(ep.length),
                "yes" if ep.success else "no",
            )
        table.add_section()
        table.add_row(
            "mean", "", f"{result.mean_return:.2f}", f"{result.mean_length:.1f}", f"{result.success_rate:.0%}"
        )
        console.print(table)
        console.print(f"{result.steps_per_second:.0f} env steps/s")
        if args.record:
            console.print(f"recorded {len(result.episodes)} episodes to {args.record}")
        if args.video:
            console.print(f"video: {args.video}")
        if args.view:
            console.print(f"Rerun recording: {args.view} (open it with `rerun {args.view}`)")
        if result.workers:
            workers = Table(title=f"{len(result.workers)} workers")
            for column in ("worker (host:pid)", "episodes", "steps", "seconds"):
                workers.add_column(column, justify="right")
            for name, row in sorted(result.workers.items()):
                workers.add_row(name, str(row["episodes"]), str(row["steps"]), f"{row['seconds']:.1f}")
            console.print(workers)
    if result.interrupted:
        err_console.print(f"interrupted after {len(result.episodes)} finished episodes (all of them saved)")
        return 130
    return 0


def _view_hooks(args: argparse.Namespace) -> list:
    """``--view FILE.rrd``: a Rerun hook (refused where the rollout cannot run hooks in this process)."""
    if not args.view:
        return []
    from embodia.core.errors import EmbodiaError
    from embodia.runner.rerun_view import RerunHook

    if args.num_envs > 1 or args.workers > 1 or args.ray_address:
        raise EmbodiaError(
            "--view logs episodes in this process: drop --num-envs/--workers/--ray-address, or record with "
            "--record STORE.zarr and run `embodia view STORE.zarr --out FILE.rrd`"
        )
    return [RerunHook(args.view)]  # refuses an existing file


# ---------------------------------------------------------------------- info
def cmd_info(args: argparse.Namespace) -> int:
    from embodia.data.store import TrajectoryStore

    store = TrajectoryStore(args.store, mode="r")
    summary = store.summary()
    if args.check:
        summary["check"] = store.verify()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    console.print(
        f"[bold]{summary['path']}[/bold]  (format {summary['format']}, updated {summary['updated']})"
    )
    console.print(
        f"episodes {summary['episodes']}   steps {summary['steps']}   "
        f"length mean {summary['length_mean']:.1f} (min {summary['length_min']}, max {summary['length_max']})   "
        f"success rate {summary['success_rate']:.0%}   mean return {summary['return_mean']:.2f}"
    )
    console.print(f"env ids: {', '.join(summary['env_ids']) or '-'}")
    fps = f"{summary['fps']:g} steps/s" if summary["fps"] else "not recorded"
    video = (
        f"{summary['video_codec']} video: {', '.join(summary['video_keys'])}"
        if summary["video_keys"]
        else "raw"
    )
    console.print(f"control frequency: {fps}   camera images: {video}")
    table = Table(title="data keys")
    for column in ("key", "role", "shape per step", "dtype"):
        table.add_column(column)
    for key, spec in summary["keys"].items():
        table.add_row(key, spec["role"], str(tuple(spec["shape"])), spec["dtype"])
    console.print(table)
    if args.check:
        check = summary["check"]
        videos = f", {check['videos_decoded']} videos decoded" if check["videos_decoded"] else ""
        console.print(
            f"checked: {check['chunks_read']} chunks read{videos}, every checksum and the episode table agree"
        )
    return 0


# ---------------------------------------------------------------------- replay
def cmd_replay(args: argparse.Namespace) -> int:
    from embodia.core.errors import ReplayMismatchError
    from embodia.data.store import TrajectoryStore
    from embodia.runner.replay import replay

    store = TrajectoryStore(args.store, mode="r")
    episodes = args.episode or None
    error: ReplayMismatchError | None = None
    try:
        results = replay(
            store,
            episodes,
            verify=args.verify,
            tolerance=args.tolerance,
            video=args.video,
            progress=not args.json,
        )
    except ReplayMismatchError as mismatch:
        error = mismatch
        results = None
    if results is not None:
        if args.json:
            print(
                json.dumps(
                    [{k: v for k, v in r.__dict__.items() if k != "frames"} for r in results], indent=2
                )
            )
        else:
            table = Table(title=f"replay of {store.path}")
            for column in (
                "episode",
                "length",
                "success (recorded)",
                "return (recorded)",
                "max state deviation",
            ):
                table.add_column(column, justify="right")
            for r in results:
                table.add_row(
                    str(r.episode),
                    str(r.length),
                    f"{'yes' if r.success else 'no'} ({'yes' if r.recorded_success else 'no'})",
                    f"{r.return_:.2f} ({r.recorded_return:.2f})",
                    f"{r.max_deviation:.2e}" if args.verify else "-",
                )
            console.print(table)
            if args.verify:
                worst = max(r.max_deviation for r in results)
                console.print(
                    f"verified: largest state deviation {worst:.2e} <= tolerance {args.tolerance:g}"
                )
            if args.video:
                console.print(f"video: {args.video}")
    if error is not None:
        raise error
    return 0


# ---------------------------------------------------------------------- demo
def cmd_demo(args: argparse.Namespace) -> int:
    from embodia.runner.demo import run_demo

    return run_demo(Path(args.out), env_id=args.env_id, episodes=args.episodes, seed=args.seed)


# ---------------------------------------------------------------------- parser
def add_commands(sub: argparse._SubParsersAction) -> None:

    p = sub.add_parser("envs", help="list registered environments")
    p.add_argument("filter", nargs="?", help="only ids containing this text")
    p.add_argument("--ids", action="store_true", help="print ids only")
    p.add_argument(
        "--build", action="store_true", help="build each environment instead of reading the shipped catalog"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("run", help="run episodes headless (optionally record and render them)")
    p.add_argument("env_id")
    p.add_argument("--policy", default="random", help="random | expert | PATH to a trained policy folder")
    p.add_argument(
        "--expert-noise",
        type=nonnegative_float,
        metavar="STD",
        help="with --policy expert: Gaussian noise of this std on the expert's actions (demonstrations that "
        "show how to recover; the kitchen policies learn from 0.1)",
    )
    p.add_argument("--episodes", type=positive_int, default=1)
    p.add_argument("--seed", type=seed, default=0, help="episode i uses seed SEED+i")
    p.add_argument("--record", metavar="STORE.zarr", help="append the episodes to this trajectory store")
    p.add_argument(
        "--record-sim-state", action="store_true", help="also record the simulator state at every step"
    )
    add_video_codec_argument(p)
    p.add_argument(
        "--commit-every",
        type=nonnegative_float,
        default=2.0,
        metavar="SECONDS",
        help="commit finished episodes at most this far apart (0: after every episode)",
    )
    p.add_argument(
        "--video", type=output_file_path, metavar="OUT.mp4", help="render all episodes to this mp4"
    )
    p.add_argument(
        "--view",
        type=output_file_path,
        metavar="FILE.rrd",
        help="log the episodes to this Rerun recording (open it with `rerun FILE.rrd`)",
    )
    p.add_argument("--max-steps", type=positive_int, help="cut episodes at this many steps")
    p.add_argument("--task-id", type=positive_int, help="fix the evaluation task (OGBench: 1-5)")
    p.add_argument(
        "--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help="environment argument"
    )
    add_parallel_arguments(p)
    add_vector_arguments(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("info", help="what a trajectory store holds")
    p.add_argument("store")
    p.add_argument("--check", action="store_true", help="also read every chunk and verify its checksum")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("replay", help="re-simulate recorded episodes (verify, render)")
    p.add_argument("store")
    p.add_argument("--episode", type=int, action="append", help="episode index (repeatable; default all)")
    p.add_argument("--verify", action="store_true", help="compare simulator states with the recording")
    p.add_argument(
        "--tolerance", type=nonnegative_float, default=1e-6, help="largest allowed state deviation"
    )
    p.add_argument("--video", type=output_file_path, metavar="OUT.mp4")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("demo", help="the main job end to end: run an expert, record, replay, verify, render")
    p.add_argument("--out", default="demo_out")
    p.add_argument("--env-id", default="embodia/CubeSingle-v0")
    p.add_argument("--episodes", type=positive_int, default=5)
    p.add_argument("--seed", type=seed, default=0)
    p.set_defaults(func=cmd_demo)
