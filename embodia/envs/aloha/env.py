"""The ALOHA simulation tasks of ACT (Zhao et al., RSS 2023) behind embodia's environment contract.

The tasks, their MJCF, their reward and their initial-pose sampling are the real ``gym-aloha`` package's
(``gym_aloha.tasks.sim``: two ViperX 300s arms under joint-position control on dm_control / MuJoCo).
:class:`AlohaEnv` drives gym-aloha's dm_control ``Physics`` and ``Task`` directly, as
``dm_control.rl.control.Environment`` does (``before_step``, ``n_sub_steps`` physics steps, ``after_step``,
``get_reward``), but without the task's ``get_observation``, which renders three 640x480 cameras on
every step whether or not they are used; embodia renders only the cameras asked for.

- actions: 14-D, ACT's and gym-aloha's layout: per arm 6 joint position targets and the gripper opening
  normalised to 0 (closed) .. 1 (open); left arm first. By default each joint target is scaled to
  ``[-1, 1]`` over its position actuator's range (-1: the range's low end, 1: its high end), a normalised
  box as gymnasium's checker asks; ``absolute_actions=True`` takes ACT's absolute joint positions in
  radians instead (what LeRobot's ``aloha_sim_*`` data sets hold). gym-aloha declares a ``[-1, 1]`` box
  but reads absolute radians, which leave it.
- observations: ``state``, the 14-D joint positions as ACT's ``qpos`` (grippers normalised as the
  actions); with ``cameras=("top",)`` also ``top_rgb`` (gym-aloha's ``pixels_agent_pos`` type).
- reward: gym-aloha's staged contact reward, 0-4 (transfer cube: 1 touched by the right gripper, 2 lifted,
  3 touched by the left gripper, 4 held by the left gripper off the table; insertion: 1 both objects
  touched, 2 both lifted, 3 peg touching the socket in the air, 4 peg touching the pin inside the socket).
- ``info["success"]``: the reward is the task's maximum, 4 (gym-aloha's ``is_success``); the episode
  terminates there unless ``terminate_on_success=False`` (recording full-length demonstrations).
- seeding: ``reset(seed=s)`` places the objects where gym-aloha's ``reset(seed=s)`` places them
  (``sample_box_pose(s)`` / ``sample_insertion_pose(s)``); unseeded resets draw the pose seed from the
  environment's generator.
- episode limit: 400 steps (50 Hz, 8 s), ACT's ``episode_len`` for both tasks and LeRobot's evaluation
  length; gym-aloha registers 300.
- ``get_state()`` / ``set_state()``: MuJoCo's integration state (``mjSTATE_INTEGRATION``), exact.
- divergence: joint targets far from the arms' pose (uniformly random actions: ~1 episode in 5 within 20
  steps) can make gym-aloha's simulation diverge (MuJoCo's ``BADQACC`` warning, which dm_control raises as
  ``PhysicsError``, as gym-aloha does); embodia truncates the episode instead, with the message in
  ``info["physics_error"]``, so random-policy runs and data collection go on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import gymnasium
import mujoco
import numpy as np
from gymnasium import spaces

from embodia.core.errors import ActionError, EnvArgumentError

_INTEGRATION = mujoco.mjtState.mjSTATE_INTEGRATION

#: ALOHA's control period: 50 Hz (gym-aloha's ``DT``)
CONTROL_DT = 0.02
#: the cameras of gym-aloha's scene
CAMERAS = ("top", "angle", "front_close", "left_pillar", "right_pillar")
#: task name -> (gym-aloha task class, its joint-space MJCF file, number of free objects)
TASKS = {
    "transfer_cube": ("TransferCubeTask", "bimanual_viperx_transfer_cube.xml", 1),
    "insertion": ("InsertionTask", "bimanual_viperx_insertion.xml", 2),
}
#: the reward at which a task is solved (``max_reward`` of gym-aloha's tasks)
MAX_REWARD = 4
#: robot joints at the front of ``qpos`` (per arm: 6 arm joints and two gripper fingers)
ROBOT_QPOS = 16


def object_poses(task: str, seed: int) -> np.ndarray:
    """The initial object poses (x, y, z, qw, qx, qy, qz per object) gym-aloha draws for ``seed``."""
    from gym_aloha.utils import sample_box_pose, sample_insertion_pose

    if task == "transfer_cube":
        return np.asarray(sample_box_pose(seed), dtype=np.float64)
    return np.concatenate(sample_insertion_pose(seed)).astype(np.float64)


class AlohaEnv(gymnasium.Env):
    """One of gym-aloha's bimanual tasks (joint-position control) as an embodia environment.

    Args:
        task: ``"transfer_cube"`` or ``"insertion"`` (the registered ids pass it).
        render_mode: ``"rgb_array"`` or ``None``.
        width: width of ``render()`` frames.
        height: height of ``render()`` frames.
        render_camera: camera of ``render()`` (one of ``CAMERAS``; gym-aloha renders ``"top"``).
        cameras: camera observations to add as ``<camera>_rgb`` (``("top",)`` is gym-aloha's pixel input).
        camera_width: width of camera observations (gym-aloha: 640).
        camera_height: height of camera observations (gym-aloha: 480).
        terminate_on_success: end the episode at the first step with the maximum reward (gym-aloha does).
        shadow_size: shadow map size; 0 (the default) turns shadows off (gym-aloha's MJCF asks for 4096 and
            4x multisampling, several times slower on a CPU renderer; figures may want 2048).
        multisamples: offscreen anti-aliasing samples (0: off, fastest).
        absolute_actions: arm joint targets in radians (ACT's actions) instead of scaled to ``[-1, 1]``
            over each actuator's range; the grippers' openings are in ``[0, 1]`` either way.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": round(1 / CONTROL_DT)}
    #: the cameras ``cameras`` may name (:class:`embodia.core.env.CameraEnv`)
    camera_names = CAMERAS

    def __init__(
        self,
        task: str,
        render_mode: str | None = None,
        width: int = 320,
        height: int = 240,
        render_camera: str = "top",
        cameras: Sequence[str] = (),
        camera_width: int = 320,
        camera_height: int = 240,
        terminate_on_success: bool = True,
        shadow_size: int = 0,
        multisamples: int = 0,
        absolute_actions: bool = False,
    ) -> None:
        if task not in TASKS:
            raise EnvArgumentError(f"unknown ALOHA task {task!r}; known: {', '.join(TASKS)}")
        if render_mode not in (None, "rgb_array"):
            raise EnvArgumentError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        sizes = {
            "width": width,
            "height": height,
            "camera_width": camera_width,
            "camera_height": camera_height,
        }
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise EnvArgumentError(f"{name} must be a positive integer (pixels), got {value!r}")
        for name, value in (("shadow_size", shadow_size), ("multisamples", multisamples)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise EnvArgumentError(f"{name} must be an integer >= 0, got {value!r}")
        cameras = (cameras,) if isinstance(cameras, str) else tuple(cameras)
        for camera in (*cameras, render_camera):
            if camera not in CAMERAS:
                raise EnvArgumentError(f"unknown camera {camera!r}; ALOHA cameras: {', '.join(CAMERAS)}")
        if not isinstance(absolute_actions, bool):
            raise EnvArgumentError(f"absolute_actions must be true or false, got {absolute_actions!r}")
        if not isinstance(terminate_on_success, bool):
            raise EnvArgumentError(
                f"terminate_on_success must be true or false, got {terminate_on_success!r}"
            )
        from dm_control import mujoco as dm_mujoco
        from dm_control.rl.control import PhysicsError
        from gym_aloha import constants
        from gym_aloha.tasks import sim

        class_name, xml_file, n_objects = TASKS[task]
        self.task_name = task
        self.render_mode = render_mode
        self.width, self.height = width, height
        self.render_camera = render_camera
        self.cameras = cameras
        self.camera_size = (camera_height, camera_width)
        self.terminate_on_success = terminate_on_success
        self.absolute_actions = absolute_actions
        self.n_objects = n_objects
        self.physics = dm_mujoco.Physics.from_xml_path(str(constants.ASSETS_DIR / xml_file))
        self._task = getattr(sim, class_name)()
        self._sim = sim
        self._physics_error = PhysicsError
        self.physics.model.vis.quality.shadowsize = shadow_size
        self.physics.model.vis.quality.offsamples = multisamples
        self._n_sub_steps = round(CONTROL_DT / self.physics.model.opt.timestep)
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self.pose_seed = 0

        # joint targets within the position actuators' ranges; grippers normalised to [0, 1]
        ctrl_range = self.physics.model.actuator_ctrlrange
        arm = [0, 1, 2, 3, 4, 5]
        self._target_low = np.concatenate(
            [ctrl_range[arm, 0], [0.0], ctrl_range[[a + 8 for a in arm], 0], [0.0]]
        )
        self._target_high = np.concatenate(
            [ctrl_range[arm, 1], [1.0], ctrl_range[[a + 8 for a in arm], 1], [1.0]]
        )
        self._scaled = np.ones(14, dtype=bool)
        self._scaled[[6, 13]] = False  # the grippers' openings are [0, 1] already
        if absolute_actions:
            low, high = self._target_low, self._target_high
        else:
            low, high = np.where(self._scaled, -1.0, 0.0), np.ones(14)
        self.action_space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        obs_spaces: dict[str, spaces.Space] = {
            "state": spaces.Box(-np.inf, np.inf, shape=(14,), dtype=np.float32),
        }
        for camera in cameras:
            obs_spaces[f"{camera}_rgb"] = spaces.Box(0, 255, shape=(*self.camera_size, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict(obs_spaces)
        self._initialize(object_poses(task, 0))

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.pose_seed = int(seed) % 2**32 if seed is not None else int(self.np_random.integers(2**31 - 1))
        self._initialize(object_poses(self.task_name, self.pose_seed))
        return self.observe(), {"success": False}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        # float32 like the trajectory store's actions, so a recorded episode replays bit for bit
        action = np.asarray(action, dtype=np.float32).astype(np.float64)
        if action.shape != (14,):
            raise ActionError(
                f"action has shape {action.shape}, but ALOHA {self.task_name} expects (14,): per arm 6 joint "
                "positions and a gripper opening in [0, 1], left arm first"
            )
        if not math.isfinite(action.dot(action)):
            raise ActionError(f"action contains NaN or inf: {action.tolist()}; check the policy's output")
        # what dm_control's control.Environment.step does, without rendering the task's observation
        self._task.before_step(self.joint_targets(action), self.physics)
        try:
            self.physics.step(self._n_sub_steps)
        except self._physics_error as error:
            # MuJoCo reset the diverged simulation in mid-step: the episode cannot go on
            gymnasium.logger.warn(f"ALOHA {self.task_name}: {error}; the episode is truncated")
            return self.observe(), 0.0, False, True, {"success": False, "physics_error": str(error)}
        self._task.after_step(self.physics)
        reward = float(self._task.get_reward(self.physics))
        success = reward >= MAX_REWARD
        terminated = success and self.terminate_on_success
        return self.observe(), reward, terminated, False, {"success": success}

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode='rgb_array'; returning None")
            return None
        return self._render(self.render_camera, self.height, self.width)

    def close(self) -> None:
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers = {}

    # ------------------------------------------------------------------ embodia extras
    def observe(self) -> dict[str, np.ndarray]:
        """The observation of the current state, as ``reset`` and ``step`` return it."""
        obs = {"state": self.qpos().astype(np.float32)}
        for camera in self.cameras:
            obs[f"{camera}_rgb"] = self._render(camera, *self.camera_size)
        return obs

    def joint_targets(self, action: np.ndarray) -> np.ndarray:
        """The absolute joint targets (ACT's action layout, radians) an action of this environment means."""
        action = np.asarray(action, dtype=np.float64)
        if self.absolute_actions:
            return action
        span = self._target_high - self._target_low
        return np.where(self._scaled, self._target_low + (action + 1.0) / 2.0 * span, action)

    def action_for(self, joint_targets: np.ndarray) -> np.ndarray:
        """The action of this environment for absolute joint targets (inverse of :meth:`joint_targets`)."""
        targets = np.asarray(joint_targets, dtype=np.float64)
        if self.absolute_actions:
            return targets
        span = self._target_high - self._target_low
        return np.where(self._scaled, (targets - self._target_low) / span * 2.0 - 1.0, targets)

    def qpos(self) -> np.ndarray:
        """ACT's 14-D ``qpos``: per arm 6 joint positions and the normalised gripper opening (float64)."""
        return np.asarray(self._task.get_qpos(self.physics), dtype=np.float64)

    def object_state(self) -> np.ndarray:
        """The free objects' poses (x, y, z, qw, qx, qy, qz each): the cube, or the peg then the socket."""
        return self.physics.data.qpos[ROBOT_QPOS : ROBOT_QPOS + 7 * self.n_objects].copy()

    def reward(self) -> float:
        """gym-aloha's reward of the current state (0-4)."""
        return float(self._task.get_reward(self.physics))

    @property
    def has_expert(self) -> bool:
        return True

    def make_expert(self, noise: float = 0.0) -> Any:
        """ACT's scripted policy for the task: end-effector waypoints run in gym-aloha's mocap
        environment, whose joint trajectory is replayed here (see :mod:`embodia.envs.aloha.experts`).

        Args:
            noise: half-width (m) of the uniform noise added to every end-effector target (ACT's
                ``inject_noise`` uses 0.01); 0 is the deterministic expert.
        """
        from embodia.envs.aloha.experts import AlohaScriptedExpert

        return AlohaScriptedExpert(self, noise=noise)

    def get_state(self) -> np.ndarray:
        """MuJoCo's integration state (time, qpos, qvel, activations, warm start, controls) as float64."""
        model, data = self.physics.model.ptr, self.physics.data.ptr
        state = np.empty(mujoco.mj_stateSize(model, _INTEGRATION), dtype=np.float64)
        mujoco.mj_getState(model, data, state, _INTEGRATION)
        return state

    def set_state(self, state: np.ndarray) -> None:
        """Restore a state from :meth:`get_state` (same task); the next step equals the recorded one."""
        state = np.asarray(state, dtype=np.float64)
        model, data = self.physics.model.ptr, self.physics.data.ptr
        size = mujoco.mj_stateSize(model, _INTEGRATION)
        if state.shape != (size,):
            raise ValueError(
                f"state has shape {state.shape}, ALOHA {self.task_name} expects ({size},); was it recorded "
                "with another environment?"
            )
        mujoco.mj_setState(model, data, state, _INTEGRATION)
        # dm_control steps as mj_step2 then mj_step1: bring the position / velocity stages up to date
        mujoco.mj_step1(model, data)

    # ------------------------------------------------------------------ internals
    def _initialize(self, poses: np.ndarray) -> None:
        """gym-aloha's ``initialize_episode`` (arms at the start pose, objects at ``poses``)."""
        # gym-aloha hands the object poses to its task through this module-level list
        self._sim.BOX_POSE[0] = poses
        with self.physics.reset_context():
            self._task.initialize_episode(self.physics)

    def _render(self, camera: str, height: int, width: int) -> np.ndarray:
        model = self.physics.model.ptr
        renderer = self._renderers.get((height, width))
        if renderer is None:
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
            model.vis.global_.offheight = max(model.vis.global_.offheight, height)
            renderer = mujoco.Renderer(model, height=height, width=width)
            self._renderers[(height, width)] = renderer
        renderer.update_scene(self.physics.data.ptr, camera=camera)
        return renderer.render()
