"""``embodia teleop``: drive a robot with a keyboard or a SpaceMouse and record the episodes into a store."""

from __future__ import annotations

import argparse

from embodia.core.cli_args import parse_kwargs, positive_float, positive_int, seed


def cmd_teleop(args: argparse.Namespace) -> int:
    from embodia.runner.teleop import teleoperate

    teleoperate(  # prints what it kept and discarded
        args.env_id,
        device=args.device,
        record=args.record,
        seed=args.seed,
        episodes=args.episodes,
        env_kwargs=parse_kwargs(args.env_kwarg),
        camera=args.camera,
        image_size=args.image_size,
        pos_sensitivity=args.pos_sensitivity,
        rot_sensitivity=args.rot_sensitivity,
        max_steps=args.max_steps,
        on_message=lambda line: print(line, flush=True),
    )
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "teleop",
        help="drive the robot with a keyboard or a SpaceMouse and record demonstrations",
        description="Teleoperate a robosuite environment (the kitchens, embodia/Kitchen-*) in a window that "
        "shows the robot's camera and the instruction. Enter ends an episode and keeps it (a kitchen also "
        "ends it at success), q discards it, Esc quits. Needs an X display.",
    )
    p.add_argument("env_id", help="an environment with a robosuite arm, e.g. embodia/Kitchen-OpenDrawer-v0")
    p.add_argument(
        "--device",
        choices=("keyboard", "spacemouse"),
        default="keyboard",
        help="robosuite's Keyboard (default) or SpaceMouse (needs hidapi and a plugged-in device)",
    )
    p.add_argument("--record", metavar="STORE.zarr", help="append the kept episodes to this trajectory store")
    p.add_argument("--seed", type=seed, default=0, help="attempt i uses seed SEED+i (default 0)")
    p.add_argument(
        "--episodes", type=positive_int, metavar="K", help="stop after K kept episodes (default: until Esc)"
    )
    p.add_argument(
        "--camera",
        default="agentview",
        help="the camera the window shows (kitchens: agentview, eye_in_hand, overview; default agentview)",
    )
    p.add_argument(
        "--image-size",
        type=positive_int,
        default=480,
        metavar="PIXELS",
        help="camera image side (default 480)",
    )
    p.add_argument(
        "--pos-sensitivity",
        type=positive_float,
        default=1.0,
        help="robosuite's scale of position input (default 1; RoboCasa uses 4 for its SpaceMouse)",
    )
    p.add_argument(
        "--rot-sensitivity",
        type=positive_float,
        default=1.0,
        help="robosuite's scale of rotation input (default 1: 0.075 rad a key press; RoboCasa uses 4)",
    )
    p.add_argument("--max-steps", type=positive_int, help="end (and keep) an episode after this many steps")
    p.add_argument(
        "--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help="environment argument"
    )
    p.set_defaults(func=cmd_teleop)
