"""Obstacle footprints in the floor plane, read from a MuJoCo model, and exact clearance to them.

The navigation mesh treats a robot as a vertical cylinder (Habitat's convention): a geom obstructs it
when the geom's vertical extent overlaps ``[max_climb, robot height]``, and then only the geom's shadow
on the floor matters. Shadows are rotated rectangles (boxes, and ellipsoids that are far from round) or
discs (cylinders, spheres, capsules, round ellipsoids), all standing upright; geoms tilted out of the
vertical fall back to their axis-aligned bounding rectangle.

Clearance is the signed Euclidean distance from a point to the nearest footprint (negative inside):
for a rectangle with centre ``c``, rotation ``R`` and half extents ``h``, with ``q = |R^T (p - c)| - h``,
``d(p) = ||max(q, 0)|| + min(max(q_x, q_y), 0)``; for a disc ``d(p) = ||p - c|| - r``. A robot of radius
``r`` centred at ``p`` touches nothing iff ``d(p) >= r``.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

_BOX, _SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER = (
    int(mujoco.mjtGeom.mjGEOM_BOX),
    int(mujoco.mjtGeom.mjGEOM_SPHERE),
    int(mujoco.mjtGeom.mjGEOM_CAPSULE),
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID),
    int(mujoco.mjtGeom.mjGEOM_CYLINDER),
)


@dataclass
class Footprints:
    """Rectangles and discs in the floor plane (arrays, so that clearance is vectorised)."""

    box_center: np.ndarray  # (B, 2)
    box_half: np.ndarray  # (B, 2)
    box_cos_sin: np.ndarray  # (B, 2): the rectangle's x axis in the world
    disc_center: np.ndarray  # (C, 2)
    disc_radius: np.ndarray  # (C,)

    @classmethod
    def empty(cls) -> Footprints:
        return cls(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0))

    def __len__(self) -> int:
        return len(self.box_center) + len(self.disc_center)

    def add_box(self, center, half, yaw: float = 0.0) -> None:
        self.box_center = np.vstack([self.box_center, np.asarray(center, float)[None, :2]])
        self.box_half = np.vstack([self.box_half, np.asarray(half, float)[None, :2]])
        self.box_cos_sin = np.vstack([self.box_cos_sin, [[np.cos(yaw), np.sin(yaw)]]])

    def add_disc(self, center, radius: float) -> None:
        self.disc_center = np.vstack([self.disc_center, np.asarray(center, float)[None, :2]])
        self.disc_radius = np.append(self.disc_radius, float(radius))

    def bounds(self) -> tuple[float, float, float, float]:
        """Axis-aligned bounds of all footprints."""
        lo, hi = [], []
        if len(self.box_center):
            c, s = np.abs(self.box_cos_sin[:, :1]), np.abs(self.box_cos_sin[:, 1:])
            ext = np.hstack(
                [
                    c * self.box_half[:, :1] + s * self.box_half[:, 1:],
                    s * self.box_half[:, :1] + c * self.box_half[:, 1:],
                ]
            )
            lo.append((self.box_center - ext).min(0))
            hi.append((self.box_center + ext).max(0))
        if len(self.disc_center):
            lo.append((self.disc_center - self.disc_radius[:, None]).min(0))
            hi.append((self.disc_center + self.disc_radius[:, None]).max(0))
        low, high = np.min(lo, axis=0), np.max(hi, axis=0)
        return (float(low[0]), float(low[1]), float(high[0]), float(high[1]))

    def near(self, center, radius: float) -> Footprints:
        """The footprints whose bounding circles come within ``radius`` of ``center`` (a cheap subset for
        local queries: clearance below ``radius`` is unchanged)."""
        c = np.asarray(center, dtype=np.float64)[:2]
        box_reach = np.linalg.norm(self.box_half, axis=1) + radius
        boxes = np.linalg.norm(self.box_center - c, axis=1) <= box_reach
        discs = np.linalg.norm(self.disc_center - c, axis=1) <= self.disc_radius + radius
        return Footprints(
            self.box_center[boxes],
            self.box_half[boxes],
            self.box_cos_sin[boxes],
            self.disc_center[discs],
            self.disc_radius[discs],
        )

    # ------------------------------------------------------------------ distances
    def signed_distance(self, points: np.ndarray) -> np.ndarray:
        """``(N, M)`` signed distances from each point to each footprint (boxes first, then discs)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        x, y = points[:, :1], points[:, 1:]
        parts = []
        if len(self.box_center):
            dx, dy = x - self.box_center[:, 0], y - self.box_center[:, 1]
            c, s = self.box_cos_sin[:, 0], self.box_cos_sin[:, 1]
            qx = np.abs(c * dx + s * dy) - self.box_half[:, 0]
            qy = np.abs(c * dy - s * dx) - self.box_half[:, 1]
            parts.append(
                np.hypot(np.maximum(qx, 0.0), np.maximum(qy, 0.0)) + np.minimum(np.maximum(qx, qy), 0.0)
            )
        if len(self.disc_center):
            parts.append(np.hypot(x - self.disc_center[:, 0], y - self.disc_center[:, 1]) - self.disc_radius)
        if not parts:
            return np.full((len(points), 0), np.inf)
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def clearance(self, points: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Distance from each point to the nearest footprint (``inf`` with no footprints)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(self) == 0:
            return np.full(len(points), np.inf)
        if len(points) <= chunk:
            return self.signed_distance(points).min(axis=1)
        return np.concatenate(
            [self.signed_distance(points[k : k + chunk]).min(axis=1) for k in range(0, len(points), chunk)]
        )

    def grid_clearance(
        self, origin: np.ndarray, cell: float, shape: tuple[int, int], max_distance: float
    ) -> np.ndarray:
        """Clearance at the centres of a grid (rows = y), exact up to ``max_distance`` and clipped there.

        Each footprint is evaluated only on the window of cells within ``max_distance`` of its bounding
        box, which is what makes this fast on large scenes.
        """
        out = np.full(shape, float(max_distance))
        boxes = len(self.box_center)
        for k in range(len(self)):
            if k < boxes:
                c, s = np.abs(self.box_cos_sin[k])
                hx, hy = self.box_half[k]
                ext = np.array([c * hx + s * hy, s * hx + c * hy])
                center = self.box_center[k]
            else:
                center = self.disc_center[k - boxes]
                ext = np.full(2, self.disc_radius[k - boxes])
            lo = np.floor((center - ext - max_distance - origin) / cell).astype(int)
            hi = np.ceil((center + ext + max_distance - origin) / cell).astype(int) + 1
            c0, r0 = max(lo[0], 0), max(lo[1], 0)
            c1, r1 = min(hi[0], shape[1]), min(hi[1], shape[0])
            if c1 <= c0 or r1 <= r0:
                continue
            xs = origin[0] + (np.arange(c0, c1) + 0.5) * cell
            ys = origin[1] + (np.arange(r0, r1) + 0.5) * cell
            gx, gy = np.meshgrid(xs, ys)
            if k < boxes:
                cs, sn = self.box_cos_sin[k]
                dx, dy = gx - center[0], gy - center[1]
                qx = np.abs(cs * dx + sn * dy) - hx
                qy = np.abs(-sn * dx + cs * dy) - hy
                d = np.hypot(np.maximum(qx, 0.0), np.maximum(qy, 0.0)) + np.minimum(np.maximum(qx, qy), 0.0)
            else:
                d = np.hypot(gx - center[0], gy - center[1]) - self.disc_radius[k - boxes]
            np.minimum(out[r0:r1, c0:c1], d, out=out[r0:r1, c0:c1])
        return out

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Whether each point lies inside (or on) some footprint."""
        return self.clearance(points) <= 0.0

    def nearest_normal(self, point: np.ndarray) -> np.ndarray:
        """Unit vector from the nearest footprint's closest surface point toward ``point``."""
        p = np.asarray(point, dtype=np.float64)[:2]
        distances = self.signed_distance(p[None])[0]
        k = int(np.argmin(distances))
        n_boxes = len(self.box_center)
        if k < n_boxes:
            c, s = self.box_cos_sin[k]
            d = p - self.box_center[k]
            q = np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1]])
            h = self.box_half[k]
            closest = np.clip(q, -h, h)
            if np.allclose(closest, q):  # inside: push out through the nearest face
                axis = int(np.argmax(np.abs(q) - h))
                local = np.zeros(2)
                local[axis] = np.sign(q[axis]) or 1.0
            else:
                local = q - closest
            normal = np.array([c * local[0] - s * local[1], s * local[0] + c * local[1]])
        else:
            normal = p - self.disc_center[k - n_boxes]
        norm = np.linalg.norm(normal)
        return normal / norm if norm > 1e-12 else np.array([1.0, 0.0])


