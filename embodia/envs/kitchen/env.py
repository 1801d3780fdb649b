"""RoboCasa-style kitchen tasks on robosuite behind embodia's environment contract.

:class:`KitchenEnv` owns a :class:`~embodia.envs.kitchen.scene.KitchenScene` (a real robosuite
manipulation environment) and adds:

- a new kitchen per episode: ``reset(seed=s)`` draws a layout id and a style id (from those the ``layout``
  and ``style`` arguments allow; by default the whole catalogue, see :mod:`~embodia.envs.kitchen.layout`),
  the object and the robot position from a private generator seeded by ``s`` and rebuilds the model (a
  robosuite hard reset); the same seed and arguments give the same kitchen; NumPy's global generator is
  left untouched;
- dict observations: ``state`` (robot proprioception + task observation, float32), ``proprio`` (the
  robot part alone), ``instruction`` (the task's language instruction as UTF-8 bytes, zero-padded to
  :data:`INSTRUCTION_BYTES`; :func:`decode_instruction` turns it back into text) and, when requested,
  ``agentview_rgb`` / ``eye_in_hand_rgb`` camera images;
- ``info["success"]`` (bool, every step) and ``info["instruction"]`` (str); reward 1 on success, and
  the episode terminates on success unless ``terminate_on_success=False``;
- ``get_state()`` / ``set_state()``: [layout vector | MuJoCo integration state (less the external body
  forces, which embodia never applies) | controller state | task variables] as one float64 array of one
  size per environment id (and robot); a state from another kitchen rebuilds that kitchen first;
- fast headless rendering (``MUJOCO_GL=egl``): MuJoCo renderers without shadows or multisampling and
  with the robot drawn from its collision meshes by default (``detailed_robot=True`` for figures);
  collision geoms of the kitchen and sites hidden.
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
from embodia.envs.kitchen.layout import (
    N_LAYOUTS,
    N_STYLES,
    KitchenLayout,
    catalogue_ids,
    layout_size,
    sample_kitchen,
)
from embodia.envs.kitchen.scene import SINGLE_ARM_ROBOTS, KitchenScene
from embodia.envs.kitchen.task import TASKS

#: MuJoCo's integration state without the external body forces (``xfrc_applied``, 6 numbers per body, which
#: embodia never sets): kitchens of different layouts have different numbers of static bodies (counter
#: modules, returns), and the states of one environment id must keep one size (a store holds one shape)
_INTEGRATION = int(mujoco.mjtState.mjSTATE_INTEGRATION) & ~int(mujoco.mjtState.mjSTATE_XFRC_APPLIED)


class KitchenConfigError(EnvArgumentError):
    """A kitchen environment argument that cannot work (unknown task, robot, camera, layout or style)."""


INSTRUCTION_BYTES = 96
#: camera observation name -> MuJoCo camera name
#: camera name -> the scene's camera (overview: the work area from behind the robot, the default of render())
CAMERAS = {"agentview": "agentview", "eye_in_hand": "robot0_eye_in_hand", "overview": "overview"}


def encode_instruction(text: str) -> np.ndarray:
    """UTF-8 bytes of ``text`` zero-padded to :data:`INSTRUCTION_BYTES` (uint8)."""
    raw = text.encode("utf-8")
    if len(raw) > INSTRUCTION_BYTES:
        raise ValueError(f"instruction longer than {INSTRUCTION_BYTES} bytes: {text!r}")
    out = np.zeros(INSTRUCTION_BYTES, dtype=np.uint8)
    out[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


def decode_instruction(data: np.ndarray) -> str:
    """Inverse of :func:`encode_instruction` (accepts any integer array of byte values)."""
    raw = bytes(np.asarray(data, dtype=np.uint8).tolist())
    return raw.rstrip(b"\0").decode("utf-8")


class _Renderers:
    """MuJoCo renderers per image size for the current model (rebuilt when the model changes)."""

    def __init__(self, shadow_size: int, multisamples: int, detailed_robot: bool) -> None:
        self.shadow_size = shadow_size
        self.multisamples = multisamples
        self._model: mujoco.MjModel | None = None
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self.option = mujoco.MjvOption()
        self.option.geomgroup[:] = 0
        self.option.geomgroup[1] = 1  # the kitchen (see KitchenScene._assign_render_groups)
        self.option.geomgroup[2 if detailed_robot else 0] = 1  # the robot: visual or collision meshes
        self.option.sitegroup[:] = 0

    def render(
        self, model: mujoco.MjModel, data: mujoco.MjData, camera: str, height: int, width: int
    ) -> np.ndarray:
        if model is not self._model:
            self.close()
            self._model = model
        renderer = self._renderers.get((height, width))
        if renderer is None:
            model.vis.quality.shadowsize = self.shadow_size
            model.vis.quality.offsamples = self.multisamples
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
            model.vis.global_.offheight = max(model.vis.global_.offheight, height)
            renderer = mujoco.Renderer(model, height=height, width=width)
            self._renderers[(height, width)] = renderer
        renderer.update_scene(data, camera=camera, scene_option=self.option)
        return renderer.render()

    def close(self) -> None:
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers = {}
        self._model = None


class KitchenEnv(gymnasium.Env):
    """One kitchen task (see :mod:`embodia.envs.kitchen.task`) as a gymnasium environment.

    Args:
        task: task name, e.g. ``"OpenDrawer"`` (the registered ids pass it).
        robot: robosuite robot (``"Panda"`` by default; single-arm robots with a gripper such as
            ``"UR5e"``, ``"IIWA"``, ``"Kinova3"``, ``"Jaco"``; see ``SINGLE_ARM_ROBOTS``).
        render_mode: ``"rgb_array"`` or ``None``.
        width: width of ``render()`` frames.
        height: height of ``render()`` frames.
        render_camera: camera of ``render()``: ``"overview"`` (the work area from behind the robot),
            ``"agentview"`` or ``"eye_in_hand"``.
        cameras: camera observations to add (``"agentview"``, ``"eye_in_hand"``, ``"overview"``) as ``<camera>_rgb``.
        camera_width: width of camera observations.
        camera_height: height of camera observations.
        shadow_size: shadow map size; 0 (the default) turns shadows off, which makes camera
            observations ~2-3x faster on a CPU renderer (figures use 2048).
        multisamples: offscreen anti-aliasing samples (0: off, fastest).
        detailed_robot: draw the robot with its detailed visual meshes instead of its collision meshes
            (~11x the triangles; about 5x slower per image on a CPU renderer; for figures and videos).
        terminate_on_success: end the episode at the first step where the task succeeds.
        layout: the catalogue layout(s) an episode may draw: an id in ``0..N_LAYOUTS-1`` (this kitchen's
            geometry every episode), a list of ids (the seed draws one), or None (any; see
            :data:`~embodia.envs.kitchen.layout.LAYOUT_NAMES`).
        style: the catalogue style(s) an episode may draw (colours and handle finish), likewise: an id in
            ``0..N_STYLES-1``, a list of ids or None (any).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    #: the cameras ``cameras`` may name (:class:`embodia.core.env.CameraEnv`)
    camera_names = tuple(CAMERAS)

    def __init__(
        self,
        task: str,
        robot: str = "Panda",
        render_mode: str | None = None,
        width: int = 256,
        height: int = 256,
        render_camera: str = "overview",
        cameras: Sequence[str] = (),
        camera_width: int = 128,
        camera_height: int = 128,
        shadow_size: int = 0,
        multisamples: int = 0,
        detailed_robot: bool = False,
        terminate_on_success: bool = True,
        layout: int | Sequence[int] | None = None,
        style: int | Sequence[int] | None = None,
    ) -> None:
        if task not in TASKS:
            raise KitchenConfigError(f"unknown kitchen task {task!r}; known: {', '.join(TASKS)}")
        if render_mode not in (None, "rgb_array"):
            raise KitchenConfigError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if robot not in SINGLE_ARM_ROBOTS:
            raise KitchenConfigError(
                f"robot {robot!r} cannot work in the kitchen; single-arm robosuite robots: "
                f"{', '.join(SINGLE_ARM_ROBOTS)}"
            )
        sizes = {
            "width": width,
            "height": height,
            "camera_width": camera_width,
            "camera_height": camera_height,
        }
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise KitchenConfigError(f"{name} must be a positive integer (pixels), got {value!r}")
        if isinstance(cameras, str):
            cameras = (cameras,)
        cameras = tuple(cameras)
        for camera in (*cameras, render_camera):
            if camera not in CAMERAS:
                raise KitchenConfigError(f"unknown camera {camera!r}; kitchen cameras: {', '.join(CAMERAS)}")
        try:
            self.layout_choices = catalogue_ids(layout, "layout", N_LAYOUTS)
            self.style_choices = catalogue_ids(style, "style", N_STYLES)
        except ValueError as error:
            raise KitchenConfigError(f"Kitchen-{task}: {error}") from None
        self.task_name = task
        self.task = TASKS[task]()
        self.robot = robot
        self.render_mode = render_mode
        self.width, self.height = int(width), int(height)
        self.render_camera = CAMERAS.get(render_camera, render_camera)
        self.cameras = cameras
        self.camera_size = (int(camera_height), int(camera_width))
        self.terminate_on_success = bool(terminate_on_success)
        self._renderers = _Renderers(int(shadow_size), int(multisamples), bool(detailed_robot))
        self.episode_index = 0
        self.instruction = ""

        layout = self._sample_layout(np.random.default_rng(0))
        self.scene = KitchenScene(layout, self.task.focus(layout), robot=robot)
        self._layout_vector = layout.to_vector()
        self._initialize_episode(np.random.default_rng(0))

        self._action_shape = (self.scene.action_dim,)
        low, high = self.scene.action_spec
        self.action_space = spaces.Box(
            np.asarray(low, dtype=np.float32), np.asarray(high, dtype=np.float32), dtype=np.float32
        )
        probe = self._observation()
        obs_spaces: dict[str, spaces.Space] = {
            "state": spaces.Box(-np.inf, np.inf, shape=probe["state"].shape, dtype=np.float32),
            "proprio": spaces.Box(-np.inf, np.inf, shape=probe["proprio"].shape, dtype=np.float32),
            "instruction": spaces.Box(0, 255, shape=(INSTRUCTION_BYTES,), dtype=np.uint8),
        }
        for camera in cameras:
            obs_spaces[f"{camera}_rgb"] = spaces.Box(0, 255, shape=(*self.camera_size, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict(obs_spaces)

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        rng = np.random.default_rng(int(self.np_random.integers(2**63 - 1)))
        layout = self._sample_layout(rng)
        self._build(layout)
        self._initialize_episode(rng)
        self.episode_index += 1
        return self._observation(), {"success": False, "instruction": self.instruction}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        # actions are float32 like the trajectory store's, so a recorded episode replays bit for bit
        action = np.asarray(action, dtype=np.float32).astype(np.float64)
        if action.shape != self._action_shape:
            raise ActionError(
                f"action has shape {action.shape}, but Kitchen-{self.task_name} ({self.robot}) expects "
                f"{self._action_shape}; pass one action per step (action chunks are executed by embodia.rollout)"
            )
        if not math.isfinite(action.dot(action)):
            raise ActionError(f"action contains NaN or inf: {action.tolist()}; check the policy's output")
        scene = self.scene
        scene.step(action)
        mujoco.mj_forward(scene.mj_model, scene.mj_data)  # fresh kinematics and contacts for obs/success
        self.task.update(scene)
        success = bool(self.task.success(scene))
        self.task.refresh_visuals(scene)
        terminated = success and self.terminate_on_success
        info = {"success": success, "instruction": self.instruction}
        return self._observation(), float(success), terminated, False, info

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode='rgb_array'; returning None")
            return None
        return self._render(self.render_camera, self.height, self.width)

    def close(self) -> None:
        self._renderers.close()

    # ------------------------------------------------------------------ embodia extras
    def observe(self) -> dict[str, np.ndarray]:
        """The observation of the current state, as ``reset`` and ``step`` return it (after ``set_state``
        too: re-rendering a recorded state through other cameras)."""
        return self._observation()

    @property
    def layout(self) -> KitchenLayout:
        return self.scene.layout

    @property
    def has_expert(self) -> bool:
        return True

    def make_expert(self, noise: float = 0.0) -> Any:
        """The task's scripted expert (motion primitives; see :mod:`embodia.envs.kitchen.expert`)."""
        from embodia.envs.kitchen.expert import KitchenExpert

        return KitchenExpert(self, noise=noise)

    def get_state(self) -> np.ndarray:
        """[layout | MuJoCo integration state | controller state | task variables] as one float64 array.

        The controller state is what robosuite keeps in Python between steps (the grippers' rate-limited
        commands); the task variables are latched events such as "the microwave is on".
        """
        model, data = self.scene.mj_model, self.scene.mj_data
        n_physics = mujoco.mj_stateSize(model, _INTEGRATION)
        physics = np.empty(n_physics, dtype=np.float64)
        mujoco.mj_getState(model, data, physics, _INTEGRATION)
        return np.concatenate(
            [self._layout_vector, physics, self.scene.controller_state(), self.task.extra_state()]
        )

    def set_state(self, state: np.ndarray) -> None:
        """Restore a state from :meth:`get_state` (same task and robot); rebuilds its kitchen if needed."""
        state = np.asarray(state, dtype=np.float64)
        n_layout = layout_size()
        if state.ndim != 1 or len(state) < n_layout:
            raise ValueError(f"state has shape {state.shape}, too short for Kitchen-{self.task_name}")
        if not np.array_equal(state[:n_layout], self._layout_vector):
            self._build(KitchenLayout.from_vector(state[:n_layout]))
        model, data = self.scene.mj_model, self.scene.mj_data
        n_physics = mujoco.mj_stateSize(model, _INTEGRATION)
        n_controller = len(self.scene.controller_state())
        n_extra = len(self.task.extra_state())
        if len(state) != n_layout + n_physics + n_controller + n_extra:
            raise ValueError(
                f"state has {len(state)} entries, Kitchen-{self.task_name} with {self.robot} expects "
                f"{n_layout + n_physics + n_controller + n_extra}; was it recorded with another environment or robot?"
            )
        i = n_layout + n_physics
        mujoco.mj_setState(model, data, state[n_layout:i], _INTEGRATION)
        self.scene.set_controller_state(state[i : i + n_controller])
        self.task.set_extra_state(state[i + n_controller :])
        mujoco.mj_forward(model, data)
        self.scene.invalidate_controllers()
        self.task.refresh_visuals(self.scene)

    # ------------------------------------------------------------------ internals
    def _sample_layout(self, rng: np.random.Generator) -> KitchenLayout:
        layout = sample_kitchen(rng, self.layout_choices, self.style_choices)
        self.task.place_robot(layout, rng)
        return layout

    def _build(self, layout: KitchenLayout) -> None:
        self.scene.layout = layout
        self.scene.focus = self.task.focus(layout)
        self.scene.rebuild()
        self._layout_vector = layout.to_vector()
        self.instruction = self.task.instruction(layout)
        self._instruction_bytes = encode_instruction(self.instruction)

    def _initialize_episode(self, rng: np.random.Generator) -> None:
        scene = self.scene
        data = scene.mj_data
        # small seeded perturbation of the robot's home joint angles
        data.qpos[scene.arm_qpos] += rng.uniform(-0.02, 0.02, size=len(scene.arm_qpos))
        self.task.initialize(scene, rng)
        mujoco.mj_forward(scene.mj_model, data)
        scene.invalidate_controllers()
        self.task.update(scene)
        self.task.refresh_visuals(scene)
        self.instruction = self.task.instruction(scene.layout)
        self._instruction_bytes = encode_instruction(self.instruction)

    def _render(self, camera: str, height: int, width: int) -> np.ndarray:
        return self._renderers.render(self.scene.mj_model, self.scene.mj_data, camera, height, width)

    def _proprio(self) -> np.ndarray:
        scene = self.scene
        data = scene.mj_data
        rotation = scene.eef_rotation
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, rotation.reshape(-1))
        if quat[0] < 0:
            quat = -quat
        return np.concatenate(
            [
                data.qpos[scene.arm_qpos],
                data.qvel[scene.arm_qvel],
                scene.eef_pos - scene.base_pos,
                quat,
                data.qpos[scene.gripper_qpos],
                data.qvel[scene.gripper_qvel],
            ]
        )

    def _observation(self) -> dict[str, np.ndarray]:
        proprio = self._proprio()
        task = self.task.observation(self.scene)
        obs = {
            "state": np.concatenate([proprio, task]).astype(np.float32),
            "proprio": proprio.astype(np.float32),
            "instruction": self._instruction_bytes.copy(),
        }
        for camera in self.cameras:
            obs[f"{camera}_rgb"] = self._render(CAMERAS[camera], *self.camera_size)
        return obs
