"""The ``embodia`` command: parse arguments, call the library, print. The top layer: nothing imports it.

Each module here adds its commands (``add_commands(subparsers)``) and names its handlers ``cmd_<command>``;
handlers import what they need when they run, so building the parser stays fast. Errors a user can cause
(:class:`~embodia.core.errors.EmbodiaError`) print as one line (``error: ...``) and exit with status 2;
Ctrl-C exits 130 after whatever was finished has been saved.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from embodia.core.cli_args import ArgumentParser
from embodia.core.errors import EmbodiaError
from embodia.core.extras import missing_extra

#: the modules that contribute commands, in the order ``embodia --help`` lists them
COMMAND_MODULES = (
    "embodia.cli.envs",  # envs, run, info, replay, demo
    "embodia.cli.teleop",  # teleop (keyboard / SpaceMouse demonstrations into a store)
    "embodia.cli.data",  # data generate | import | export | import-mcap
    "embodia.cli.view",  # view (trajectory stores in Rerun)
    "embodia.cli.learning",  # train, eval, bench
    "embodia.cli.nav",  # nav scene | episodes | graph | eval
    "embodia.cli.navcraft",  # navcraft generate | run
    "embodia.cli.robot",  # robot policy | sim | node-config | launch | record
    "embodia.cli.vsr",  # vsr upscale (VFF space-time video super-resolution)
    "embodia.cli.iqa",  # iqa build | train | score (Embodied-IQA)
    "embodia.cli.scienceboard",  # scienceboard tasks | run | validate (computer-use agents)
    "embodia.cli.tools",  # tool list | schema | run, mcp
)


def build_parser() -> ArgumentParser:
    from embodia.core.version import __version__

    parser = ArgumentParser(
        prog="embodia", description="Embodied AI: simulate, record, replay, train, deploy."
    )
    parser.add_argument("--version", action="version", version=f"embodia {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``embodia`` command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status."""
    args = build_parser().parse_args(argv)
    return run_handler(args.func, args)


def run_handler(handler, args) -> int:  # noqa: ANN001  (any cmd_* function and its namespace)
    """Call a command handler: user errors become one line and status 2, Ctrl-C status 130."""
    err = Console(stderr=True)
    try:
        return int(handler(args) or 0)
    except EmbodiaError as error:  # the message is printed as is: '[a, b]' in it is text, not rich markup
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
        return 2
    except ModuleNotFoundError as error:  # an optional part of embodia that is not installed
        missing = missing_extra(error)
        if missing is None:
            raise
        err.print(f"[red]error:[/red] {escape(str(missing))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
