"""Top-down maps (Habitat's ``TopDownMap`` measure, drawn with NumPy): navigable area, rooms, objects,
shortest path, goals and robots, as an RGB image."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embodia.envs.habitat.scene import Scene

_ROOM_TINTS = {
    "kitchen": (250, 236, 200),
    "living_room": (222, 236, 250),
    "bedroom": (236, 224, 248),
    "bathroom": (210, 242, 240),
    "corridor": (236, 236, 236),
    "dining_room": (250, 226, 214),
    "office": (226, 244, 214),
    "meeting_room": (248, 244, 206),
}
_ROBOT_COLORS = [(30, 90, 210), (210, 60, 40), (30, 160, 60), (160, 60, 190), (220, 150, 20)]


class TopDownMap:
    """A map image of a pathfinder's grid; world points are drawn with :meth:`to_pixel` coordinates."""

    def __init__(self, pathfinder, scene: Scene | None = None, scale: int = 2) -> None:
        self.pathfinder = pathfinder
        self.scale = int(scale)
        grid = pathfinder.strict
        rows, cols = grid.shape
        image = np.full((rows, cols, 3), 90, dtype=np.uint8)  # obstacles / outside: dark grey
        image[grid] = (255, 255, 255)
        if scene is not None:
            cell = pathfinder.settings.cell_size
            ys = pathfinder.origin[1] + (np.arange(rows) + 0.5) * cell
            xs = pathfinder.origin[0] + (np.arange(cols) + 0.5) * cell
            for room in scene.rooms:
                x0, y0, x1, y1 = room.bounds
                mask = grid & ((ys >= y0) & (ys <= y1))[:, None] & ((xs >= x0) & (xs <= x1))[None, :]
                image[mask] = _ROOM_TINTS.get(room.category, (255, 255, 255))
        self.base = np.repeat(np.repeat(image[::-1], self.scale, axis=0), self.scale, axis=1)  # north up
        self.image = self.base.copy()

    def reset(self) -> None:
        self.image = self.base.copy()

    def to_pixel(self, point) -> tuple:
        """``(row, col)`` of a world point (or of arrays of x and y) in the (north-up) image."""
        cell = self.pathfinder.settings.cell_size / self.scale
        col = (point[0] - self.pathfinder.origin[0]) / cell
        row = self.base.shape[0] - (point[1] - self.pathfinder.origin[1]) / cell
        return row, col

    def disc(self, point: Sequence[float], radius_m: float, color: Sequence[int]) -> None:
        row, col = self.to_pixel(point)
        radius = radius_m / (self.pathfinder.settings.cell_size / self.scale)
        r0, r1 = int(max(0, row - radius - 1)), int(min(self.image.shape[0], row + radius + 2))
        c0, c1 = int(max(0, col - radius - 1)), int(min(self.image.shape[1], col + radius + 2))
        rr, cc = np.mgrid[r0:r1, c0:c1]
        mask = (rr + 0.5 - row) ** 2 + (cc + 0.5 - col) ** 2 <= radius**2
        self.image[r0:r1, c0:c1][mask] = color

    def polyline(
        self, points: Sequence[Sequence[float]], color: Sequence[int], width_m: float = 0.05
    ) -> None:
        pts = np.asarray(points, dtype=np.float64)[:, :2]
        if len(pts) < 2:
            return
        pixel = self.pathfinder.settings.cell_size / self.scale
        samples = [
            a
            + np.linspace(0.0, 1.0, max(2, int(np.linalg.norm(b - a) / (0.5 * pixel)) + 1))[:, None] * (b - a)
            for a, b in zip(pts[:-1], pts[1:])
        ]
        xy = np.vstack(samples)
        rows, cols = self.to_pixel((xy[:, 0], xy[:, 1]))
        half = max(0, int(round(width_m / pixel / 2)))
        for dr in range(-half, half + 1):
            for dc in range(-half, half + 1):
                r = np.clip((rows + dr).astype(int), 0, self.image.shape[0] - 1)
                c = np.clip((cols + dc).astype(int), 0, self.image.shape[1] - 1)
                self.image[r, c] = color

    def robot(self, position: Sequence[float], yaw: float, index: int = 0, radius_m: float = 0.18) -> None:
        color = _ROBOT_COLORS[index % len(_ROBOT_COLORS)]
        self.disc(position, radius_m, color)
        tip = np.asarray(position[:2]) + 1.6 * radius_m * np.array([np.cos(yaw), np.sin(yaw)])
        self.polyline([position[:2], tip], color, width_m=0.06)

    def goal(
        self, point: Sequence[float], color: Sequence[int] = (230, 30, 30), radius_m: float = 0.15
    ) -> None:
        self.disc(point, radius_m, (40, 40, 40))
        self.disc(point, radius_m * 0.7, color)

    def fitted(self, size: int, background: Sequence[int] = (60, 60, 60)) -> np.ndarray:
        """The map scaled (nearest neighbour) to fit a ``size`` x ``size`` square, centred and padded."""
        rows, cols = self.image.shape[:2]
        scale = size / max(rows, cols)
        height, width = max(1, int(rows * scale)), max(1, int(cols * scale))
        r = (np.arange(height) * rows / height).astype(int)
        c = (np.arange(width) * cols / width).astype(int)
        out = np.empty((size, size, 3), dtype=np.uint8)
        out[:] = background
        top, left = (size - height) // 2, (size - width) // 2
        out[top : top + height, left : left + width] = self.image[r][:, c]
        return out

    def resized(self, height: int) -> np.ndarray:
        """The map scaled (nearest neighbour) to ``height`` rows."""
        rows, cols = self.image.shape[:2]
        width = max(1, int(round(cols * height / rows)))
        r = (np.arange(height) * rows / height).astype(int)
        c = (np.arange(width) * cols / width).astype(int)
        return self.image[r][:, c]
