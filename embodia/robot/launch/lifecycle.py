"""Driving a launched managed node through its transitions, as launch_ros's ``LifecycleNode(autostart=True)`` does.

When a ``lifecycle_node`` with ``autostart: true`` starts (or any ``lifecycle_node`` under
``embodia robot launch FILE --activate``), the supervisor runs :func:`autostart` in a thread: it waits for
the node's ``change_state`` service to appear in the ROS graph (while the process lives and the launch runs),
then requests ``configure`` and ``activate`` and prints what each answered. It uses an rclpy context of its
own, so it never touches the global one of the process that runs the supervisor.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

#: how long a launched node may take to offer its lifecycle services (imports, loading a policy)
SERVICE_WAIT = 300.0
#: how long one transition may take to answer (configure loads the policy)
TRANSITION_WAIT = 120.0


def autostart(
    full_name: str,
    alive: Callable[[], bool],
    stop: threading.Event,
    say: Callable[[str], None],
    transitions: tuple[str, ...] = ("configure", "activate"),
) -> bool:
    """Bring the managed node ``full_name`` through ``transitions``; True when every one succeeded.

    ``alive()`` says whether its process still runs; ``stop`` is the launch's shutdown; ``say`` prints a line.
    """
    from embodia.robot import ros

    try:
        rclpy = ros.import_rclpy()
    except ros.RosUnavailableError as error:
        say(f"[ERROR] [launch]: cannot drive {full_name}'s lifecycle: {error}")
        return False
    from embodia.robot.lifecycle_node import change_state

    context = rclpy.Context()
    rclpy.init(context=context)
    node_name = "embodia_launch_" + re.sub(r"[^A-Za-z0-9_]", "_", full_name).strip("_")
    node = rclpy.create_node(node_name, context=context, start_parameter_services=False)
    service = f"{full_name}/change_state"
    try:
        deadline = time.monotonic() + SERVICE_WAIT
        while not any(name == service for name, _ in node.get_service_names_and_types()):
            if stop.is_set() or not alive():
                return False
            if time.monotonic() > deadline:
                say(f"[ERROR] [launch]: {service} did not appear within {SERVICE_WAIT:g} s")
                return False
            stop.wait(0.2)
        for transition in transitions:
            try:
                ok = change_state(node, full_name, transition, timeout=TRANSITION_WAIT)
            except TimeoutError as error:
                say(f"[ERROR] [launch]: {transition} of {full_name}: {error}")
                return False
            if not ok:
                say(f"[ERROR] [launch]: {full_name} refused {transition} (its log says why)")
                return False
            say(f"[INFO] [launch]: {full_name}: {transition} succeeded")
        return True
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
