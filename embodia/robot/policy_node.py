"""The policy node: an rclpy node that runs an embodia policy on ROS 2 topics.

It subscribes the observation topics of its config, hands every message to a
:class:`~embodia.robot.controller.PolicyController` (conversion, watchdog, command filter), and publishes
one command per control tick. Malformed messages are logged on one line (throttled, counted) and
dropped; the node never stops on bad input. When it exits it publishes the safe command once.

Topics (relative names follow the node's namespace and remaps):
    observations, command  as configured;
    ``episode``            std_msgs/String JSON; ``{"event": "start", "seed": s}`` resets the policy;
    ``~/status``           std_msgs/String JSON: counters (safe stops, clipped, NaN, rejected messages ...)
                           and the achieved control rate with its jitter;
    ``/diagnostics``       diagnostic_msgs/DiagnosticArray once a second (:mod:`embodia.robot.diagnostics`).

Every field of the node config is a ROS parameter (``rate_hz``, ``command.low``, ``observations.0.topic``
...); the rate, the watchdog timeout and the command's limits can be changed on a running node with
``ros2 param set`` and are validated like the YAML file (:mod:`embodia.robot.node_parameters`).
:mod:`embodia.robot.lifecycle_node` is the managed (lifecycle) version of this node.

Run it with ``embodia robot policy --policy PATH --config node.yaml`` or, in a ROS 2 workspace,
``ros2 run embodia_ros policy_node --ros-args -p policy:=PATH -p config:=node.yaml``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embodia.core.errors import PolicyError
from embodia.robot import ros
from embodia.robot.config import PolicyNodeConfig, check_node_config, load_node_config
from embodia.robot.controller import PolicyController, TickResult
from embodia.robot.convert import (
    make_float64_multi_array,
    make_joint_trajectory,
    make_twist,
    make_twist_stamped,
    message_class,
)
from embodia.robot.diagnostics import diagnostic_array, health_marks, policy_health
from embodia.robot.errors import MessageError, RobotConfigError
from embodia.robot.node_parameters import changed_config, config_parameters, declare_config_parameters
from embodia.robot.rate import RateController


def resolve_policy(spec: Any, runtime: str = "auto") -> Any:
    """A policy object, a policy folder (``embodia.load_policy`` with ``runtime``: ``auto``, ``torch`` or
    ``onnx``) or ``module:factory`` (called with no arguments)."""
    if not isinstance(spec, str | Path):
        return spec
    text = str(spec)
    if Path(text).exists() or ":" not in text:
        from embodia.core.policy import load_policy

        return load_policy(text, runtime=runtime)
    module_name, _, attr = text.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise PolicyError(f"cannot import policy factory {text!r}: {error}") from error
    return factory()


def _node_base() -> type:
    ros.import_rclpy()
    from rclpy.node import Node

    return Node


#: how often the node reports its health on /diagnostics (seconds; diagnostic_updater's default period)
DIAGNOSTICS_PERIOD = 1.0


class PolicyNodeBehaviour:
    """What the plain and the managed policy node share: loading, topics, control ticks, parameters, health.

    A mixin for an rclpy ``Node`` (or lifecycle node): :meth:`_load` builds the controller and the topics from
    a policy and a config, :meth:`_unload` removes them, :meth:`_on_tick` is the control loop's body and acts
    only while :meth:`acting` says so. The command publisher comes from :meth:`_create_command_publisher`,
    which the managed node overrides with a lifecycle publisher.
    """

    node_state = "active"
    """the lifecycle state the diagnostics report (a plain node is always active)"""

    def _init_behaviour(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        self.config: PolicyNodeConfig | None = None
        self.controller: PolicyController | None = None
        self.policy: Any = None
        self.rate = RateController(10.0)  # replaced by the config's rate when a policy is loaded
        self.published = 0
        self._entities: list[Any] = []
        self._command_publisher: Any = None
        self._status_publisher: Any = None
        self._config_parameters: list[str] = []
        self._diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", ros.qos(10))
        self._last_status = self._last_diagnostics = time.monotonic()
        self._published_at_report = 0
        self._health_marks: dict[str, int] = {}
        self._last_reason = "policy"
        self.add_on_set_parameters_callback(self._check_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

    def acting(self) -> bool:
        return self.controller is not None

    # ------------------------------------------------------------------ loading
    def _load(self, policy: Any, config: PolicyNodeConfig | str | Path, runtime: str = "auto") -> None:
        """Read the config (its fields become parameters; start-up overrides apply), load the policy, create
        the topics. Raises :class:`~embodia.robot.errors.RobotConfigError` / ``PolicyError`` (one line)."""
        if not isinstance(config, PolicyNodeConfig):
            config = load_node_config(config)
        self._config_parameters = list(config_parameters(config))  # before declaring: _unload removes them
        config = declare_config_parameters(self, config)
        policy = resolve_policy(policy, runtime)
        if config.torch_threads is not None and "torch" in sys.modules:
            # one intra-op thread: a 2x256 MLP answers in ~0.1 ms instead of waiting for a busy worker thread
            sys.modules["torch"].set_num_threads(int(config.torch_threads))
        self.config, self.policy = config, policy
        self.controller = PolicyController(policy, config)
        self.controller.reset(seed=None)
        self.rate.set_rate(config.rate_hz, clear_stats=True)
        qos = ros.qos(config.qos_depth)
        cmd = config.command
        # subscribers of the commands (a controller, a recorder) each keep their own depth; the writer keeps
        # enough for a slow one (see ros.PUBLISHER_DEPTH)
        cmd_qos = ros.qos(max(config.qos_depth, ros.PUBLISHER_DEPTH))
        self._command_publisher = self._create_command_publisher(message_class(cmd.type), cmd.topic, cmd_qos)
        self._status_publisher = self.create_publisher(message_class("String"), "~/status", qos)
        self._entities = [self._status_publisher]
        if (
            config.reset_topic
        ):  # created first: in a wait cycle that also holds observations, it is taken first
            self._entities.append(
                self.create_subscription(message_class("String"), config.reset_topic, self._on_episode, qos)
            )
        for index, topic in enumerate(config.observations):
            if not topic.is_transform:
                self._entities.append(
                    self.create_subscription(
                        message_class(topic.type), topic.topic, self._make_callback(index), qos
                    )
                )
        for tf_topic in dict.fromkeys(o.topic for o in config.observations if o.is_transform):
            # as tf2_ros's TransformListener: /tf keeps 100, /tf_static is latched (transient local)
            tf_type = message_class("TFMessage")
            for name, static in ((tf_topic, False), (tf_topic + "_static", True)):
                self._entities.append(
                    self.create_subscription(
                        tf_type,
                        name,
                        self._make_transform_callback(static),
                        ros.tf_qos(static, config.qos_depth),
                    )
                )
        self._last_status = time.monotonic()
        self._last_reason = "policy"
        self.get_logger().info(
            f"policy {type(policy).__name__} at {config.rate_hz:g} Hz ({config.trigger} trigger): "
            f"{', '.join(o.topic for o in config.observations)} -> {cmd.topic} ({cmd.short_type})"
        )

    def _create_command_publisher(self, message_type: type, topic: str, qos: Any) -> Any:
        return self.create_publisher(message_type, topic, qos)

    def _unload(self) -> None:
        """Remove the topics, the policy and the config's parameters (a later :meth:`_load` reads them again)."""
        from rclpy.subscription import Subscription

        for entity in self._entities:
            if isinstance(entity, Subscription):
                self.destroy_subscription(entity)
            else:
                self.destroy_publisher(entity)
        self._entities = []
        if self._command_publisher is not None:
            self._destroy_command_publisher(self._command_publisher)
        self._command_publisher = self._status_publisher = None
        for name in self._config_parameters:
            if self.has_parameter(name):
                self.undeclare_parameter(name)
        self._config_parameters = []
        self.controller = self.policy = self.config = None

    def _destroy_command_publisher(self, publisher: Any) -> None:
        self.destroy_publisher(publisher)

    # ------------------------------------------------------------------ parameters
    def _changes(self, parameters: list[Any]) -> list[tuple[str, Any]]:
        return [(p.name, p.value) for p in parameters if p.name in self._config_parameters]

    def _check_parameters(self, parameters: list[Any]) -> Any:
        from rcl_interfaces.msg import SetParametersResult

        changes = self._changes(parameters)
        if not changes or self.config is None:  # declarations while loading, or the node's own parameters
            return SetParametersResult(successful=True)
        try:
            changed_config(self.config, changes)
        except RobotConfigError as error:
            self.get_logger().warning(f"refused parameter change: {error}")
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, parameters: list[Any]) -> None:
        changes = self._changes(parameters)
        if not changes or self.config is None or self.controller is None:
            return
        config = changed_config(self.config, changes)
        self.controller.reconfigure(config)
        if config.rate_hz != self.config.rate_hz:
            self.rate.set_rate(config.rate_hz)
        self.config = config
        self.get_logger().info(
            "parameters changed: " + ", ".join(f"{name}={value}" for name, value in changes)
        )

    # ------------------------------------------------------------------ callbacks
    def _make_callback(self, index: int) -> Any:
        topic = self.config.observations[index].label

        def callback(msg: Any) -> None:
            controller = self.controller
            if controller is None:
                return
            try:
                controller.observe(index, msg, time.monotonic(), self.get_clock().now().nanoseconds)
            except MessageError as error:
                count = controller.rejected[topic]
                self.get_logger().warning(
                    f"rejected message on {topic} (#{count}): {error}", throttle_duration_sec=1.0
                )
                return
            if self.config.trigger == "observation" and self.acting() and controller.complete():
                self._act(time.monotonic())

        return callback

    def _make_transform_callback(self, static: bool) -> Any:
        def callback(msg: Any) -> None:
            controller = self.controller
            if controller is None:
                return
            try:
                problems = controller.observe_transforms(
                    msg, time.monotonic(), static, self.get_clock().now().nanoseconds
                )
            except MessageError as error:
                problems = [f"{'/tf_static' if static else '/tf'}: {error}"]
            for problem in problems:
                self.get_logger().warning(f"rejected transform {problem}", throttle_duration_sec=1.0)
            if self.config.trigger != "observation" or not self.acting():
                return
            if controller.complete():
                self._act(time.monotonic())

        return callback

    def _on_episode(self, msg: Any) -> None:
        try:
            event = json.loads(msg.data)
        except json.JSONDecodeError:
            self.get_logger().warning(f"ignored episode event that is not JSON: {msg.data[:80]!r}")
            return
        if isinstance(event, dict) and event.get("event") == "start" and self.controller is not None:
            seed, stamp = event.get("seed"), event.get("stamp_ns")
            self.controller.reset(
                seed=int(seed) if seed is not None else None,
                stamp_ns=int(stamp) if stamp is not None else None,
            )

    def _on_tick(self, now: float) -> None:
        controller = self.controller
        # Before the first observation nothing was commanded, so there is nothing to stop: publishing
        # safe commands then would only disturb a lockstep simulator that is starting up.
        if (
            controller is not None
            and self.acting()
            and controller.ever_observed
            and (self.config.trigger == "timer" or controller.watchdog.check(now).stale)
        ):
            self._act(now)
        if self._status_publisher is not None and now - self._last_status >= self.config.status_period:
            self._last_status = now
            self._status_publisher.publish(ros.json_message(self.status()))
        if now - self._last_diagnostics >= DIAGNOSTICS_PERIOD:
            self.publish_diagnostics(now)

    def publish_diagnostics(self, now: float) -> None:
        """One status on ``/diagnostics`` (see :mod:`embodia.robot.diagnostics`)."""
        elapsed = max(now - self._last_diagnostics, 1e-9)
        rate = (self.published - self._published_at_report) / elapsed
        self._last_diagnostics, self._published_at_report = now, self.published
        health = policy_health(self.controller, self.node_state, now, rate, self._health_marks)
        self._health_marks = health_marks(self.controller)
        name = self.get_fully_qualified_name()
        self._diagnostics_publisher.publish(
            diagnostic_array(health, f"{name}: policy", name, self.get_clock().now().to_msg())
        )

    # ------------------------------------------------------------------ publishing
    def _act(self, now: float) -> None:
        result = self.controller.tick(now)
        if result.reason != self._last_reason:
            self._log_transition(result)
            self._last_reason = result.reason
        self.publish_command(result)

    def _log_transition(self, result: TickResult) -> None:
        logger = self.get_logger()
        if result.reason in ("policy", "clipped"):
            if self._last_reason not in ("policy", "clipped"):
                logger.info(f"resumed: running the policy again (after {self._last_reason})")
            elif result.reason == "clipped":
                logger.warning("policy output clipped to the command limits")
        elif result.reason == "stale":
            logger.warning(f"watchdog: observations stale ({result.detail}); publishing the safe command")
        else:
            counter = self.controller.status().get(
                f"filter_{result.reason}", self.controller.counters.get(result.reason)
            )
            logger.error(f"safe stop ({result.reason}, count {counter}): {result.detail}")

    def publish_command(self, result: TickResult) -> None:
        cmd = self.config.command
        stamp = result.stamp_ns if result.stamp_ns is not None else self.get_clock().now().nanoseconds
        kind = cmd.short_type
        if kind == "Twist":
            msg = make_twist(result.command, cmd.components)
        elif kind == "TwistStamped":
            msg = make_twist_stamped(result.command, cmd.components, stamp)
        elif kind == "JointTrajectory":
            period = cmd.time_from_start or 1.0 / self.config.rate_hz
            msg = make_joint_trajectory(result.command, cmd.joint_names, stamp, period)
        else:
            msg = make_float64_multi_array(result.command)
        self._command_publisher.publish(msg)
        self.published += 1

    def publish_safe_command(self, reason: str) -> None:
        """The safe command once (on shutdown, deactivation)."""
        if self.controller is not None and self._command_publisher is not None:
            self.publish_command(TickResult(self.controller.filter.safe_command(), reason))

    def status(self) -> dict[str, Any]:
        controller = {} if self.controller is None else self.controller.status()
        return {
            **controller,
            "state": self.node_state,
            "published": self.published,
            "rate": self.rate.stats().to_dict(),
        }


