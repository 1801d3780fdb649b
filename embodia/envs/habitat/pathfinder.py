"""A navigation mesh for a cylinder robot, with habitat-sim's ``PathFinder`` semantics.

Built from obstacle and floor footprints (:mod:`embodia.envs.habitat.footprints`), for one robot radius:

- **Navigable** (:meth:`PathFinder.is_navigable`): a point is navigable iff it lies on a floor and its
  exact clearance to every obstacle footprint is at least the robot radius, i.e. the robot's cylinder
  fits there. This is the free space eroded by the radius, evaluated analytically, not on a grid.
- **Grid** (``cell_size``, 5 cm by default): cell centres that are navigable form the *strict* grid; its
  4-connected components are the *islands* (island 0 is the largest). A *loose* grid (clearance at
  least ``radius - 0.75 cell``) is used for line-of-sight tests, so segments that graze the eroded
  boundary are not rejected by discretisation.
- **Geodesic distance and shortest paths** (:meth:`PathFinder.find_path`): shortest paths among
  obstacles bend only at convex obstacle corners, so the path planner uses a visibility graph whose
  vertices are the convex corner cells of the strict grid (a navigable cell whose diagonal neighbour is
  blocked while the two cells between them are free) and whose edges join mutually visible vertices of
  one island, weighted by Euclidean length. All-pairs distances ``D`` are computed once (Dijkstra). For a
  start ``p`` and goals ``G``: ``e_j = min_{g in G visible from v_j} |v_j - g|``,
  ``D_G(i) = min_j D(i, j) + e_j`` (cached per goal set), and the geodesic distance is
  ``min( min_{g visible from p} |p - g|, min_{v_i visible from p} |p - v_i| + D_G(i) )``; the path is read
  back from the Dijkstra predecessors. Start and goals are snapped to the mesh first, as Habitat does;
  unreachable goals give ``inf`` and ``find_path`` returns ``False``.
- **Moving** (:meth:`PathFinder.try_step`): the segment is followed until the robot would touch an
  obstacle (found to 1 mm by bisection on the exact clearance), then the rest of the motion is projected
  onto the obstacle's tangent and followed again (sliding along walls, as Habitat's ``try_step``).

Points are embodia navigation coordinates ``(x, y, z)`` (2-vectors are accepted); returned points are
3-vectors on the floor (``z = 0``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import mujoco
import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from embodia.envs.habitat.footprints import Footprints, footprints_from_mujoco
from embodia.envs.habitat.mjcf import GROUP_FLOOR, OBSTACLE_GROUPS


@dataclass(frozen=True)
class NavMeshSettings:
    """What the navigation mesh is built for (Habitat's ``NavMeshSettings`` subset that applies here)."""

    agent_radius: float = 0.18
    """Robot radius (m): the mesh keeps the robot's centre this far from obstacles."""
    agent_height: float = 0.88
    """Robot height (m): geoms entirely above it do not obstruct."""
    agent_max_climb: float = 0.1
    """Geoms entirely below this height (m) do not obstruct (thresholds, rugs)."""
    cell_size: float = 0.05
    """Grid resolution (m) for islands, path vertices and line-of-sight tests."""


@dataclass
class ShortestPath:
    """habitat-sim's ``ShortestPath``: set the requested points, call :meth:`PathFinder.find_path`."""

    requested_start: np.ndarray | None = None
    requested_end: np.ndarray | None = None
    points: list[np.ndarray] = field(default_factory=list)
    geodesic_distance: float = float("inf")


@dataclass
class MultiGoalShortestPath:
    """habitat-sim's ``MultiGoalShortestPath``: the path to the closest (by geodesic distance) of several ends."""

    requested_start: np.ndarray | None = None
    requested_ends: list[np.ndarray] = field(default_factory=list)
    points: list[np.ndarray] = field(default_factory=list)
    geodesic_distance: float = float("inf")
    closest_end_point_index: int = -1


def _xy(point) -> np.ndarray:
    return np.asarray(point, dtype=np.float64).reshape(-1)[:2]


def _xyz(xy: np.ndarray) -> np.ndarray:
    return np.array([xy[0], xy[1], 0.0])


class PathFinder:
    """Navigation queries on a scene (see module docstring). Build it with :meth:`from_mujoco`."""

    def __init__(
        self, obstacles: Footprints, floors: Footprints, settings: NavMeshSettings | None = None
    ) -> None:
        self.settings = settings or NavMeshSettings()
        self.obstacles = obstacles
        self.floors = floors
        self.is_loaded = len(floors) > 0
        self._rng = np.random.default_rng(0)
        self._snap_cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self._recent: dict[tuple[bytes, bytes], tuple[float, list[np.ndarray], int]] = {}
        self._goal_cache: OrderedDict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._build_grid()
        self._build_visibility_graph()

    @classmethod
    def from_mujoco(
        cls,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        settings: NavMeshSettings | None = None,
        obstacle_groups: tuple[int, ...] = OBSTACLE_GROUPS,
        floor_groups: tuple[int, ...] = (GROUP_FLOOR,),
    ) -> PathFinder:
        """The navigation mesh of a MuJoCo scene in its current pose (``mj_kinematics`` must have run).

        Obstacles are the geoms of ``obstacle_groups`` between ``agent_max_climb`` and ``agent_height``;
        floors are the geoms of ``floor_groups`` whose top is near z = 0.
        """
        settings = settings or NavMeshSettings()
        obstacles = footprints_from_mujoco(
            model, data, obstacle_groups, (settings.agent_max_climb, settings.agent_height)
        )
        floors = footprints_from_mujoco(
            model, data, floor_groups, (-settings.agent_max_climb, settings.agent_max_climb)
        )
        return cls(obstacles, floors, settings)

    # ------------------------------------------------------------------ construction
    def _build_grid(self) -> None:
        cell = self.settings.cell_size
        x0, y0, x1, y1 = self.floors.bounds() if self.is_loaded else (0.0, 0.0, cell, cell)
        self.origin = np.array([x0 - cell, y0 - cell])
        self.shape = (int(np.ceil((y1 - y0) / cell)) + 2, int(np.ceil((x1 - x0) / cell)) + 2)  # rows = y
        rows, cols = np.indices(self.shape)
        centers = np.stack(
            [self.origin[0] + (cols + 0.5) * cell, self.origin[1] + (rows + 0.5) * cell], axis=-1
        )
        on_floor = self.floors.contains(centers.reshape(-1, 2)).reshape(self.shape)
        far = self.settings.agent_radius + 2 * cell
        clearance = np.where(
            on_floor, self.obstacles.grid_clearance(self.origin, cell, self.shape, far), -np.inf
        )
        radius = self.settings.agent_radius
        self.strict = clearance >= radius
        self.loose = clearance >= radius - 0.75 * cell
        labels, count = ndimage.label(self.strict)  # 4-connected islands
        sizes = np.bincount(labels.ravel(), minlength=count + 1)[1:]
        order = np.argsort(-sizes, kind="stable")  # island 0 = largest
        remap = np.full(count + 1, -1, dtype=np.int64)
        remap[order + 1] = np.arange(count)
        self.islands = remap[labels]
        self.island_sizes = sizes[order]
        self._nearest = ndimage.distance_transform_edt(
            ~self.strict, return_distances=False, return_indices=True
        )

    def _build_visibility_graph(self) -> None:
        s = np.pad(self.strict, 1)
        quadrants = []
        for dy in (-1, 1):
            for dx in (-1, 1):
                diagonal = np.roll(np.roll(s, -dy, 0), -dx, 1)
                vertical = np.roll(s, -dy, 0)
                horizontal = np.roll(s, -dx, 1)
                quadrants.append((s & ~diagonal & vertical & horizontal)[1:-1, 1:-1])
        blocked = np.stack(quadrants, axis=-1)  # (rows, cols, 4): obstacle corner toward (dx, dy)
        rows, cols = np.nonzero(blocked.any(axis=-1))
        self.vertex_island = self.islands[rows, cols]
        self._vertex_quadrants = blocked[rows, cols]
        self.vertices = self._refine_corners(self._cell_centers(rows, cols), self._vertex_quadrants)
        n = len(self.vertices)
        i, j = np.triu_indices(n, k=1)
        same = self.vertex_island[i] == self.vertex_island[j]
        i, j = i[same], j[same]
        direction = self.vertices[j] - self.vertices[i]
        taut = self._taut(i, direction) & self._taut(j, -direction)
        i, j = i[taut], j[taut]
        visible = self.segments_clear(self.vertices[i], self.vertices[j])
        i, j = i[visible], j[visible]
        weights = np.linalg.norm(self.vertices[i] - self.vertices[j], axis=1)
        graph = coo_matrix((weights, (i, j)), shape=(n, n)).tocsr()
        if n:
            self.vertex_distance, self._predecessors = shortest_path(
                graph, method="D", directed=False, return_predecessors=True
            )
        else:
            self.vertex_distance, self._predecessors = np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int32)
        self.num_edges = int(len(i))

    def _refine_corners(self, centers: np.ndarray, quadrants: np.ndarray) -> np.ndarray:
        """Slide each corner cell centre toward its blocked diagonal neighbour up to 1 cm off the exact
        eroded boundary (bisection on the clearance), so that paths hug the rounded obstacle corners while
        segments to the corner keep line of sight on the loose grid."""
        single = quadrants.sum(axis=1) == 1
        refined = centers.copy()
        if not single.any():
            return refined
        direction = self._QUADRANTS[np.argmax(quadrants[single], axis=1)] * self.settings.cell_size
        base = centers[single]
        lo, hi = np.zeros(len(base)), np.ones(len(base))
        for _ in range(10):
            mid = 0.5 * (lo + hi)
            ok = self._navigable(base + mid[:, None] * direction, margin=0.01)
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        refined[single] = base + lo[:, None] * direction
        return refined

    #: (dx, dy) of the four diagonal quadrants, in the order ``_build_visibility_graph`` stacks them
    _QUADRANTS = np.array([(-1, -1), (1, -1), (-1, 1), (1, 1)], dtype=np.float64)

    #: how far (m) a path's start or goal may lie past the tangent at a vertex: vertices sit 1 cm off the
    #: eroded boundary, so a point nearer to the boundary than that, along an obstacle's face, is reached
    #: around the face's corner vertices only with this slack (a pruning rule, so it never shortens a path)
    ENDPOINT_SLACK = 0.02

    def _taut(self, vertices: np.ndarray, direction: np.ndarray, slack: float = 0.0) -> np.ndarray:
        """Whether a path can bend around vertex ``v`` along ``direction`` leaving it: the line through ``v``
        must keep one of ``v``'s obstacle corners entirely on one side (it is tangent there), which holds
        iff ``(e_x q_x)(e_y q_y) <= 0`` for that corner's quadrant ``q`` - or, with ``slack``, the line
        passes within ``slack`` of that (for starts and goals next to an obstacle's face)."""
        q = self._QUADRANTS[None, :, :]
        e = direction[:, None, :]
        tangent = (e[..., 0] * q[..., 0]) * (e[..., 1] * q[..., 1]) <= 1e-12
        if slack > 0.0:
            tangent = tangent | (np.minimum(np.abs(e[..., 0]), np.abs(e[..., 1])) <= slack)
        return (tangent & self._vertex_quadrants[vertices]).any(axis=1)

    # ------------------------------------------------------------------ grid helpers
    def _cell_centers(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        cell = self.settings.cell_size
        return np.stack([self.origin[0] + (cols + 0.5) * cell, self.origin[1] + (rows + 0.5) * cell], axis=-1)

    def world_to_cell(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of the cells containing ``points`` (``(N, 2+)``), clipped to the grid."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, np.shape(points)[-1])[:, :2]
        ij = np.floor((p - self.origin) / self.settings.cell_size).astype(np.int64)
        return np.clip(ij[:, 1], 0, self.shape[0] - 1), np.clip(ij[:, 0], 0, self.shape[1] - 1)

    def segments_clear(self, starts: np.ndarray, ends: np.ndarray, budget: int = 1_000_000) -> np.ndarray:
        """Line of sight on the loose grid for each segment ``starts[k] -> ends[k]`` (``(N, 2)`` each).

        Segments are sampled every 0.75 cells; a first pass every 2 cells rejects most blocked segments
        cheaply (no obstacle, inflated by the radius, is thinner than ~5 cells on the loose grid).
        """
        cell = self.settings.cell_size
        a = (np.asarray(starts, np.float64)[:, :2] - self.origin) / cell
        b = (np.asarray(ends, np.float64)[:, :2] - self.origin) / cell
        rows, cols = self.shape
        inside = (
            (a.min(1) >= 0)
            & (b.min(1) >= 0)
            & (a[:, 0] < cols)
            & (b[:, 0] < cols)
            & (a[:, 1] < rows)
            & (b[:, 1] < rows)
        )
        result = inside.copy()
        if not result.any():
            return result
        flat = self.loose.ravel()
        for step in (2.0, 0.75):
            candidates = np.nonzero(result)[0]
            if not len(candidates):
                break
            lengths = np.linalg.norm(b[candidates] - a[candidates], axis=1)
            order = candidates[np.argsort(lengths)]
            lengths = np.sort(lengths)
            begin = 0
            while begin < len(order):
                k_first = int(lengths[begin] / step) + 2
                count = max(1, budget // k_first)
                idx = order[begin : begin + count]
                k = int(lengths[min(begin + count, len(order)) - 1] / step) + 2
                t = np.linspace(0.0, 1.0, k, dtype=np.float32)
                a32, d32 = a[idx].astype(np.float32), (b[idx] - a[idx]).astype(np.float32)
                x = (a32[:, None, 0] + t[None] * d32[:, None, 0]).astype(np.int32)
                y = (a32[:, None, 1] + t[None] * d32[:, None, 1]).astype(np.int32)
                result[idx] = flat[y * cols + x].all(axis=1)
                begin += len(idx)
        return result

    # ------------------------------------------------------------------ point queries (habitat-sim API)
    def seed(self, new_seed: int) -> None:
        """Seed :meth:`get_random_navigable_point` (as habitat-sim's ``PathFinder.seed``)."""
        self._rng = np.random.default_rng(new_seed)

    def is_navigable(self, pt, max_y_delta: float = 0.5) -> bool:
        """Whether the robot can stand at ``pt``: on a floor, within ``max_y_delta`` of its height, and at
        least the robot radius from every obstacle."""
        p = np.asarray(pt, dtype=np.float64).reshape(-1)
        if len(p) > 2 and abs(p[2]) > max_y_delta:
            return False
        return bool(self._navigable(p[None, :2])[0])

    def _navigable(self, points: np.ndarray, margin: float = 0.0) -> np.ndarray:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        ok = self.floors.contains(points)
        if ok.any():
            ok[ok] = self.obstacles.clearance(points[ok]) >= self.settings.agent_radius + margin - 1e-9
        return ok

    def _snap_many(self, points: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`snap_point` for ``(N, 2)`` points (returns ``(N, 2)``)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if not self.strict.any():
            return np.full_like(points, np.nan)
        out = points.copy()
        bad = ~self._navigable(points)
        if bad.any():
            rows, cols = self.world_to_cell(points[bad])
            out[bad] = self._cell_centers(self._nearest[0][rows, cols], self._nearest[1][rows, cols])
        return out

    def _islands_of(self, points: np.ndarray) -> np.ndarray:
        """Island of the mesh cell nearest to each of ``(N, 2)`` points."""
        if not self.strict.any():
            return np.full(len(points), -1)
        rows, cols = self.world_to_cell(points)
        return self.islands[self._nearest[0][rows, cols], self._nearest[1][rows, cols]]

    def get_island(self, pt) -> int:
        """Island index of the mesh point nearest to ``pt`` (-1 when the mesh is empty)."""
        if not self.strict.any():
            return -1
        rows, cols = self.world_to_cell(_xy(pt)[None])
        r, c = self._nearest[0][rows[0], cols[0]], self._nearest[1][rows[0], cols[0]]
        return int(self.islands[r, c])

    @property
    def num_islands(self) -> int:
        return len(self.island_sizes)

    def island_area(self, island_index: int = -1) -> float:
        """Navigable area (m^2) of one island, or of all with ``-1``."""
        sizes = self.island_sizes if island_index < 0 else self.island_sizes[island_index : island_index + 1]
        return float(sizes.sum()) * self.settings.cell_size**2

    def island_radius(self, pt) -> float:
        """Radius (m) of the island containing ``pt``: largest distance from its centroid to its cells."""
        island = self.get_island(pt)
        if island < 0:
            return 0.0
        rows, cols = np.nonzero(self.islands == island)
        pts = self._cell_centers(rows, cols)
        return float(np.linalg.norm(pts - pts.mean(0), axis=1).max())

    def snap_point(self, pt, island_index: int = -1) -> np.ndarray:
        """The nearest navigable point (``pt`` itself when navigable); NaNs when the mesh is empty."""
        p = _xy(pt)
        if island_index < 0 and self._navigable(p[None])[0]:
            return _xyz(p)
        if not self.strict.any():
            return np.full(3, np.nan)
        if island_index >= 0:
            rows, cols = np.nonzero(self.islands == island_index)
            if not len(rows):
                return np.full(3, np.nan)
            centers = self._cell_centers(rows, cols)
            return _xyz(centers[int(np.argmin(np.linalg.norm(centers - p, axis=1)))])
        rows, cols = self.world_to_cell(p[None])
        r, c = self._nearest[0][rows[0], cols[0]], self._nearest[1][rows[0], cols[0]]
        return _xyz(self._cell_centers(np.array([r]), np.array([c]))[0])

    def get_random_navigable_point(
        self, max_tries: int = 10, island_index: int = -1, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """A uniformly random navigable point (of one island, or any), from ``rng`` or the seeded generator."""
        rng = rng if rng is not None else self._rng
        mask = self.strict if island_index < 0 else self.islands == island_index
        rows, cols = np.nonzero(mask)
        if not len(rows):
            return np.full(3, np.nan)
        for _ in range(max(1, max_tries)):
            k = int(rng.integers(len(rows)))
            center = self._cell_centers(rows[k : k + 1], cols[k : k + 1])[0]
            candidate = center + rng.uniform(-0.5, 0.5, size=2) * self.settings.cell_size
            if self._navigable(candidate[None])[0]:
                return _xyz(candidate)
        return _xyz(center)

    def distance_to_closest_obstacle(self, pt, max_search_radius: float = 2.0) -> float:
        """Distance from ``pt`` to the navigable-area boundary (obstacle clearance minus the robot radius)."""
        clearance = float(self.obstacles.clearance(_xy(pt)[None])[0]) - self.settings.agent_radius
        return min(max(clearance, 0.0), max_search_radius)

    # ------------------------------------------------------------------ shortest paths
    def _goal_distances(self, goals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For a goal set: ``D_G`` per vertex, the vertex ``j`` it leaves the graph at, and the goal of ``j``."""
        key = goals.tobytes()
        if key in self._goal_cache:
            self._goal_cache.move_to_end(key)
            return self._goal_cache[key][:3]
        n = len(self.vertices)
        exit_distance = np.full(n, np.inf)
        exit_goal = np.full(n, -1, dtype=np.int64)
        if n:
            goal_islands = self._islands_of(goals)
            gi, vj = np.nonzero(goal_islands[:, None] == self.vertex_island[None, :])
            keep = self._taut(vj, goals[gi] - self.vertices[vj], self.ENDPOINT_SLACK)
            gi, vj = gi[keep], vj[keep]
            if len(gi):
                visible = self.segments_clear(goals[gi], self.vertices[vj])
                gi, vj = gi[visible], vj[visible]
                dist = np.linalg.norm(goals[gi] - self.vertices[vj], axis=1)
                order = np.lexsort((dist, vj))
                first = np.ones(len(order), dtype=bool)
                first[1:] = vj[order][1:] != vj[order][:-1]
                best = order[first]
                exit_distance[vj[best]] = dist[best]
                exit_goal[vj[best]] = gi[best]
            total = self.vertex_distance + exit_distance[None, :]
            via = np.argmin(total, axis=1)
            goal_distance = total[np.arange(n), via]
        else:
            via, goal_distance = np.zeros(0, dtype=np.int64), np.zeros(0)
        self._goal_cache[key] = (goal_distance, via, exit_goal, exit_distance)
        if len(self._goal_cache) > 32:
            self._goal_cache.popitem(last=False)
        return goal_distance, via, exit_goal

    def _prepare_goals(self, ends) -> tuple[np.ndarray, np.ndarray]:
        """Snapped goal points and their islands (cached: episodes query the same goals every step)."""
        raw = np.asarray([np.asarray(e, dtype=np.float64).reshape(-1)[:2] for e in ends]).reshape(-1, 2)
        key = raw.tobytes()
        cached = self._snap_cache.get(key)
        if cached is None:
            goals = self._snap_many(raw)
            cached = (goals, self._islands_of(goals))
            self._snap_cache[key] = cached
            if len(self._snap_cache) > 32:
                self._snap_cache.pop(next(iter(self._snap_cache)))
        return cached

    def _shortest(self, start, ends) -> tuple[float, list[np.ndarray], int]:
        goals, goal_islands = self._prepare_goals(ends)
        key = (_xy(start).tobytes(), goals.tobytes())
        if key in self._recent:  # the environment and its expert ask the same question every step
            return self._recent[key]
        result = self._shortest_uncached(start, goals, goal_islands)
        self._recent[key] = result
        if len(self._recent) > 8:
            self._recent.pop(next(iter(self._recent)))
        return result

    def _shortest_uncached(
        self, start, goals: np.ndarray, goal_islands: np.ndarray
    ) -> tuple[float, list[np.ndarray], int]:
        p = self._snap_many(_xy(start)[None])[0]
        if np.isnan(p).any() or not len(goals):
            return float("inf"), [], -1
        island = int(self._islands_of(p[None])[0])
        reachable = (goal_islands == island) & ~np.isnan(goals).any(axis=1)
        best: tuple[float, list[np.ndarray], int] = (float("inf"), [], -1)
        if not reachable.any():
            return best
        candidates = np.nonzero(reachable)[0]
        direct = self.segments_clear(np.repeat(p[None], len(candidates), 0), goals[candidates])
        if direct.any():
            seen = candidates[direct]
            d = np.linalg.norm(goals[seen] - p, axis=1)
            k = int(np.argmin(d))
            best = (float(d[k]), [_xyz(p), _xyz(goals[seen[k]])], int(seen[k]))
        if len(self.vertices):
            valid = goals.copy()
            valid[~reachable] = 1e9  # unreachable goals never become visible exits
            goal_distance, via, exit_goal = self._goal_distances(valid)
            in_island = np.nonzero(self.vertex_island == island)[0]
            in_island = in_island[self._taut(in_island, self.vertices[in_island] - p, self.ENDPOINT_SLACK)]
            visible = in_island[
                self.segments_clear(np.repeat(p[None], len(in_island), 0), self.vertices[in_island])
            ]
            if len(visible):
                total = np.linalg.norm(self.vertices[visible] - p, axis=1) + goal_distance[visible]
                k = int(np.argmin(total))
                if total[k] < best[0] - 1e-9:
                    i = int(visible[k])
                    j = int(via[i])
                    chain = [j]
                    while chain[-1] != i:
                        chain.append(int(self._predecessors[i, chain[-1]]))
                    goal_index = int(exit_goal[j])
                    points = (
                        [_xyz(p)]
                        + [_xyz(self.vertices[v]) for v in reversed(chain)]
                        + [_xyz(goals[goal_index])]
                    )
                    best = (float(total[k]), points, goal_index)
        return best

    def find_path(self, path: ShortestPath | MultiGoalShortestPath) -> bool:
        """Fill ``path.points`` and ``path.geodesic_distance`` (``inf`` and no points if unreachable)."""
        if isinstance(path, MultiGoalShortestPath):
            distance, points, index = self._shortest(path.requested_start, path.requested_ends)
            path.closest_end_point_index = index
        else:
            distance, points, _ = self._shortest(path.requested_start, [path.requested_end])
        path.geodesic_distance, path.points = distance, [p.copy() for p in points]
        return bool(np.isfinite(distance))

    def geodesic_distance(self, start, ends) -> float:
        """Geodesic distance from ``start`` to ``ends`` (one point, or a list: the closest of them)."""
        ends = np.asarray(ends, dtype=np.float64)
        return self._shortest(start, ends.reshape(-1, ends.shape[-1]) if ends.ndim > 1 else ends[None])[0]

    # ------------------------------------------------------------------ moving
    def _navigable_near(self, points: np.ndarray, obstacles: Footprints) -> np.ndarray:
        ok = self.floors.contains(points)
        if ok.any():
            ok[ok] = obstacles.clearance(points[ok]) >= self.settings.agent_radius - 1e-9
        return ok

    def _free_fraction(self, start: np.ndarray, delta: np.ndarray, obstacles: Footprints) -> float:
        """Largest ``t`` in [0, 1] (to 1 mm) such that the robot stays navigable from ``start`` to ``start + t delta``."""
        length = float(np.linalg.norm(delta))
        if length < 1e-12:
            return 1.0
        t = np.linspace(0.0, 1.0, max(2, int(np.ceil(length / 0.01)) + 1))
        ok = self._navigable_near(start[None] + t[:, None] * delta[None], obstacles)
        if ok.all():
            return 1.0
        bad = int(np.argmin(ok))
        if bad == 0:
            return 0.0
        fine = np.linspace(
            t[bad - 1], t[bad], max(2, int(np.ceil((t[bad] - t[bad - 1]) * length / 0.001)) + 1)
        )
        ok = self._navigable_near(start[None] + fine[:, None] * delta[None], obstacles)
        return float(fine[max(0, int(np.argmin(ok)) - 1)])

    def try_step(self, start, end) -> np.ndarray:
        """Move from ``start`` toward ``end``; stop at obstacles and slide along them (habitat's ``try_step``)."""
        position = _xy(start).copy()
        remaining = _xy(end) - position
        reach = float(np.linalg.norm(remaining)) + self.settings.agent_radius + 0.05
        obstacles = self.obstacles.near(position, reach)
        if not self._navigable_near(position[None], obstacles)[0]:
            return _xyz(position)  # a robot that is stuck does not move
        for _ in range(3):
            t = self._free_fraction(position, remaining, obstacles)
            position = position + t * remaining
            if t >= 1.0:
                break
            rest = (1.0 - t) * remaining
            normal = obstacles.nearest_normal(position) if len(obstacles) else np.zeros(2)
            into = float(rest @ normal)
            remaining = rest - into * normal if into < 0.0 else rest
            if np.linalg.norm(remaining) < 1e-6:
                break
        return _xyz(position)

    def try_step_no_sliding(self, start, end) -> np.ndarray:
        """Like :meth:`try_step`, but stop at the first contact instead of sliding."""
        position = _xy(start)
        delta = _xy(end) - position
        obstacles = self.obstacles.near(
            position, float(np.linalg.norm(delta)) + self.settings.agent_radius + 0.05
        )
        if not self._navigable_near(position[None], obstacles)[0]:
            return _xyz(position)
        return _xyz(position + self._free_fraction(position, delta, obstacles) * delta)

    # ------------------------------------------------------------------ maps
    def navigable_points(self, spacing: float, island_index: int = -1) -> np.ndarray:
        """Navigable cell centres on a lattice of about ``spacing`` metres (``(N, 3)``)."""
        stride = max(1, int(round(spacing / self.settings.cell_size)))
        mask = self.strict if island_index < 0 else self.islands == island_index
        sub = np.zeros_like(mask)
        sub[::stride, ::stride] = True
        rows, cols = np.nonzero(mask & sub)
        centers = self._cell_centers(rows, cols)
        return np.hstack([centers, np.zeros((len(centers), 1))])
