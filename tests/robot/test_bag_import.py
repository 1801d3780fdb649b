"""Robot bags -> trajectory store: every listed type, the generic fallback, undecodable and varying topics.

The bags are real ROS 2 bags written here: one MCAP file (the ``mcap`` writer, rosbags' CDR, ros2msg
schemas as rosbag2 writes them) and one rosbag2 directory (rosbags' writer, sqlite3 storage).
"""

from __future__ import annotations

import json
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
from mcap.writer import Writer as McapWriter
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Rosbag2Writer
from rosbags.typesys import Stores, get_typestore

import embodia
from embodia.robot.bag_import import BagWarning
from embodia.robot.converters import decode_text
from embodia.robot.errors import BagError
from embodia.robot.mcap import export_mcap, import_mcap

TS = get_typestore(Stores.ROS2_JAZZY)
T = TS.types
#: what rosbag2 (Jazzy and newer) stores as the schema of a service-event topic: the raw service file
SERVICE_SCHEMA = "=" * 80 + "\nSRV: example_interfaces/srv/AddTwoInts\nint64 a\nint64 b\n---\nint64 sum\n"
SERVICE_TOPIC = "/add_two_ints/_service_event"
SERVICE_TYPE = "example_interfaces/srv/AddTwoInts_Event"
TEXTS = ["pick up the red cup", "pick up the red cup", "stelle die Tasse ab ✓ (über)", "done"]
FRAMES = np.random.default_rng(3).integers(0, 255, size=(4, 6, 8, 3), dtype=np.uint8)
T0 = 1_000_000_000
DT = 100_000_000


def _header(sec: int = 0, frame: str = "") -> object:
    return T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=0), frame_id=frame
    )


def _vec(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> object:
    return T["geometry_msgs/msg/Vector3"](x=x, y=y, z=z)


def _transforms(k: int, count: int = 2) -> object:
    pairs = [("map", "odom"), ("odom", "base_link"), ("base_link", "camera")][:count]
    return T["tf2_msgs/msg/TFMessage"](
        transforms=[
            T["geometry_msgs/msg/TransformStamped"](
                header=_header(k, parent),
                child_frame_id=child,
                transform=T["geometry_msgs/msg/Transform"](
                    translation=_vec(float(k + i)),
                    rotation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0),
                ),
            )
            for i, (parent, child) in enumerate(pairs)
        ]
    )


def _robot_messages(k: int) -> dict[str, tuple[str, object]]:
    """Step ``k`` of the robot: topic -> (type, rosbags message)."""
    f = np.array
    camera_info = T["sensor_msgs/msg/CameraInfo"](
        header=_header(k, "camera"),
        height=6,
        width=8,
        distortion_model="plumb_bob",
        d=f([0.1, -0.2, 0.0, 0.0, 0.05]),
        k=f([50.0, 0, 4, 0, 50, 3, 0, 0, 1]),
        r=np.eye(3).ravel(),
        p=f([50.0, 0, 4, 0, 0, 50, 3, 0, 0, 0, 1, 0]),
        binning_x=0,
        binning_y=0,
        roi=T["sensor_msgs/msg/RegionOfInterest"](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
        ),
    )
    return {
        "/joint_states": (
            "sensor_msgs/msg/JointState",
            T["sensor_msgs/msg/JointState"](
                header=_header(k),
                name=["j1", "j2"],
                position=f([k, -k], float),
                velocity=f([0.1 * k, 0.2 * k]),
                effort=f([10.0 + k, 20.0 + k]),
            ),
        ),
        "/imu": (
            "sensor_msgs/msg/Imu",
            T["sensor_msgs/msg/Imu"](
                header=_header(k, "imu"),
                orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0),
                orientation_covariance=np.zeros(9),
                angular_velocity=_vec(z=0.1 * k),
                angular_velocity_covariance=np.zeros(9),
                linear_acceleration=_vec(z=9.81),
                linear_acceleration_covariance=np.zeros(9),
            ),
        ),
        "/scan": (
            "sensor_msgs/msg/LaserScan",
            T["sensor_msgs/msg/LaserScan"](
                header=_header(k, "laser"),
                angle_min=-1.0,
                angle_max=1.0,
                angle_increment=0.5,
                time_increment=0.0,
                scan_time=0.1,
                range_min=0.1,
                range_max=10.0,
                ranges=f([1.0 + k, np.inf, 2.0, 3.0, np.nan], np.float32),
                intensities=f([], np.float32),
            ),
        ),
        "/camera/image/compressed": (
            "sensor_msgs/msg/CompressedImage",
            T["sensor_msgs/msg/CompressedImage"](
                header=_header(k, "camera"),
                format="rgb8; png compressed bgr8",
                data=np.frombuffer(iio.imwrite("<bytes>", FRAMES[k], extension=".png"), np.uint8),
            ),
        ),
        "/camera/camera_info": ("sensor_msgs/msg/CameraInfo", camera_info),
        "/tf_static": ("tf2_msgs/msg/TFMessage", _transforms(k)),
        "/instruction": ("std_msgs/msg/String", T["std_msgs/msg/String"](data=TEXTS[k])),
        "/temperature": (
            "sensor_msgs/msg/Temperature",
            T["sensor_msgs/msg/Temperature"](header=_header(k, "thermo"), temperature=20.0 + k, variance=0.5),
        ),
    }