def footprints_from_mujoco(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    groups: tuple[int, ...],
    z_range: tuple[float, float] | None = None,
) -> Footprints:
    """Footprints of the geoms in ``groups`` whose vertical extent overlaps ``z_range`` (all if ``None``).

    Uses the current world poses (``data.geom_xpos``/``geom_xmat``): call ``mj_kinematics`` first.
    """
    result = Footprints.empty()
    boxes_c, boxes_h, boxes_cs, discs_c, discs_r = [], [], [], [], []
    for g in range(model.ngeom):
        if int(model.geom_group[g]) not in groups:
            continue
        kind = int(model.geom_type[g])
        size = model.geom_size[g]
        pos = data.geom_xpos[g]
        R = data.geom_xmat[g].reshape(3, 3)
        upright = abs(R[2, 2]) > 1.0 - 1e-6
        if kind == _BOX:
            half_z = size[2]
        elif kind == _SPHERE:
            half_z = size[0]
        elif kind == _CAPSULE:
            half_z = size[1] + size[0]
        elif kind in (_CYLINDER,):
            half_z = size[1]
        elif kind == _ELLIPSOID:
            half_z = size[2]
        else:  # meshes, planes, ...: local bounding box from the compiler
            half_z = float(np.abs(R[2]) @ model.geom_aabb[g, 3:])
        if not upright and kind != _SPHERE:
            half_z = float(np.abs(R[2]) @ _local_half(kind, size, model.geom_aabb[g]))
        z0, z1 = pos[2] - half_z, pos[2] + half_z
        if z_range is not None and (z1 <= z_range[0] or z0 >= z_range[1]):
            continue
        yaw = float(np.arctan2(R[1, 0], R[0, 0]))
        if kind in (_SPHERE,) or (upright and kind in (_CYLINDER, _CAPSULE)):
            discs_c.append(pos[:2].copy())
            discs_r.append(size[0])
        elif upright and kind == _ELLIPSOID and max(size[0], size[1]) <= 1.3 * min(size[0], size[1]):
            discs_c.append(pos[:2].copy())
            discs_r.append(max(size[0], size[1]))
        elif upright and kind in (_BOX, _ELLIPSOID):
            boxes_c.append(pos[:2].copy())
            boxes_h.append(size[:2].copy())
            boxes_cs.append([np.cos(yaw), np.sin(yaw)])
        else:  # tilted or unknown shapes: the world-axis-aligned bounding rectangle
            half = np.abs(R[:2]) @ _local_half(kind, size, model.geom_aabb[g])
            boxes_c.append(pos[:2].copy())
            boxes_h.append(half)
            boxes_cs.append([1.0, 0.0])
    if boxes_c:
        result.box_center, result.box_half = np.array(boxes_c), np.array(boxes_h)
        result.box_cos_sin = np.array(boxes_cs)
    if discs_c:
        result.disc_center, result.disc_radius = np.array(discs_c), np.array(discs_r)
    return result


def _local_half(kind: int, size: np.ndarray, aabb: np.ndarray) -> np.ndarray:
    if kind in (_BOX, _ELLIPSOID):
        return size[:3].copy()
    if kind == _CYLINDER:
        return np.array([size[0], size[0], size[1]])
    if kind == _CAPSULE:
        return np.array([size[0], size[0], size[1] + size[0]])
    return np.asarray(aabb[3:], dtype=float)
