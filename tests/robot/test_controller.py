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


# ---------------------------------------------------------------------- transform observations
class PoseEcho:
    def reset(self, seed=None):
        pass

    def act(self, obs):
        return np.concatenate([obs["tool"], obs["a"][:1]]).astype(np.float64)


def _tf(parent, child, x, stamp_ns):
    from tests.robot.test_transforms import stamped, tf_message

    return tf_message(stamped(parent, child, [x, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], stamp_ns))


def _tf_config(**extra):
    return {
        "trigger": "observation",
        "observations": [
            {
                "topic": "/tf",
                "type": "TFMessage",
                "key": "tool",
                "parent_frame": "base",
                "child_frame": "tool",
                "fields": ["x"],
            },
            {"topic": "a", "type": "JointState", "key": "a", "joint_names": ["x"]},
        ],
        "command": {"low": [-10, -10], "high": [10, 10]},
        **extra,
    }


def test_a_transform_observation_composes_static_and_dynamic_transforms_and_syncs_on_their_stamp():
    controller = PolicyController(PoseEcho(), _tf_config(sync_window=0.01))
    controller.observe_transforms(_tf("flange", "tool", 0.1, 0), 0.0, static=True)
    assert controller.observation() is None  # base -> flange not known yet
    controller.observe_transforms(_tf("base", "flange", 1.0, 1_000_000_000), 0.0)
    controller.observe(1, _msg(5.0, "x", 1_005_000_000), 0.0)  # 5 ms later: inside the window
    assert controller.complete()
    tick = controller.tick(0.01)
    assert np.allclose(tick.command, [1.1, 5.0]) and tick.stamp_ns == 1_005_000_000
    # another broadcaster's frames do not make a new observation of this chain
    controller.observe(1, _msg(6.0, "x", 2_000_000_000), 0.02)
    controller.observe_transforms(_tf("map", "odom", 3.0, 2_000_000_000), 0.02)
    assert not controller.complete()
    controller.observe_transforms(_tf("base", "flange", 2.0, 2_000_000_000), 0.03)
    assert controller.complete() and np.allclose(controller.tick(0.03).command, [2.1, 6.0])


def test_an_older_transform_is_rejected_and_a_static_chain_never_goes_stale():
    config = _tf_config(watchdog_timeout=0.5)
    config["observations"][0].update(parent_frame="flange")  # static only: flange -> tool
    controller = PolicyController(PoseEcho(), config)
    controller.observe_transforms(_tf("flange", "tool", 0.1, 0), 0.0, static=True)
    controller.observe(1, _msg(1.0, "x", 10), 0.0)
    assert controller.complete()  # a static transform does not wait for news
    assert not controller.tick(0.1).reason.startswith("stale")
    controller.observe(1, _msg(1.0, "x", 20), 0.3)
    assert controller.tick(0.6).reason != "stale"  # 0.6 s after the static transform: still fresh

    dynamic = PolicyController(PoseEcho(), _tf_config())
    dynamic.observe_transforms(_tf("base", "tool", 1.0, 2_000), 0.0)
    problems = dynamic.observe_transforms(_tf("base", "tool", 9.0, 1_000), 0.01)
    assert problems and "out of order" in problems[0] and dynamic.counters["out_of_order"] == 1
    dynamic.observe(1, _msg(0.0, "x", 2_000), 0.01)
    assert dynamic.observation()["tool"].tolist() == [1.0]
    assert dynamic.rejected["/tf base->tool"] == 1
    # the transform observation goes stale like a topic when /tf stops
    assert dynamic.tick(1.0).reason == "stale"


def test_a_malformed_tf_message_is_rejected_whole():
    from tests.robot.test_transforms import stamped, tf_message

    controller = PolicyController(PoseEcho(), _tf_config())
    bad = tf_message(
        stamped("base", "tool", [1, 0, 0], [0, 0, 0, 1], 5), stamped("base", "", [0, 0, 0], [0, 0, 0, 1])
    )
    with pytest.raises(MessageError, match="empty frame name"):
        controller.observe_transforms(bad, 0.0)
    assert controller.observation() is None and controller.rejected["/tf base->tool"] == 1


def test_a_compressed_image_observation_is_decoded_and_its_size_checked():
    import io
    from types import SimpleNamespace

    import imageio.v3 as iio

    class FirstPixel:
        def reset(self, seed=None):
            pass

        def act(self, obs):
            assert obs["rgb"].dtype == np.uint8 and obs["rgb"].shape == (4, 6, 3)
            return obs["rgb"][0, 0, :2].astype(np.float64)

    image = np.zeros((4, 6, 3), np.uint8)
    image[0, 0] = [7, 9, 0]
    buffer = io.BytesIO()
    iio.imwrite(buffer, image, extension=".png")
    msg = SimpleNamespace(format="rgb8; png compressed bgr8", data=buffer.getvalue())
    config = {
        "observations": [{"topic": "c", "type": "CompressedImage", "key": "rgb", "height": 4, "width": 6}],
        "command": {"low": [-10, -10], "high": [10, 10]},
    }
    controller = PolicyController(FirstPixel(), config)
    controller.observe(0, msg, 0.0)
    assert controller.tick(0.01).command.tolist() == [7.0, 9.0]
    wrong = PolicyController(
        FirstPixel(), {**config, "observations": [{**config["observations"][0], "width": 5}]}
    )
    with pytest.raises(MessageError, match="image is 4x6"):
        wrong.observe(0, msg, 0.0)
