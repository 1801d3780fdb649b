"""The habitat-sim back end - written against habitat-sim's documented Python API, **not run here**.

habitat-sim cannot be installed on this platform (no Linux wheel for Python 3.11), so this module is
never imported in CI; :func:`embodia.envs.habitat.backend.resolve_backend` selects it only when
``import habitat_sim`` works. It is kept small and uses only long-standing, documented calls:
``habitat_sim.SimulatorConfiguration`` / ``agent.AgentConfiguration`` / ``CameraSensorSpec`` /
``Configuration`` / ``Simulator``, ``Simulator.recompute_navmesh(pathfinder, NavMeshSettings)``,
``Simulator.get_agent(i).get_state()/set_state(AgentState)``, ``Simulator.get_sensor_observations(agent_ids)``,
and ``PathFinder.find_path / get_random_navigable_point / snap_point / is_navigable / try_step /
try_step_no_sliding / get_topdown_view / get_bounds``.

An embodia scene is exported to ``.glb`` (:mod:`embodia.envs.habitat.glb`, Habitat's Y-up frame) and
habitat-sim builds its navigation mesh from it for the robot's radius and height; observations,
actions and metrics are the environment's, unchanged (the environment moves robots with
``pathfinder.try_step`` and sets their poses, as habitat-sim's own navmesh-constrained agent does).
Positions cross the boundary through :mod:`embodia.envs.habitat.coords`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import mujoco
import numpy as np

from embodia.envs.habitat.coords import (
    from_habitat_position,
    habitat_rotation_to_yaw,
    to_habitat_position,
    yaw_to_habitat_rotation,
)
from embodia.envs.habitat.errors import NavBackendError
from embodia.envs.habitat.glb import write_glb
from embodia.envs.habitat.mjcf import RobotSpec, scene_to_mjcf
from embodia.envs.habitat.mujoco_backend import pose_and_door_state
from embodia.envs.habitat.pathfinder import MultiGoalShortestPath, NavMeshSettings
from embodia.envs.habitat.scene import Scene

CACHE = Path(os.environ.get("EMBODIA_CACHE", Path.home() / ".cache" / "embodia")) / "nav_glb"


def export_scene_glb(scene: Scene, door_open: dict[str, bool] | None = None) -> Path:
    """The scene's static geometry as ``.glb`` in the cache (written once per scene and door state)."""
    door_open = door_open or {d.id: d.open for d in scene.doors}
    key = hashlib.sha256((scene.digest() + repr(sorted(door_open.items()))).encode()).hexdigest()[:16]
    path = CACHE / f"{scene.name}-{key}.glb"
    if not path.is_file():
        model = mujoco.MjModel.from_xml_string(scene_to_mjcf(scene, num_robots=0))
        data = mujoco.MjData(model)
        for door in scene.doors:
            adr = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, door.id)]
            data.qpos[adr] = door.pocket * door.width if door_open.get(door.id, door.open) else 0.0
        mujoco.mj_kinematics(model, data)
        write_glb(model, data, path)
    return path


