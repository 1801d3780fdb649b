"""A local Ray instance does not outlive the command that started it, even when that command is SIGKILLed.

``ray.init()`` without an address starts the processes of a Ray node (GCS server, raylet, dashboard agent,
runtime-env agent, workers) as children of the driver. ``ray.shutdown()`` stops them, but a driver killed
with SIGKILL runs no shutdown, and Ray's agents (``ray::DashboardAgent``, the runtime-env agent) then keep
running, reparented to init, holding ports and memory until someone runs ``ray stop`` — which stops every
Ray instance on the machine, other people's included.

So when embodia starts a local instance it also starts this reaper: a small process in a session of its own
that notes the driver's descendants (every half second, so workers started later count too, each with its
start time, so a reused pid is never mistaken for one of them) and waits for the driver to end (a pidfd: an
event, not a poll). When the driver ends it sends SIGTERM to every noted process still running, and SIGKILL
a few seconds later to those that ignored it. A cluster given with ``--ray-address`` belongs to someone
else: no reaper watches it. A driver that ends normally has stopped its instance with ``ray.shutdown()``
and then stops the reaper (:func:`stop_reaper`).

It runs as ``python -c "from embodia.runner.ray_reaper import reap; reap(DRIVER_PID)"``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

#: seconds between SIGTERM and SIGKILL for the processes a dead driver left
KILL_AFTER = 5.0
#: seconds between two looks at the driver's descendants
REFRESH = 0.5


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _parents() -> dict[int, int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    return parents


def descendants(pid: int) -> dict[int, int]:
    """Every process below ``pid`` now: pid -> start time."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, stack = {}, list(children.get(pid, []))
    while stack:
        child = stack.pop()
        start = start_time(child)
        if start is not None:
            found[child] = start
            stack += children.get(child, [])
    return found


def processes_naming(text: str) -> dict[int, int]:
    """The processes whose command line contains ``text`` (a Ray cluster started with ``--temp-dir DIR``:
    every node process names DIR, the agents and workers below them do not), with their descendants:
    pid -> start time. What stops one cluster and no other, where ``ray stop`` stops every Ray on the
    machine."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if text.encode() in command and int(entry.name) != os.getpid():
            start = start_time(int(entry.name))
            if start is not None:
                found[int(entry.name)] = start
            found.update(descendants(int(entry.name)))
    return found


def _alive(noted: dict[int, int]) -> list[int]:
    return [pid for pid, start in noted.items() if start_time(pid) == start]


def reap(driver: int) -> int:
    """Watch ``driver``; when it ends, stop what it left running. Returns how many processes it stopped."""
    me = os.getpid()
    try:
        pidfd = os.pidfd_open(driver)
    except ProcessLookupError:
        return 0
    noted: dict[int, int] = {}
    while True:
        noted.update({pid: start for pid, start in descendants(driver).items() if pid != me})
        ready, _, _ = select.select([pidfd], [], [], REFRESH)
        if ready:  # the driver has ended
            break
    os.close(pidfd)
    return terminate(noted)


def terminate(noted: dict[int, int], kill_after: float = KILL_AFTER) -> int:
    """SIGTERM each noted process still running (pid -> start time, so a reused pid is left alone), then
    SIGKILL those still running ``kill_after`` seconds later. Returns how many were running."""
    left = _alive(noted)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + kill_after
    while _alive(noted) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in _alive(noted):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(left)


def start_reaper() -> subprocess.Popen[bytes] | None:
    """Start a reaper for this process (Linux only: it needs pidfds and /proc; elsewhere None)."""
    if not (hasattr(os, "pidfd_open") and Path("/proc/self/stat").exists()):
        return None
    return subprocess.Popen(
        [sys.executable, "-c", f"from embodia.runner.ray_reaper import reap; reap({os.getpid()})"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C or a kill of the driver's process group does not reach it
    )


def stop_reaper(reaper: subprocess.Popen[bytes] | None) -> None:
    """The driver stopped its instance itself: the reaper has nothing left to do."""
    if reaper is not None and reaper.poll() is None:
        reaper.kill()
        reaper.wait()
