"""The policy node's health for ``/diagnostics``: what a ROS 2 robot's monitoring reads.

ROS 2 nodes report their health as ``diagnostic_msgs/DiagnosticArray`` on ``/diagnostics`` (Nav2's lifecycle
manager, ros2_control's hardware components and the ``diagnostic_updater`` package all do); the
``diagnostic_aggregator`` and ``rqt_robot_monitor`` read it. The policy node publishes one status once a
second with the fields below, from its controller's counters; :func:`policy_health` computes it without
ROS (tested on its own), :func:`diagnostic_array` turns it into the message.

Values (``KeyValue`` strings): ``state`` (the lifecycle state, or ``active`` for a plain node),
``age.<topic>`` (seconds since the topic's last valid message; ``never``), ``command_rate_hz`` (commands
published per second since the previous report) and ``target_rate_hz``, ``inference_p50_ms`` /
``inference_p90_ms`` / ``inference_p99_ms`` (the policy calls of the last 1000 ticks), ``watchdog_trips``
(fresh -> stale transitions), ``clipped_commands``, ``safe_stops``, ``policy_errors``,
``rejected_messages``.

Levels: ``ERROR`` when the policy raised since the last report; ``WARN`` while the observations are stale,
when commands were clipped or stopped since the last report, or when an active timer-triggered node
published under 80 % of its rate; ``OK`` otherwise (an inactive node is OK: it is doing what it was told).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

OK, WARN, ERROR = 0, 1, 2
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR"}
#: below this share of its rate an active timer-triggered node reports WARN
RATE_WARN_SHARE = 0.8


@dataclass
class Health:
    """One diagnostic status of the policy node."""

    level: int
    """OK, WARN or ERROR"""
    message: str
    """one line: the state and the worst thing seen since the previous report"""
    values: dict[str, str] = field(default_factory=dict)
    """the fields of the module docstring, as strings"""


def _milliseconds(latencies: Any, q: float) -> str:
    if not len(latencies):
        return "n/a"
    return f"{float(np.percentile(np.asarray(latencies), q)) * 1e3:.3f}"


def policy_health(
    controller: Any,
    state: str,
    now: float,
    command_rate_hz: float,
    since: dict[str, int],
) -> Health:
    """The node's health now.

    Args:
        controller: the node's :class:`~embodia.robot.controller.PolicyController` (None before configure).
        state: the lifecycle state (``unconfigured``, ``inactive``, ``active``, ...).
        now: monotonic time, for the observation ages.
        command_rate_hz: commands published per second since the previous report.
        since: counters at the previous report (``policy_error``, ``clipped``, ``stops``), to tell what
            happened since.
    """
    if controller is None:
        return Health(OK, f"{state}: no policy loaded", {"state": state})
    counters = controller.counters
    filters = controller.filter.counters
    stops = filters["nan"] + filters["shape"] + filters["out_of_range"]
    values = {"state": state}
    for topic, age in controller.observation_ages(now).items():
        values[f"age.{topic}"] = "never" if age == float("inf") else f"{age:.3f}"
    config = controller.config
    values.update(
        command_rate_hz=f"{command_rate_hz:.2f}",
        target_rate_hz=f"{config.rate_hz:g}",
        inference_p50_ms=_milliseconds(controller.latencies, 50),
        inference_p90_ms=_milliseconds(controller.latencies, 90),
        inference_p99_ms=_milliseconds(controller.latencies, 99),
        watchdog_trips=str(counters["watchdog_trips"]),
        clipped_commands=str(filters["clipped"]),
        safe_stops=str(counters["safe_stops"]),
        policy_errors=str(counters["policy_error"]),
        rejected_messages=str(sum(controller.rejected.values())),
    )
    if state != "active":
        return Health(OK, f"{state}: publishing no commands", values)
    if counters["policy_error"] > since.get("policy_error", 0):
        return Health(ERROR, "active: the policy raised; publishing the safe command", values)
    if controller.stale:
        return Health(WARN, "active: observations stale; publishing the safe command", values)
    if stops > since.get("stops", 0):
        return Health(WARN, "active: policy outputs refused (NaN, shape or out of range)", values)
    if filters["clipped"] > since.get("clipped", 0):
        return Health(WARN, "active: commands clipped to the limits", values)
    if (
        config.trigger == "timer"
        and controller.ever_observed
        and command_rate_hz < RATE_WARN_SHARE * config.rate_hz
    ):
        return Health(WARN, f"active: {command_rate_hz:.1f} commands/s of {config.rate_hz:g}", values)
    return Health(OK, "active: running the policy", values)


def health_marks(controller: Any) -> dict[str, int]:
    """The counters :func:`policy_health` compares against at the next report."""
    if controller is None:
        return {}
    filters = controller.filter.counters
    return {
        "policy_error": controller.counters["policy_error"],
        "clipped": filters["clipped"],
        "stops": filters["nan"] + filters["shape"] + filters["out_of_range"],
    }


def diagnostic_array(health: Health, name: str, hardware_id: str, stamp: Any) -> Any:
    """``health`` as a ``diagnostic_msgs/DiagnosticArray`` with one status named ``name``."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    status = DiagnosticStatus(
        level=bytes([health.level]),
        name=name,
        message=health.message,
        hardware_id=hardware_id,
        values=[KeyValue(key=k, value=v) for k, v in health.values.items()],
    )
    array = DiagnosticArray(status=[status])
    array.header.stamp = stamp
    return array
