"""One writer per trajectory store: an advisory lock that dies with its process.

The lock is ``fcntl.flock`` on ``<store>/.embodia-writer.lock``. The kernel releases it when the holding
process exits for any reason, SIGKILL included, so a killed writer never leaves a store locked; a second
writer (another process, or a second handle in the same process) fails at once with
:class:`~embodia.core.errors.StoreLockedError`, saying who holds the lock. The file itself stays (removing a
lock file races with the next writer); it holds the current writer's pid, host, command and start time.
Advisory locks work on local file systems; on network file systems they depend on the server.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import sys
from pathlib import Path

from embodia.core.errors import StoreLockedError

LOCK_NAME = ".embodia-writer.lock"


class WriterLock:
    """The exclusive writer lock of the store at ``store_path`` (acquired by :meth:`acquire`)."""

    def __init__(self, store_path: Path) -> None:
        self.path = Path(store_path) / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock without waiting.

        Raises:
            StoreLockedError: another writer holds it.
        """
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe_holder(fd)
            os.close(fd)
            store = str(self.path.parent)
            raise StoreLockedError(
                f"trajectory store {store!r} is being written by {holder}; one writer at a time: wait for it "
                "to finish, or record into another store"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200] if sys.argv else "",
            "since": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock up (also happens when the process exits)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __del__(self) -> None:
        self.release()


def _describe_holder(fd: int) -> str:
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        record = {}
    if not record.get("pid"):
        return "another writer"
    same_host = record.get("host") == socket.gethostname()
    who = "this process" if same_host and record["pid"] == os.getpid() else f"process {record['pid']}"
    if not same_host:
        who += f" on {record.get('host')}"
    command = f" ({record['command']})" if record.get("command") else ""
    since = f" since {record['since']}" if record.get("since") else ""
    return f"{who}{command}{since}"
