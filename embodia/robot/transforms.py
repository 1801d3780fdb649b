"""A transform tree from ``/tf`` and ``/tf_static`` messages, and the pose of one frame in another.

The policy node reads observation keys from tf2 as a robot's other nodes do (robot_state_publisher,
a localiser, a camera driver): every ``geometry_msgs/TransformStamped`` of a ``tf2_msgs/TFMessage`` is an
edge parent -> child of a tree; the pose of ``child_frame`` in ``parent_frame`` is the product of the edges
from their common ancestor, as ``tf2::BufferCore::lookupTransform(parent_frame, child_frame, Time(0))``
gives it. Like tf2's "latest" lookup, the answer is stamped with the oldest of the dynamic edges it used
(the time at which all of them are known); a chain of static edges only has no stamp (it never goes stale).

Unlike tf2 the buffer keeps only the newest transform of each child frame (the node acts on the newest
observation, it never looks up the past), so there is no interpolation; ordering and age checks are made on
the stamp of each lookup by :class:`~embodia.robot.controller.PolicyController`, as for any stamped topic.

Poses are ``[x y z qx qy qz qw]`` (quaternions x-y-z-w, as ROS writes them, normalised); ``yaw`` is the
rotation about z, as for Odometry and PoseStamped observations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.robot.convert import stamp_to_ns
from embodia.robot.errors import MessageError

#: the longest chain a lookup follows (tf2's limit too): a longer one is a loop in the published tree
MAX_CHAIN = 1000


@dataclass(frozen=True)
class Edge:
    """One transform: the pose of ``child`` in ``parent``."""

    parent: str
    translation: np.ndarray
    """``(3,)`` float64"""
    rotation: np.ndarray
    """``(4,)`` float64, ``[qx qy qz qw]``, unit norm"""
    stamp_ns: int
    static: bool


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamilton product ``a * b`` of two ``[x y z w]`` quaternions (rotation ``b`` first, then ``a``)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The vector ``v`` rotated by the unit quaternion ``q`` (``q v q*``)."""
    u, w = q[:3], q[3]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def compose(
    outer: tuple[np.ndarray, np.ndarray], inner: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``outer * inner`` for poses ``(translation, rotation)``: ``inner`` expressed in ``outer``'s parent."""
    (t1, q1), (t2, q2) = outer, inner
    return t1 + rotate(q1, t2), quaternion_multiply(q1, q2)


def invert(pose: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The inverse pose: the parent in the child's frame."""
    t, q = pose
    conjugate = np.array([-q[0], -q[1], -q[2], q[3]])
    return -rotate(conjugate, t), conjugate


def pose_fields(translation: np.ndarray, rotation: np.ndarray, fields: Sequence[str]) -> np.ndarray:
    """Named components (``x y z qx qy qz qw yaw``) of a pose, float64."""
    x, y, z = translation
    qx, qy, qz, qw = rotation
    table = {"x": x, "y": y, "z": z, "qx": qx, "qy": qy, "qz": qz, "qw": qw}
    yaw = math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    return np.array([yaw if name == "yaw" else table[name] for name in fields], dtype=np.float64)


def _edge(stamped: Any, static: bool) -> tuple[str, Edge]:
    parent, child = str(stamped.header.frame_id).lstrip("/"), str(stamped.child_frame_id).lstrip("/")
    if not parent or not child:
        raise MessageError(f"a transform has an empty frame name ({parent!r} -> {child!r})")
    if parent == child:
        raise MessageError(f"a transform from frame {parent!r} to itself")
    t, q = stamped.transform.translation, stamped.transform.rotation
    translation = np.array([float(t.x), float(t.y), float(t.z)])
    rotation = np.array([float(q.x), float(q.y), float(q.z), float(q.w)])
    norm = float(np.linalg.norm(rotation))
    if not (np.isfinite(translation).all() and np.isfinite(rotation).all()) or norm < 1e-9:
        raise MessageError(f"transform {parent} -> {child} is not finite or has a zero quaternion")
    return child, Edge(parent, translation, rotation / norm, stamp_to_ns(stamped.header.stamp), static)


class TransformBuffer:
    """The newest transform of every child frame, static and dynamic, and lookups through the tree."""

    def __init__(self) -> None:
        self._edges: dict[str, Edge] = {}

    def add(self, msg: Any, static: bool) -> list[str]:
        """Take the transforms of a TFMessage (from ``/tf_static`` when ``static``); the child frames it set.

        A message is taken whole or not at all.

        Raises:
            MessageError: a transform with an empty frame name, a self loop, or non-finite numbers.
        """
        edges = [_edge(stamped, static) for stamped in msg.transforms]
        for child, edge in edges:
            self._edges[child] = edge
        return [child for child, _ in edges]

    def clear_dynamic(self) -> None:
        """Forget the dynamic transforms (a new episode may restart the clock); static ones stay."""
        self._edges = {child: edge for child, edge in self._edges.items() if edge.static}

    def frames(self) -> set[str]:
        """Every frame named so far (parents and children)."""
        return set(self._edges) | {edge.parent for edge in self._edges.values()}

    def _chain(self, frame: str) -> list[tuple[str, Edge]]:
        """The edges from ``frame`` up to its root: ``[(frame, edge to its parent), ...]``."""
        chain: list[tuple[str, Edge]] = []
        while frame in self._edges:
            if len(chain) >= MAX_CHAIN:
                raise MessageError(f"the transform tree has a loop through frame {frame!r}")
            edge = self._edges[frame]
            chain.append((frame, edge))
            frame = edge.parent
        return chain

    def lookup(self, parent_frame: str, child_frame: str) -> tuple[np.ndarray, np.ndarray, int | None] | None:
        """The pose of ``child_frame`` in ``parent_frame`` and its stamp, or None while they are not connected.

        The stamp is the oldest stamp of the dynamic transforms used (None when all were static).

        Raises:
            MessageError: the published transforms form a loop.
        """
        parent_frame, child_frame = parent_frame.lstrip("/"), child_frame.lstrip("/")
        up_child, up_parent = self._chain(child_frame), self._chain(parent_frame)
        ancestors_child = [child_frame] + [edge.parent for _, edge in up_child]
        ancestors_parent = [parent_frame] + [edge.parent for _, edge in up_parent]
        common = next((frame for frame in ancestors_child if frame in set(ancestors_parent)), None)
        if common is None:
            return None
        identity = (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
        stamps: list[int] = []

        def to_common(chain: list[tuple[str, Edge]], ancestors: list[str]) -> tuple[np.ndarray, np.ndarray]:
            pose = identity
            for _, edge in chain[: ancestors.index(common)]:
                pose = compose((edge.translation, edge.rotation), pose)
                if not edge.static:
                    stamps.append(edge.stamp_ns)
            return pose

        child_in_common = to_common(up_child, ancestors_child)
        parent_in_common = to_common(up_parent, ancestors_parent)
        translation, rotation = compose(invert(parent_in_common), child_in_common)
        return translation, rotation / np.linalg.norm(rotation), (min(stamps) if stamps else None)
