"""A recorder joins the episode topic only once the publishers of its topics are connected to it (real rclpy).

A lockstep bridge starts its first episode when ``episode`` has its subscribers; a recorder that joined
``episode`` while the policy's ``cmd`` publisher was not yet connected to it lost the first commands of
the run under load (DDS discovery is asymmetric). Here ``/cmd`` is at first only subscribed (by the
"bridge"), so the recorder knows its type but has no publisher: it must not follow episodes; once a
publisher appears, it follows them, and the bridge's episode publisher sees it.
Run as ``python -m tests.robot.test_record_order`` it is the isolated side.
"""

from __future__ import annotations

import json
import sys
import time


def _scenario() -> dict[str, object]:
    from std_msgs.msg import Float64MultiArray, String

    from embodia.robot import ros
    from embodia.robot.record import (
        EpisodeAssembler,
        RecorderNode,
        wait_and_follow_episodes,
        wait_for_publishers,
    )

    ros.init(None)
    from rclpy.node import Node

    bridge = Node("bridge")
    bridge.create_publisher(Float64MultiArray, "/obs", 10)
    bridge.create_subscription(Float64MultiArray, "/cmd", lambda _msg: None, 10)
    episodes = bridge.create_publisher(String, "/episode", 10)
    assembler = EpisodeAssembler(["state", "action"], "action", lambda data, info: None)
    recorder = RecorderNode([("/obs", "state"), ("/cmd", "action")], assembler, "/episode")
    unconnected = wait_for_publishers(recorder, duration=3.0)  # no publisher on /cmd: waits the whole time
    before = {
        "cmd_unconnected": "/cmd" in unconnected,
        "following": recorder.following_episodes,
        "episode_subscribers": episodes.get_subscription_count(),
    }
    policy = Node("policy")
    policy.create_publisher(Float64MultiArray, "/cmd", 10)
    wait_and_follow_episodes(recorder, duration=120.0)
    after_wait = {"unconnected": recorder.unconnected(), "following": recorder.following_episodes}
    deadline = time.monotonic() + 120.0
    while episodes.get_subscription_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    after_wait["episode_subscribers"] = episodes.get_subscription_count()
    for node in (recorder, bridge, policy):
        node.destroy_node()
    ros.shutdown()
    return {"before": before, "after": after_wait}


def test_a_recorder_follows_episodes_only_once_its_topics_publishers_are_connected(tmp_path, monkeypatch):
    from embodia.robot.netns import check_isolation, run_isolated
    from tests.conftest import ROOT

    check_isolation()
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    result = run_isolated(
        [sys.executable, "-m", "tests.robot.test_record_order"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    # while /cmd had only a subscriber, the recorder waited, not following episodes
    assert seen["before"] == {"cmd_unconnected": True, "following": False, "episode_subscribers": 0}
    # with a publisher, it is connected to every topic before it follows episodes
    assert seen["after"] == {"unconnected": [], "following": True, "episode_subscribers": 1}


if __name__ == "__main__":
    print(json.dumps(_scenario()))