def _twist(k: int) -> object:
    return T["geometry_msgs/msg/Twist"](linear=_vec(x=k / 10), angular=_vec(z=-k / 10))


def _write_mcap(path, steps: list[dict[str, tuple[str, object]]]) -> None:
    """An MCAP file as rosbag2 writes it, with a service-event topic and a type without a schema."""
    with open(path, "wb") as stream:
        writer = McapWriter(stream)
        writer.start(profile="ros2", library="embodia tests")
        channels: dict[str, int] = {}

        def channel(topic: str, msgtype: str, schema: str | None) -> int:
            if topic not in channels:
                encoding = "ros2msg" if schema is not None else ""  # "": a type name without a definition
                schema_id = writer.register_schema(
                    name=msgtype, encoding=encoding, data=(schema or "").encode()
                )
                channels[topic] = writer.register_channel(topic, "cdr", schema_id)
            return channels[topic]

        def write(topic: str, msgtype: str, ns: int, raw: bytes, schema: str | None = "") -> None:
            if schema == "":
                schema = TS.generate_msgdef(msgtype, ros_version=2)[0]
            writer.add_message(channel(topic, msgtype, schema), log_time=ns, data=raw, publish_time=ns)

        write(SERVICE_TOPIC, SERVICE_TYPE, T0 - 10, b"\x00\x01\x00\x00" + bytes(40), SERVICE_SCHEMA)
        write("/secret", "my_msgs/msg/Secret", T0 - 5, b"\x00\x01\x00\x00" + bytes(8), None)
        for k, messages in enumerate(steps):
            for i, (topic, (msgtype, msg)) in enumerate(messages.items()):
                write(topic, msgtype, T0 + k * DT + i, bytes(TS.serialize_cdr(msg, msgtype)))
            twist = bytes(TS.serialize_cdr(_twist(k), "geometry_msgs/msg/Twist"))
            write("/cmd_vel", "geometry_msgs/msg/Twist", T0 + k * DT + DT // 2, twist)
        writer.finish()


NAMED = [
    "/joint_states=joints",
    "/imu=imu",
    "/scan=scan",
    "/camera/image/compressed=camera",
    "/camera/camera_info=camera_info",
    "/tf_static=tf",
    "/instruction=instruction",
    "/temperature=temperature",
]


@pytest.fixture(scope="module")
def robot_mcap(tmp_path_factory):
    path = tmp_path_factory.mktemp("bags") / "robot.mcap"
    _write_mcap(path, [_robot_messages(k) for k in range(4)])
    return path


def test_every_type_of_a_robot_bag_imports(robot_mcap, tmp_path):
    with pytest.warns(BagWarning) as caught:
        result = import_mcap(robot_mcap, tmp_path / "robot.zarr", topics=NAMED, action="/cmd_vel")
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith("skipped 2 topic(s) whose messages cannot be decoded")
    assert f"{SERVICE_TOPIC} ({SERVICE_TYPE}: its definition cannot be parsed" in message
    assert "/secret (my_msgs/msg/Secret: the bag has no definition of it" in message and "\n" not in message
    assert (result["episodes"], result["steps"], result["rejected"]) == (1, 4, 0)
    assert (result["skipped"], result["skipped_topics"]) == (2, ["/add_two_ints/_service_event", "/secret"])
    assert result["keys"] == [
        "joints",
        "imu",
        "scan",
        "camera",
        "camera_info",
        "camera_info.distortion_model",
        "tf",
        "tf.frames",
        "instruction",
        "temperature",
        "temperature.text",
        "action",
    ]
    assert result["fields"] == {
        "temperature": ["header.stamp.sec", "header.stamp.nanosec", "temperature", "variance"]
    }
    store = embodia.TrajectoryStore(tmp_path / "robot.zarr")
    ep = store.episode(0)
    ks = np.arange(4.0)
    np.testing.assert_array_equal(ep["joints"], np.stack([ks, -ks, 0.1 * ks, 0.2 * ks, 10 + ks, 20 + ks], 1))
    np.testing.assert_allclose(ep["imu"][:, [3, 6, 9]], np.stack([ks * 0 + 1, 0.1 * ks, ks * 0 + 9.81], 1))
    assert ep["scan"].dtype == np.float32 and ep["scan"].shape == (4, 5)
    np.testing.assert_array_equal(ep["scan"][:, 0], 1 + ks)
    assert np.isinf(ep["scan"][:, 1]).all() and np.isnan(ep["scan"][:, 4]).all()
    np.testing.assert_array_equal(ep["camera"], FRAMES)  # png: lossless
    np.testing.assert_array_equal(ep["camera_info"][0, :7], [6, 8, 0.1, -0.2, 0.0, 0.0, 0.05])
    assert decode_text(ep["camera_info.distortion_model"]) == ["plumb_bob"] * 4
    assert ep["tf"].shape == (4, 2, 7)
    np.testing.assert_array_equal(ep["tf"][:, 1, 0], ks + 1)
    assert json.loads(decode_text(ep["tf.frames"][0])) == [["map", "odom"], ["odom", "base_link"]]
    assert ep["instruction"].dtype == np.uint8 and ep["instruction"].shape == (4, 64)
    assert decode_text(ep["instruction"]) == TEXTS  # text reads back exactly (UTF-8 included)
    np.testing.assert_array_equal(ep["temperature"], np.stack([ks, 0 * ks, 20 + ks, 0 * ks + 0.5], 1))
    assert {json.loads(t)["header.frame_id"] for t in decode_text(ep["temperature.text"])} == {"thermo"}
    np.testing.assert_allclose(ep["action"][:, [0, 5]], np.stack([ks / 10, -ks / 10], 1))
    assert store.schema["action"]["role"] == "action"

    # the imported store, text columns included, survives embodia's own bag round trip exactly
    export_mcap(tmp_path / "robot.zarr", tmp_path / "again.mcap")
    import_mcap(tmp_path / "again.mcap", tmp_path / "again.zarr")
    back = embodia.TrajectoryStore(tmp_path / "again.zarr")
    assert back.schema == store.schema
    for key, value in back.episode(0).items():
        np.testing.assert_array_equal(value, ep[key])
        assert value.dtype == ep[key].dtype, key


def test_without_topics_the_default_converters_are_imported(robot_mcap, tmp_path):
    with pytest.warns(BagWarning, match="skipped 2 topic"):
        result = import_mcap(robot_mcap, tmp_path / "default.zarr", action="/cmd_vel")
    # String, TFMessage and types only the generic fallback reads are imported when named
    assert result["keys"] == [
        "joint_states",
        "imu",
        "scan",
        "camera_image_compressed",
        "camera_camera_info",
        "camera_camera_info.distortion_model",
        "action",
    ]


def test_named_undecodable_topics_fail_in_one_line(robot_mcap, tmp_path):
    for topic, reason in (
        (SERVICE_TOPIC, "its definition cannot be parsed (TypesysError: Could not parse:)"),
        ("/secret", "the bag has no definition of it and the default typestore lacks it"),
    ):
        for kwargs in ({"topics": [topic]}, {"topics": ["/imu"], "action": topic}):
            with pytest.raises(BagError) as info:
                import_mcap(robot_mcap, tmp_path / "x.zarr", **kwargs)
            assert str(info.value).endswith(f"cannot be decoded: {reason}") and "\n" not in str(info.value)
            assert f"topic {topic} (" in str(info.value)
    assert not (tmp_path / "x.zarr").exists()


def test_topics_whose_values_change_shape_are_refused_before_writing(tmp_path):
    steps = [_robot_messages(k) for k in range(3)]
    scan = steps[2]["/scan"][1]
    scan.ranges = np.ones(7, np.float32)
    steps[1]["/tf"] = ("tf2_msgs/msg/TFMessage", _transforms(1, count=3))
    for k in (0, 2):
        steps[k]["/tf"] = ("tf2_msgs/msg/TFMessage", _transforms(k, count=1))
    _write_mcap(tmp_path / "varying.mcap", steps)
    out = tmp_path / "v.zarr"
    with pytest.warns(BagWarning), pytest.raises(BagError) as info:
        import_mcap(tmp_path / "varying.mcap", out, topics=["/imu", "/scan"], action="/cmd_vel")
    assert str(info.value) == (
        "topic /scan (sensor_msgs/msg/LaserScan) cannot become store columns: its values have lengths 5, 7 "
        "(one store key holds one shape); leave it out (name the topics to import with --topic)"
    )
    with pytest.warns(BagWarning), pytest.raises(BagError, match="shapes \\(1, 7\\), \\(3, 7\\)"):
        import_mcap(tmp_path / "varying.mcap", out, topics=["/tf"], action="/cmd_vel")
    assert not out.exists()
    with pytest.warns(BagWarning):  # the topics that keep their shape still import
        assert import_mcap(tmp_path / "varying.mcap", out, topics=["/imu"], action="/cmd_vel")["steps"] == 3
    # chosen by default (not named), such a topic is left out with a warning
    with pytest.warns(BagWarning) as caught:
        result = import_mcap(tmp_path / "varying.mcap", tmp_path / "default.zarr", action="/cmd_vel")
    assert "scan" not in result["keys"] and "imu" in result["keys"] and result["steps"] == 3
    assert any(
        str(w.message) == "left out topic /scan (sensor_msgs/msg/LaserScan): its values have lengths 5, 7 "
        "(one store key holds one shape)"
        for w in caught
    )


def test_a_rosbag2_directory_with_a_service_event_topic(tmp_path):
    bag = tmp_path / "rosbag2_dir"
    with Rosbag2Writer(bag, version=9, storage_plugin=StoragePlugin.SQLITE3) as writer:
        service = writer.add_connection(
            SERVICE_TOPIC, SERVICE_TYPE, msgdef=SERVICE_SCHEMA, rihs01="RIHS01_" + "0" * 64
        )
        text = writer.add_connection("/instruction", "std_msgs/msg/String", typestore=TS)
        cmd = writer.add_connection("/cmd_vel", "geometry_msgs/msg/Twist", typestore=TS)
        writer.write(service, T0, b"\x00\x01\x00\x00" + bytes(40))
        for k, words in enumerate(TEXTS):
            writer.write(
                text,
                T0 + k * DT,
                TS.serialize_cdr(T["std_msgs/msg/String"](data=words), "std_msgs/msg/String"),
            )
            writer.write(cmd, T0 + k * DT + 1, TS.serialize_cdr(_twist(k), "geometry_msgs/msg/Twist"))
    with pytest.warns(BagWarning, match=f"skipped 1 topic\\(s\\) .*{SERVICE_TOPIC}"):
        result = import_mcap(bag, tmp_path / "dir.zarr", topics=["/instruction"], action="/cmd_vel")
    assert (result["steps"], result["skipped"]) == (4, 1)
    assert decode_text(embodia.TrajectoryStore(tmp_path / "dir.zarr").episode(0)["instruction"]) == TEXTS
    with pytest.raises(BagError, match=f"topic {SERVICE_TOPIC} .* cannot be decoded"):
        import_mcap(bag, tmp_path / "y.zarr", topics=[SERVICE_TOPIC])


def test_cli_warns_and_fails_in_one_line(robot_mcap, tmp_path, cli):
    out = str(tmp_path / "cli.zarr")
    result = cli(
        "data",
        "import-mcap",
        str(robot_mcap),
        "--out",
        out,
        "--topic",
        "/instruction",
        "--action",
        "/cmd_vel",
    )
    assert result.returncode == 0, result.stderr
    assert "warning: skipped 2 topic(s) whose messages cannot be decoded" in result.stderr
    assert "imported 1 episodes (4 steps, keys instruction, action)" in result.stdout
    assert "2 undecodable topics skipped" in result.stdout
    result = cli("data", "import-mcap", str(robot_mcap), "--out", out + "2", "--topic", SERVICE_TOPIC)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: topic {SERVICE_TOPIC} ({SERVICE_TYPE}) of bag")


TALKER = Path(__file__).resolve().parent / "data" / "rosbag2_talker"  # bags the ROS 2 tools recorded


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_the_rosbag2_projects_own_talker_bags_import_their_messages(tmp_path, storage):
    """rosbags numbers a directory's connections by metadata.yaml, not by the storage's ids, and read no
    message of these bags: embodia reads the storage by topic name."""
    result = import_mcap(TALKER / storage / "talker", tmp_path / "talker.zarr", topics=["/topic"])
    assert (result["episodes"], result["steps"]) == (1, 10)
    texts = decode_text(embodia.TrajectoryStore(tmp_path / "talker.zarr").episode(0)["topic"])
    assert texts == [f"Hello, world! {i}" for i in range(10)]


def test_message_constants_are_not_data_columns(tmp_path):
    result = import_mcap(TALKER / "mcap" / "talker", tmp_path / "log.zarr", topics=["/topic", "/rosout"])
    # Log: stamp (sec, nanosec), level, line are numbers; DEBUG ... FATAL are the definition's constants
    assert result["fields"]["rosout"] == ["stamp.sec", "stamp.nanosec", "level", "line"]
    rows = embodia.TrajectoryStore(tmp_path / "log.zarr").episode(0)["rosout"]
    assert rows.shape == (10, 4) and set(rows[:, 2]) == {20.0}  # every line logged at INFO


def test_an_import_that_reads_nothing_fails_and_names_the_topic_and_why(tmp_path, cli):
    # the SQLite bag has no message definitions; its Log messages do not decode with Jazzy's definition
    with pytest.raises(
        BagError, match=r"nothing imported .* /rosout: 10 of 10 messages could not be read \(Serde"
    ):
        import_mcap(TALKER / "sqlite3" / "talker", tmp_path / "none.zarr", topics=["/topic", "/rosout"])
    assert not (tmp_path / "none.zarr").exists()  # nothing of a failed import stays behind
    result = cli(
        "data",
        "import-mcap",
        str(TALKER / "sqlite3" / "talker"),
        "--out",
        str(tmp_path / "cli.zarr"),
        "--topic",
        "/topic",
        "--topic",
        "/rosout",
    )
    assert result.returncode == 2 and "imported 0 episodes" not in result.stdout
    assert result.stderr.strip().splitlines()[-1].startswith("error: nothing imported from bag")
