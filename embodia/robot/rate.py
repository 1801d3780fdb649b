"""Fixed-rate control timing as a plain object: drift-free deadlines, overrun handling, jitter statistics.

Tick ``k`` is due at ``t_k = t_0 + k * T`` (``T = 1 / rate_hz``), so lateness never accumulates into
drift. When a tick runs so late that one or more deadlines have passed, the missed ticks are skipped
(counted as overruns) instead of being run back to back. Jitter of tick ``k`` is ``t_actual - t_k``;
the achieved rate is ``(ticks - 1) / (t_last - t_first)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from embodia.robot.errors import RobotConfigError


@dataclass
class RateStats:
    """What a run of ticks achieved."""

    target_hz: float
    achieved_hz: float
    ticks: int
    overruns: int
    jitter_p50_ms: float
    jitter_p99_ms: float
    jitter_max_ms: float

    def to_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


class RateController:
    """Says how long to wait for the next tick and records when ticks actually ran.

    Args:
        rate_hz: the control rate.
        keep: how many recent tick lateness samples to keep for the statistics.
    """

    def __init__(self, rate_hz: float, keep: int = 100_000) -> None:
        if not (math.isfinite(rate_hz) and rate_hz > 0):
            raise RobotConfigError(f"control rate must be a positive finite number, got {rate_hz} Hz")
        self.rate_hz = float(rate_hz)
        self.period = 1.0 / self.rate_hz
        self.keep = keep
        self._start: float | None = None
        self._index = 0
        self._late: list[float] = []
        self._first_tick: float | None = None
        self._last_tick: float | None = None
        self.ticks = 0
        self.overruns = 0

    def start(self, now: float) -> None:
        """Schedule the first tick at ``now``."""
        self._start, self._index = now, 0

    def set_rate(self, rate_hz: float, clear_stats: bool = False) -> None:
        """Run at ``rate_hz`` from the next deadline on (a running loop keeps its phase); ``clear_stats``
        forgets the ticks so far, so the statistics describe the new rate only."""
        if not (math.isfinite(rate_hz) and rate_hz > 0):
            raise RobotConfigError(f"control rate must be a positive finite number, got {rate_hz} Hz")
        if self._start is not None:
            self._start, self._index = self.next_deadline, 0
        self.rate_hz, self.period = float(rate_hz), 1.0 / float(rate_hz)
        if clear_stats:
            self._late, self._first_tick, self._last_tick = [], None, None
            self.ticks = self.overruns = 0

    @property
    def next_deadline(self) -> float:
        if self._start is None:
            raise RuntimeError("RateController.start() was not called")
        return self._start + self._index * self.period

    def time_until_next(self, now: float) -> float:
        """Seconds until the next tick is due (0 if it is due already)."""
        return max(0.0, self.next_deadline - now)

    def due(self, now: float) -> bool:
        return now >= self.next_deadline

    def tick(self, now: float) -> float:
        """Record a tick that runs at ``now`` (call when :meth:`due`); returns its lateness in seconds."""
        deadline = self.next_deadline
        late = now - deadline
        missed = int(late // self.period)  # whole periods already passed: skip those ticks
        self.overruns += missed
        self._index += 1 + missed
        self.ticks += 1
        if len(self._late) < self.keep:
            self._late.append(late - missed * self.period)
        if self._first_tick is None:
            self._first_tick = now
        self._last_tick = now
        return late

    def stats(self) -> RateStats:
        late = np.asarray(self._late) * 1e3 if self._late else np.zeros(1)
        span = (self._last_tick or 0.0) - (self._first_tick or 0.0)
        achieved = (self.ticks - 1) / span if self.ticks > 1 and span > 0 else 0.0
        return RateStats(
            target_hz=self.rate_hz,
            achieved_hz=achieved,
            ticks=self.ticks,
            overruns=self.overruns,
            jitter_p50_ms=float(np.percentile(late, 50)),
            jitter_p99_ms=float(np.percentile(late, 99)),
            jitter_max_ms=float(late.max()),
        )
