"""Message <-> array conversion with the real ROS 2 message classes (no ROS graph needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Bool, String

from embodia.robot import convert
from embodia.robot.errors import MessageError, RobotConfigError


def test_type_names_resolve_to_rclpy_classes():
    assert convert.normalize_type("JointState") == "sensor_msgs/msg/JointState"
    assert convert.normalize_type("geometry_msgs/Twist") == "geometry_msgs/msg/Twist"
    assert convert.message_class("nav_msgs/msg/Odometry") is Odometry
    assert convert.type_name_of(JointState()) == "sensor_msgs/msg/JointState"
    with pytest.raises(RobotConfigError, match="not supported"):
        convert.normalize_type("sensor_msgs/msg/PointCloud2")


def test_joint_state_reorders_by_name_and_rejects_wrong_joints():
    msg = convert.make_joint_state(np.array([1.0, 2.0, 3.0]), ["b", "a", "c"], stamp_ns=5_000_000_123)
    msg.velocity = [0.1, 0.2, 0.3]
    assert convert.header_stamp_ns(msg) == 5_000_000_123
    np.testing.assert_array_equal(convert.joint_state_to_array(msg, ["a", "b", "c"]), [2.0, 1.0, 3.0])
    both = convert.joint_state_to_array(msg, ["c", "a", "b"], fields=["position", "velocity"])
    np.testing.assert_allclose(both, [3.0, 2.0, 1.0, 0.3, 0.2, 0.1])
    with pytest.raises(MessageError, match="missing: \\['d'\\]"):
        convert.joint_state_to_array(msg, ["a", "b", "d"])
    with pytest.raises(MessageError, match="effort has 0 values"):
        convert.joint_state_to_array(msg, fields=["effort"])
    msg.position = [1.0, float("nan"), 3.0]
    with pytest.raises(MessageError, match="non-finite"):
        convert.joint_state_to_array(msg)


def test_image_round_trip_and_validation():
    pixels = np.random.default_rng(0).integers(0, 255, size=(4, 5, 3), dtype=np.uint8)
    msg = convert.make_image(pixels, "rgb8", stamp_ns=7)
    np.testing.assert_array_equal(convert.image_to_array(msg, "rgb8", 4, 5), pixels)
    # rows padded to a larger step are read correctly
    padded = Image(height=4, width=5, encoding="rgb8", step=16)
    padded.data = np.concatenate([pixels.reshape(4, 15), np.zeros((4, 1), np.uint8)], 1).tobytes()
    np.testing.assert_array_equal(convert.image_to_array(padded), pixels)
    depth = np.linspace(0, 3, 6, dtype=np.float32).reshape(2, 3)
    assert convert.image_encoding_for(depth.dtype, depth.shape) == "32FC1"
    np.testing.assert_array_equal(convert.image_to_array(convert.make_image(depth, "32FC1")), depth)
    with pytest.raises(MessageError, match="expected 'rgb8'"):
        convert.image_to_array(convert.make_image(pixels[..., 0], "mono8"), encoding="rgb8")
    with pytest.raises(MessageError, match="4x5 \\(HxW\\), expected 64x64"):
        convert.image_to_array(msg, height=64, width=64)
    truncated = convert.make_image(pixels, "rgb8")
    truncated.data = truncated.data[:-3]
    with pytest.raises(MessageError, match="bytes with step"):
        convert.image_to_array(truncated)
    bad = convert.make_image(pixels, "rgb8")
    bad.encoding = "yuv422"
    with pytest.raises(MessageError, match="not supported"):
        convert.image_to_array(bad)


def test_odometry_pose_and_twist_components():
    odom = Odometry()
    odom.pose.pose.position.x, odom.pose.pose.position.y = 1.5, -2.0
    yaw = 0.7
    odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    odom.twist.twist.linear.x, odom.twist.twist.angular.z = 0.3, -0.2
    np.testing.assert_allclose(convert.odometry_to_array(odom), [1.5, -2.0, yaw, 0.3, 0.0, -0.2], atol=1e-12)
    pose = PoseStamped()
    pose.pose.position.z = 4.0
    pose.pose.orientation.w = 1.0
    np.testing.assert_allclose(convert.pose_stamped_to_array(pose, ["z", "qw", "yaw"]), [4.0, 1.0, 0.0])
    twist = convert.make_twist(np.array([0.5, -1.0]), ["linear.x", "angular.z"])
    np.testing.assert_allclose(
        convert.twist_to_array(twist, ["angular.z", "linear.x", "linear.y"]), [-1.0, 0.5, 0.0]
    )
    stamped = convert.make_twist_stamped(np.array([0.25]), ["linear.y"], stamp_ns=42)
    assert convert.header_stamp_ns(stamped) == 42
    assert convert.twist_to_array(stamped, ["linear.y"])[0] == 0.25
    with pytest.raises(RobotConfigError):
        convert.make_twist(np.array([1.0]), ["linear.w"])


def test_float_array_trajectory_and_scalars():
    values = np.arange(6, dtype=np.float64).reshape(2, 3)
    msg = convert.make_float64_multi_array(values)
    np.testing.assert_array_equal(convert.float64_multi_array_to_array(msg), values)
    with pytest.raises(MessageError, match="expected 5"):
        convert.float64_multi_array_to_array(msg, size=5)
    traj = convert.make_joint_trajectory(np.array([0.1, 0.2]), ["j1", "j2"], stamp_ns=9, time_from_start=0.02)
    np.testing.assert_allclose(convert.joint_trajectory_to_array(traj, ["j2", "j1"]), [0.2, 0.1])
    assert traj.points[0].time_from_start.nanosec == 20_000_000
    assert convert.to_array(String(data="open the drawer"), "String") == "open the drawer"
    assert convert.to_array(Bool(data=True), "Bool").tolist() == [True]
    with pytest.raises(RobotConfigError, match="take options"):
        convert.to_array(msg, "Float64MultiArray", joint_names=["x"])


def test_built_messages_survive_real_serialization():
    msg = convert.make_joint_state(np.array([0.5, -0.25]), ["a", "b"], stamp_ns=3)
    back = deserialize_message(serialize_message(msg), JointState)
    np.testing.assert_array_equal(convert.joint_state_to_array(back, ["a", "b"]), [0.5, -0.25])


def test_assembler_pairs_stamped_commands_with_the_observation_they_answer():
    from embodia.robot.record import EpisodeAssembler

    episodes = []
    assembler = EpisodeAssembler(["state", "action"], "action", lambda data, info: episodes.append(data))
    # observations 1..3 arrive before the command answering observation 2 (a slow policy under load)
    for stamp in (1, 2, 3):
        assembler.value("state", np.array([float(stamp)]), stamp)
    assembler.value("action", np.array([20.0]), 2)
    assembler.value("action", np.array([30.0]), 3)
    assembler.value("state", np.array([4.0]), 4)
    assembler.value("action", np.array([99.0]), None)  # unstamped: the newest observation
    assembler.finish()
    (data,) = episodes
    np.testing.assert_array_equal(data["state"][:, 0], [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(data["action"][:, 0], [20.0, 30.0, 99.0])
