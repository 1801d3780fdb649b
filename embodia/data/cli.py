"""``embodia data ...``: dataset commands. Each contributing module defines ``add_data_commands(subparsers)``."""

from __future__ import annotations

import argparse
import importlib

#: modules contributing ``embodia data`` subcommands
_DATA_COMMAND_MODULES = (
    "embodia.data.generate",  # data generate, data import (OGBench .npz)
    "embodia.data.mcap",  # data export --mcap, data import-mcap (ROS 2 bags)
)


def add_commands(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="generate, import and export datasets")
    data_sub = parser.add_subparsers(dest="data_command", required=True, metavar="DATA_COMMAND")
    for name in _DATA_COMMAND_MODULES:
        importlib.import_module(name).add_data_commands(data_sub)
