"""Network faults the simulator bridge can inject into its observation topics, seeded, for CI.

A real robot's network delays, loses, replays and reorders messages, and simulators reset their clocks; a
policy node must stay safe through all of it. ``embodia robot sim ENV --faults SPEC --fault-seed N``
applies these to every observation message it publishes (each message independently, from one seeded
random stream, so a run is repeatable):

``delay=20ms``
    hold every message this long before publishing it;
``jitter=5ms``
    plus a uniform extra delay in [0, jitter];
``drop=0.05``
    lose a message with this probability;
``stale=0.01``
    with this probability also publish, after the current message, the previous message of that topic (an
    old reading replayed);
``reorder=0.01``
    with this probability hold a message back and publish it after the next message of its topic;
``clock_jump=-5s``
    shift the simulated clock (``/clock`` and every stamp) by this much at the start of every episode after
    the first (negative: backwards, as a simulator reset does).

Durations take ``ms`` or ``s`` (plain numbers are seconds). The bridge counts what it did in its status.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any

from embodia.robot.errors import RobotConfigError

_PROBABILITIES = ("drop", "stale", "reorder")
_DURATIONS = ("delay", "jitter", "clock_jump")


@dataclass(frozen=True)
class FaultSpec:
    """Which faults, how strong (see the module docstring)."""

    delay: float = 0.0
    """seconds every message is held"""
    jitter: float = 0.0
    """seconds of uniform extra delay, at most"""
    drop: float = 0.0
    """probability a message is lost"""
    stale: float = 0.0
    """probability the previous message of the topic is published again after the current one"""
    reorder: float = 0.0
    """probability a message is held back until after the next one of its topic"""
    clock_jump: float = 0.0
    """seconds the clock shifts at the start of every episode after the first"""

    @property
    def active(self) -> bool:
        return any(getattr(self, name) for name in (*_PROBABILITIES, *_DURATIONS))

    def describe(self) -> str:
        parts = [f"{n}={getattr(self, n):g}" for n in (*_DURATIONS, *_PROBABILITIES) if getattr(self, n)]
        return ",".join(parts) or "none"


def _seconds(name: str, text: str) -> float:
    scale = 1e-3 if text.endswith("ms") else 1.0
    number = text[:-2] if text.endswith("ms") else text[:-1] if text.endswith("s") else text
    try:
        value = float(number) * scale
    except ValueError:
        raise RobotConfigError(f"--faults: {name}={text}: not a duration (e.g. 20ms, 0.5s)") from None
    if not math.isfinite(value):
        raise RobotConfigError(f"--faults: {name}={text}: must be finite")
    return value


def parse_faults(text: str | None) -> FaultSpec:
    """``"delay=20ms,jitter=5ms,drop=0.05"`` -> :class:`FaultSpec` (``None`` or ``""``: no faults).

    Raises:
        RobotConfigError: one line naming the bad entry.
    """
    values: dict[str, float] = {}
    for entry in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, raw = entry.partition("=")
        if not sep:
            raise RobotConfigError(f"--faults: {entry!r} is not NAME=VALUE")
        if name in _DURATIONS:
            value = _seconds(name, raw)
            if name != "clock_jump" and value < 0:
                raise RobotConfigError(f"--faults: {name}={raw}: must be >= 0")
        elif name in _PROBABILITIES:
            try:
                value = float(raw)
            except ValueError:
                raise RobotConfigError(f"--faults: {name}={raw}: not a probability") from None
            if not 0.0 <= value <= 1.0:
                raise RobotConfigError(f"--faults: {name}={raw}: a probability is in [0, 1]")
        else:
            known = ", ".join((*_DURATIONS, *_PROBABILITIES))
            raise RobotConfigError(f"--faults: unknown fault {name!r} (known: {known})")
        values[name] = value
    return FaultSpec(**values)


@dataclass
class FaultInjector:
    """Decides, per message, what the network does with it; holds messages until they are due.

    :meth:`submit` takes a message of ``topic`` at time ``now``; :meth:`due` returns the messages whose time
    has come, in the order they leave the "network". Messages are opaque (the bridge's (publisher, msg)).
    """

    spec: FaultSpec
    seed: int = 0
    counts: dict[str, int] = field(
        default_factory=lambda: {"sent": 0, "dropped": 0, "delayed": 0, "stale": 0, "reordered": 0}
    )

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._queue: list[tuple[float, int, Any]] = []
        self._order = itertools.count()
        self._previous: dict[str, Any] = {}
        self._held: dict[str, Any] = {}

    def _send(self, message: Any, at: float) -> None:
        heapq.heappush(self._queue, (at, next(self._order), message))

    def submit(self, topic: str, message: Any, now: float) -> None:
        spec, draw = self.spec, self._random.random
        # one draw per fault and message, always in this order: the stream (and so the run) is repeatable
        dropped, replay, hold = draw() < spec.drop, draw() < spec.stale, draw() < spec.reorder
        at = now + spec.delay + spec.jitter * draw()
        previous, self._previous[topic] = self._previous.get(topic), message
        if dropped:
            self.counts["dropped"] += 1
            return
        if at > now:
            self.counts["delayed"] += 1
        held = self._held.pop(topic, None)
        if hold and held is None:
            self._held[topic] = message  # goes out after the next message of this topic
            self.counts["reordered"] += 1
        else:
            self._send(message, at)
        if held is not None:
            self._send(held, at)
        if replay and previous is not None:
            self._send(previous, at)
            self.counts["stale"] += 1

    def due(self, now: float) -> list[Any]:
        out = []
        while self._queue and self._queue[0][0] <= now:
            out.append(heapq.heappop(self._queue)[2])
        self.counts["sent"] += len(out)
        return out

    def next_due(self) -> float | None:
        return self._queue[0][0] if self._queue else None
