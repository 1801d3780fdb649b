"""The fault injector's decisions on hand-made message streams (no ROS): seeded, counted, in order."""

from __future__ import annotations

import json
import os
import sys

import pytest

from embodia.robot.errors import RobotConfigError
from embodia.robot.faults import FaultInjector, FaultSpec, parse_faults
from embodia.robot.netns import check_isolation, run_isolated
from tests.conftest import ROOT


def _run(spec, seed=0, n=200):
    injector = FaultInjector(spec, seed)
    out = []
    for step in range(n):
        injector.submit("obs", step, now=step * 0.1)
        out += injector.due(step * 0.1 + 0.05)
    out += injector.due(1e9)
    return injector, out


def test_the_spec_parses_durations_and_probabilities_and_refuses_bad_entries():
    spec = parse_faults("delay=20ms,jitter=0.005,drop=0.05,stale=0.01,reorder=0.01,clock_jump=-5s")
    assert spec == FaultSpec(delay=0.02, jitter=0.005, drop=0.05, stale=0.01, reorder=0.01, clock_jump=-5.0)
    assert parse_faults(None) == FaultSpec() and not parse_faults("").active
    for bad, message in [
        ("drop=1.5", "a probability is in"),
        ("delay=-1ms", "must be >= 0"),
        ("delay=soon", "not a duration"),
        ("lag=1", "unknown fault 'lag'"),
        ("drop", "not NAME=VALUE"),
    ]:
        with pytest.raises(RobotConfigError, match=message):
            parse_faults(bad)


def test_a_perfect_network_passes_everything_in_order():
    _, out = _run(FaultSpec())
    assert out == list(range(200))


def test_delay_holds_messages_and_drop_loses_them_repeatably():
    injector = FaultInjector(FaultSpec(delay=0.2), 0)
    injector.submit("obs", "a", now=0.0)
    assert injector.due(0.19) == [] and injector.due(0.2) == ["a"]
    first, out = _run(FaultSpec(drop=0.1), seed=3)
    again, out_again = _run(FaultSpec(drop=0.1), seed=3)
    assert out == out_again and first.counts == again.counts  # the seed decides
    assert 5 < first.counts["dropped"] < 40 and len(out) == 200 - first.counts["dropped"]
    assert out == sorted(out)


def test_stale_replays_the_previous_message_and_reorder_swaps_neighbours():
    injector, out = _run(FaultSpec(stale=0.1), seed=1)
    replays = [i for i in range(1, len(out)) if out[i] < out[i - 1]]
    assert len(replays) == injector.counts["stale"] > 0
    assert all(out[i] == out[i - 1] - 1 for i in replays)  # the message before the current one
    injector, out = _run(FaultSpec(reorder=0.1), seed=2)
    assert sorted(out) == list(range(200)) and out != list(range(200))
    swaps = [i for i in range(1, len(out)) if out[i] < out[i - 1]]
    assert len(swaps) == injector.counts["reordered"]


# ---------------------------------------------------------------------- through the real nodes
MATRIX = [
    # (faults, bridge mode, what the node must show)
    ("delay=20ms,jitter=10ms", "lockstep", {}),
    ("drop=0.1", "lockstep", {"watchdog_trips": 2}),  # a lost observation: stale, safe command, resumed
    ("stale=0.1", "lockstep", {"out_of_order": 1}),  # replayed old readings are rejected
    ("reorder=0.1", "rate", {"out_of_order": 1}),  # swapped neighbours: the older one is rejected
    ("clock_jump=-5s", "lockstep", {}),
    (
        "delay=20ms,jitter=5ms,drop=0.05,stale=0.05,reorder=0.05,clock_jump=-5s",
        "lockstep",
        {"watchdog_trips": 2},
    ),
]


@pytest.mark.parametrize(
    "faults, mode, minimum", MATRIX, ids=["delay", "drop", "stale", "reorder", "clock_jump", "all"]
)
def test_every_fault_ends_in_finished_episodes_and_nothing_answers_an_old_observation(
    tmp_path, faults, mode, minimum
):
    check_isolation()
    result = run_isolated(
        [sys.executable, "-m", "tests.robot.fault_scenario", str(tmp_path), faults, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "ROS_LOG_DIR": str(tmp_path / "ros_log"), "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["sim_exit"] == 0 and seen["node_exit"] == 0, seen["sim_log"] + seen["policy_log"]
    episodes = seen["results"]["episodes"]
    assert [e["length"] for e in episodes] == [30, 30]  # both episodes finished, every step answered
    injected = seen["results"]["faults"]
    for name in ("drop", "stale", "reorder"):
        key = {"drop": "dropped", "stale": "stale", "reorder": "reordered"}[name]
        assert (injected[key] > 0) == (f"{name}=" in faults), injected
    status = seen["status"]
    for counter, least in minimum.items():
        assert status[counter] >= least, (counter, status)
    # the stamps the policy's commands answered (safe stops carry the node's clock instead) never go back in
    # time, except once where clock_jump restarted the simulator's clock between the two episodes
    answered = [s for s in seen["command_stamps"] if s < 10**15]
    backwards = sum(b < a for a, b in zip(answered, answered[1:]))
    assert backwards == (1 if "clock_jump" in faults else 0), answered
    if mode == "rate":  # the simulator does not wait: the node answers the observations it accepted
        assert len(answered) >= 50, (seen["received"], seen["command_stamps"][:5], seen["status"])
    else:  # lockstep: each of the 60 steps answered (split where clock_jump restarted the clock)
        cut = next((i + 1 for i, (a, b) in enumerate(zip(answered, answered[1:])) if b < a), len(answered))
        assert len(set(answered[:cut])) + len(set(answered[cut:])) == 60, (seen["received"], answered)
