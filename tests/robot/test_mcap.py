"""Trajectory store <-> ROS 2 bag (MCAP): exact round trip, readable by rosbags and rclpy, user bags import."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from std_msgs.msg import Float64MultiArray

import embodia
from embodia.robot.errors import BagError
from embodia.robot.mcap import export_mcap, import_mcap
from embodia.runner.replay import replay


@pytest.fixture(scope="module")
def pointmaze_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcap") / "pm.zarr"
    embodia.rollout("embodia/PointMaze-Medium-v0", "expert", episodes=3, seed=4, max_steps=40, record=path)
    return path


def test_export_import_round_trip_is_exact(pointmaze_store, tmp_path):
    bag = tmp_path / "pm.mcap"
    summary = export_mcap(pointmaze_store, bag, rate_hz=10)
    assert summary["episodes"] == 3 and not (tmp_path / "pm.mcap.partial").exists()
    result = import_mcap(bag, tmp_path / "back.zarr")
    assert result["episodes"] == 3 and result["steps"] == 120
    a, b = embodia.TrajectoryStore(pointmaze_store), embodia.TrajectoryStore(tmp_path / "back.zarr")
    assert a.schema == b.schema
    for i in range(3):
        ea, eb = a.episode(i), b.episode(i)
        for key in ea:
            assert ea[key].dtype == eb[key].dtype and np.array_equal(ea[key], eb[key]), key
        ma, mb = a.episode_meta(i), b.episode_meta(i)
        assert (ma.env_id, ma.seed, ma.success, ma.length) == (mb.env_id, mb.seed, mb.success, mb.length)
        np.testing.assert_array_equal(ma.initial_state, mb.initial_state)
        np.testing.assert_array_equal(ma.final_state, mb.final_state)
    # the imported store re-simulates exactly: initial states and actions survived the bag
    assert max(r.max_deviation for r in replay(b, verify=True)) == 0.0


def test_exported_bag_is_a_ros2_bag(pointmaze_store, tmp_path):
    bag = tmp_path / "pm.mcap"
    export_mcap(pointmaze_store, bag, prefix="/sim", rate_hz=20)
    typestore = get_typestore(Stores.ROS2_JAZZY)
    with Reader(bag) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        assert topics["/sim/state"] == "std_msgs/msg/Float64MultiArray"
        assert (
            topics["/sim/success"] == "std_msgs/msg/Bool" and topics["/sim/episode"] == "std_msgs/msg/String"
        )
        assert reader.message_count == 3 * 40 * 7 + 6
        assert reader.duration == (120 - 1) * 50_000_000 + 4  # start event 1 ns early, end 2 ns late, +1
        state = embodia.TrajectoryStore(pointmaze_store).episode(0)["state"]
        seen = 0
        for connection, timestamp, raw in reader.messages():
            if connection.topic == "/sim/state" and seen < 3:
                assert timestamp == 1_000 + seen * 50_000_000
                ours = typestore.deserialize_cdr(raw, connection.msgtype)
                ros = deserialize_message(bytes(raw), Float64MultiArray)  # ROS 2's own CDR decoder
                np.testing.assert_array_equal(np.asarray(ros.data), ours.data)
                np.testing.assert_array_equal(ours.data.astype(np.float32), state[seen])
                seen += 1
            if connection.topic == "/sim/episode" and timestamp == 999:
                event = json.loads(typestore.deserialize_cdr(raw, connection.msgtype).data)
                assert event["event"] == "start" and event["seed"] == 4


def test_images_travel_as_sensor_msgs_image(tmp_path):
    rng = np.random.default_rng(0)
    store = embodia.TrajectoryStore(tmp_path / "img.zarr", mode="a")
    frames = rng.integers(0, 255, size=(5, 6, 4, 3), dtype=np.uint8)
    store.add_episode(
        {"rgb": frames, "action": rng.normal(size=(5, 2)).astype(np.float32)}, env_id="camera-test"
    )
    export_mcap(tmp_path / "img.zarr", tmp_path / "img.mcap")
    with Reader(tmp_path / "img.mcap") as reader:
        assert {c.topic: c.msgtype for c in reader.connections}["/embodia/rgb"] == "sensor_msgs/msg/Image"
    import_mcap(tmp_path / "img.mcap", tmp_path / "back.zarr")
    back = embodia.TrajectoryStore(tmp_path / "back.zarr").episode(0)
    np.testing.assert_array_equal(back["rgb"], frames)


def _robot_bag(path):
    """A bag as a robot would record it (rosbags' writer, rosbag2 directory): joint states at 2x the command rate."""
    typestore = get_typestore(Stores.ROS2_JAZZY)
    t = typestore.types
    time_msg, header = t["builtin_interfaces/msg/Time"], t["std_msgs/msg/Header"]
    vector, twist = t["geometry_msgs/msg/Vector3"], t["geometry_msgs/msg/Twist"]
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        joints = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=typestore)
        cmd = writer.add_connection("/cmd_vel", "geometry_msgs/msg/Twist", typestore=typestore)
        episode = writer.add_connection("/episode", "std_msgs/msg/String", typestore=typestore)

        def write(connection, ns, msg):
            writer.write(connection, ns, typestore.serialize_cdr(msg, connection.msgtype))

        write(
            episode,
            0,
            t["std_msgs/msg/String"](data=json.dumps({"event": "start", "seed": 11, "env_id": "mybot"})),
        )
        for k in range(10):
            ns = 1_000_000 + k * 10_000_000
            stamp = header(stamp=time_msg(sec=0, nanosec=ns), frame_id="")
            msg = t["sensor_msgs/msg/JointState"](
                header=stamp,
                name=["right", "left"],
                position=np.array([k, -k], float),
                velocity=np.array([], float),
                effort=np.array([], float),
            )
            write(joints, ns, msg)
            if k % 2 == 1:
                write(
                    cmd,
                    ns + 500_000,
                    twist(linear=vector(x=k / 10, y=0.0, z=0.0), angular=vector(x=0.0, y=0.0, z=-k / 10)),
                )
        write(
            episode, 200_000_000, t["std_msgs/msg/String"](data=json.dumps({"event": "end", "success": True}))
        )


