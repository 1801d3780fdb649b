"""``embodia data rerender STORE --cameras A,B --size N --out NEW``: render recorded states through other cameras."""

from __future__ import annotations

import argparse
import json


def camera_list(text: str) -> list[str]:
    """``"agentview,eye_in_hand"`` -> ``["agentview", "eye_in_hand"]`` (no empty names)."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated camera names, got {text!r}")
    return names


def image_size(text: str) -> tuple[int, int]:
    """``"128"`` -> (128, 128); ``"96x128"`` -> (96, 128): height x width in pixels."""
    parts = text.lower().split("x")
    try:
        values = [int(part) for part in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or min(values, default=0) < 1:
        raise argparse.ArgumentTypeError(f"expected N or HxW in pixels (e.g. 128 or 96x128), got {text!r}")
    return (values[0], values[-1])


def add_rerender_commands(data_sub: argparse._SubParsersAction) -> None:
    p = data_sub.add_parser(
        "rerender",
        help="render the recorded states of a store through other cameras into a new store",
        description="Restore every recorded simulator state of STORE and render the requested cameras into the "
        "new store NEW, which keeps every original key (a state-only recording becomes a pixel dataset "
        "without running the policy again).",
    )
    p.add_argument("store", help="STORE.zarr, recorded with simulator states")
    p.add_argument(
        "--cameras",
        type=camera_list,
        required=True,
        metavar="A,B",
        help="cameras to render (the environment's observation cameras, e.g. agentview,eye_in_hand for the "
        "kitchens, and 'render' for its render() view); stored as <camera>_rgb",
    )
    p.add_argument("--size", type=image_size, required=True, metavar="N|HxW", help="image size in pixels")
    p.add_argument("--out", required=True, metavar="NEW.zarr", help="the new store (must not exist)")
    p.add_argument(
        "--video-codec",
        choices=("h264", "av1", "none"),
        help="camera compression of the new store (default: the source store's)",
    )
    p.set_defaults(func=cmd_rerender)


def cmd_rerender(args: argparse.Namespace) -> int:
    from embodia.runner.rerender import rerender

    result = rerender(
        args.store, args.out, args.cameras, args.size, video_codec=args.video_codec, progress=True
    )
    print(
        json.dumps(
            {
                "store": str(result.path),
                "episodes": result.episodes,
                "steps": result.steps,
                "images": {key: list(shape) for key, shape in result.image_keys.items()},
                "restored_states": result.restored_states,
            }
        )
    )
    return 0
