"""The managed (lifecycle) policy node: nothing is published until an operator or a system manager activates it.

ROS 2's managed nodes (design article "Managed nodes"; rclpy's ``rclpy.lifecycle``) move through
unconfigured -> inactive -> active on requests to their ``~/change_state`` service (``lifecycle_msgs``), and
report it on ``~/get_state`` and ``~/transition_event``. Nav2's servers and ros2_control's controllers run
this way, so a launch file or a lifecycle manager brings a whole robot up in order and can stop a part of it
without killing processes. This node runs the same control loop as :class:`~embodia.robot.policy_node.PolicyNode`
(:class:`~embodia.robot.policy_node.PolicyNodeBehaviour`), with the transitions:

``configure``
    read the config (its fields become ROS parameters, start-up overrides applied), load the policy, create the
    subscriptions and a lifecycle command publisher. A bad config or policy fails the transition with a
    one-line reason in the log (and on ``~/status``' ``last_error``); the node stays unconfigured.
``activate``
    reset the policy and the current chunk (no plan from before survives), enable the command publisher: the
    control loop acts from the next tick.
``deactivate``
    publish the safe command once, then nothing (the command publisher is disabled; observations keep being
    received, so a later activate starts from fresh ones).
``cleanup``
    remove the topics, the policy and the config's parameters (a later configure reads the file again).
``shutdown``
    the safe command once if active, then as cleanup. Ctrl-C / SIGTERM of an active node does the same.

Run it with ``embodia robot policy --lifecycle --policy PATH --config node.yaml`` (``--activate``: configure
and activate at start, like Nav2's ``autostart``), ``ros2 run embodia_ros lifecycle_policy_node --ros-args
-p policy:=PATH -p config:=node.yaml``, or a launch file's ``lifecycle: true`` node; drive it with
``ros2 lifecycle set /embodia_policy configure`` / ``activate`` / ``deactivate``, or with
:func:`change_state` from Python.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from embodia.robot import ros
from embodia.robot.config import PolicyNodeConfig, check_node_config
from embodia.robot.policy_node import PolicyNodeBehaviour

#: lifecycle_msgs/Transition labels accepted by :func:`change_state` and ``--activate``
TRANSITIONS = ("configure", "activate", "deactivate", "cleanup", "shutdown")


def _lifecycle_base() -> type:
    ros.import_rclpy()
    from rclpy.lifecycle import LifecycleNode

    return LifecycleNode


class LifecyclePolicyNode(PolicyNodeBehaviour, _lifecycle_base()):  # type: ignore[misc]
    """See the module docstring. ``policy``, ``config`` and ``runtime`` given here win over the parameters of
    those names; the policy (a folder, ``module:factory`` or an object) is loaded on configure."""

    def __init__(
        self,
        policy: Any = None,
        config: PolicyNodeConfig | str | Path | None = None,
        name: str = "embodia_policy",
        runtime: str | None = None,
        **node_kwargs: Any,
    ) -> None:
        if isinstance(config, PolicyNodeConfig):
            config = check_node_config(config)
        super().__init__(name, **node_kwargs)
        self._init_behaviour()
        self._policy_arg, self._config_arg, self._runtime_arg = policy, config, runtime
        ros.declare(self, "policy", "")
        ros.declare(self, "runtime", "auto")
        ros.declare(self, "config", "")
        self.node_state = "unconfigured"
        self.last_error = ""

    def acting(self) -> bool:
        return self.node_state == "active" and self.controller is not None

    # ------------------------------------------------------------------ transitions
    def on_configure(self, state: Any) -> Any:
        from rclpy.lifecycle import TransitionCallbackReturn

        policy = self._policy_arg if self._policy_arg is not None else self.get_parameter("policy").value
        config = self._config_arg if self._config_arg is not None else self.get_parameter("config").value
        if not policy or not config:
            return self._fail(
                "the policy node needs a policy and a config (parameters 'policy' and 'config')"
            )
        try:
            runtime = self._runtime_arg or self.get_parameter("runtime").value
            self._load(policy, config, runtime)
        except Exception as error:  # a bad config or policy: reported, and the node stays unconfigured
            self._unload()
            return self._fail(f"{type(error).__name__}: {error}")
        self.node_state, self.last_error = "inactive", ""
        self.get_logger().info("configured: inactive until activated")
        return TransitionCallbackReturn.SUCCESS

    def _fail(self, reason: str) -> Any:
        from rclpy.lifecycle import TransitionCallbackReturn

        self.last_error = reason
        self.get_logger().error(f"configure failed: {reason}")
        return TransitionCallbackReturn.FAILURE

    def on_activate(self, state: Any) -> Any:
        self.controller.reset(seed=None)
        result = super().on_activate(state)  # enables the lifecycle command publisher
        self.node_state = "active"
        self._last_reason = "policy"
        self.get_logger().info("activated: publishing commands")
        return result

    def on_deactivate(self, state: Any) -> Any:
        self.publish_safe_command("deactivate")  # while the publisher is still enabled
        self.node_state = "inactive"
        result = super().on_deactivate(state)
        self.controller.chunks.reset()
        self.get_logger().info("deactivated: safe command sent, publishing nothing")
        return result

    def on_cleanup(self, state: Any) -> Any:
        self._unload()
        self.node_state = "unconfigured"
        return super().on_cleanup(state)

    def on_shutdown(self, state: Any) -> Any:
        if self.node_state == "active":
            self.publish_safe_command("shutdown")
        self._unload()
        self.node_state = "finalized"
        return super().on_shutdown(state)

    def on_error(self, state: Any) -> Any:
        from rclpy.lifecycle import TransitionCallbackReturn

        try:  # a transition raised: stop the robot, drop the policy, and be configurable again
            if self.node_state == "active":
                self.publish_safe_command("error")
            self._unload()
        except Exception as error:
            self.get_logger().error(f"error processing failed: {type(error).__name__}: {error}")
            return TransitionCallbackReturn.FAILURE  # -> finalized
        self.node_state = "unconfigured"
        return TransitionCallbackReturn.SUCCESS

    def _create_command_publisher(self, message_type: type, topic: str, qos: Any) -> Any:
        return self.create_lifecycle_publisher(message_type, topic, qos)

    def _destroy_command_publisher(self, publisher: Any) -> None:
        self.destroy_lifecycle_publisher(publisher)

    def status(self) -> dict[str, Any]:
        return {**super().status(), "last_error": self.last_error}

    # ------------------------------------------------------------------ running
    def spin(self, duration: float | None = None) -> None:
        """Run until shutdown (Ctrl-C) or ``duration`` seconds; an active node publishes the safe command on
        the way out."""
        try:
            ros.spin(self, self.rate, self._on_tick, duration=duration)
        finally:
            if ros.import_rclpy().ok(context=self.context):
                if self.node_state == "active":
                    self.publish_safe_command("shutdown")
                self.get_logger().info(f"stopped; status {json.dumps(self.status(), default=float)}")

    def trigger(self, transition: str) -> bool:
        """Run one transition from inside the process (``--activate``); True when it succeeded."""
        from rclpy.lifecycle import TransitionCallbackReturn

        method = {
            "configure": self.trigger_configure,
            "activate": self.trigger_activate,
            "deactivate": self.trigger_deactivate,
            "cleanup": self.trigger_cleanup,
            "shutdown": self.trigger_shutdown,
        }[transition]
        return method() == TransitionCallbackReturn.SUCCESS


def _call(client_node: Any, client: Any, request: Any, what: str, timeout: float) -> Any:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    if not client.wait_for_service(timeout_sec=timeout):
        raise TimeoutError(f"{what} did not appear within {timeout:g} s")
    future = client.call_async(request)
    executor = SingleThreadedExecutor(
        context=client_node.context
    )  # the client node's context, not the global one
    try:
        rclpy.spin_until_future_complete(client_node, future, executor=executor, timeout_sec=timeout)
    finally:
        executor.shutdown()
    if not future.done():
        raise TimeoutError(f"{what} did not answer within {timeout:g} s")
    return future.result()


def change_state(client_node: Any, node_name: str, transition: str, timeout: float = 10.0) -> bool:
    """Ask the managed node ``node_name`` (e.g. ``/embodia_policy``) for ``transition`` through its
    ``change_state`` service, as ``ros2 lifecycle set`` does; True when it succeeded.

    Raises:
        TimeoutError: the service did not appear or answer within ``timeout`` seconds.
    """
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    ids = {
        "configure": Transition.TRANSITION_CONFIGURE,
        "activate": Transition.TRANSITION_ACTIVATE,
        "deactivate": Transition.TRANSITION_DEACTIVATE,
        "cleanup": Transition.TRANSITION_CLEANUP,
    }
    service = f"{node_name.rstrip('/')}/change_state"
    client = client_node.create_client(ChangeState, service)
    try:
        request = ChangeState.Request()
        request.transition.id = ids[transition]
        return bool(_call(client_node, client, request, f"{service} ({transition})", timeout).success)
    finally:
        client_node.destroy_client(client)


def get_state(client_node: Any, node_name: str, timeout: float = 10.0) -> str:
    """The managed node's current state label (``unconfigured``, ``inactive``, ``active``, ``finalized``)."""
    from lifecycle_msgs.srv import GetState

    service = f"{node_name.rstrip('/')}/get_state"
    client = client_node.create_client(GetState, service)
    try:
        return _call(client_node, client, GetState.Request(), service, timeout).current_state.label
    finally:
        client_node.destroy_client(client)


def run_lifecycle_policy_node(
    policy: Any = None,
    config: PolicyNodeConfig | str | Path | None = None,
    argv: Any = None,
    duration: float | None = None,
    activate: bool = False,
    runtime: str | None = None,
) -> dict[str, Any]:
    """Start ROS, run a managed policy node until Ctrl-C (or ``duration`` seconds), return its final status.

    ``activate``: configure and activate it at start (Nav2's ``autostart``); a failed configure then ends the
    run with the reason (:class:`~embodia.robot.errors.RobotConfigError`).
    """
    from embodia.robot.errors import RobotConfigError

    ros.init(argv)
    node = None
    try:
        node = LifecyclePolicyNode(policy, config, runtime=runtime)
        if activate:
            if not node.trigger("configure"):
                raise RobotConfigError(f"the policy node did not configure: {node.last_error}")
            node.trigger("activate")
        node.spin(duration)
        return node.status()
    finally:
        if node is not None:
            node.destroy_node()
        ros.shutdown()
