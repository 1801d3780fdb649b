"""The MuJoCo back end: a navigation scene compiled to a MuJoCo model, rendered headless.

The model comes from :func:`embodia.envs.habitat.mjcf.scene_to_mjcf`; the navigation mesh from the
compiled model's geoms in their current pose (:meth:`PathFinder.from_mujoco`), so it always matches
what is rendered and what MuJoCo's collision detection sees. Robots move kinematically (their joints
are set, then ``mj_kinematics``), as Habitat's agents do; doors slide on their joints, and opening or
closing one rebuilds the navigation mesh.

Built navigation meshes are cached per process (scene digest, robot, door states), so environments
that revisit a scene, or several environments on one scene, build each mesh once.
"""

from __future__ import annotations

from collections import OrderedDict

import mujoco
import numpy as np

from embodia.envs.habitat.mjcf import GROUP_CEILING, RobotSpec, camera_fovy, scene_to_mjcf
from embodia.envs.habitat.pathfinder import NavMeshSettings, PathFinder
from embodia.envs.habitat.scene import Scene

#: door slots in the state vector (scenes have fewer doors; the generator makes at most ~15)
MAX_DOORS = 32
_PATHFINDERS: OrderedDict[tuple, PathFinder] = OrderedDict()
_PATHFINDER_CACHE_SIZE = 16


def pose_and_door_state(poses, door_positions) -> np.ndarray:
    """The back-end state layout: flat robot poses, then door slide positions padded to :data:`MAX_DOORS`."""
    if len(door_positions) > MAX_DOORS:
        raise ValueError(
            f"a scene with {len(door_positions)} doors does not fit the {MAX_DOORS} door slots of the state"
        )
    doors = np.zeros(MAX_DOORS)
    doors[: len(door_positions)] = door_positions
    return np.concatenate([np.asarray(poses, dtype=np.float64).ravel(), doors])


def _render_rgbd(renderer: mujoco.Renderer, model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray]:
    """Colour and metric depth of one ``mjr_render`` pass (``mujoco.Renderer`` renders twice for both).

    Depth is un-projected with the reversed-Z perspective coefficients ``mujoco.Renderer`` (3.8) uses:
    ``z = d / (b + c)`` with ``c = -0.5 c0 - 0.5``, ``d = -0.5 d0``, ``c0 = -(f + n) / (f - n)``,
    ``d0 = -2 f n / (f - n)``, ``n, f`` the clip planes in metres.
    """
    if renderer._gl_context:
        renderer._gl_context.make_current()
    mujoco.mjr_render(renderer._rect, renderer._scene, renderer._mjr_context)
    rgb = np.empty((renderer.height, renderer.width, 3), dtype=np.uint8)
    raw = np.empty((renderer.height, renderer.width), dtype=np.float32)
    mujoco.mjr_readPixels(rgb, raw, renderer._rect, renderer._mjr_context)
    extent = model.stat.extent
    near, far = np.float32(model.vis.map.znear * extent), np.float32(model.vis.map.zfar * extent)
    c = np.float32(-0.5) * (-(far + near) / (far - near)) - np.float32(0.5)
    d = np.float32(-0.5) * (-(np.float32(2) * far * near) / (far - near))
    depth = (d / (raw.astype(np.float64) + c)).astype(np.float32)
    return np.ascontiguousarray(rgb[::-1]), np.ascontiguousarray(depth[::-1])


