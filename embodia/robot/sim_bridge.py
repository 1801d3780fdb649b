"""The simulator bridge: an embodia environment behind the topics a robot would have.

The bridge runs seeded episodes of any embodia environment (episode ``i`` uses seed ``seed + i``, as
:func:`embodia.runner.rollout` does) and speaks ROS 2 (names relative to the node's namespace):

==================  ======================================  =============================================
topic               type                                    content
==================  ======================================  =============================================
``obs/<key>``       JointState (default) or                 each vector observation key (``state``, ``goal``),
                    Float64MultiArray                       joints named ``<key>_0 ...``
``obs/<key>``       sensor_msgs/Image                       each image key (``rgb``, ``<camera>_rgb``, ``depth``)
``obs/camera``      sensor_msgs/Image                       ``env.render()`` frames, with ``--render``
``cmd``             Float64MultiArray | Twist |             the action (subscribed)
                    TwistStamped | JointTrajectory
``/clock``          rosgraph_msgs/Clock                     simulated time
``episode``         std_msgs/String (JSON)                  ``start`` (episode, seed, env_id) / ``end``
                                                            (success, length, return) events
``~/status``        std_msgs/String (JSON)                  steps, episodes, ignored commands
==================  ======================================  =============================================

Timing. Simulated time advances by ``1 / rate_hz`` per environment step and is published on ``/clock``
and in every observation's header stamp (one stamp for all topics of a step), so nodes started with
``use_sim_time:=true`` run on simulator time. Two modes:

- ``lockstep`` (default): the simulator steps exactly once per command that answers the current
  observation, so it waits for a slow policy and runs as fast as a quick one; the closed loop is the
  same computation as :func:`embodia.runner.rollout`. Stamped commands (TwistStamped, JointTrajectory)
  must carry the observation's stamp (the policy node does this); others are taken as they come. When
  no command arrives for ``republish_period`` seconds the current observation is published again, so a
  policy node that (re)starts late picks the loop up.
- ``rate``: the simulator steps at ``rate_hz`` in wall time with the newest command (zero when the
  newest one is older than ``command_timeout``), like hardware that does not wait.

Faults. ``faults`` (``--faults delay=20ms,jitter=5ms,drop=0.05,stale=0.01,reorder=0.01,clock_jump=-5s``)
makes the observation topics behave like a bad network, seeded by ``fault_seed`` (:mod:`embodia.robot.faults`);
the status counts what was dropped, delayed, replayed and reordered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from embodia.core.validation import validate
from embodia.robot import ros
from embodia.robot.config import (
    COMMAND_TYPES,
    CommandTopic,
    Name,
    ObservationTopic,
    PolicyNodeConfig,
    PositiveInt,
    RateHz,
    Seconds,
    check_node_config,
)
from embodia.robot.convert import (
    TWIST_COMPONENTS,
    header_stamp_ns,
    image_encoding_for,
    make_float64_multi_array,
    make_image,
    make_joint_state,
    message_class,
    normalize_type,
    to_array,
)
from embodia.robot.errors import MessageError, RobotConfigError
from embodia.robot.faults import FaultInjector, parse_faults
from embodia.robot.rate import RateController


@dataclass
class BridgeConfig:
    """What the bridge simulates and how it speaks ROS (validated with :func:`check_bridge_config`)."""

    env_id: Name
    """embodia environment id"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """environment constructor arguments"""
    seed: Annotated[int, Field(ge=0)] = 0
    """episode i uses seed + i (>= 0)"""
    episodes: PositiveInt | None = None
    """stop after this many episodes (>= 1; None: run until shut down)"""
    max_steps: PositiveInt | None = None
    """cut episodes at this many steps (>= 1; on top of the environment's time limit)"""
    mode: Literal["lockstep", "rate"] = "lockstep"
    """``lockstep`` (step once per command) or ``rate`` (step at rate_hz in wall time)"""
    rate_hz: RateHz = 20.0
    """rate mode: steps per second; both modes: simulated time per step is 1 / rate_hz (in (0, 1000])"""
    state_type: str = "JointState"
    """message type of vector observations: JointState or Float64MultiArray"""
    command_type: str = "Float64MultiArray"
    """Float64MultiArray | Twist | TwistStamped | JointTrajectory"""
    twist_components: list[str] | None = None
    """Twist commands: the component of each action entry (default linear.x, linear.y, ...)"""
    render: bool = False
    """also publish env.render() frames on obs/camera"""
    republish_period: Seconds = 0.5
    """lockstep: publish the current observation again after this many seconds (> 0) without a command"""
    command_timeout: Seconds = 0.5
    """rate mode: a command older than this many seconds (> 0) is replaced by zero"""
    wait_for_subscribers: Annotated[int, Field(ge=0)] = 0
    """start the first episode only when a controller publishes on ``cmd`` and every observation topic
    and ``episode`` have at least this many subscribers (e.g. 2: the policy node and a recorder)"""
    settle: Annotated[float, Field(ge=0)] = 1.0
    """with ``wait_for_subscribers``: seconds to wait after everyone is seen before the first episode, a
    margin only. What makes a recorder miss nothing is its order: it joins ``episode`` only once the
    publishers of its topics (the policy's ``cmd``) are connected to it (:mod:`embodia.robot.record`);
    DDS discovery is asymmetric, and under load a recorder seen on ``cmd`` waited over a second for the
    policy node's publisher to deliver to it."""
    results: str | None = None
    """write per-episode results (JSON) here when the bridge stops"""
    faults: str | None = None
    """network faults injected into the observation topics, e.g. ``delay=20ms,jitter=5ms,drop=0.05,stale=0.01,
    reorder=0.01,clock_jump=-5s`` (see :mod:`embodia.robot.faults`); None: a perfect network"""
    fault_seed: Annotated[int, Field(ge=0)] = 0
    """seed of the fault decisions (>= 0): the same seed injects the same faults into the same messages"""

    def __post_init__(self) -> None:
        if self.mode not in ("lockstep", "rate"):
            raise RobotConfigError(f"bridge mode must be 'lockstep' or 'rate', got {self.mode!r}")
        if normalize_type(self.state_type).rsplit("/", 1)[1] not in ("JointState", "Float64MultiArray"):
            raise RobotConfigError(
                f"state_type must be JointState or Float64MultiArray, got {self.state_type}"
            )
        self.command_type = normalize_type(self.command_type)
        if self.command_type.rsplit("/", 1)[1] not in COMMAND_TYPES:
            raise RobotConfigError(f"command_type {self.command_type} is not a command type")
        parse_faults(self.faults)  # a bad fault spec is one line naming the entry
        bad = [c for c in self.twist_components or [] if c not in TWIST_COMPONENTS]
        if bad:
            raise RobotConfigError(f"twist_components {bad} are not Twist components {TWIST_COMPONENTS}")


def check_bridge_config(config: BridgeConfig | Mapping[str, Any], where: str = "sim bridge") -> BridgeConfig:
    """``config`` (plain data or a :class:`BridgeConfig` built in Python) with every field checked.

    Raises:
        RobotConfigError: one line naming every invalid field (``sim bridge: rate_hz: ...``).
    """
    return validate(BridgeConfig, config, where=where, error=RobotConfigError)


class SimBridge:
    """The ROS-free half of the bridge: episodes, seeds, sim time, results."""

    def __init__(self, config: BridgeConfig) -> None:
        from embodia.envs import make, resolve_id

        self.config = config = check_bridge_config(config)
        self.env_id = resolve_id(config.env_id)
        kwargs = dict(config.env_kwargs)
        if config.render:
            kwargs["render_mode"] = "rgb_array"
        self.env = make(self.env_id, **kwargs)
        space = self.env.action_space
        self.action_size = int(np.prod(space.shape))
        self.dt_ns = int(round(1e9 / config.rate_hz))
        self.sim_time_ns = 0
        self.episode = -1
        self.faults = parse_faults(config.faults)
        self.results: list[dict[str, Any]] = []
        self.obs: dict[str, np.ndarray] = {}
        self._return = 0.0
        self._length = 0
        self._success = False

    @property
    def seed(self) -> int:
        return self.config.seed + self.episode

    @property
    def finished(self) -> bool:
        return self.config.episodes is not None and len(self.results) >= self.config.episodes

    def start_episode(self) -> dict[str, np.ndarray]:
        self.episode += 1
        self.obs, _ = self.env.reset(seed=self.seed)
        self._return, self._length, self._success = 0.0, 0, False
        self.sim_time_ns += self.dt_ns
        if (
            self.faults.clock_jump and self.episode > 0
        ):  # the clock_jump fault: a simulator that resets its clock
            self.sim_time_ns = max(self.dt_ns, self.sim_time_ns + int(self.faults.clock_jump * 1e9))
        return self.obs

    def step(self, action: np.ndarray) -> bool:
        """Step with ``action``; returns whether the episode ended (its result is then in :attr:`results`)."""
        action = np.asarray(action, dtype=self.env.action_space.dtype).reshape(self.env.action_space.shape)
        self.obs, reward, terminated, truncated, info = self.env.step(action)
        self.sim_time_ns += self.dt_ns
        self._length += 1
        self._return += float(reward)
        self._success = self._success or bool(info.get("success", False))
        if self.config.max_steps is not None and self._length >= self.config.max_steps:
            truncated = True
        if terminated or truncated:
            self.results.append(
                {
                    "episode": self.episode,
                    "seed": self.seed,
                    "success": self._success,
                    "length": self._length,
                    "return": self._return,
                }
            )
            return True
        return False

    def start_event(self) -> dict[str, Any]:
        return {
            "event": "start",
            "episode": self.episode,
            "seed": self.seed,
            "env_id": self.env_id,
            "env_kwargs": self.config.env_kwargs,
            "stamp_ns": self.sim_time_ns,
        }

    def end_event(self) -> dict[str, Any]:
        """The ``end`` event; in lockstep it announces how many commands the episode took (one per step),
        so a recorder knows when it has all of them (the event and the commands travel separately). Its
        ``stamp_ns`` is the simulated time after the last step (the next episode's first observation):
        a command stamped with it or later is not this episode's."""
        event = {"event": "end", **self.results[-1], "stamp_ns": self.sim_time_ns}
        if self.config.mode == "lockstep":
            event["commands"] = self.results[-1]["length"]
        return event

    def write_results(self, extra: dict[str, Any] | None = None) -> None:
        """The episodes' results as JSON (``config.results``), with ``extra`` fields (the faults injected)."""
        if self.config.results:
            path = Path(self.config.results)
            path.parent.mkdir(parents=True, exist_ok=True)
            successes = [r["success"] for r in self.results]
            path.write_text(
                json.dumps(
                    {
                        "env_id": self.env_id,
                        "config": asdict(self.config),
                        "episodes": self.results,
                        "success_rate": float(np.mean(successes)) if successes else 0.0,
                        **(extra or {}),
                    },
                    indent=2,
                )
            )

    def close(self) -> None:
        self.env.close()


def policy_config_for(
    env_id: str,
    *,
    env_kwargs: dict[str, Any] | None = None,
    state_type: str = "JointState",
    command_type: str = "Float64MultiArray",
    twist_components: list[str] | None = None,
    trigger: str = "observation",
    rate_hz: float = 50.0,
    watchdog_timeout: float = 0.5,
) -> PolicyNodeConfig:
    """A policy node config that speaks the topics of a bridge for ``env_id`` (same relative names).

    The command limits are the environment's action bounds; vector observations are read from
    ``obs/<key>`` with their joint names, images with their encoding and size.
    """
    from embodia.envs import make

    env = make(env_id, **(env_kwargs or {}))
    try:
        obs_space, act_space = env.observation_space, env.action_space
    finally:
        env.close()
    observations = []
    state_kind = normalize_type(state_type).rsplit("/", 1)[1]
    for key, sub in getattr(obs_space, "spaces", {"state": obs_space}).items():
        if len(sub.shape) >= 2:
            encoding = image_encoding_for(sub.dtype, sub.shape)
            observations.append(
                ObservationTopic(
                    f"obs/{key}",
                    "Image",
                    key,
                    encoding=encoding,
                    height=int(sub.shape[0]),
                    width=int(sub.shape[1]),
                )
            )
        elif state_kind == "JointState":
            n = int(np.prod(sub.shape))
            observations.append(
                ObservationTopic(
                    f"obs/{key}", "JointState", key, joint_names=[f"{key}_{i}" for i in range(n)]
                )
            )
        else:
            observations.append(
                ObservationTopic(f"obs/{key}", "Float64MultiArray", key, size=int(np.prod(sub.shape)))
            )
    command = CommandTopic(
        low=[float(x) for x in np.ravel(act_space.low)],
        high=[float(x) for x in np.ravel(act_space.high)],
        topic="cmd",
        type=command_type,
        components=twist_components,
    )
    config = PolicyNodeConfig(
        observations, command, rate_hz=rate_hz, trigger=trigger, watchdog_timeout=watchdog_timeout
    )
    return check_node_config(config, f"node config for {env_id}")


def _node_base() -> type:
    ros.import_rclpy()
    from rclpy.node import Node

    return Node


class SimBridgeNode(_node_base()):  # type: ignore[misc]
    """The rclpy half of the bridge (see the module docstring)."""

    def __init__(self, config: BridgeConfig, name: str = "embodia_sim", **node_kwargs: Any) -> None:
        config = check_bridge_config(config)  # before the node exists
        super().__init__(name, **node_kwargs)
        from rosgraph_msgs.msg import Clock

        self.config = config
        self.sim = SimBridge(config)
        qos = ros.qos(ros.PUBLISHER_DEPTH)  # publishers: a recorder under load must not lose observations
        self._clock_cls = Clock
        self._clock_publisher = self.create_publisher(Clock, "/clock", qos)
        self._episode_publisher = self.create_publisher(message_class("String"), "episode", qos)
        self._status_publisher = self.create_publisher(message_class("String"), "~/status", qos)
        self._obs_publishers: dict[str, Any] = {}
        space = self.sim.env.observation_space
        for key, sub in getattr(space, "spaces", {"state": space}).items():
            image = len(sub.shape) >= 2
            cls = message_class("Image" if image else config.state_type)
            self._obs_publishers[key] = (self.create_publisher(cls, f"obs/{key}", qos), image)
        if config.render:
            self._obs_publishers["camera"] = (
                self.create_publisher(message_class("Image"), "obs/camera", qos),
                True,
            )
        ctype = config.command_type.rsplit("/", 1)[1]
        self._command_kind = ctype
        self._components = config.twist_components or list(TWIST_COMPONENTS[: self.sim.action_size])
        self.create_subscription(message_class(ctype), "cmd", self._on_command, ros.qos(10))
        self.ignored_commands = 0
        self.rejected_commands = 0
        self._last_command: tuple[np.ndarray, float] | None = None
        self._last_publish = time.monotonic()
        self._done = False
        self._started = False
        self._ready_since: float | None = None
        self._last_wait_log = float("-inf")
        self._last_status = float("-inf")
        spec = self.sim.faults
        self.injector = FaultInjector(spec, config.fault_seed) if spec.active else None
        # lockstep ticks only republish; with faults they also release delayed messages, so tick finer
        lockstep_hz = 500.0 if self.injector is not None else 20.0
        self.rate = RateController(config.rate_hz if config.mode == "rate" else lockstep_hz)
        self.get_logger().info(
            f"simulating {self.sim.env_id} ({config.mode}, {config.rate_hz:g} Hz sim time): "
            f"obs/{{{', '.join(k for k in self._obs_publishers)}}} <- cmd ({ctype})"
        )

    # ------------------------------------------------------------------ episodes
    def _begin(self) -> None:
        self.sim.start_episode()
        self._episode_publisher.publish(ros.json_message(self.sim.start_event()))
        self.publish_observation()

    def publish_observation(self) -> None:
        stamp = self.sim.sim_time_ns
        clock = self._clock_cls()
        clock.clock.sec, clock.clock.nanosec = divmod(stamp, 1_000_000_000)
        self._clock_publisher.publish(clock)
        kind = self.config.state_type.rsplit("/", 1)[-1]
        for key, (publisher, image) in self._obs_publishers.items():
            if key == "camera":
                msg = make_image(self.sim.env.render(), "rgb8", stamp, "camera")
            elif image:
                value = self.sim.obs[key]
                msg = make_image(value, image_encoding_for(value.dtype, value.shape), stamp, key)
            elif kind == "JointState":
                value = np.ravel(self.sim.obs[key])
                msg = make_joint_state(value, [f"{key}_{i}" for i in range(len(value))], stamp, key)
            else:
                msg = make_float64_multi_array(self.sim.obs[key])
            if self.injector is None:
                publisher.publish(msg)
            else:
                self.injector.submit(key, (publisher, msg), time.monotonic())
        self._last_publish = time.monotonic()
        self._release(self._last_publish)

    def _release(self, now: float) -> None:
        """Publish the fault-injected messages whose time has come."""
        if self.injector is not None:
            for publisher, msg in self.injector.due(now):
                publisher.publish(msg)

    def _advance(self, action: np.ndarray) -> None:
        if self.sim.step(action):
            self._episode_publisher.publish(ros.json_message(self.sim.end_event()))
            result = self.sim.results[-1]
            self.get_logger().info(
                f"episode {result['episode']} (seed {result['seed']}): success {result['success']}, "
                f"length {result['length']}, return {result['return']:.2f}"
            )
            if self.sim.finished:
                self._done = True
                return
            self._begin()
        else:
            self.publish_observation()

    # ------------------------------------------------------------------ callbacks
    def _on_command(self, msg: Any) -> None:
        if self._done or not self._started:
            return
        try:
            options = {"components": self._components} if self._command_kind.startswith("Twist") else {}
            action = np.asarray(to_array(msg, self._command_kind, **options), dtype=np.float64).ravel()
            if action.size != self.sim.action_size:
                raise MessageError(
                    f"command has {action.size} values, {self.sim.env_id} takes {self.sim.action_size}"
                )
        except MessageError as error:
            self.rejected_commands += 1
            self.get_logger().warning(f"rejected command: {error}", throttle_duration_sec=1.0)
            return
        if self.config.mode == "rate":
            self._last_command = (action, time.monotonic())
            return
        stamp = header_stamp_ns(msg)
        if stamp is not None and stamp != self.sim.sim_time_ns:
            self.ignored_commands += 1  # answers an older observation (or is a safe stop): not for this step
            return
        self._advance(action)

    def _ready(self, now: float) -> bool:
        """Whether a controller (and enough subscribers, see ``wait_for_subscribers``) is connected."""
        cmd = self.resolve_topic_name("cmd")
        publishers = self.count_publishers(cmd)
        watched = [p for key, (p, _) in self._obs_publishers.items() if key != "camera"]
        counts = [p.get_subscription_count() for p in [*watched, self._episode_publisher]]
        # cmd is subscribed by this bridge and by every recorder: hold until they are all connected
        counts.append(self.count_subscribers(cmd))
        if publishers >= 1 and min(counts) >= self.config.wait_for_subscribers:
            return True
        if now - self._last_wait_log >= 5.0:
            self._last_wait_log = now
            self.get_logger().info(
                f"waiting for a controller on cmd ({publishers} publishers) and "
                f"{self.config.wait_for_subscribers} subscribers per observation topic (fewest: {min(counts)})"
            )
        return False

    def _on_tick(self, now: float) -> None:
        if self._done:
            return
        self._release(now)
        if not self._started:
            if not self._ready(now):
                self._ready_since = None
                return
            if self.config.wait_for_subscribers > 0:
                self._ready_since = self._ready_since or now
                if now - self._ready_since < self.config.settle:
                    return
            self._started = True
            self._begin()
        if self.config.mode == "rate":
            command = self._last_command
            fresh = command is not None and now - command[1] <= self.config.command_timeout
            self._advance(command[0] if fresh else np.zeros(self.sim.action_size))
        elif now - self._last_publish >= self.config.republish_period:
            self.publish_observation()
        if now - self._last_status >= 1.0:
            self._last_status = now
            self._status_publisher.publish(ros.json_message(self.status()))

    def status(self) -> dict[str, Any]:
        return {
            "episode": self.sim.episode,
            "episodes_done": len(self.sim.results),
            "sim_time_ns": self.sim.sim_time_ns,
            "ignored_commands": self.ignored_commands,
            "rejected_commands": self.rejected_commands,
            **({"faults": dict(self.injector.counts)} if self.injector is not None else {}),
        }

    def spin(self) -> None:
        try:
            ros.spin(self, self.rate, self._on_tick, should_stop=lambda: self._done)
        finally:
            self.sim.write_results(
                {"faults": dict(self.injector.counts)} if self.injector is not None else None
            )
            self.sim.close()
            if ros.import_rclpy().ok(context=self.context):
                from rclpy.duration import Duration

                # the last episode event must reach its subscribers (recorders) before the process goes
                self._episode_publisher.wait_for_all_acked(Duration(seconds=2.0))


def run_sim_bridge(config: BridgeConfig, argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Start ROS, run the bridge until its episodes are done or Ctrl-C; returns the episode results.

    ``config`` is validated before ROS starts (:func:`check_bridge_config`).
    """
    config = check_bridge_config(config)
    ros.init(argv)
    node = None
    try:
        node = SimBridgeNode(config)
        node.spin()
        return node.sim.results
    finally:
        if node is not None:
            node.destroy_node()
        ros.shutdown()
