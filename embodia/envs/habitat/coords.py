"""Coordinate frames: embodia's navigation frame and Habitat's.

embodia (and MuJoCo) use a right-handed, Z-up world: a pose is ``(x, y, z)`` with the floor at ``z = 0``
and a heading ``yaw`` in radians, counter-clockwise from +x (yaw 0 faces +x).

Habitat uses a right-handed, Y-up world in which an agent with identity rotation faces -Z. The two are
related by the rotation that maps embodia's ``(x, y, z)`` to Habitat's ``(x, z, -y)``; so embodia's +x is
Habitat's +x, embodia's +y (north) is Habitat's -Z (forward at identity), and heights agree.

Headings: an agent facing embodia direction ``(cos yaw, sin yaw, 0)`` faces Habitat direction
``(cos yaw, 0, -sin yaw)``, which is the identity forward ``(0, 0, -1)`` rotated about +Y by
``phi = yaw - pi/2``; its Habitat rotation is the quaternion ``[0, sin(phi/2), 0, cos(phi/2)]`` stored in
habitat-lab's ``[x, y, z, w]`` coefficient order (``start_rotation`` in episode files).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def wrap_angle(angle: float) -> float:
    """``angle`` wrapped to ``[-pi, pi)``."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def to_habitat_position(position: Sequence[float]) -> list[float]:
    """embodia ``(x, y[, z])`` -> Habitat ``[x, y_up, z]`` (``z`` defaults to the floor, 0)."""
    x, y = float(position[0]), float(position[1])
    z = float(position[2]) if len(position) > 2 else 0.0
    return [x, z, -y]


def from_habitat_position(position: Sequence[float]) -> np.ndarray:
    """Habitat ``[x, y_up, z]`` -> embodia ``(x, y, z)`` as a float64 array."""
    return np.array([float(position[0]), -float(position[2]), float(position[1])], dtype=np.float64)


def yaw_to_habitat_rotation(yaw: float) -> list[float]:
    """embodia heading -> Habitat rotation quaternion ``[x, y, z, w]`` (a rotation about +Y)."""
    half = 0.5 * (yaw - math.pi / 2.0)
    return [0.0, math.sin(half), 0.0, math.cos(half)]


def _rotate(quaternion: Sequence[float], vector: Sequence[float]) -> np.ndarray:
    """Rotate ``vector`` by the unit quaternion ``[x, y, z, w]``: ``v' = v + 2w (u x v) + 2 u x (u x v)``."""
    u = np.asarray(quaternion[:3], dtype=np.float64)
    w = float(quaternion[3])
    norm = math.sqrt(float(u @ u) + w * w)
    u, w = u / norm, w / norm
    v = np.asarray(vector, dtype=np.float64)
    uv = np.cross(u, v)
    return v + 2.0 * w * uv + 2.0 * np.cross(u, uv)


def habitat_rotation_to_yaw(rotation: Sequence[float]) -> float:
    """Habitat rotation quaternion ``[x, y, z, w]`` -> embodia heading (from the rotated forward vector).

    Rotations with pitch or roll are projected onto the floor plane, as Habitat's compass sensor does.
    """
    forward = _rotate(rotation, (0.0, 0.0, -1.0))  # Habitat frame
    return wrap_angle(math.atan2(-forward[2], forward[0]))
