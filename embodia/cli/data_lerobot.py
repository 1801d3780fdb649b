"""LeRobot datasets on the command line: ``embodia data export STORE --lerobot DIR`` and
``embodia data import DIR --out STORE``.

Both extend the existing ``data export`` (ROS 2 bags, ``--mcap``) and ``data import`` (OGBench ``.npz`` files)
commands rather than adding new ones: ``export`` writes a LeRobot v3.0 folder when given ``--lerobot``, and
``import`` reads a LeRobot dataset when its argument is a folder (a file is an OGBench ``.npz`` as before).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from embodia.core.cli_args import add_video_codec_argument, positive_float
from embodia.core.errors import EmbodiaError


def add_lerobot_commands(data_sub: argparse._SubParsersAction) -> None:
    """Add the LeRobot options to ``data export`` and ``data import`` (created before this is called)."""
    export = data_sub.choices["export"]
    export.description = "export a trajectory store as a ROS 2 bag (--mcap) or a LeRobot dataset (--lerobot)"
    for action in export._actions:
        if action.dest == "mcap":
            action.required = False
    group = export.add_argument_group("LeRobot dataset (--lerobot)")
    group.add_argument(
        "--lerobot", metavar="DIR", help="write a LeRobotDataset v3.0 folder here (must not exist)"
    )
    group.add_argument(
        "--video-codec",
        choices=("h264", "av1"),
        default="h264",
        help="camera videos (default h264; av1: SVT-AV1)",
    )
    group.add_argument("--task", help="the task of every step (default: its instruction, else the env id)")
    group.add_argument("--fps", type=positive_float, help="frames per second of a store that records none")
    group.add_argument("--crf", type=int, default=30, help="video quality, lower is better (default 30)")
    export.set_defaults(func=cmd_export_dataset, mcap_export=export.get_default("func"))

    imports = data_sub.choices["import"]
    imports.description = "import an OGBench .npz file (--env required) or a LeRobot dataset folder"
    for action in imports._actions:
        if action.dest == "env":
            action.required = False
            action.help = "the embodia env id the data belongs to (OGBench .npz files)"
        if action.dest == "file":
            action.help = "an OGBench .npz file, or a LeRobot dataset folder (v2.0, v2.1, v3.0)"
    add_video_codec_argument(imports)
    imports.set_defaults(func=cmd_import_dataset, npz_import=imports.get_default("func"))


def cmd_export_dataset(args: argparse.Namespace) -> int:
    """``data export``: a LeRobot folder with ``--lerobot``, else a ROS 2 bag with ``--mcap``."""
    if args.lerobot is None:
        if args.mcap is None:
            raise EmbodiaError(
                "data export needs --mcap OUT.mcap (a ROS 2 bag) or --lerobot DIR (a LeRobot dataset)"
            )
        return args.mcap_export(args)
    if args.mcap is not None:
        raise EmbodiaError("give either --mcap or --lerobot, not both (run the command twice for both)")
    from embodia.data.lerobot_export import export_lerobot

    config = {"video_codec": args.video_codec, "task": args.task, "fps": args.fps, "crf": args.crf}
    result = export_lerobot(args.store, args.lerobot, config, progress=True)
    print(
        f"wrote {result['episodes']} episodes ({result['frames']} frames, {result['tasks']} tasks, "
        f"{len(result['videos'])} cameras) as a LeRobot v3.0 dataset to {result['path']}"
    )
    return 0


def cmd_import_dataset(args: argparse.Namespace) -> int:
    """``data import``: a LeRobot dataset folder, else an OGBench ``.npz`` file."""
    if not Path(args.file).is_dir():
        if args.env is None:
            raise EmbodiaError(
                f"{args.file!r} is not a folder, so it is read as an OGBench .npz file, which needs --env ENV_ID "
                "(a LeRobot dataset is a folder holding meta/info.json)"
            )
        return args.npz_import(args)
    for option, value in (("--env", args.env), ("--task-id", args.task_id)):
        if value is not None:
            raise EmbodiaError(
                f"{option} is for OGBench .npz files; a LeRobot dataset brings its own episodes"
            )
    from embodia.data.lerobot_import import import_lerobot

    codec = None if args.video_codec in (None, "none") else args.video_codec
    result = import_lerobot(args.file, args.out, video_codec=codec, overwrite=args.overwrite, progress=True)
    print(json.dumps({k: v for k, v in result.items() if k != "seconds"}))
    return 0
