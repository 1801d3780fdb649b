"""The policy node: an rclpy node that runs an embodia policy on ROS 2 topics.

It subscribes the observation topics of its config, hands every message to a
:class:`~embodia.robot.controller.PolicyController` (conversion, watchdog, command filter), and publishes
one command per control tick. Malformed messages are logged on one line (throttled, counted) and
dropped; the node never stops on bad input. When it exits it publishes the safe command once.

Topics (relative names follow the node's namespace and remaps):
    observations, command  as configured;
    ``episode``            std_msgs/String JSON; ``{"event": "start", "seed": s}`` resets the policy;
    ``~/status``           std_msgs/String JSON: counters (safe stops, clipped, NaN, rejected messages ...)
                           and the achieved control rate with its jitter.

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
from embodia.robot.errors import MessageError
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


class PolicyNode(_node_base()):  # type: ignore[misc]
    """See the module docstring. ``policy`` and ``config`` may also come from ROS parameters of the same name."""

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
        policy_param = ros.declare(self, "policy", "")
        runtime = ros.declare(self, "runtime", "auto")  # a folder's network: auto | torch | onnx
        config_param = ros.declare(self, "config", "")
        overrides = {}
        for key in ("rate_hz", "trigger", "watchdog_timeout"):
            value = ros.declare(self, key, None)
            if value is not None:
                overrides[key] = value
        policy = policy if policy is not None else policy_param
        config = config if config is not None else config_param
        if not policy or not config:
            raise PolicyError(
                "the policy node needs a policy and a config (parameters 'policy' and 'config')"
            )
        if not isinstance(config, PolicyNodeConfig):
            config = load_node_config(config, overrides)
        self.config = config
        self.policy = resolve_policy(policy, runtime)
        if config.torch_threads is not None and "torch" in sys.modules:
            # one intra-op thread: a 2x256 MLP answers in ~0.1 ms instead of waiting for a busy worker thread
            sys.modules["torch"].set_num_threads(int(config.torch_threads))
        self.controller = PolicyController(self.policy, config)
        self.controller.reset(seed=None)
        self.rate = RateController(config.rate_hz)
        qos = ros.qos(config.qos_depth)
        cmd = config.command
        # subscribers of the commands (a controller, a recorder) each keep their own depth; the writer keeps
        # enough for a slow one (see ros.PUBLISHER_DEPTH)
        cmd_qos = ros.qos(max(config.qos_depth, ros.PUBLISHER_DEPTH))
        self._command_publisher = self.create_publisher(message_class(cmd.type), cmd.topic, cmd_qos)
        self._status_publisher = self.create_publisher(message_class("String"), "~/status", qos)
        if (
            config.reset_topic
        ):  # created first: in a wait cycle that also holds observations, it is taken first
            self.create_subscription(message_class("String"), config.reset_topic, self._on_episode, qos)
        self._obs_subscriptions = []
        for index, topic in enumerate(config.observations):
            self._obs_subscriptions.append(
                self.create_subscription(
                    message_class(topic.type), topic.topic, self._make_callback(index), qos
                )
            )
        self._last_status = time.monotonic()
        self._last_reason = "policy"
        self.published = 0
        self.get_logger().info(
            f"policy {type(self.policy).__name__} at {config.rate_hz:g} Hz ({config.trigger} trigger): "
            f"{', '.join(o.topic for o in config.observations)} -> {cmd.topic} ({cmd.short_type})"
        )

    # ------------------------------------------------------------------ callbacks
    def _make_callback(self, index: int) -> Any:
        topic = self.config.observations[index].topic

        def callback(msg: Any) -> None:
            try:
                self.controller.observe(index, msg, time.monotonic())
            except MessageError as error:
                count = self.controller.rejected[topic]
                self.get_logger().warning(
                    f"rejected message on {topic} (#{count}): {error}", throttle_duration_sec=1.0
                )
                return
            if self.config.trigger == "observation" and self.controller.complete():
                self._act(time.monotonic())

        return callback

    def _on_episode(self, msg: Any) -> None:
        try:
            event = json.loads(msg.data)
        except json.JSONDecodeError:
            self.get_logger().warning(f"ignored episode event that is not JSON: {msg.data[:80]!r}")
            return
        if isinstance(event, dict) and event.get("event") == "start":
            seed, stamp = event.get("seed"), event.get("stamp_ns")
            self.controller.reset(
                seed=int(seed) if seed is not None else None,
                stamp_ns=int(stamp) if stamp is not None else None,
            )

    def _on_tick(self, now: float) -> None:
        # Before the first observation nothing was commanded, so there is nothing to stop: publishing
        # safe commands then would only disturb a lockstep simulator that is starting up.
        if self.controller.ever_observed and (
            self.config.trigger == "timer" or self.controller.watchdog.check(now).stale
        ):
            self._act(now)
        if now - self._last_status >= self.config.status_period:
            self._last_status = now
            self._status_publisher.publish(ros.json_message(self.status()))

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

    def status(self) -> dict[str, Any]:
        return {**self.controller.status(), "published": self.published, "rate": self.rate.stats().to_dict()}

    def spin(self, duration: float | None = None) -> None:
        """Run until shutdown (Ctrl-C) or ``duration`` seconds; publish the safe command on the way out."""
        try:
            ros.spin(self, self.rate, self._on_tick, duration=duration)
        finally:
            if ros.import_rclpy().ok(context=self.context):
                self.publish_command(TickResult(self.controller.filter.safe_command(), "shutdown"))
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
