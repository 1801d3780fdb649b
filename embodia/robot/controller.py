"""What the policy node does between receiving messages and publishing a command, without ROS.

:class:`PolicyController` keeps the newest valid array of every observation topic, assembles the
policy's observation dict (topics sharing a key are concatenated in config order), runs the policy
(one step of the current chunk per tick for action-chunk policies), and passes its output through the
watchdog and the command filter of :mod:`embodia.robot.safety`. The rclpy node only converts between
messages and calls :meth:`observe` / :meth:`tick`; everything here is tested without a ROS graph.

Observation trigger (lockstep): an observation is *complete* when every required topic delivered a
message since the last action and all stamped topics (those with a header) carry the same stamp. The
command then answers that stamp, so a lockstep simulator can match commands to its observations.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.core.chunks import ActionChunker
from embodia.robot.config import PolicyNodeConfig, check_node_config
from embodia.robot.convert import header_stamp_ns, to_array
from embodia.robot.errors import MessageError
from embodia.robot.safety import CommandFilter, Watchdog


@dataclass
class TickResult:
    """One control tick's outcome."""

    command: np.ndarray
    """what to publish (always safe)"""
    reason: str
    """``policy``, ``clipped``, or why the safe command was published (``stale``, ``nan``, ``out_of_range``,
    ``shape``, ``policy_error``)"""
    stamp_ns: int | None = None
    """stamp of the observation this command answers (None for safe stops on stale observations)"""
    detail: str = ""
    """human-readable detail for the log (stale keys, error message)"""


@dataclass
class _Latest:
    value: Any = None
    stamp_ns: int | None = None
    arrived: float = float("-inf")
    fresh: bool = False


