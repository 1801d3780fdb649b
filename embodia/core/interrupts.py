"""Ctrl-C (SIGINT) at safe points: a store write is never torn, a parallel run stops between episodes.

Python raises ``KeyboardInterrupt`` at whatever bytecode is running when Ctrl-C arrives, which can be in the
middle of a store write or between handing an episode over and counting it. Two tools keep that from
losing or duplicating data:

- :func:`held_interrupt` holds Ctrl-C while a short critical section runs (a store commit) and delivers it
  to the handler that was installed before, right after the section;
- :func:`interrupt_flag` turns Ctrl-C into a flag that a long loop checks between units of work (a
  second Ctrl-C interrupts at once).

Signal handlers belong to the main thread: on any other thread both leave Ctrl-C as it is.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def held_interrupt() -> Iterator[None]:
    """Hold a Ctrl-C that arrives inside the block; deliver it to the previous handler when the block ends."""
    if not _on_main_thread():
        yield
        return
    received: list[FrameType | None] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            if callable(previous):
                previous(signal.SIGINT, received[0])
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


class InterruptFlag:
    """Set when Ctrl-C was pressed while :func:`interrupt_flag` was active."""

    requested: bool = False


@contextlib.contextmanager
def interrupt_flag() -> Iterator[InterruptFlag]:
    """Turn the first Ctrl-C inside the block into ``flag.requested = True``; a second one interrupts."""
    flag = InterruptFlag()
    if not _on_main_thread():
        yield flag
        return

    def on_sigint(signum: int, frame: Any) -> None:
        if flag.requested:
            raise KeyboardInterrupt
        flag.requested = True

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
