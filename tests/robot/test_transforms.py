"""The transform tree: lookups through it checked against 4x4 homogeneous matrices, stamps, bad input."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from embodia.robot.errors import MessageError
from embodia.robot.transforms import TransformBuffer, pose_fields


def stamped(parent, child, translation, rotation, stamp_ns=0):
    """A geometry_msgs/TransformStamped-shaped object (the buffer only reads attributes)."""
    x, y, z = translation
    qx, qy, qz, qw = rotation
    return SimpleNamespace(
        header=SimpleNamespace(
            frame_id=parent, stamp=SimpleNamespace(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
        ),
        child_frame_id=child,
        transform=SimpleNamespace(
            translation=SimpleNamespace(x=x, y=y, z=z), rotation=SimpleNamespace(x=qx, y=qy, z=qz, w=qw)
        ),
    )


def tf_message(*transforms):
    return SimpleNamespace(transforms=list(transforms))


def matrix(translation, rotation):
    """The homogeneous matrix of a pose, from the textbook quaternion -> rotation formula."""
    x, y, z, w = np.asarray(rotation) / np.linalg.norm(rotation)
    m = np.eye(4)
    m[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    m[:3, 3] = translation
    return m


def random_pose(rng):
    return rng.normal(size=3), rng.normal(size=4)


def test_a_lookup_through_a_common_ancestor_matches_the_matrix_product():
    rng = np.random.default_rng(0)
    # world -> base -> arm -> tool, and world -> camera_mount -> camera
    edges = {
        ("world", "base"): random_pose(rng),
        ("base", "arm"): random_pose(rng),
        ("arm", "tool"): random_pose(rng),
        ("world", "camera_mount"): random_pose(rng),
        ("camera_mount", "camera"): random_pose(rng),
    }
    buffer = TransformBuffer()
    buffer.add(
        tf_message(*(stamped(p, c, *pose, stamp_ns=5) for (p, c), pose in edges.items())), static=False
    )
    m = {pair: matrix(*pose) for pair, pose in edges.items()}
    tool_in_world = m["world", "base"] @ m["base", "arm"] @ m["arm", "tool"]
    camera_in_world = m["world", "camera_mount"] @ m["camera_mount", "camera"]
    expected = np.linalg.inv(camera_in_world) @ tool_in_world  # the tool seen from the camera

    translation, rotation, stamp = buffer.lookup("camera", "tool")
    assert np.allclose(matrix(translation, rotation), expected, atol=1e-9)
    assert stamp == 5
    # the other way round is the inverse; a frame in itself is the identity
    translation, rotation, _ = buffer.lookup("tool", "camera")
    assert np.allclose(matrix(translation, rotation), np.linalg.inv(expected), atol=1e-9)
    translation, rotation, _ = buffer.lookup("arm", "arm")
    assert np.allclose(translation, 0) and np.allclose(rotation, [0, 0, 0, 1])
    # a frame below the other (the common ancestor is the parent frame itself)
    translation, rotation, _ = buffer.lookup("base", "tool")
    assert np.allclose(matrix(translation, rotation), m["base", "arm"] @ m["arm", "tool"], atol=1e-9)


def test_the_stamp_is_the_oldest_dynamic_transform_and_static_chains_have_none():
    buffer = TransformBuffer()
    identity = ([0, 0, 0], [0, 0, 0, 1])
    buffer.add(tf_message(stamped("base", "camera", *identity)), static=True)
    buffer.add(tf_message(stamped("odom", "base", *identity, stamp_ns=300)), static=False)
    buffer.add(tf_message(stamped("map", "odom", *identity, stamp_ns=200)), static=False)
    assert buffer.lookup("map", "camera")[2] == 200
    assert buffer.lookup("odom", "camera")[2] == 300
    assert buffer.lookup("base", "camera")[2] is None
    buffer.clear_dynamic()
    assert buffer.lookup("map", "camera") is None  # the dynamic edges are gone ...
    assert buffer.lookup("base", "camera") is not None  # ... the static one stays


def test_unconnected_frames_have_no_pose_and_the_newest_transform_of_a_frame_wins():
    buffer = TransformBuffer()
    buffer.add(tf_message(stamped("a", "b", [1, 0, 0], [0, 0, 0, 1], 1)), static=False)
    buffer.add(tf_message(stamped("c", "d", [0, 1, 0], [0, 0, 0, 1], 1)), static=False)
    assert buffer.lookup("a", "d") is None and buffer.lookup("a", "unknown") is None
    buffer.add(tf_message(stamped("a", "b", [2, 0, 0], [0, 0, 0, 2], 2)), static=False)
    translation, rotation, stamp = buffer.lookup("a", "b")
    assert translation.tolist() == [2, 0, 0] and rotation.tolist() == [0, 0, 0, 1] and stamp == 2


@pytest.mark.parametrize(
    "bad, match",
    [
        (stamped("", "b", [0, 0, 0], [0, 0, 0, 1]), "empty frame name"),
        (stamped("a", "a", [0, 0, 0], [0, 0, 0, 1]), "to itself"),
        (stamped("a", "b", [float("nan"), 0, 0], [0, 0, 0, 1]), "not finite"),
        (stamped("a", "b", [0, 0, 0], [0, 0, 0, 0]), "zero quaternion"),
    ],
)
def test_a_malformed_transform_rejects_its_whole_message(bad, match):
    buffer = TransformBuffer()
    good = stamped("x", "y", [0, 0, 0], [0, 0, 0, 1])
    with pytest.raises(MessageError, match=match):
        buffer.add(tf_message(good, bad), static=False)
    assert buffer.frames() == set()


def test_a_loop_in_the_published_tree_is_reported():
    buffer = TransformBuffer()
    identity = ([0, 0, 0], [0, 0, 0, 1])
    buffer.add(tf_message(stamped("a", "b", *identity), stamped("b", "a", *identity)), static=False)
    with pytest.raises(MessageError, match="loop"):
        buffer.lookup("a", "c")


def test_pose_fields_name_components_and_yaw():
    half = np.sqrt(0.5)
    values = pose_fields(np.array([1.0, 2.0, 3.0]), np.array([0, 0, half, half]), ["z", "qw", "yaw"])
    assert np.allclose(values, [3.0, half, np.pi / 2])