class HabitatPathFinder:
    """habitat-sim's ``PathFinder`` seen through embodia's frame and path-finder interface."""

    def __init__(self, pathfinder, settings: NavMeshSettings) -> None:
        self._pf = pathfinder
        self.settings = settings
        self._grid: tuple[np.ndarray, np.ndarray] | None = None
        areas = [pathfinder.island_area(i) for i in range(pathfinder.num_islands)]
        self._island_order = list(np.argsort(areas)[::-1])  # our island 0 = the largest

    def _h(self, point) -> np.ndarray:
        return np.asarray(
            to_habitat_position(np.asarray(point, dtype=np.float64).reshape(-1)), dtype=np.float32
        )

    def _e(self, point) -> np.ndarray:
        embodia = from_habitat_position(np.asarray(point, dtype=np.float64))
        embodia[2] = 0.0
        return embodia

    def _island(self, index: int) -> int:
        return -1 if index < 0 else int(self._island_order[index])

    def is_navigable(self, pt, max_y_delta: float = 0.5) -> bool:
        return bool(self._pf.is_navigable(self._h(pt), max_y_delta))

    def snap_point(self, pt, island_index: int = -1) -> np.ndarray:
        return self._e(self._pf.snap_point(self._h(pt), self._island(island_index)))

    def get_random_navigable_point(self, max_tries: int = 10, island_index: int = -1, rng=None) -> np.ndarray:
        if rng is not None:
            self._pf.seed(int(rng.integers(2**31 - 1)))
        return self._e(self._pf.get_random_navigable_point(max_tries, self._island(island_index)))

    def find_path(self, path) -> bool:
        import habitat_sim

        if isinstance(path, MultiGoalShortestPath):
            native = habitat_sim.MultiGoalShortestPath()
            native.requested_start = self._h(path.requested_start)
            native.requested_ends = [self._h(e) for e in path.requested_ends]
        else:
            native = habitat_sim.ShortestPath()
            native.requested_start = self._h(path.requested_start)
            native.requested_end = self._h(path.requested_end)
        found = bool(self._pf.find_path(native))
        path.geodesic_distance = float(native.geodesic_distance)
        path.points = [self._e(p) for p in native.points]
        if isinstance(path, MultiGoalShortestPath):
            path.closest_end_point_index = int(native.closest_end_point_index)
        return found

    def geodesic_distance(self, start, ends) -> float:
        ends = np.asarray(ends, dtype=np.float64)
        path = MultiGoalShortestPath(start, list(ends.reshape(-1, ends.shape[-1])))
        self.find_path(path)
        return path.geodesic_distance

    def try_step(self, start, end) -> np.ndarray:
        return self._e(self._pf.try_step(self._h(start), self._h(end)))

    def try_step_no_sliding(self, start, end) -> np.ndarray:
        return self._e(self._pf.try_step_no_sliding(self._h(start), self._h(end)))

    def segments_clear(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        out = [
            np.linalg.norm(self.try_step_no_sliding(np.append(a[:2], 0.0), np.append(b[:2], 0.0))[:2] - b[:2])
            < 1e-3
            for a, b in zip(np.asarray(starts), np.asarray(ends))
        ]
        return np.array(out, dtype=bool)

    def distance_to_closest_obstacle(self, pt, max_search_radius: float = 2.0) -> float:
        return float(self._pf.distance_to_closest_obstacle(self._h(pt), max_search_radius))

    # the grid view used by top-down maps, view points and scene graphs
    def _topdown(self) -> tuple[np.ndarray, np.ndarray]:
        if self._grid is None:
            lower, _upper = self._pf.get_bounds()
            view = np.asarray(
                self._pf.get_topdown_view(self.settings.cell_size, float(lower[1]) + 0.1), dtype=bool
            )
            # rows of the view run along Habitat +z (embodia -y): flip so rows run along embodia +y
            upper = self._pf.get_bounds()[1]
            origin = np.array([float(lower[0]), -float(upper[2])])
            self._grid = (view[::-1].copy(), origin)
        return self._grid

    @property
    def strict(self) -> np.ndarray:
        return self._topdown()[0]

    @property
    def origin(self) -> np.ndarray:
        return self._topdown()[1]

    def navigable_points(self, spacing: float, island_index: int = -1) -> np.ndarray:
        grid, origin = self._topdown()
        stride = max(1, int(round(spacing / self.settings.cell_size)))
        rows, cols = np.nonzero(grid[::stride, ::stride])
        cell = self.settings.cell_size
        xy = origin + (np.stack([cols, rows], axis=1) * stride + 0.5) * cell
        points = np.hstack([xy, np.zeros((len(xy), 1))])
        if island_index >= 0:
            wanted = self._island(island_index)
            points = points[[self._pf.get_island(self._h(p)) == wanted for p in points]]
        return points


class HabitatSimBackend:
    """An embodia scene in habitat-sim (see module docstring). Unverified on this platform."""

    name = "habitat_sim"

    def __init__(
        self,
        scene: Scene,
        num_robots: int = 1,
        robot: RobotSpec | None = None,
        settings: NavMeshSettings | None = None,
        width: int = 128,
        height: int = 128,
        gpu_device_id: int = 0,
    ) -> None:
        try:
            import habitat_sim
        except ImportError as error:  # pragma: no cover - selected only when it imports
            raise NavBackendError(f"the habitat_sim back end needs habitat-sim ({error})") from error
        self._hs = habitat_sim
        self.scene = scene
        self.num_robots = int(num_robots)
        self.robot = robot or RobotSpec()
        self.settings = settings or NavMeshSettings(
            self.robot.radius, self.robot.height, self.robot.max_climb
        )
        self.size = (int(width), int(height))
        self.gpu_device_id = gpu_device_id
        self._door_open = {d.id: d.open for d in scene.doors}
        self._configure()

    def _configure(self) -> None:
        hs = self._hs
        sim_cfg = hs.SimulatorConfiguration()
        sim_cfg.scene_id = str(export_scene_glb(self.scene, self._door_open))
        sim_cfg.enable_physics = False
        sim_cfg.gpu_device_id = self.gpu_device_id
        sensors = []
        for uuid, kind in (("rgb", hs.SensorType.COLOR), ("depth", hs.SensorType.DEPTH)):
            spec = hs.CameraSensorSpec()
            spec.uuid = uuid
            spec.sensor_type = kind
            spec.resolution = [self.size[1], self.size[0]]
            spec.position = [0.0, self.robot.camera_height, 0.0]
            spec.hfov = self.robot.hfov
            sensors.append(spec)
        agent_cfg = hs.agent.AgentConfiguration()
        agent_cfg.height = self.robot.height
        agent_cfg.radius = self.robot.radius
        agent_cfg.sensor_specifications = sensors
        config = hs.Configuration(sim_cfg, [agent_cfg for _ in range(self.num_robots)])
        if getattr(self, "sim", None) is None:
            self.sim = hs.Simulator(config)
        else:
            self.sim.reconfigure(config)
        navmesh = hs.NavMeshSettings()
        navmesh.set_defaults()
        navmesh.agent_radius = self.settings.agent_radius
        navmesh.agent_height = self.settings.agent_height
        navmesh.agent_max_climb = self.settings.agent_max_climb
        navmesh.cell_size = self.settings.cell_size
        if not self.sim.recompute_navmesh(self.sim.pathfinder, navmesh):
            raise NavBackendError(
                f"habitat-sim could not build a navigation mesh for scene {self.scene.name!r}"
            )
        self.pathfinder = HabitatPathFinder(self.sim.pathfinder, self.settings)

    def set_pose(self, robot: int, position: np.ndarray, yaw: float) -> None:
        state = self._hs.AgentState()
        state.position = np.asarray(to_habitat_position(position), dtype=np.float32)
        x, y, z, w = yaw_to_habitat_rotation(yaw)
        state.rotation = self._hs.utils.common.quat_from_coeffs([x, y, z, w])
        self.sim.get_agent(robot).set_state(state)

    def get_pose(self, robot: int) -> tuple[np.ndarray, float]:
        state = self.sim.get_agent(robot).get_state()
        position = from_habitat_position(state.position)
        position[2] = 0.0
        coeffs = self._hs.utils.common.quat_to_coeffs(state.rotation)
        return position, habitat_rotation_to_yaw(coeffs)

    def render(
        self, robot: int, width: int, height: int, depth: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        observations = self.sim.get_sensor_observations(agent_ids=robot)
        rgb = np.asarray(observations["rgb"])[..., :3]
        depth_image = np.asarray(observations["depth"], dtype=np.float32) if depth else None
        if (width, height) != self.size:  # sensors have one resolution: resample (nearest) for render()
            rows = (np.arange(height) * rgb.shape[0] / height).astype(int)
            cols = (np.arange(width) * rgb.shape[1] / width).astype(int)
            rgb = rgb[rows][:, cols]
            depth_image = depth_image[rows][:, cols] if depth_image is not None else None
        return np.ascontiguousarray(rgb, dtype=np.uint8), depth_image

    def set_door_open(self, door_id: str, is_open: bool) -> None:
        """habitat-sim scenes are static meshes: re-export the scene with the door changed and reload it."""
        self.scene.door(door_id)
        poses = [self.get_pose(i) for i in range(self.num_robots)]
        self._door_open[door_id] = bool(is_open)
        self._configure()
        for i, (position, yaw) in enumerate(poses):
            self.set_pose(i, position, yaw)

    def door_open(self, door_id: str) -> bool:
        return self._door_open[self.scene.door(door_id).id]

    def get_state(self) -> np.ndarray:
        """Same layout as the MuJoCo back end: poses, then door slide positions (0 closed, pocket * width open)."""
        poses = [np.append(p[:2], yaw) for p, yaw in (self.get_pose(i) for i in range(self.num_robots))]
        doors = [d.pocket * d.width if self._door_open[d.id] else 0.0 for d in self.scene.doors]
        return pose_and_door_state(poses, doors)

    def set_state(self, state: np.ndarray) -> None:
        state = np.asarray(state, dtype=np.float64)
        n = 3 * self.num_robots
        doors = {d.id: abs(v) > 1e-6 for d, v in zip(self.scene.doors, state[n:])}
        if doors != self._door_open:
            self._door_open = doors
            self._configure()
        for i in range(self.num_robots):
            x, y, yaw = state[3 * i : 3 * i + 3]
            self.set_pose(i, np.array([x, y, 0.0]), float(yaw))

    def close(self) -> None:
        if getattr(self, "sim", None) is not None:
            self.sim.close()
            self.sim = None
