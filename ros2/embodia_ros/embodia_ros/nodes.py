"""Executables of the embodia_ros package: each is the ``embodia robot ...`` command it names."""

from __future__ import annotations


def policy_node() -> int:
    """``ros2 run embodia_ros policy_node --ros-args -p policy:=PATH -p config:=NODE.yaml``"""
    from embodia.cli.robot import ros_node

    return ros_node("policy_node")


def lifecycle_policy_node() -> int:
    """``ros2 run embodia_ros lifecycle_policy_node --ros-args -p policy:=PATH -p config:=NODE.yaml``: the
    managed policy node (``ros2 lifecycle set /embodia_policy configure``, then ``activate``)"""
    from embodia.cli.robot import ros_node

    return ros_node("lifecycle_policy_node")


def sim_node() -> int:
    """``ros2 run embodia_ros sim_node ENV_ID [--episodes N ...] [--ros-args ...]``"""
    from embodia.cli.robot import ros_node

    return ros_node("sim_node")


def record_node() -> int:
    """``ros2 run embodia_ros record_node TOPICS... --out STORE.zarr [--ros-args ...]``"""
    from embodia.cli.robot import ros_node

    return ros_node("record_node")
