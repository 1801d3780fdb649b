"""Run a command inside a fresh network namespace with only loopback up (multicast routed to it).

DDS discovery multicasts on every interface; inside such a namespace it never leaves the machine and
never sees other ROS 2 graphs, so multi-process ROS tests and demos are isolated (needs root, as in CI)::

    unshare -n -- bash -c 'ip link set lo up && ip link set lo multicast on &&
                           ip route add 224.0.0.0/4 dev lo && exec "$@"' netns CMD...

Every process started from ``CMD`` shares the namespace, so one isolated driver can start several nodes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from embodia.robot.errors import IsolationError

SETUP = 'ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec "$@"'


def check_isolation() -> None:
    """Raise :class:`IsolationError` (saying what is missing) unless a namespace can be created here."""
    missing = [tool for tool in ("unshare", "ip", "bash") if shutil.which(tool) is None]
    if missing:
        raise IsolationError(
            f"{', '.join(missing)} not found; install util-linux and iproute2 (apt-get install iproute2)"
        )
    if os.geteuid() != 0:
        raise IsolationError(
            "an isolated network namespace needs root (unshare -n); run as root or without --isolated"
        )


def isolated_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped so that it runs in a fresh loopback-only network namespace."""
    return ["unshare", "-n", "--", "bash", "-c", SETUP, "netns", *argv]


def run_isolated(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run`` of ``argv`` inside a fresh network namespace (keyword arguments are passed on)."""
    check_isolation()
    return subprocess.run(isolated_argv(argv), **kwargs)


def popen_isolated(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen`` of ``argv`` inside a fresh network namespace."""
    check_isolation()
    return subprocess.Popen(isolated_argv(argv), **kwargs)