def test_a_robot_bag_becomes_a_store(tmp_path):
    _robot_bag(tmp_path / "robot_bag")
    result = import_mcap(
        tmp_path / "robot_bag", tmp_path / "robot.zarr", topics=["/joint_states=joints"], action="/cmd_vel"
    )
    assert result == {
        "path": str(tmp_path / "robot.zarr"),
        "episodes": 1,
        "steps": 5,
        "rejected": 0,
        "keys": ["joints", "action"],
        "skipped": 0,
        "skipped_topics": [],
        "fields": {},
    }
    store = embodia.TrajectoryStore(tmp_path / "robot.zarr")
    episode = store.episode(0)
    # one row per command, holding the newest joint state before it
    np.testing.assert_array_equal(episode["joints"][:, 0], [1, 3, 5, 7, 9])
    np.testing.assert_allclose(episode["action"][:, [0, 5]], [[k / 10, -k / 10] for k in (1, 3, 5, 7, 9)])
    meta = store.episode_meta(0)
    assert (meta.env_id, meta.seed, meta.success) == ("mybot", 11, True)
    assert store.schema["action"]["role"] == "action"


def test_bad_bags_and_outputs_fail_clearly(tmp_path, pointmaze_store, cli):
    with pytest.raises(BagError, match="does not exist"):
        import_mcap(tmp_path / "nope.mcap", tmp_path / "x.zarr")
    (tmp_path / "broken.mcap").write_bytes(b"\x89MCAP0\r\n" + b"garbage" * 10)
    with pytest.raises(BagError, match="broken.mcap"):
        import_mcap(tmp_path / "broken.mcap", tmp_path / "x.zarr")
    export_mcap(pointmaze_store, tmp_path / "pm.mcap")
    with pytest.raises(BagError, match="has no topic\\(s\\) \\['/odom'\\]"):
        import_mcap(tmp_path / "pm.mcap", tmp_path / "x.zarr", topics=["/odom"])
    result = cli("data", "export", str(pointmaze_store), "--mcap", str(tmp_path / "out.bag"))
    assert result.returncode == 2 and "must end in .mcap" in result.stderr
    assert not (tmp_path / "x.zarr").exists()
