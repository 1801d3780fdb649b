"""Watchdog, command filter, rate control, node config and the policy controller, without a ROS graph."""

from __future__ import annotations

import numpy as np
import pytest
from sensor_msgs.msg import JointState

from embodia.policies.linear import LinearPolicy
from embodia.robot.config import node_config_from_dict
from embodia.robot.controller import PolicyController
from embodia.robot.convert import make_image, make_joint_state
from embodia.robot.errors import MessageError, RobotConfigError
from embodia.robot.rate import RateController
from embodia.robot.safety import CommandFilter, CommandLimits, Watchdog


def test_watchdog_goes_stale_and_recovers():
    dog = Watchdog(["state", "goal"], timeout=0.5)
    assert dog.check(0.0).stale == ["state", "goal"]  # nothing ever arrived
    dog.feed("state", 1.0)
    dog.feed("goal", 1.0)
    report = dog.check(1.4)
    assert report.ok and report.changed
    assert not dog.check(1.45).changed
    dog.feed("goal", 1.6)
    report = dog.check(1.7)
    assert report.stale == ["state"] and report.changed
    dog.feed("state", 1.8)
    assert dog.check(1.9).ok
    with pytest.raises(RobotConfigError):
        Watchdog(["x"], timeout=0)


def test_command_filter_clips_stops_and_counts():
    limits = CommandLimits(low=[-1, -2], high=[1, 2])
    filt = CommandFilter(limits)
    out = filt(np.array([0.5, -1.0]))
    assert out.fault is None and out.command.tolist() == [0.5, -1.0]
    out = filt(np.array([3.0, -5.0]))
    assert out.fault == "clipped" and out.command.tolist() == [1.0, -2.0]
    for bad, fault in (([np.nan, 0.0], "nan"), ([np.inf, 0.0], "nan"), ([1.0, 2.0, 3.0], "shape")):
        out = filt(np.array(bad))
        assert out.safe_stop and out.fault == fault and out.command.tolist() == [0.0, 0.0]
    assert filt.counters == {"clipped": 1, "nan": 2, "shape": 1, "out_of_range": 0}

    hold = CommandFilter(CommandLimits([-1], [1], out_of_range="stop", safe="hold"))
    hold(np.array([0.25]))
    out = hold(np.array([1.5]))
    assert out.fault == "out_of_range" and out.command.tolist() == [0.25]  # held, never the 1.5
    fixed = CommandFilter(CommandLimits([0, 0], [1, 1], safe=[0.5, 0.5]))
    assert fixed(np.array([np.nan, 0])).command.tolist() == [0.5, 0.5]
    with pytest.raises(RobotConfigError, match="within the limits"):
        CommandLimits([0], [1], safe=[2.0])
    with pytest.raises(RobotConfigError, match="low > high"):
        CommandLimits([1], [0])


def test_rate_controller_is_drift_free_and_skips_missed_ticks():
    rate = RateController(100.0)
    rate.start(10.0)
    assert rate.due(10.0) and rate.time_until_next(9.99) == pytest.approx(0.01)
    for k in range(5):
        now = 10.0 + k * 0.01 + 0.002  # always 2 ms late: no drift accumulates
        assert rate.due(now)
        assert rate.tick(now) == pytest.approx(0.002)
    assert rate.next_deadline == pytest.approx(10.05)
    rate.tick(10.085)  # 35 ms late: deadlines 10.06 .. 10.08 are skipped
    assert rate.overruns == 3 and rate.next_deadline == pytest.approx(10.09)
    stats = rate.stats()
    assert stats.ticks == 6 and stats.jitter_p50_ms == pytest.approx(2.0)
    assert stats.achieved_hz == pytest.approx(5 / 0.083)


CONFIG = {
    "rate_hz": 20,
    "trigger": "observation",
    "watchdog_timeout": 0.5,
    "observations": [
        {"topic": "obs/state", "type": "JointState", "key": "state", "joint_names": ["s0", "s1"]},
        {"topic": "obs/goal", "type": "JointState", "key": "goal", "joint_names": ["g0", "g1"]},
        {
            "topic": "camera",
            "type": "Image",
            "key": "rgb",
            "encoding": "rgb8",
            "height": 2,
            "width": 2,
            "required": False,
        },
    ],
    "command": {"topic": "cmd", "type": "TwistStamped", "low": [-1, -1], "high": [1, 1]},
}