@dataclass
class PolicyController:
    """Observation assembly, policy, watchdog and command filter (see the module docstring)."""

    policy: Any
    config: PolicyNodeConfig
    counters: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.config = cfg = check_node_config(self.config)  # a config built in Python gets every check
        self._latest = [_Latest() for _ in cfg.observations]
        self.watchdog = Watchdog(cfg.required_keys, cfg.watchdog_timeout)
        self.filter = CommandFilter(cfg.command.limits())
        self.chunks = ActionChunker(self.policy, (cfg.command.size,))  # the episode runner's, too
        self.rejected: dict[str, int] = {o.topic: 0 for o in cfg.observations}
        self.counters.update(
            ticks=0,
            policy_steps=0,
            safe_stops=0,
            stale=0,
            watchdog_trips=0,
            policy_error=0,
            resets=0,
            repeats=0,
            late_resets=0,
        )
        #: seconds each of the recent policy calls took (inference latency, for the diagnostics)
        self.latencies: deque[float] = deque(maxlen=1000)
        self._stale = False
        self._answered: TickResult | None = None  # the last policy command and the stamp it answered
        self._answered_obs: dict[str, Any] | None = None  # the observation it answered

    # ------------------------------------------------------------------ inputs
    def observe(self, index: int, msg: Any, now: float) -> None:
        """Convert and store a message of observation topic ``index`` received at ``now``.

        Raises:
            MessageError: the message does not fit the topic's config; nothing is stored (the caller logs).
        """
        topic = self.config.observations[index]
        try:
            value = to_array(msg, topic.type, **topic.reader_options())
        except MessageError:
            self.rejected[topic.topic] += 1
            raise
        if not isinstance(value, str):
            dtype = topic.dtype or (value.dtype if topic.short_type == "Image" else np.float32)
            value = value.astype(dtype, copy=False)
        latest = self._latest[index]
        latest.value, latest.stamp_ns, latest.arrived, latest.fresh = value, header_stamp_ns(msg), now, True
        if topic.required:
            # a key is fed only when all of its required topics have arrived at least once
            self.watchdog.feed(
                topic.key,
                min(
                    self._latest[i].arrived
                    for i, o in enumerate(self.config.observations)
                    if o.key == topic.key and o.required
                ),
            )

    def reset(self, seed: int | None = None, stamp_ns: int | None = None) -> None:
        """A new episode: reset the policy (with ``seed``) and drop the current chunk.

        ``stamp_ns`` is the stamp of the episode's first observation (the simulator bridge sends it). When that
        observation was already answered (its message overtook the episode event), the new episode's plan is
        made from it now and its first action counted as done, so the next step continues that plan as a
        rollout does; the late event is counted (``late_resets``, in the status).
        """
        self.policy.reset(seed=seed)
        self.chunks.reset()
        self.counters["resets"] += 1
        answered, self._answered = self._answered, None
        if stamp_ns is not None and answered is not None and answered.stamp_ns == stamp_ns:
            self.counters["late_resets"] += 1
            if self._answered_obs is not None:
                self.chunks.next_action(self._answered_obs)
                self._answered = answered

    # ------------------------------------------------------------------ assembly
    def observation(self) -> dict[str, Any] | None:
        """The policy's observation from the newest messages, or None while a required topic is missing."""
        parts: dict[str, list[Any]] = {}
        for topic, latest in zip(self.config.observations, self._latest):
            if latest.value is None:
                if topic.required:
                    return None
                continue
            parts.setdefault(topic.key, []).append(latest.value)
        obs: dict[str, Any] = {}
        for key, values in parts.items():
            if isinstance(values[0], str):
                obs[key] = " ".join(values)
            elif len(values) == 1:
                obs[key] = values[0]
            else:
                obs[key] = np.concatenate([np.ravel(v) for v in values])
        return obs

    def complete(self) -> bool:
        """Whether a new complete observation is ready (observation trigger, see module docstring)."""
        stamps = set()
        for topic, latest in zip(self.config.observations, self._latest):
            if not topic.required:
                continue
            if not latest.fresh:
                return False
            if latest.stamp_ns is not None:
                stamps.add(latest.stamp_ns)
        return len(stamps) <= 1

    def _observation_stamp(self) -> int | None:
        stamps = [
            x.stamp_ns
            for x, o in zip(self._latest, self.config.observations)
            if o.required and x.stamp_ns is not None
        ]
        return max(stamps) if stamps else None

    # ------------------------------------------------------------------ control
    def tick(self, now: float) -> TickResult:
        """One control step at time ``now``: a command that is safe to publish, and why it is that one."""
        self.counters["ticks"] += 1
        report = self.watchdog.check(now)
        if not report.ok:
            if not self._stale:
                self.counters["watchdog_trips"] += 1  # fresh -> stale: one trip, however long it lasts
            self.counters["stale"] += 1
            self.counters["safe_stops"] += 1
            self.chunks.reset()  # never resume a plan made before the observations went stale
            self._answered = None
            self._stale = True
            return TickResult(self.filter.safe_command(), "stale", None, f"stale: {', '.join(report.stale)}")
        self._stale = False
        obs = self.observation()
        stamp = self._observation_stamp()
        for latest in self._latest:
            latest.fresh = False
        answered = self._answered
        lockstep = self.config.trigger == "observation"
        if lockstep and stamp is not None and answered is not None and answered.stamp_ns == stamp:
            # the same observation again (a lockstep simulator republishes it when it saw no command): the
            # same answer, and the plan does not move on (a chunk's next action belongs to the next step;
            # with the timer trigger a chunk plays on in time, whatever the observations do)
            self.counters["repeats"] += 1
            return answered
        started = time.perf_counter()
        try:
            raw = self.chunks.next_action(obs)
        except Exception as error:  # a policy that raises must not stop the robot's safety loop
            self.counters["policy_error"] += 1
            self.counters["safe_stops"] += 1
            self.chunks.reset()
            return TickResult(
                self.filter.safe_command(), "policy_error", stamp, f"{type(error).__name__}: {error}"
            )
        self.latencies.append(time.perf_counter() - started)
        self.counters["policy_steps"] += 1
        result = self.filter(raw)
        if result.safe_stop:
            self.counters["safe_stops"] += 1
            self.chunks.reset()
            return TickResult(
                result.command, result.fault, stamp, f"policy output {np.asarray(raw).tolist()}"
            )
        answer = TickResult(result.command, result.fault or "policy", stamp)
        self._answered, self._answered_obs = answer, obs
        return answer

    def reconfigure(self, config: PolicyNodeConfig) -> None:
        """Take runtime changes of the watchdog timeout and the command's limits, keeping every counter.

        ``config`` differs from the running one only in fields a running node may change (see
        :mod:`embodia.robot.node_parameters`); topics, keys and the command's size stay as they are.
        """
        config = check_node_config(config)
        self.watchdog.timeout = float(config.watchdog_timeout)
        counters, last_good = self.filter.counters, self.filter._last_good
        self.filter = CommandFilter(config.command.limits(), counters, _last_good=last_good)
        self.config = config

    def observation_ages(self, now: float) -> dict[str, float]:
        """Seconds since each observation topic last delivered a valid message (``inf``: never)."""
        return {
            topic.topic: now - latest.arrived if latest.value is not None else float("inf")
            for topic, latest in zip(self.config.observations, self._latest)
        }

    @property
    def ever_observed(self) -> bool:
        """Whether any required topic has delivered a valid message (before that there is nothing to stop)."""
        return any(x.value is not None for x, o in zip(self._latest, self.config.observations) if o.required)

    @property
    def stale(self) -> bool:
        return self._stale

    def status(self) -> dict[str, Any]:
        """Counters for the status topic and the log."""
        return {
            **self.counters,
            **{f"filter_{k}": v for k, v in self.filter.counters.items()},
            "rejected_messages": dict(self.rejected),
            "stale_now": self._stale,
        }
