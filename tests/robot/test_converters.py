"""The converter registry: registered sensor converters, the generic fallback, text columns, shapes.

Every converter reads rclpy messages and the ``rosbags`` objects of the same bytes alike, so a live
recording and a bag import of one topic give the same columns; the tests check both on real CDR bytes.
"""

from __future__ import annotations

import json

import imageio.v3 as iio
import numpy as np
import pytest
from rclpy.serialization import serialize_message
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import CameraInfo, CompressedImage, Imu, JointState, LaserScan, Temperature
from std_msgs.msg import String

from embodia.robot import convert
from embodia.robot.converters import (
    ShapeError,
    TopicValues,
    convert_message,
    converter_for,
    converters,
    decode_text,
    encode_text,
    text_width,
)
from embodia.robot.errors import MessageError
from embodia.robot.flatten import field_names, flatten_message

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def _both(msg):
    """The rclpy message and the rosbags object deserialised from its CDR bytes.

    rclpy's ``serialize_message`` may leave a few bytes of padding after a message, more than rosbags'
    size check accepts; cutting them off (in steps of 4 until it decodes) leaves the message itself.
    """
    kind = convert.type_name_of(msg)
    raw = bytes(serialize_message(msg))
    for cut in (0, 4, 8, 12):
        try:
            return msg, TYPESTORE.deserialize_cdr(raw[: len(raw) - cut], kind), kind
        except SerdeError:
            continue
    raise AssertionError(f"rosbags cannot decode the CDR bytes of {kind}")


def _same_parts(msg):
    ours, theirs, kind = _both(msg)
    a, b = convert_message(ours, kind), convert_message(theirs, kind)
    assert a.keys() == b.keys()
    for part in a:
        if isinstance(a[part], str):
            assert a[part] == b[part]
        else:
            np.testing.assert_array_equal(a[part], b[part])
            assert np.asarray(a[part]).dtype == np.asarray(b[part]).dtype
    return a


def test_every_listed_type_has_one_registered_converter():
    registered = converters()
    for name in (
        "std_msgs/msg/String",
        "sensor_msgs/msg/Imu",
        "sensor_msgs/msg/LaserScan",
        "sensor_msgs/msg/CompressedImage",
        "sensor_msgs/msg/CameraInfo",
        "tf2_msgs/msg/TFMessage",
        "sensor_msgs/msg/JointState",
    ):
        assert registered[name].type_name == name
    assert converter_for("sensor_msgs/msg/Temperature") is None  # the generic fallback's
    assert convert.normalize_type("Imu") == "sensor_msgs/msg/Imu"
    assert convert.message_class("sensor_msgs/msg/Temperature") is Temperature  # any installed type


def test_imu_laser_scan_and_joint_state_efforts():
    imu = Imu()
    imu.orientation.w = 1.0
    imu.angular_velocity.z = 0.5
    imu.linear_acceleration.z = 9.81
    np.testing.assert_array_equal(_same_parts(imu)[""], [0, 0, 0, 1, 0, 0, 0.5, 0, 0, 9.81])
    scan = LaserScan(ranges=[1.0, float("inf"), 2.5], intensities=[7.0, 8.0, 9.0])
    parts = _same_parts(scan)
    assert parts[""].dtype == np.float32 and np.isinf(parts[""][1])
    both = convert.to_array(scan, "LaserScan", fields=["ranges", "intensities"])
    np.testing.assert_array_equal(both, [1.0, np.inf, 2.5, 7.0, 8.0, 9.0])
    joints = JointState(name=["a", "b"], position=[1.0, 2.0], velocity=[], effort=[-3.0, 4.0])
    np.testing.assert_array_equal(_same_parts(joints)[""], [1.0, 2.0, -3.0, 4.0])  # present fields
    np.testing.assert_array_equal(convert.to_array(joints, "JointState"), [1.0, 2.0])  # node default


def test_compressed_images_decode_to_rgb():
    rgb = np.random.default_rng(1).integers(0, 255, size=(6, 8, 3), dtype=np.uint8)
    png = CompressedImage(
        format="rgb8; png compressed bgr8", data=iio.imwrite("<bytes>", rgb, extension=".png")
    )
    np.testing.assert_array_equal(_same_parts(png)[""], rgb)
    gray = CompressedImage(format="png", data=iio.imwrite("<bytes>", rgb[..., 0], extension=".png"))
    np.testing.assert_array_equal(convert.to_array(gray, "CompressedImage"), np.repeat(rgb[..., :1], 3, 2))
    smooth = np.tile(np.linspace(0, 255, 8, dtype=np.uint8)[None, :, None], (6, 1, 3))
    jpeg = CompressedImage(format="jpeg", data=iio.imwrite("<bytes>", smooth, extension=".jpg", quality=95))
    decoded = convert.to_array(jpeg, "CompressedImage")
    assert decoded.shape == (6, 8, 3) and decoded.dtype == np.uint8
    assert np.abs(decoded.astype(int) - smooth).max() < 12  # lossy
    depth = CompressedImage(format="16UC1; compressedDepth png", data=bytes(12) + png.data.tobytes())
    with pytest.raises(MessageError, match="compressedDepth png' is not supported"):
        convert.to_array(depth, "CompressedImage")
    with pytest.raises(MessageError, match="not supported"):
        convert.to_array(CompressedImage(format="tiff", data=b"II*\0"), "CompressedImage")
    broken = CompressedImage(format="png", data=png.data.tobytes()[:30])
    with pytest.raises(MessageError, match="does not decode"):
        convert.to_array(broken, "CompressedImage")


