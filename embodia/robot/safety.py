"""Safety logic of the policy node as plain objects: observation watchdog and command filter.

Watchdog: an observation key is *stale* when its newest message arrived more than ``timeout`` seconds
ago (by the node's monotonic clock, never by message stamps, which a restarted simulator resets), or
never arrived. While any required key is stale the node publishes the safe command instead of running
the policy, and says so once per transition.

Command filter: a policy output ``a`` becomes the published command ``u`` as

    u = safe                       if a has the wrong shape or any entry is NaN / inf
    u = safe                       if mode == "stop" and any a_i is outside [low_i, high_i]
    u = clip(a, low, high)         otherwise (counted when clipping changed a value)

so no non-finite or out-of-range value ever reaches the command topic. ``safe`` is zero, the last
command that passed (``hold``), or a fixed vector from the config.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.robot.errors import RobotConfigError


@dataclass
class WatchdogReport:
    """Result of one watchdog check."""

    stale: list[str]
    """keys whose newest message is too old or missing"""
    changed: bool
    """whether the set of stale keys differs from the previous check (log on transitions only)"""

    @property
    def ok(self) -> bool:
        return not self.stale


class Watchdog:
    """Tracks when each observation key last arrived; reports the stale ones.

    Args:
        keys: the observation keys that must be fresh.
        timeout: seconds after which a key is stale.
    """

    def __init__(self, keys: Iterable[str], timeout: float) -> None:
        if not (math.isfinite(timeout) and timeout > 0):
            raise RobotConfigError(
                f"watchdog timeout must be a positive finite number of seconds, got {timeout}"
            )
        self.keys = list(keys)
        self.timeout = float(timeout)
        self._last: dict[str, float] = {}
        self._previous: list[str] | None = None
        self.stale_checks = 0

    def feed(self, key: str, now: float) -> None:
        """Record that a valid message for ``key`` arrived at time ``now`` (seconds, monotonic)."""
        self._last[key] = now

    def age(self, key: str, now: float) -> float:
        """Seconds since ``key`` last arrived (``inf`` if never)."""
        last = self._last.get(key)
        return float("inf") if last is None else now - last

    def check(self, now: float) -> WatchdogReport:
        stale = [k for k in self.keys if self.age(k, now) > self.timeout]
        changed = self._previous is None or stale != self._previous
        self._previous = stale
        if stale:
            self.stale_checks += 1
        return WatchdogReport(stale, changed)


def _vector(values: Any, name: str) -> np.ndarray:
    """``values`` as a flat float64 array of finite numbers (``name`` says which one in errors)."""
    try:
        array = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise RobotConfigError(f"{name}: expected a list of numbers, got {values!r}") from None
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        i = int(bad[0])
        raise RobotConfigError(
            f"{name}.{i}: command bounds and vectors must be finite numbers (got {array[i]})"
        )
    return array


@dataclass
class CommandLimits:
    """Bounds and the fault response of the command filter.

    Checked again here (a node config is validated before, see :mod:`embodia.robot.config`): bounds and a
    safe vector must be finite, the same length, ``low <= high`` and the safe vector inside them, so
    that no NaN can become a command, not even the safe one.
    """

    low: np.ndarray
    """lower bound per command entry"""
    high: np.ndarray
    """upper bound per command entry"""
    out_of_range: str = "clip"
    """``clip``: clip to [low, high]; ``stop``: publish the safe command instead"""
    safe: str | Sequence[float] = "zero"
    """``zero``, ``hold`` (last command that passed) or a fixed vector"""

    def __post_init__(self) -> None:
        self.low = _vector(self.low, "low")
        self.high = _vector(self.high, "high")
        if self.low.size == 0:
            raise RobotConfigError("low: the command needs at least one entry")
        if self.low.shape != self.high.shape:
            raise RobotConfigError(f"low has {self.low.size} entries, high has {self.high.size}")
        above = np.flatnonzero(self.low > self.high)
        if above.size:
            i = int(above[0])
            raise RobotConfigError(
                f"low > high at entry {i} (low.{i} = {self.low[i]:g}, high.{i} = {self.high[i]:g})"
            )
        if self.out_of_range not in ("clip", "stop"):
            raise RobotConfigError(f"out_of_range must be 'clip' or 'stop', got {self.out_of_range!r}")
        if isinstance(self.safe, str):
            if self.safe not in ("zero", "hold"):
                raise RobotConfigError(f"safe command must be 'zero', 'hold' or a vector, got {self.safe!r}")
        else:
            safe = _vector(self.safe, "safe")
            if safe.shape != self.low.shape:
                raise RobotConfigError(f"safe has {safe.size} entries, the command has {self.low.size}")
            outside = np.flatnonzero((safe < self.low) | (safe > self.high))
            if outside.size:
                i = int(outside[0])
                raise RobotConfigError(
                    f"safe.{i} ({safe[i]:g}) is not within the limits [{self.low[i]:g}, {self.high[i]:g}]"
                )
            self.safe = safe.tolist()

    @property
    def size(self) -> int:
        return int(self.low.size)


@dataclass
class FilterResult:
    """One filtered command."""

    command: np.ndarray
    """what may be published"""
    fault: str | None = None
    """``None``, ``"clipped"`` (published, clipped), or a safe-stop reason: ``"nan"``, ``"shape"``, ``"out_of_range"``"""

    @property
    def safe_stop(self) -> bool:
        return self.fault not in (None, "clipped")


@dataclass
class CommandFilter:
    """Turns raw policy outputs into publishable commands (see the module docstring); counts faults."""

    limits: CommandLimits
    counters: dict[str, int] = field(
        default_factory=lambda: {"clipped": 0, "nan": 0, "shape": 0, "out_of_range": 0}
    )
    _last_good: np.ndarray | None = None

    def safe_command(self) -> np.ndarray:
        safe = self.limits.safe
        if safe == "hold" and self._last_good is not None:
            return self._last_good.copy()
        if isinstance(safe, list):
            return np.asarray(safe, dtype=np.float64)
        return np.clip(np.zeros(self.limits.size), self.limits.low, self.limits.high)

    def __call__(self, raw: np.ndarray) -> FilterResult:
        action = np.asarray(raw, dtype=np.float64)
        if action.shape != (self.limits.size,):
            self.counters["shape"] += 1
            return FilterResult(self.safe_command(), "shape")
        if not np.isfinite(action).all():
            self.counters["nan"] += 1
            return FilterResult(self.safe_command(), "nan")
        low, high = self.limits.low, self.limits.high
        outside = (action < low) | (action > high)
        if outside.any():
            if self.limits.out_of_range == "stop":
                self.counters["out_of_range"] += 1
                return FilterResult(self.safe_command(), "out_of_range")
            self.counters["clipped"] += 1
            action = np.clip(action, low, high)
            self._last_good = action
            return FilterResult(action.copy(), "clipped")
        self._last_good = action
        return FilterResult(action.copy(), None)