class PolicyNode(PolicyNodeBehaviour, _node_base()):  # type: ignore[misc]
    """See the module docstring. ``policy`` and ``config`` may also come from ROS parameters of the same name;
    every config field is a ROS parameter too (:mod:`embodia.robot.node_parameters`)."""

    def __init__(
        self,
        policy: Any = None,
        config: PolicyNodeConfig | str | Path | None = None,
        name: str = "embodia_policy",
        **node_kwargs: Any,
    ) -> None:
        if isinstance(config, PolicyNodeConfig):  # built in Python: checked like a YAML file, before the node
            config = check_node_config(config)
        super().__init__(name, **node_kwargs)
        self._init_behaviour()
        policy_param = ros.declare(self, "policy", "")
        runtime = ros.declare(self, "runtime", "auto")  # a folder's network: auto | torch | onnx
        config_param = ros.declare(self, "config", "")
        policy = policy if policy is not None else policy_param
        config = config if config is not None else config_param
        if not policy or not config:
            raise PolicyError(
                "the policy node needs a policy and a config (parameters 'policy' and 'config')"
            )
        self._load(policy, config, runtime)

    def spin(self, duration: float | None = None) -> None:
        """Run until shutdown (Ctrl-C) or ``duration`` seconds; publish the safe command on the way out."""
        try:
            ros.spin(self, self.rate, self._on_tick, duration=duration)
        finally:
            if ros.import_rclpy().ok(context=self.context):
                self.publish_safe_command("shutdown")
                self.get_logger().info(f"stopped; status {json.dumps(self.status(), default=float)}")


def run_policy_node(
    policy: Any = None,
    config: PolicyNodeConfig | str | Path | None = None,
    argv: Sequence[str] | None = None,
    duration: float | None = None,
) -> dict[str, Any]:
    """Start ROS, run a policy node until Ctrl-C (or ``duration`` seconds), return its final status.

    ``config`` (a YAML path or a :class:`PolicyNodeConfig`) is validated before ROS starts. ``policy`` and
    ``config`` left out come from the node's ROS parameters of the same names (``ros2 run``, launch files).
    """
    if isinstance(config, PolicyNodeConfig):
        config = check_node_config(config)
    elif config is not None:  # fail before ROS starts; the node reads the file again, with its ROS overrides
        load_node_config(config)
    ros.init(argv)
    node = None
    try:
        node = PolicyNode(policy, config)
        node.spin(duration)
        return node.status()
    finally:
        if node is not None:
            node.destroy_node()
        ros.shutdown()