def test_camera_info_and_tf_have_text_parts():
    info = CameraInfo(height=480, width=640, distortion_model="plumb_bob", d=[0.1, -0.2, 0.0, 0.0, 0.05])
    info.k = [500.0, 0.0, 320.0, 0.0, 500.0, 240.0, 0.0, 0.0, 1.0]
    parts = _same_parts(info)
    assert parts["distortion_model"] == "plumb_bob"
    assert parts[""].shape == (2 + 5 + 9 + 9 + 12 + 2 + 5,)
    np.testing.assert_array_equal(parts[""][:7], [480, 640, 0.1, -0.2, 0.0, 0.0, 0.05])
    t = TYPESTORE.types  # tf2_msgs has no rclpy wheel here: the rosbags objects a bag gives
    transforms = [
        t["geometry_msgs/msg/TransformStamped"](
            header=t["std_msgs/msg/Header"](
                stamp=t["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id=a
            ),
            child_frame_id=b,
            transform=t["geometry_msgs/msg/Transform"](
                translation=t["geometry_msgs/msg/Vector3"](x=x, y=0.0, z=0.0),
                rotation=t["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0),
            ),
        )
        for a, b, x in (("map", "odom", 1.0), ("odom", "base_link", 2.0))
    ]
    parts = convert_message(t["tf2_msgs/msg/TFMessage"](transforms=transforms), "tf2_msgs/msg/TFMessage")
    np.testing.assert_array_equal(parts[""], [[1, 0, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 0, 1]])
    assert json.loads(parts["frames"]) == [["map", "odom"], ["odom", "base_link"]]


def test_generic_fallback_flattens_numbers_in_field_order_and_keeps_text():
    msg = Temperature(temperature=21.5, variance=0.25)
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 3, 7, "thermo_link"
    parts = _same_parts(msg)
    np.testing.assert_array_equal(parts[""], [3, 7, 21.5, 0.25])
    assert json.loads(parts["text"]) == {"header.frame_id": "thermo_link"}
    assert field_names(msg) == ["header.stamp.sec", "header.stamp.nanosec", "temperature", "variance"]
    info = CameraInfo(d=[0.5])  # nested messages, fixed and variable arrays
    names = field_names(info)
    assert names[:5] == ["header.stamp.sec", "header.stamp.nanosec", "height", "width", "d[0]"]
    assert (
        names[5] == "k[0]" and names[-1] == "roi.do_rectify" and len(names) == len(flatten_message(info)[""])
    )
    with pytest.raises(MessageError, match="not a ROS message"):
        flatten_message(3.0)


def test_text_columns_are_exact_fixed_width_bytes():
    for text in ("", "open the drawer", "über — 抽屉 ✓"):
        column = encode_text(text, 64)
        assert column.dtype == np.uint8 and column.shape == (64,) and decode_text(column) == text
    assert decode_text(np.stack([encode_text("a", 8), encode_text("bc", 8)])) == ["a", "bc"]
    with pytest.raises(MessageError, match="does not fit its 4-byte column"):
        encode_text("hello", 4)
    with pytest.raises(MessageError, match="NUL"):
        encode_text("a\0b", 8)
    assert (text_width(0), text_width(64), text_width(65)) == (64, 64, 128)
    assert convert.to_array(String(data="hi"), "String") == "hi"  # the policy node gets text


def test_topic_values_keep_one_shape_per_key():
    values = TopicValues("scan", lambda key: 16)
    assert values.encode({"": np.zeros(3)}).shape == (3,)
    with pytest.raises(ShapeError, match="scan has values of lengths 3, 4"):
        values.encode({"": np.zeros(4)})
    tf = TopicValues("tf", lambda key: 32)
    out = tf.encode({"": np.zeros((2, 7)), "frames": '[["a","b"]]'})
    assert out["tf"].shape == (2, 7) and decode_text(out["tf.frames"]) == '[["a","b"]]'
    with pytest.raises(ShapeError, match="tf has values of shapes \\(2, 7\\), \\(1, 7\\)"):
        tf.encode({"": np.zeros((1, 7)), "frames": "[]"})