def test_config_validation_names_the_problem(tmp_path):
    config = node_config_from_dict(CONFIG)
    assert config.command.components == ["linear.x", "linear.y"] and config.command.stamped
    assert config.required_keys == ["state", "goal"]
    with pytest.raises(RobotConfigError, match="observations.0.joints: Unexpected keyword argument"):
        node_config_from_dict(
            {**CONFIG, "observations": [{"topic": "x", "type": "JointState", "key": "s", "joints": []}]}
        )
    with pytest.raises(RobotConfigError, match="trigger: Input should be 'timer' or 'observation'"):
        node_config_from_dict({**CONFIG, "trigger": "sometimes"})
    with pytest.raises(RobotConfigError, match="JointTrajectory command needs joint_names"):
        node_config_from_dict({**CONFIG, "command": {"type": "JointTrajectory", "low": [0], "high": [1]}})
    from embodia.robot.config import load_node_config

    with pytest.raises(RobotConfigError, match="does not exist"):
        load_node_config(tmp_path / "missing.yaml")


def _controller(weight, **overrides):
    policy = LinearPolicy(np.asarray(weight, np.float32), np.zeros(2), ["state", "goal"])
    return PolicyController(policy, node_config_from_dict({**CONFIG, **overrides}))


def _observe(ctrl, state, goal, stamp, now):
    ctrl.observe(0, make_joint_state(np.asarray(state, float), ["s0", "s1"], stamp), now)
    ctrl.observe(1, make_joint_state(np.asarray(goal, float), ["g0", "g1"], stamp), now)


def test_controller_assembles_runs_and_stamps_commands():
    ctrl = _controller(np.hstack([-np.eye(2), np.eye(2)]))
    assert not ctrl.ever_observed and not ctrl.complete()
    ctrl.observe(0, make_joint_state(np.array([0.0, 0.0]), ["s0", "s1"], 100), 1.0)
    assert not ctrl.complete()  # goal missing
    ctrl.observe(1, make_joint_state(np.array([0.5, 0.0]), ["g0", "g1"], 90), 1.0)
    assert not ctrl.complete()  # stamps differ: not one observation
    ctrl.observe(1, make_joint_state(np.array([0.5, -3.0]), ["g1", "g0"], 100), 1.0)  # reordered by name
    assert ctrl.complete()
    result = ctrl.tick(1.01)
    assert result.reason == "clipped" and result.stamp_ns == 100
    np.testing.assert_allclose(result.command, [-1.0, 0.5])
    assert not ctrl.complete()  # consumed
    assert ctrl.observation()["state"].dtype == np.float32


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_controller_watchdog_faults_and_malformed_input():
    ctrl = _controller(np.hstack([-np.eye(2), np.eye(2)]))
    _observe(ctrl, [0, 0], [0.2, 0.1], 1, now=0.0)
    assert ctrl.tick(0.1).reason == "policy"
    stale = ctrl.tick(0.7)
    assert stale.reason == "stale" and stale.command.tolist() == [0.0, 0.0] and "state, goal" in stale.detail
    _observe(ctrl, [0, 0], [0.2, 0.1], 2, now=0.8)
    assert ctrl.tick(0.81).reason == "policy"
    with pytest.raises(MessageError):
        ctrl.observe(0, make_joint_state(np.array([0.0, 0.0]), ["x", "y"], 3), 0.9)
    with pytest.raises(MessageError):
        ctrl.observe(2, make_image(np.zeros((4, 4, 3), np.uint8), "rgb8"), 0.9)
    assert ctrl.rejected == {"obs/state": 1, "obs/goal": 0, "camera": 1}
    # a policy output with NaN never becomes a command
    nan = _controller([[np.inf, 0, 0, 0], [0, 0, 0, 0]])  # inf * 0 = NaN inside the policy
    _observe(nan, [0, 1], [0, 0], 1, now=0.0)
    result = nan.tick(0.01)
    assert result.reason == "nan" and result.command.tolist() == [0.0, 0.0]
    stop = _controller(np.eye(2, 4) * 10, command={**CONFIG["command"], "out_of_range": "stop"})
    _observe(stop, [1, 0], [0, 0], 1, now=0.0)
    assert stop.tick(0.01).reason == "out_of_range"
    assert stop.status()["filter_out_of_range"] == 1 and stop.status()["safe_stops"] == 1


