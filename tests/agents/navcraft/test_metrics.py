"""CoNavBench-style metrics on hand-made execution results."""

from __future__ import annotations

import math

import pytest

from embodia.agents.navcraft.metrics import (
    ExecutionResult,
    HandoffRecord,
    InterferenceRecord,
    handoff_errors,
    interference_events,
    makespan,
    mission_success,
    spl_per_robot,
    step_success,
    summarise,
)


def result(times: dict, kind: str = "relay", span: float = 40.0, **fields) -> ExecutionResult:
    return ExecutionResult(
        "m", kind, "scheduled", times, all(t is not None for t in times.values()), span, 30.0, **fields
    )


def test_step_and_mission_success():
    partial = result({"pick_a": 3.0, "deliver_a": 9.0, "pick_b": 12.0, "deliver_b": None})
    assert step_success(partial) == 0.75 and mission_success(partial) == 0.0
    full = result({"pick_a": 3.0, "arrive": 9.0})
    assert step_success(full) == 1.0 and mission_success(full) == 1.0
    assert mission_success(result({})) == 0.0 and step_success(result({})) == 0.0


def test_spl_per_robot():
    done = {"pick_a": 1.0, "deliver_a": 5.0, "arrive": 8.0, "deliver_b": None}
    r = result(
        done,
        path_lengths=[10.0, 3.0, 4.0, 0.0],
        route_lengths=[5.0, 4.0, 4.0, 0.0],
        robot_subgoals=[["pick_a", "arrive"], ["deliver_a"], ["deliver_b"], []],
    )
    spl = spl_per_robot(r)
    assert spl[:3] == [0.5, 1.0, 0.0]  # p = 2 l; p < l counts as l; a subgoal missed
    assert math.isnan(spl[3])  # an idle robot: 0 / 0


def test_counts_and_summary():
    a = result(
        {"x": 1.0},
        span=40.0,
        handoff_errors=[HandoffRecord(20.0, 0, 1, "cup", "corridor_0", "late")],
        interference=[
            InterferenceRecord("door_0", (0, 1), 3.0, 4.0),
            InterferenceRecord("door_1", (0, 1), 9.0, 9.0),
        ],
        path_lengths=[4.0],
        route_lengths=[2.0],
        robot_subgoals=[["x"]],
    )
    b = result(
        {"x": None, "y": 2.0},
        kind="solo",
        span=100.0,
        path_lengths=[1.0],
        route_lengths=[1.0],
        robot_subgoals=[["y"]],
    )
    assert handoff_errors(a) == 1 and interference_events(a) == 2 and makespan(a) == 40.0
    summary = summarise([a, b])
    assert summary["episodes"] == 2
    assert summary["mission_success"] == 0.5 and summary["step_success"] == 0.75
    assert summary["makespan"] == 70.0 and summary["makespan_successful"] == 40.0
    assert summary["handoff_errors"] == 0.5 and summary["interference_events"] == 1.0
    assert summary["spl"] == pytest.approx(0.75)  # robots: 0.5 and 1.0
    assert summary["by_type"]["relay"]["mission_success"] == 1.0
    assert summary["by_type"]["solo"]["step_success"] == 0.5
    assert math.isnan(summary["by_type"]["solo"]["makespan_successful"])
