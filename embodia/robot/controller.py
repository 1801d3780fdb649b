"""What the policy node does between receiving messages and publishing a command, without ROS.

:class:`PolicyController` keeps the newest valid array of every observation topic, assembles the
policy's observation dict (topics sharing a key are concatenated in config order), runs the policy
(one step of the current chunk per tick for action-chunk policies), and passes its output through the
watchdog and the command filter of :mod:`embodia.robot.safety`. The rclpy node only converts between
messages and calls :meth:`observe` / :meth:`tick`; everything here is tested without a ROS graph.

Observation trigger (lockstep): an observation is *complete* when every required topic delivered a
message since the last action and all stamped topics (those with a header) carry the same stamp, or stamps
within ``sync_window`` seconds of each other (approximate-time synchronisation, as ``message_filters``'
``ApproximateTimeSynchronizer`` with that slop). The command then answers the newest of those stamps, so a
lockstep simulator can match commands to its observations.

Transform observations (``type: TFMessage``) are not converted message by message: every ``/tf`` and
``/tf_static`` message goes into one :class:`~embodia.robot.transforms.TransformBuffer`, and each transform
observation is looked up again after it (the pose of ``child_frame`` in ``parent_frame``, stamped with the
oldest dynamic transform used). A lookup takes part in ordering, age and synchronisation checks like a stamped
topic; one made of static transforms only has no stamp and never goes stale.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.core.chunks import ActionChunker
from embodia.robot.config import IMAGE_TYPES, PolicyNodeConfig, check_node_config
from embodia.robot.convert import header_stamp_ns, to_array
from embodia.robot.errors import MessageError
from embodia.robot.safety import CommandFilter, Watchdog
from embodia.robot.transforms import TransformBuffer, pose_fields


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
    static: bool = False  # a transform made of static transforms only: a constant, never stale


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
        self.rejected: dict[str, int] = {o.label: 0 for o in cfg.observations}
        #: /tf and /tf_static, for the transform observations (see the module docstring)
        self.transforms = TransformBuffer()
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
            out_of_order=0,
            stale_stamp=0,
            clock_jumps=0,
        )
        self._newest_stamp: list[int | None] = [None] * len(cfg.observations)
        self._backwards_since: list[float | None] = [None] * len(cfg.observations)
        #: seconds each of the recent policy calls took (inference latency, for the diagnostics)
        self.latencies: deque[float] = deque(maxlen=1000)
        self._stale = False
        self._answered: TickResult | None = None  # the last policy command and the stamp it answered
        self._answered_obs: dict[str, Any] | None = None  # the observation it answered

    # ------------------------------------------------------------------ inputs
    def observe(self, index: int, msg: Any, now: float, clock_ns: int | None = None) -> None:
        """Convert and store a message of observation topic ``index`` received at ``now`` (monotonic seconds);
        ``clock_ns`` is the node's ROS time, for ``max_stamp_age``.

        A stamped message older than the newest one of its topic since the last reset is out of order, and one
        stamped more than ``max_stamp_age`` before ``clock_ns`` is stale; both are rejected, so no command
        ever answers them (a network that reorders or replays messages cannot make the robot act on the past).
        When a topic delivers only older stamps for a whole ``watchdog_timeout`` (the watchdog has sent the
        safe command by then), its clock jumped back (or one message from the future set "newest"): the node
        follows the new stamps again and counts a ``clock_jumps``.

        Raises:
            MessageError: the message does not fit the topic's config, is out of order or stale; nothing is
                stored (the caller logs).
        """
        topic = self.config.observations[index]
        try:
            value = to_array(msg, topic.type, **topic.reader_options())
            if topic.short_type == "CompressedImage":
                self._check_size(topic, value)
            self._check_stamp(index, header_stamp_ns(msg), clock_ns, now)
        except MessageError:
            self.rejected[topic.label] += 1
            raise
        self._store(index, value, header_stamp_ns(msg), now)

    @staticmethod
    def _check_size(topic: Any, image: np.ndarray) -> None:
        h, w = image.shape[:2]
        if (topic.height is not None and h != topic.height) or (topic.width is not None and w != topic.width):
            raise MessageError(f"image is {h}x{w} (HxW), expected {topic.height}x{topic.width}")

    def observe_transforms(
        self, msg: Any, now: float, static: bool = False, clock_ns: int | None = None
    ) -> list[str]:
        """Take a TFMessage from ``/tf`` (``/tf_static`` when ``static``) and update the transform observations
        whose chain it changed; the reasons of the lookups rejected (out of order, stale), for the log.

        Raises:
            MessageError: the message holds a malformed transform; nothing of it is taken.
        """
        try:
            self.transforms.add(msg, static)
        except MessageError:
            for topic in self.config.observations:
                if topic.is_transform:
                    self.rejected[topic.label] += 1
            raise
        problems = []
        for index, topic in enumerate(self.config.observations):
            if not topic.is_transform:
                continue
            try:
                found = self.transforms.lookup(topic.parent_frame, topic.child_frame)
                if found is None:
                    continue
                translation, rotation, stamp = found
                latest = self._latest[index]
                if latest.value is not None and stamp is not None and stamp == latest.stamp_ns:
                    continue  # this message did not touch the chain (another broadcaster's frames)
                self._check_stamp(index, stamp, clock_ns, now)
            except MessageError as error:
                self.rejected[topic.label] += 1
                problems.append(f"{topic.label}: {error}")
                continue
            self._store(index, pose_fields(translation, rotation, topic.fields), stamp, now)
            self._latest[index].static = stamp is None
        return problems

    def _store(self, index: int, value: Any, stamp_ns: int | None, now: float) -> None:
        topic = self.config.observations[index]
        if not isinstance(value, str):
            dtype = topic.dtype or (value.dtype if topic.short_type in IMAGE_TYPES else np.float32)
            value = value.astype(dtype, copy=False)
        latest = self._latest[index]
        latest.value, latest.stamp_ns, latest.arrived, latest.fresh = value, stamp_ns, now, True
        self._feed(topic)

    def _feed(self, topic: Any) -> None:
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

    def _check_stamp(self, index: int, stamp: int | None, clock_ns: int | None, now: float) -> None:
        if stamp is None:
            return
        newest = self._newest_stamp[index]
        if newest is not None and stamp < newest:
            since = self._backwards_since[index]
            if since is None or now - since < self.config.watchdog_timeout:
                self._backwards_since[index] = now if since is None else since
                self.counters["out_of_order"] += 1
                raise MessageError(
                    f"out of order: stamped {(newest - stamp) / 1e9:.3f} s before the newest message on this topic"
                )
            # only older stamps for a whole watchdog timeout (the safe command went out meanwhile): the clock
            # jumped back, or one message from the future poisoned "newest"; follow the stamps again
            self.counters["clock_jumps"] += 1
        self._backwards_since[index] = None
        limit = self.config.max_stamp_age
        if limit is not None and clock_ns is not None and clock_ns - stamp > limit * 1e9:
            self.counters["stale_stamp"] += 1
            raise MessageError(
                f"stale: stamped {(clock_ns - stamp) / 1e9:.3f} s ago (max_stamp_age {limit:g} s)"
            )
        self._newest_stamp[index] = stamp

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
        # a new episode may restart the clock (a simulator reset): stamps before it are no longer "newer"
        self._newest_stamp = [None] * len(self.config.observations)
        self._backwards_since = [None] * len(self.config.observations)
        self.transforms.clear_dynamic()
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
            if not topic.required or latest.static:
                continue
            if not latest.fresh:
                return False
            if latest.stamp_ns is not None:
                stamps.add(latest.stamp_ns)
        return not stamps or max(stamps) - min(stamps) <= self.config.sync_window * 1e9

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
        for topic, latest in zip(self.config.observations, self._latest):
            if latest.static:  # a constant transform is as fresh as the tick
                latest.arrived = now
                self._feed(topic)
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
            topic.label: now - latest.arrived if latest.value is not None else float("inf")
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
