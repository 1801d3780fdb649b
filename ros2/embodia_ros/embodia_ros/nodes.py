"""Executables of the embodia_ros package; each hands its command line (``--ros-args`` included) to embodia."""

from __future__ import annotations

import sys


def policy_node() -> int:
    """``ros2 run embodia_ros policy_node --ros-args -p policy:=PATH -p config:=NODE.yaml``"""
    from embodia.robot.policy_node import main

    return main(sys.argv[1:])


def sim_node() -> int:
    """``ros2 run embodia_ros sim_node ENV_ID [--episodes N ...] [--ros-args ...]``"""
    from embodia.robot.sim_bridge import main

    return main(sys.argv[1:])


def record_node() -> int:
    """``ros2 run embodia_ros record_node TOPICS... --out STORE.zarr [--ros-args ...]``"""
    from embodia.robot.record import main

    return main(sys.argv[1:])
