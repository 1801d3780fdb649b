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
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name and (name == error.name or name.startswith(error.name + ".")):
                continue  # that part of embodia is not built yet
            raise
        module.add_data_commands(data_sub)
