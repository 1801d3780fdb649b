"""The policy controller's input rules: out-of-order and stale stamps, approximate-time synchronisation."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.robot.controller import PolicyController
from embodia.robot.convert import make_joint_state
from embodia.robot.errors import MessageError


class Echo:
    def reset(self, seed=None):
        pass

    def act(self, obs):
        return np.concatenate([obs["a"][:1], obs["b"][:1]]).astype(np.float64)


def _config(**extra):
    return {
        "trigger": "observation",
        "observations": [
            {"topic": "a", "type": "JointState", "key": "a", "joint_names": ["x"]},
            {"topic": "b", "type": "JointState", "key": "b", "joint_names": ["y"]},
        ],
        "command": {"low": [-10, -10], "high": [10, 10]},
        **extra,
    }


def _msg(value, name, stamp_ns):
    return make_joint_state(np.asarray([value], float), [name], stamp_ns)


def test_a_message_older_than_the_newest_on_its_topic_is_rejected_until_an_episode_reset():
    controller = PolicyController(Echo(), _config())
    controller.observe(0, _msg(1.0, "x", 2_000), 0.0)
    controller.observe(0, _msg(1.5, "x", 2_000), 0.01)  # the same stamp again (a republish): accepted
    with pytest.raises(MessageError, match="out of order"):
        controller.observe(0, _msg(9.0, "x", 1_000), 0.02)
    assert controller.counters["out_of_order"] == 1 and controller.rejected["a"] == 1
    controller.observe(1, _msg(0.0, "y", 2_000), 0.02)
    assert controller.observation()["a"][0] == 1.5  # the rejected message changed nothing
    controller.reset(seed=0)  # a new episode may restart the clock: older stamps are accepted again
    controller.observe(0, _msg(3.0, "x", 500), 0.03)
    controller.observe(1, _msg(4.0, "y", 500), 0.03)
    assert controller.complete()
    assert controller.tick(0.04).command.tolist() == [3.0, 4.0]


def test_a_message_stamped_longer_ago_than_max_stamp_age_is_stale():
    controller = PolicyController(Echo(), _config(max_stamp_age=0.1))
    with pytest.raises(MessageError, match="stale: stamped 0.200 s ago"):
        controller.observe(0, _msg(1.0, "x", 1_000_000_000), 0.0, clock_ns=1_200_000_000)
    controller.observe(0, _msg(1.0, "x", 1_150_000_000), 0.0, clock_ns=1_200_000_000)
    assert controller.counters["stale_stamp"] == 1


@pytest.mark.parametrize("window, complete", [(0.0, False), (0.004, False), (0.005, True)])
def test_stamps_within_the_sync_window_make_one_observation(window, complete):
    controller = PolicyController(Echo(), _config(sync_window=window))
    controller.observe(0, _msg(1.0, "x", 10_000_000), 0.0)
    controller.observe(1, _msg(2.0, "y", 15_000_000), 0.0)  # 5 ms apart
    assert controller.complete() is complete
    if complete:  # the command answers the newest stamp of the set
        assert controller.tick(0.01).stamp_ns == 15_000_000


def test_a_topic_that_stays_behind_for_a_watchdog_timeout_is_followed_again():
    """One message from the future (or a clock that jumped back) must not block a topic for ever."""
    controller = PolicyController(Echo(), _config(watchdog_timeout=0.5))
    controller.observe(0, _msg(1.0, "x", 9_000_000_000), 0.0)  # a replayed message from a later clock
    with pytest.raises(MessageError, match="out of order"):
        controller.observe(0, _msg(2.0, "x", 100_000_000), 1.0)
    with pytest.raises(MessageError, match="out of order"):
        controller.observe(0, _msg(2.0, "x", 150_000_000), 1.4)  # still within the timeout
    controller.observe(0, _msg(3.0, "x", 200_000_000), 1.6)  # behind for 0.6 s > 0.5 s: followed again
    assert controller.counters["clock_jumps"] == 1 and controller.counters["out_of_order"] == 2
    with pytest.raises(MessageError, match="out of order"):  # and ordered from there on
        controller.observe(0, _msg(4.0, "x", 150_000_000), 1.7)
