"""Small rclpy helpers shared by the nodes: start-up, QoS, the fixed-rate spin loop, JSON status messages."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from embodia.core.errors import EmbodiaError
from embodia.robot.rate import RateController


class RosUnavailableError(EmbodiaError, ImportError):
    """rclpy (ROS 2 Jazzy) is not installed in this environment."""


def import_rclpy() -> Any:
    try:
        import rclpy
    except ImportError as error:
        raise RosUnavailableError(
            "rclpy is not installed: pip install 'ros-jazzy-rclpy[fastrtps]' ros-jazzy-sensor-msgs "
            "ros-jazzy-geometry-msgs ros-jazzy-std-msgs ros-jazzy-trajectory-msgs ros-jazzy-nav-msgs "
            f"ros-jazzy-rosgraph-msgs (or source a ROS 2 Jazzy install) [{error}]"
        ) from error
    return rclpy


def init(argv: Sequence[str] | None) -> list[str]:
    """``rclpy.init`` with ``argv`` (``--ros-args ...`` included); returns the non-ROS arguments."""
    rclpy = import_rclpy()
    from rclpy.utilities import remove_ros_args

    argv = list(argv) if argv is not None else []
    if not rclpy.ok():
        from rclpy.signals import SignalHandlerOptions

        # SIGINT / SIGTERM end the spin loop but leave the context up, so nodes can publish a safe
        # command on the way out (rclpy's own handlers would shut the context down first).
        rclpy.init(args=["embodia", *argv], signal_handler_options=SignalHandlerOptions.NO)
        _install_stop_handlers()
    return remove_ros_args(["embodia", *argv])[1:]


_STOP = threading.Event()


def stop_requested() -> bool:
    """Whether SIGINT / SIGTERM asked the process to stop."""
    return _STOP.is_set()


def request_stop() -> None:
    _STOP.set()


def _install_stop_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    _STOP.clear()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: _STOP.set())


def shutdown() -> None:
    rclpy = import_rclpy()
    if rclpy.ok():
        rclpy.try_shutdown()


#: history a publisher keeps for its slowest reliable subscriber: a KEEP_LAST writer overwrites samples a
#: subscriber has not acknowledged yet, so a recorder that falls behind (a machine under load) loses
#: messages unless the writer keeps enough. Readers keep their own, shorter, depth.
PUBLISHER_DEPTH = 200


def qos(depth: int = 10) -> Any:
    """Reliable, volatile, keep-last ``depth``: compatible with every default ROS 2 publisher / subscriber."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


def tf_qos(static: bool, depth: int = 10) -> Any:
    """What tf2_ros's listener subscribes with: ``/tf`` keep-last 100 (or ``depth``), ``/tf_static``
    transient local (a static broadcaster's transforms reach subscribers that start later)."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(
        depth=max(100, depth),
        history=HistoryPolicy.KEEP_LAST,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if static else DurabilityPolicy.VOLATILE,
    )


def json_message(payload: dict[str, Any]) -> Any:
    from std_msgs.msg import String

    msg = String()
    msg.data = json.dumps(payload, default=float)
    return msg


def declare(node: Any, name: str, default: Any) -> Any:
    """Declare a dynamically typed parameter and return its value (``default`` when not set)."""
    from rcl_interfaces.msg import ParameterDescriptor

    value = node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True)).value
    return default if value is None else value


def spin(
    node: Any,
    rate: RateController | None,
    on_tick: Callable[[float], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    duration: float | None = None,
) -> None:
    """Process callbacks, and call ``on_tick(now)`` at the rate's deadlines, until shutdown or ``should_stop()``.

    Deadlines come from :class:`RateController` (drift-free; missed ticks are skipped and counted).
    Ctrl-C / SIGTERM end the loop cleanly (rclpy shuts the context down).
    """
    rclpy = import_rclpy()
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    started = time.monotonic()
    if rate is not None:
        rate.start(started)
    try:
        while rclpy.ok(context=node.context) and not should_stop() and not _STOP.is_set():
            now = time.monotonic()
            if duration is not None and now - started >= duration:
                break
            timeout = rate.time_until_next(now) if rate is not None else 0.05
            executor.spin_once(timeout_sec=timeout)
            now = time.monotonic()
            if rate is not None and rate.due(now):
                rate.tick(now)
                if on_tick is not None:
                    on_tick(now)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.remove_node(node)
