"""``embodia robot policy | sim | launch | record | node-config``: ROS 2 deployment from the command line.

Every command that starts nodes accepts ``--ros-args ...`` at the end (remaps, namespace, parameters),
exactly as ``ros2 run`` does. rclpy is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from embodia.core.cli_args import (
    add_video_codec_argument,
    nonnegative_int,
    output_file_path,
    parse_kwargs,
    positive_float,
    positive_int,
    seed,
)


def _ros_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ros-args",
        dest="ros_args",
        nargs=argparse.REMAINDER,
        default=None,
        help="ROS arguments (remaps, namespace, parameters), as for ros2 run",
    )


def _argv_for_ros(args: argparse.Namespace) -> list[str]:
    return ["--ros-args", *args.ros_args] if args.ros_args else []


def _add_sim_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="embodia environment id, e.g. embodia/PointMaze-Medium-v0")
    p.add_argument(
        "--faults",
        metavar="SPEC",
        help="network faults on the observation topics: delay=20ms,jitter=5ms,drop=0.05,stale=0.01,"
        "reorder=0.01,clock_jump=-5s (any subset)",
    )
    p.add_argument("--fault-seed", type=nonnegative_int, default=0, help="seed of the fault decisions")
    p.add_argument("--seed", type=seed, default=0, help="episode i uses seed SEED+i")
    p.add_argument(
        "--episodes", type=positive_int, help="stop after this many episodes (default: run until Ctrl-C)"
    )
    p.add_argument("--max-steps", type=positive_int, help="cut episodes at this many steps")
    p.add_argument(
        "--mode",
        choices=("lockstep", "rate"),
        default="lockstep",
        help="lockstep: one step per command; rate: step at --rate-hz in wall time",
    )
    p.add_argument(
        "--rate-hz",
        type=positive_float,
        default=20.0,
        help="rate mode step rate; sim time per step is 1/RATE",
    )
    p.add_argument("--state-type", default="JointState", choices=("JointState", "Float64MultiArray"))
    p.add_argument(
        "--command-type",
        default="Float64MultiArray",
        choices=("Float64MultiArray", "Twist", "TwistStamped", "JointTrajectory"),
    )
    p.add_argument(
        "--twist-components",
        nargs="+",
        help="Twist component per action entry (default linear.x linear.y ...)",
    )
    p.add_argument("--render", action="store_true", help="also publish env.render() frames on obs/camera")
    p.add_argument(
        "--republish-period",
        type=positive_float,
        default=0.5,
        help="lockstep: publish the observation again after this many seconds without a command",
    )
    p.add_argument(
        "--wait-for-subscribers",
        type=nonnegative_int,
        default=0,
        metavar="N",
        help="start when a controller publishes cmd and every observation topic has N subscribers",
    )
    p.add_argument(
        "--results",
        type=output_file_path,
        metavar="OUT.json",
        help="write per-episode results here when the bridge stops",
    )
    p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE")


def build_sim_config(args: argparse.Namespace) -> Any:
    """The validated :class:`~embodia.robot.sim_bridge.BridgeConfig` of the sim arguments.

    Raises:
        RobotConfigError: naming the invalid option(s), e.g. ``sim bridge: rate_hz: ... (got nan)``.
    """
    from embodia.robot.sim_bridge import check_bridge_config

    return check_bridge_config(
        {
            "env_id": args.env_id,
            "env_kwargs": parse_kwargs(args.env_kwarg),
            "seed": args.seed,
            "episodes": args.episodes,
            "max_steps": args.max_steps,
            "mode": args.mode,
            "rate_hz": args.rate_hz,
            "state_type": args.state_type,
            "command_type": args.command_type,
            "twist_components": args.twist_components,
            "render": args.render,
            "republish_period": args.republish_period,
            "wait_for_subscribers": args.wait_for_subscribers,
            "results": args.results,
            "faults": args.faults,
            "fault_seed": args.fault_seed,
        }
    )


def _add_record_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topics", nargs="*", help="TOPIC or TOPIC=KEY (types are discovered from the ROS graph)")
    p.add_argument("--out", required=True, metavar="STORE.zarr", help="trajectory store to append to")
    p.add_argument(
        "--action", metavar="TOPIC", help="command topic, stored as key 'action' (default step topic)"
    )
    p.add_argument("--step-on", metavar="TOPIC", help="one row per message of this topic")
    p.add_argument("--episode-topic", default="episode", help="JSON episode events ('' for none)")
    p.add_argument("--episodes", type=positive_int, help="stop after this many episodes")
    p.add_argument("--duration", type=positive_float, help="stop after this many seconds")
    p.add_argument("--env-id", default="ros2", help="env_id stored when no episode event names one")
    add_video_codec_argument(p)


# ---------------------------------------------------------------------- commands
def cmd_policy(args: argparse.Namespace) -> int:
    from embodia.robot.config import load_node_config
    from embodia.robot.policy_node import resolve_policy, run_policy_node

    overrides = {k: v for k, v in (("rate_hz", args.rate_hz), ("trigger", args.trigger)) if v is not None}
    # without --config / --policy the node reads its ROS parameters 'config' / 'policy' (ros2 run, launch)
    config = load_node_config(args.config, overrides) if args.config else None
    if args.lifecycle:  # the policy is loaded on configure; one that cannot load fails that transition
        from embodia.robot.lifecycle_node import run_lifecycle_policy_node

        status = run_lifecycle_policy_node(
            args.policy,
            config,
            _argv_for_ros(args),
            duration=args.duration,
            activate=args.activate,
            runtime=args.runtime if args.policy else None,
        )
    else:
        policy = resolve_policy(args.policy, args.runtime) if args.policy else None
        if args.activate:
            from embodia.robot.errors import RobotConfigError

            raise RobotConfigError("--activate drives a managed node: give --lifecycle too")
        status = run_policy_node(policy, config, _argv_for_ros(args), duration=args.duration)
    if args.status_out:
        Path(args.status_out).write_text(json.dumps(status, indent=2, default=float))
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from embodia.robot.sim_bridge import run_sim_bridge

    results = run_sim_bridge(build_sim_config(args), _argv_for_ros(args))
    if results:
        rate = sum(r["success"] for r in results) / len(results)
        print(f"{len(results)} episodes, success rate {rate:.0%}")
    return 0


def cmd_node_config(args: argparse.Namespace) -> int:
    import yaml

    from embodia.robot.sim_bridge import policy_config_for

    config = policy_config_for(
        args.env_id,
        env_kwargs=parse_kwargs(args.env_kwarg),
        state_type=args.state_type,
        command_type=args.command_type,
        twist_components=args.twist_components,
        trigger=args.trigger,
        rate_hz=args.rate_hz,
    )
    text = yaml.safe_dump(config.to_dict(), sort_keys=False)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_launch(args: argparse.Namespace) -> int:
    from embodia.robot.launch import Supervisor, format_plan, parse_launch_arguments, plan_launch

    # every file, before anything starts; a dry run (--print) runs no $(command ...) either
    plan = plan_launch(args.file, parse_launch_arguments(args.arguments), run_commands=not args.print_only)
    if args.print_only:  # a dry run, as `ros2 launch --print`: nothing starts
        print(format_plan(plan))
        return 0
    if args.isolated:
        from embodia.robot.netns import run_isolated

        argv = [sys.executable, "-m", "embodia.cli", "robot", "launch", args.file, *args.arguments]
        if args.activate:
            argv.append("--activate")
        if args.timeout:
            argv += ["--timeout", str(args.timeout)]
        return run_isolated(argv).returncode
    return Supervisor(plan, activate=args.activate).run(args.timeout)


def cmd_record(args: argparse.Namespace) -> int:
    from embodia.robot.record import record

    result = record(
        args.topics,
        args.out,
        action=args.action,
        step_on=args.step_on,
        episode_topic=args.episode_topic or None,
        episodes=args.episodes,
        duration=args.duration,
        env_id=args.env_id,
        argv=_argv_for_ros(args),
        video_codec=args.video_codec,
    )
    print(f"recorded {result['episodes']} episodes ({result['steps']} steps) to {args.out}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("robot", help="ROS 2: policy node, simulator bridge, launch, record")
    robot = parser.add_subparsers(dest="robot_command", required=True, metavar="ROBOT_COMMAND")

    p = robot.add_parser("policy", help="run a policy as a ROS 2 node")
    p.add_argument(
        "--policy",
        help="policy folder, or module:factory returning a policy (default: the ROS parameter 'policy')",
    )
    p.add_argument(
        "--config",
        metavar="NODE.yaml",
        help="topics, rate, limits (see docs/guides/ros2.md; default: the ROS parameter 'config')",
    )
    p.add_argument("--rate-hz", type=positive_float, help="override the config's control rate")
    p.add_argument("--trigger", choices=("timer", "observation"), help="override the config's trigger")
    p.add_argument(
        "--runtime",
        choices=("auto", "torch", "onnx"),
        default="auto",
        help="run a policy folder's network with torch or ONNX Runtime (auto: torch where installed, else "
        "model.onnx; export one with `embodia export POLICY --onnx`)",
    )
    p.add_argument(
        "--lifecycle",
        action="store_true",
        help="run it as a managed (lifecycle) node: it publishes nothing until configured and activated "
        "(ros2 lifecycle set NODE configure / activate)",
    )
    p.add_argument(
        "--activate",
        action="store_true",
        help="with --lifecycle: configure and activate it at start (Nav2's autostart)",
    )
    p.add_argument("--duration", type=positive_float, help="stop after this many seconds")
    p.add_argument("--status-out", metavar="OUT.json", help="write the final status (counters, rate) here")
    _ros_args(p)
    p.set_defaults(func=cmd_policy)

    p = robot.add_parser("sim", help="run an embodia simulator as a ROS 2 node (the robot's topics)")
    _add_sim_arguments(p)
    _ros_args(p)
    p.set_defaults(func=cmd_sim)

    p = robot.add_parser(
        "node-config", help="write a policy node config for the topics of `robot sim ENV_ID`"
    )
    p.add_argument("env_id")
    p.add_argument("--state-type", default="JointState", choices=("JointState", "Float64MultiArray"))
    p.add_argument(
        "--command-type",
        default="Float64MultiArray",
        choices=("Float64MultiArray", "Twist", "TwistStamped", "JointTrajectory"),
    )
    p.add_argument("--twist-components", nargs="+")
    p.add_argument("--trigger", default="observation", choices=("timer", "observation"))
    p.add_argument("--rate-hz", type=positive_float, default=50.0)
    p.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", type=output_file_path, metavar="NODE.yaml")
    p.set_defaults(func=cmd_node_config)

    p = robot.add_parser("launch", help="start and supervise the nodes of a ROS 2 launch file (YAML or XML)")
    p.add_argument("file", help="FILE.launch.yaml or FILE.launch.xml")
    p.add_argument("arguments", nargs="*", metavar="NAME:=VALUE", help="launch arguments")
    p.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="show every process it would start (command, namespace, parameters, remaps, environment, "
        "respawn, timers) and start nothing",
    )
    p.add_argument(
        "--isolated",
        action="store_true",
        help="run in a fresh loopback-only network namespace (root): DDS stays on this machine",
    )
    p.add_argument(
        "--activate",
        action="store_true",
        help="configure and activate every lifecycle_node once it starts (as if each had autostart: true)",
    )
    p.add_argument("--timeout", type=positive_float, help="stop everything after this many seconds")
    p.set_defaults(func=cmd_launch)

    p = robot.add_parser("record", help="record ROS 2 topics into a trajectory store")
    _add_record_arguments(p)
    _ros_args(p)
    p.set_defaults(func=cmd_record)


# ---------------------------------------------------------------------- ros2 run embodia_ros ...
def ros_node(executable: str, argv: list[str] | None = None) -> int:
    """``ros2 run embodia_ros EXECUTABLE ARGS [--ros-args ...]`` is ``embodia robot COMMAND ARGS [--ros-args ...]``.

    ``policy_node`` takes its policy and config from ROS parameters (``-p policy:=PATH -p config:=NODE.yaml``);
    ``sim_node`` and ``record_node`` take the arguments of ``embodia robot sim`` and ``embodia robot record``.
    """
    from embodia.cli import main
    from embodia.robot.launch import EMBODIA_EXECUTABLES

    return main([*EMBODIA_EXECUTABLES[executable], *(sys.argv[1:] if argv is None else argv)])