class MuJoCoBackend:
    """One scene with ``num_robots`` robots in MuJoCo (see module docstring)."""

    name = "mujoco"

    def __init__(
        self,
        scene: Scene,
        num_robots: int = 1,
        robot: RobotSpec | None = None,
        settings: NavMeshSettings | None = None,
    ) -> None:
        self.scene = scene
        self.num_robots = int(num_robots)
        self.robot = robot or RobotSpec()
        self.settings = settings or NavMeshSettings(
            agent_radius=self.robot.radius,
            agent_height=self.robot.height,
            agent_max_climb=self.robot.max_climb,
        )
        self.model = mujoco.MjModel.from_xml_string(scene_to_mjcf(scene, self.robot, self.num_robots))
        self.data = mujoco.MjData(self.model)

        def joint(name):
            return int(self.model.jnt_qposadr[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, name)])  # noqa: E731

        self._pose_adr = np.array(
            [[joint(f"robot{i}_{axis}") for axis in ("x", "y", "yaw")] for i in range(self.num_robots)]
        )
        self._door_adr = {door.id: joint(door.id) for door in scene.doors}
        self._cameras = [
            mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, f"robot{i}_rgbd")
            for i in range(self.num_robots)
        ]
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self._scene_option = mujoco.MjvOption()
        self._scene_option.geomgroup[:] = 1
        self._top_option = mujoco.MjvOption()
        self._top_option.geomgroup[:] = 1
        self._top_option.geomgroup[GROUP_CEILING] = 0
        for door in scene.doors:
            self.data.qpos[self._door_adr[door.id]] = door.pocket * door.width if door.open else 0.0
        self._forward()
        self.pathfinder = self._pathfinder()

    # ------------------------------------------------------------------ navigation mesh
    def _door_states(self) -> tuple[bool, ...]:
        return tuple(abs(self.data.qpos[adr]) > 1e-6 for adr in self._door_adr.values())

    def _pathfinder(self) -> PathFinder:
        key = (self.scene.digest(), self.settings, self._door_states())
        if key in _PATHFINDERS:
            _PATHFINDERS.move_to_end(key)
            return _PATHFINDERS[key]
        pathfinder = PathFinder.from_mujoco(self.model, self.data, self.settings)
        _PATHFINDERS[key] = pathfinder
        if len(_PATHFINDERS) > _PATHFINDER_CACHE_SIZE:
            _PATHFINDERS.popitem(last=False)
        return pathfinder

    def set_door_open(self, door_id: str, is_open: bool) -> None:
        """Slide a door open or shut and rebuild the navigation mesh for the new geometry."""
        door = self.scene.door(door_id)
        self.data.qpos[self._door_adr[door_id]] = door.pocket * door.width if is_open else 0.0
        self._forward()
        self.pathfinder = self._pathfinder()

    def door_open(self, door_id: str) -> bool:
        self.scene.door(door_id)
        return bool(abs(self.data.qpos[self._door_adr[door_id]]) > 1e-6)

    # ------------------------------------------------------------------ robots
    def _forward(self) -> None:
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def set_pose(self, robot: int, position: np.ndarray, yaw: float) -> None:
        adr = self._pose_adr[robot]
        self.data.qpos[adr[0]], self.data.qpos[adr[1]], self.data.qpos[adr[2]] = position[0], position[1], yaw
        self._forward()

    def get_pose(self, robot: int) -> tuple[np.ndarray, float]:
        adr = self._pose_adr[robot]
        return np.array([self.data.qpos[adr[0]], self.data.qpos[adr[1]], 0.0]), float(self.data.qpos[adr[2]])

    def robot_contacts(self, robot: int) -> int:
        """Number of MuJoCo contacts (penetrating) between the robot's hull and obstacles in the current pose."""
        mujoco.mj_collision(self.model, self.data)
        base = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, f"robot{robot}/hull")
        contacts = self.data.contact[: self.data.ncon]
        return int(sum(1 for c in contacts if (c.geom1 == base or c.geom2 == base) and c.dist < 0.0))

    # ------------------------------------------------------------------ rendering
    def _renderer(self, width: int, height: int) -> mujoco.Renderer:
        key = (width, height)
        if key not in self._renderers:
            self.model.vis.global_.offwidth = max(self.model.vis.global_.offwidth, width)
            self.model.vis.global_.offheight = max(self.model.vis.global_.offheight, height)
            self._renderers[key] = mujoco.Renderer(self.model, height, width)
        return self._renderers[key]

    def render(
        self, robot: int, width: int, height: int, depth: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """RGB ``(height, width, 3)`` uint8 and depth ``(height, width)`` in metres from a robot's camera.

        Both come from one rendering pass: the colour and depth buffers of the same frame are read
        together (``mjr_readPixels``), and depth is converted to metres as ``mujoco.Renderer`` does it.
        """
        renderer = self._renderer(width, height)
        camera = self._cameras[robot]
        self.model.cam_fovy[camera] = camera_fovy(self.robot.hfov, width, height)
        renderer.update_scene(self.data, camera=camera, scene_option=self._scene_option)
        if not depth:
            return renderer.render().copy(), None
        return _render_rgbd(renderer, self.model)

    def render_top_down(self, width: int) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """An orthographic view from above (ceilings hidden) and the world bounds ``(x0, y0, x1, y1)`` it shows."""
        x0, y0, x1, y1 = self.scene.bounds
        margin = 0.2
        x0, y0, x1, y1 = x0 - margin, y0 - margin, x1 + margin, y1 + margin
        height = max(1, int(round(width * (y1 - y0) / (x1 - x0))))
        camera = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, "top")
        self.model.cam_fovy[camera] = y1 - y0  # orthographic: the vertical extent in metres
        self.model.cam_pos[camera][:2] = (0.5 * (x0 + x1), 0.5 * (y0 + y1))
        self._forward()
        renderer = self._renderer(width, height)
        renderer.update_scene(self.data, camera=camera, scene_option=self._top_option)
        return renderer.render().copy(), (x0, y0, x1, y1)

    # ------------------------------------------------------------------ state
    def get_state(self) -> np.ndarray:
        """Robot poses ``[x, y, yaw]`` per robot, then each door's slide position, padded with zeros to
        :data:`MAX_DOORS` (a fixed size, whatever the scene: stores hold states of one shape)."""
        return pose_and_door_state(
            self.data.qpos[self._pose_adr.ravel()], [self.data.qpos[a] for a in self._door_adr.values()]
        )

    def set_state(self, state: np.ndarray) -> None:
        state = np.asarray(state, dtype=np.float64)
        doors = self._door_states()
        n = 3 * self.num_robots
        self.data.qpos[self._pose_adr.ravel()] = state[:n]
        for k, adr in enumerate(self._door_adr.values()):
            self.data.qpos[adr] = state[n + k]
        self._forward()
        if self._door_states() != doors:
            self.pathfinder = self._pathfinder()

    @property
    def state_size(self) -> int:
        return 3 * self.num_robots + MAX_DOORS

    def close(self) -> None:
        # EGL contexts must be freed explicitly: left to the garbage collector they fail at exit.
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()
