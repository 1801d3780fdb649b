"""``embodia vsr upscale``: continuous space-time video super-resolution with a Video Fourier Field (VFF).

::

    embodia vsr upscale clip.mp4 --space 4 --time 2 --out big.mp4 --model runs/perception/vff_model

Without ``--model`` the video is upscaled by trilinear interpolation (no learned model; the output line says
so). Train a model with ``scripts/vff_experiment.py --save FOLDER``. An existing ``--out`` is refused unless
``--overwrite``, and even then only a video this command wrote is replaced.
"""

from __future__ import annotations

import argparse

from embodia.core.cli_args import output_file_path, positive_float


def cmd_upscale(args: argparse.Namespace) -> int:
    from embodia.perception.vff import VFFError, upscale_file

    if args.time < 1:
        raise VFFError(f"--time must be >= 1 (frames per input frame interval), got {args.time}")
    result = upscale_file(args.input, args.out, args.space, args.time, args.model, overwrite=args.overwrite)
    inp, out = result["input"], result["output"]
    print(
        f"{inp['frames']} frames {inp['width']}x{inp['height']} -> {out['frames']} frames "
        f"{out['width']}x{out['height']} at {result['fps']:g} fps, method {result['method']}, "
        f"{result['seconds']:.1f} s -> {result['out']}"
    )
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``vsr`` with its subcommand ``upscale`` to the ``embodia`` command."""
    vsr = subparsers.add_parser("vsr", help="video super-resolution in space and time (VFF)")
    sub = vsr.add_subparsers(dest="vsr_command", required=True, metavar="SUBCOMMAND")
    up = sub.add_parser("upscale", help="upscale a video file by any factor in space and time")
    up.add_argument("input", help="the video to upscale (anything ffmpeg reads)")
    up.add_argument("--space", type=positive_float, default=2.0, help="spatial factor (any number > 0)")
    up.add_argument(
        "--time", type=positive_float, default=1.0, help="temporal factor (>= 1: frames per interval)"
    )
    up.add_argument("--out", type=output_file_path, required=True, help="the mp4 to write")
    up.add_argument(
        "--model",
        default=None,
        help="a VFF model folder (config.json + model.safetensors); default: trilinear",
    )
    up.add_argument(
        "--overwrite", action="store_true", help="replace --out if it is a video this command wrote"
    )
    up.set_defaults(func=cmd_upscale)