class _ChunkPolicy:
    """Returns a (3, 2) chunk whose rows count the queries: shows one row per tick and re-planning."""

    chunk_size = 3

    def __init__(self):
        self.queries = 0
        self.seeds = []

    def reset(self, seed=None):
        self.seeds.append(seed)

    def act(self, obs):
        self.queries += 1
        return np.array([[self.queries, i] for i in range(3)], dtype=np.float32) / 8


def test_controller_publishes_one_chunk_step_per_tick_and_replans_after_reset():
    policy = _ChunkPolicy()
    ctrl = PolicyController(policy, node_config_from_dict({**CONFIG, "trigger": "timer"}))
    _observe(ctrl, [0, 0], [0, 0], 1, now=0.0)
    rows = [ctrl.tick(0.01 * k).command.tolist() for k in range(4)]
    assert rows == [[0.125, 0.0], [0.125, 0.125], [0.125, 0.25], [0.25, 0.0]]  # exact in binary
    ctrl.reset(seed=7)
    assert ctrl.tick(0.05).command.tolist() == [0.375, 0.0] and policy.seeds == [7]


def test_joint_state_without_names_needs_matching_length():
    msg = JointState()
    msg.position = [1.0, 2.0]
    assert len(make_joint_state(np.array([1.0]), ["a"]).name) == 1
    ctrl = _controller(np.hstack([-np.eye(2), np.eye(2)]))
    ctrl.observe(0, make_joint_state(np.array([0.0, 0.0]), ["s0", "s1"]), 0.0)
    with pytest.raises(MessageError, match="JointState has joints \\[\\]"):
        ctrl.observe(1, msg, 0.0)


def test_cli_reports_a_bad_node_config_in_one_line(tmp_path, cli):
    LinearPolicy(np.eye(2, 4, dtype=np.float32), np.zeros(2), ["state", "goal"]).save(tmp_path / "policy")
    (tmp_path / "node.yaml").write_text("rate_hz: 50\nobservations: []\ncommand: {low: [0], high: [1]}\n")
    result = cli(
        "robot", "policy", "--policy", str(tmp_path / "policy"), "--config", str(tmp_path / "node.yaml")
    )
    assert result.returncode == 2
    assert "node.yaml: observations: List should have at least 1 item" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_lockstep_answers_a_repeated_observation_the_same_and_recovers_a_late_episode_event():
    policy = _ChunkPolicy()
    ctrl = PolicyController(policy, node_config_from_dict(CONFIG))  # observation trigger: lockstep
    _observe(ctrl, [0, 0], [0, 0], 1, now=0.0)
    first = ctrl.tick(0.0).command.tolist()
    _observe(ctrl, [0, 0], [0, 0], 1, now=0.6)  # the simulator republished the same observation
    assert ctrl.complete() and ctrl.tick(0.6).command.tolist() == first and ctrl.counters["repeats"] == 1
    _observe(ctrl, [0, 0], [0, 0], 2, now=0.7)
    assert ctrl.tick(0.7).command.tolist() == [0.125, 0.125]  # the plan moved on by one step only
    # a new episode whose first observation (stamp 3) overtook its start event
    _observe(ctrl, [0, 0], [0, 0], 3, now=0.8)
    stale = ctrl.tick(0.8).command.tolist()
    assert stale == [0.125, 0.25]  # the old plan's last row: the event had not arrived yet
    ctrl.reset(seed=5, stamp_ns=3)
    assert ctrl.counters["late_resets"] == 1 and policy.seeds[-1] == 5
    _observe(ctrl, [0, 0], [0, 0], 4, now=0.9)
    # the new plan was made from the stamp-3 observation; its second row answers stamp 4, as in a rollout
    assert ctrl.tick(0.9).command.tolist() == [0.25, 0.125]
