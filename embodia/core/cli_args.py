"""What every ``embodia`` command line shares: the parser class, argument types, ``KEY=VALUE`` pairs.

A user error is one line and exit status 2, never a usage dump or a traceback: :class:`ArgumentParser`
prints ``error: <command>: <what>; see `<command> --help``` for arguments argparse rejects, and the
types below refuse nonsense numbers (negative episode counts, a rate of 0, NaN) with that same line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from embodia.core.errors import EmbodiaError
from embodia.core.seeds import MAX_SEED


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2 (subparsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"error: {self.prog}: {message}; see `{self.prog} --help`\n")
        sys.exit(2)


def parse_kwargs(pairs: Sequence[str], option: str = "--env-kwarg") -> dict[str, Any]:
    """``["task_id=2", "width=128"]`` -> ``{"task_id": 2, "width": 128}`` (values parsed as JSON when possible)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise EmbodiaError(f"{option} expects KEY=VALUE, got {pair!r}")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs


def _number(
    kind: type, low: float | None, high: float | None, what: str, *, low_open: bool = False
) -> Callable:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}")
        if low is not None and (value <= low if low_open else value < low):
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{what}, got {text!r}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


positive_int = _number(int, 1, None, "expected an integer >= 1")
"""Counts that must be at least one: episodes, steps, batch sizes."""
nonnegative_int = _number(int, 0, None, "expected an integer >= 0")
"""Counts that may be zero (``--eval-every 0``: never)."""
seed = _number(int, 0, MAX_SEED, f"expected a seed, an integer in [0, {MAX_SEED}]")
"""Random seeds (NumPy's range)."""
positive_float = _number(float, 0.0, None, "expected a finite number > 0", low_open=True)
"""Rates, periods, tolerances."""
nonnegative_float = _number(float, 0.0, None, "expected a finite number >= 0")
"""Durations and noise levels that may be zero."""
finite_float = _number(float, None, None, "expected a finite number")
"""Any finite number."""


def output_file_path(text: str) -> str:
    """A file to write: not an existing folder, not under a file (checked before any work starts)."""
    from embodia.core.errors import OutputPathError
    from embodia.core.paths import output_file

    try:
        output_file(text, "the path")
    except OutputPathError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_parallel_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers N`` and ``--ray-address ADDR``: run independent episodes or runs on Ray."""
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="parallel workers on Ray (default 1: no Ray); without --ray-address a local Ray uses this machine",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="an existing Ray cluster (host:port, ray://host:10001, or 'auto'); default: $RAY_ADDRESS",
    )


def add_vector_arguments(parser: argparse.ArgumentParser) -> None:
    """``--num-envs K`` and ``--vector-mode sync|async``: step several environments with one batched forward pass."""
    parser.add_argument(
        "--num-envs",
        type=positive_int,
        default=1,
        metavar="K",
        help="step K environments together (gymnasium vector env), one batched policy call per step",
    )
    parser.add_argument(
        "--vector-mode",
        choices=("sync", "async"),
        default="sync",
        help="sync: the K environments in this process; async: one process each (default sync)",
    )


def add_video_codec_argument(parser: argparse.ArgumentParser) -> None:
    """``--video-codec h264|av1|none``: how a new trajectory store keeps camera images (default: raw, or
    what an existing store has)."""
    parser.add_argument(
        "--video-codec",
        choices=("h264", "av1", "none"),
        help="store camera observations of a new store as h264 or av1 video (lossy and much smaller; "
        "every other key stays exact) or raw (none, the default); an existing store keeps its own",
    )
