"""OGBench environments behind embodia's environment contract.

A thin adapter over the real ``ogbench`` package (Park et al., "OGBench: Benchmarking Offline
Goal-Conditioned RL", 2025). The adapter owns the ogbench environment (composition, not a gymnasium
wrapper), so ``env.unwrapped`` is an :class:`OGBenchEnv` with embodia's extras:

- observations are dicts: ``state`` (float32), ``goal`` (goal-conditioned ids), or ``rgb`` / ``goal_rgb``
  for the 64x64 pixel variants;
- ``info["success"]`` is a bool on every step;
- ``get_state()`` / ``set_state(state)`` return / restore the MuJoCo integration state
  (``mj_getState(..., mjSTATE_INTEGRATION)``) plus the task variables ogbench keeps in Python
  (button states, success flag, current targets), as one flat float64 array;
- seeding is complete: ogbench draws tasks and goal noise from NumPy's global generator, so each reset
  runs with a private legacy generator derived from the episode seed (same seed, same episode) and the
  global generator is left untouched;
- rendering is headless with a smaller shadow map than ogbench's 4096 default (6x faster on llvmpipe);
- ``make_expert()`` returns ogbench's scripted oracle as an embodia policy (see :mod:`embodia.envs.ogbench.experts`).

Two families per ogbench environment: goal-conditioned ids (``embodia/CubeSingle-v0``: one of the five
evaluation tasks per episode, the goal observation in ``obs["goal"]``) and reward-based single-task ids
(``embodia/CubeSingle-SingleTask-v0``, ``task_id`` 1-5 selects the task; ogbench's rewards).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium
import mujoco
import numpy as np
import ogbench  # noqa: F401  (registers the ogbench ids with gymnasium)
from gymnasium import spaces
from gymnasium.envs.registration import load_env_creator

from embodia.core.errors import ActionError, EnvArgumentError, PolicyError
from embodia.envs.ogbench import singletask_id

_INTEGRATION = mujoco.mjtState.mjSTATE_INTEGRATION
NUM_TASKS = 5
"""Evaluation tasks per OGBench environment (``task_id`` 1-5)."""

#: Python-side task variables of ogbench's manipulation envs, saved after the MuJoCo state.
#: (attribute name, length or None for "length of the attribute's array")
_MANIP_EXTRA_ATTRS = (
    "_success",
    "_cur_button_states",
    "_target_button_states",
    "_target_block",
    "_target_button",
    "_target_drawer_pos",
    "_target_window_pos",
)
_SCENE_TASKS = ("cube", "button", "drawer", "window")


@contextlib.contextmanager
def legacy_numpy_seed(seed: int) -> Iterator[None]:
    """Run a block with NumPy's global generator seeded to ``seed``, then restore the previous state.

    ogbench (and its oracles) call ``np.random.*`` directly; this makes those draws reproducible
    without changing the global generator that the caller sees.
    """
    saved = np.random.get_state()
    np.random.seed(seed % (2**32))
    try:
        yield
    finally:
        np.random.set_state(saved)


class OGBenchEnv(gymnasium.Env):
    """An ogbench environment with embodia's observation, seeding, state and rendering contract.

    Args:
        ogbench_id: ogbench's goal-conditioned id, e.g. ``"cube-single-v0"`` or ``"visual-cube-single-v0"``.
        single_task: use ogbench's reward-based single-task variant (no goal in the observation).
        task_id: the evaluation task (1-5). Goal-conditioned: ``None`` draws one per episode;
            single-task: ``None`` is ogbench's default task.
        render_mode: ``"rgb_array"`` or ``None``.
        width: width of ``render()`` frames (state-based ids; pixel ids render at 64x64).
        height: height of ``render()`` frames.
        shadow_size: MuJoCo shadow map size for rendering; 0 turns shadows off.
        multisamples: offscreen anti-aliasing samples (``None`` keeps ogbench's 4; 0 renders ~2x faster).
        sparse: single-task rewards as the Q-chunking authors' ``--sparse`` option makes them
            (``rewards = (rewards != 0) * -1``: -1 on every step until the task is solved, 0 when it is)
            instead of ogbench's dense ones (minus the unsolved subtasks); what DEAS's value support
            -1 / (1 - gamma2) assumes.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    #: play environments (``ogbench_play``) run ogbench's data-collection mode and have no goal observation
    _play = False

    def __init__(
        self,
        ogbench_id: str,
        single_task: bool = False,
        task_id: int | None = None,
        render_mode: str | None = None,
        width: int = 256,
        height: int = 256,
        shadow_size: int = 1024,
        multisamples: int | None = None,
        sparse: bool = False,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise EnvArgumentError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if task_id is not None and (isinstance(task_id, bool) or task_id not in range(1, NUM_TASKS + 1)):
            raise EnvArgumentError(f"task_id must be one of OGBench's tasks 1-{NUM_TASKS}, got {task_id!r}")
        for name, value, least in (
            ("width", width, 1),
            ("height", height, 1),
            ("shadow_size", shadow_size, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise EnvArgumentError(f"{name} must be an integer >= {least}, got {value!r}")
        if not isinstance(sparse, bool):
            raise EnvArgumentError(f"sparse must be true or false, got {sparse!r}")
        if sparse and not (single_task or self._play):
            raise EnvArgumentError(
                "sparse rewards are an option of the single-task (-SingleTask-v0) and play (-Play-v0) ids"
            )
        self.ogbench_id = ogbench_id
        self.single_task = single_task
        self.sparse = sparse
        self.task_id = task_id
        self.render_mode = render_mode
        self.shadow_size = int(shadow_size)
        self.multisamples = multisamples
        self.pixels = ogbench_id.startswith("visual-")
        self.is_maze = "maze" in ogbench_id
        self.goal_conditioned = not single_task and not self._play

        raw_id = singletask_id(ogbench_id, task_id) if single_task else ogbench_id
        spec = gymnasium.spec(raw_id)
        kwargs = dict(spec.kwargs)
        if not self.pixels:
            kwargs.update(width=width, height=height)
        if self.is_maze:
            kwargs["render_mode"] = "rgb_array"
        elif self._play:
            kwargs["mode"] = "data_collection"
        self.raw: Any = load_env_creator(spec.entry_point)(**kwargs)
        self.raw_id = raw_id
        # gymnasium's convention (one frame per step): render_fps is the control frequency, 1 / dt
        inner = self.raw.unwrapped
        dt = getattr(inner, "dt", None) or getattr(inner, "_control_timestep", None)
        self.metadata = {**type(self).metadata, "render_fps": round(1.0 / dt, 6) if dt else 20}
        if not self.is_maze:
            _set_quality_on_compile(self.raw, self.shadow_size, self.multisamples)
            with legacy_numpy_seed(0):  # the first access builds the model (a reset)
                _use_cached_action_space(self.raw)

        # Build the MuJoCo model (manipspace compiles it on the first reset) with a fixed seed.
        with legacy_numpy_seed(0):
            raw_obs_space = self.raw.observation_space
        self._set_shadow_size()

        if self.pixels:
            image = spaces.Box(0, 255, shape=raw_obs_space.shape, dtype=np.uint8)
            self._obs_key = "rgb"
            obs_spaces = {"rgb": image}
            if self.goal_conditioned:
                obs_spaces["goal_rgb"] = image
        else:
            vec = spaces.Box(-np.inf, np.inf, shape=raw_obs_space.shape, dtype=np.float32)
            self._obs_key = "state"
            obs_spaces = {"state": vec}
            if self.goal_conditioned:
                obs_spaces["goal"] = vec
        self.observation_space = spaces.Dict(obs_spaces)
        raw_act = self.raw.action_space
        self.action_space = spaces.Box(
            low=np.asarray(raw_act.low, dtype=np.float32),
            high=np.asarray(raw_act.high, dtype=np.float32),
            dtype=np.float32,
        )
        self._action_shape = self.action_space.shape
        self._goal: np.ndarray | None = None
        self._episode_seed = 0
        self._extra_layout: list[tuple[str, int]] | None = None
        self._state_size_model: mujoco.MjModel | None = None
        self._physics_state_size = 0

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        if self.task_id is not None and self.goal_conditioned:
            options.setdefault("task_id", self.task_id)
        self._episode_seed = int(self.np_random.integers(2**31 - 1))
        # ogbench takes a few random actions while building the goal; seed those too.
        self.raw.action_space.seed(self._episode_seed)
        with legacy_numpy_seed(self._episode_seed):
            ob, info = self.raw.reset(seed=self._episode_seed, options=options)
        self._set_shadow_size()
        if self.goal_conditioned:
            goal = info["goal"]
            self._goal = goal if self.pixels else np.asarray(goal, dtype=np.float32)
        info["success"] = False
        return self._observation(ob), info

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        # This method is on every step's path: it is written for speed (see benchmarks/bench_env_overhead.py).
        if action.__class__ is not np.ndarray or action.dtype != np.float32:
            action = np.asarray(action, dtype=np.float32)
        if action.shape != self._action_shape:
            raise ActionError(
                f"action has shape {action.shape}, but {self.ogbench_id} expects {self._action_shape}; "
                "pass one action per step (action chunks are executed by embodia.rollout)"
            )
        # a dot product is NaN/inf if any entry is (cheaper than isfinite().all() on tiny arrays)
        if not math.isfinite(action.dot(action)) and not np.isfinite(action).all():
            raise ActionError(f"action contains NaN or inf: {action.tolist()}; check the policy's output")
        raw = self.raw
        ob, reward, terminated, truncated, info = raw.step(action)
        if not self.is_maze:
            # mj_step leaves kinematics one substep stale and the next action's IK reads them; refresh
            # them so the future depends on get_state() alone (exact set_state, exact replay).
            mujoco.mj_kinematics(raw._model, raw._data)
        info["success"] = bool(info["success"])
        if self.pixels:
            obs = self._observation(ob)
        else:
            obs = {"state": ob.astype(np.float32)}
            if self._goal is not None:
                obs["goal"] = self._goal.copy()  # users keep observations: never share arrays
        return obs, self.shaped(float(reward)), bool(terminated), bool(truncated), info

    def shaped(self, dense: float) -> float:
        """The reward returned for ogbench's dense single-task reward ``dense`` (``sparse``: -1 or 0)."""
        return -float(dense != 0.0) if self.sparse else dense

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode='rgb_array'; returning None")
            return None
        frame = self.raw.render()
        return np.ascontiguousarray(frame, dtype=np.uint8)

    def close(self) -> None:
        # EGL contexts must be freed explicitly: left to the garbage collector they fail at exit.
        for name in ("_renderer", "custom_renderer"):
            renderer = getattr(self.raw, name, None)
            if renderer is not None:
                renderer.close()
                setattr(self.raw, name, None)
        mujoco_renderer = getattr(self.raw, "mujoco_renderer", None)
        if mujoco_renderer is not None:
            mujoco_renderer.close()

    # ------------------------------------------------------------------ embodia extras
    @property
    def model(self) -> mujoco.MjModel:
        return self.raw.model

    @property
    def data(self) -> mujoco.MjData:
        return self.raw.data

    @property
    def goal(self) -> np.ndarray | None:
        """The current episode's goal observation (goal-conditioned ids), else ``None``."""
        return self._goal

    @property
    def has_expert(self) -> bool:
        """Whether ogbench ships a scripted oracle for this environment (antmaze needs a trained one)."""
        return not self.ogbench_id.removeprefix("visual-").startswith(("antmaze", "humanoidmaze"))

    def make_expert(self, noise: float = 0.0) -> Any:
        """The scripted oracle of this environment as an embodia policy (``noise``: Gaussian action noise std)."""
        if not self.has_expert:
            raise PolicyError(
                f"{self.ogbench_id} has no scripted expert: ogbench's locomotion data come from a trained "
                "low-level policy that is not shipped; use --policy PATH with a trained policy"
            )
        from embodia.envs.ogbench.experts import make_ogbench_expert

        return make_ogbench_expert(self, noise=noise)

    def _physics_size(self) -> int:
        model = self.model
        if self._state_size_model is not model:  # manipspace may recompile its model
            self._state_size_model = model
            self._physics_state_size = mujoco.mj_stateSize(model, _INTEGRATION)
        return self._physics_state_size

    @property
    def state_size(self) -> int:
        return self._physics_size() + len(self._extra_state())

    def get_state(self) -> np.ndarray:
        """The full simulator state as a flat float64 array (see module docstring)."""
        n_physics = self._physics_size()
        extra = self._extra_state()
        state = np.empty(n_physics + len(extra), dtype=np.float64)
        mujoco.mj_getState(self.model, self.data, state[:n_physics], _INTEGRATION)
        state[n_physics:] = extra
        return state

    def set_state(self, state: np.ndarray) -> None:
        """Restore a state returned by :meth:`get_state` (same environment id and kwargs).

        The task (goal observation, evaluation task id) belongs to the episode and is set by
        ``reset(seed=...)``; restore states within the episode they were taken from, as replay does.
        """
        state = np.asarray(state, dtype=np.float64)
        n_physics = self._physics_size()
        n_extra = len(self._extra_state())
        if state.shape != (n_physics + n_extra,):
            raise ValueError(
                f"state has shape {state.shape}, {self.ogbench_id} expects ({n_physics + n_extra},); "
                "was it recorded with another environment?"
            )
        mujoco.mj_setState(self.model, self.data, state[:n_physics], _INTEGRATION)
        self._restore_extra_state(state[n_physics:])
        mujoco.mj_forward(self.model, self.data)

    # ------------------------------------------------------------------ internals
    def _observation(self, ob: np.ndarray) -> dict[str, np.ndarray]:
        if self.pixels:
            obs = {"rgb": np.array(ob, dtype=np.uint8)}
            if self._goal is not None:
                obs["goal_rgb"] = self._goal.copy()
            return obs
        obs = {"state": np.array(ob, dtype=np.float32)}
        if self._goal is not None:
            obs["goal"] = self._goal.copy()  # users keep observations: never share arrays
        return obs

    def _set_shadow_size(self) -> None:
        model = getattr(self.raw, "_model", None) if not self.is_maze else self.raw.model
        if model is not None:
            model.vis.quality.shadowsize = self.shadow_size
            if self.multisamples is not None:
                model.vis.quality.offsamples = self.multisamples

    def _extra_state(self) -> np.ndarray:
        raw = self.raw
        if self.is_maze:
            goal = getattr(raw, "cur_goal_xy", None)
            return np.array(goal, dtype=np.float64) if goal is not None else np.zeros(2)
        if self._extra_layout is None:  # which task variables this ogbench env has, and their sizes
            self._extra_layout = [
                (name, np.size(getattr(raw, name))) for name in _MANIP_EXTRA_ATTRS if hasattr(raw, name)
            ]
        layout = self._extra_layout
        scene = hasattr(raw, "_target_task")
        extra = np.empty(sum(size for _, size in layout) + scene, dtype=np.float64)
        i = 0
        for name, size in layout:
            if size == 1:
                extra[i] = getattr(raw, name)
            else:
                extra[i : i + size] = getattr(raw, name)
            i += size
        if scene:
            extra[i] = _SCENE_TASKS.index(raw._target_task)
        return extra

    def _restore_extra_state(self, extra: np.ndarray) -> None:
        raw = self.raw
        if self.is_maze:
            raw.set_goal(goal_xy=extra[:2].copy())
            return
        i = 0
        for name in _MANIP_EXTRA_ATTRS:
            if not hasattr(raw, name):
                continue
            current = getattr(raw, name)
            if isinstance(current, np.ndarray):
                n = current.size
                setattr(raw, name, extra[i : i + n].astype(current.dtype).reshape(current.shape))
            else:
                n = 1
                setattr(raw, name, type(current)(extra[i]))
            i += n
        if hasattr(raw, "_target_task"):
            raw._target_task = _SCENE_TASKS[int(extra[i])]
        if hasattr(raw, "_apply_button_states"):
            raw._apply_button_states()  # scene: button locks change joint damping


def _set_quality_on_compile(raw: Any, shadow_size: int, multisamples: int | None) -> None:
    """Set render quality whenever manipspace (re)compiles its model, before any renderer exists."""
    original = raw.post_compilation

    def post_compilation() -> None:
        raw._model.vis.quality.shadowsize = shadow_size
        if multisamples is not None:
            raw._model.vis.quality.offsamples = multisamples
        original()

    raw.post_compilation = post_compilation


_CACHED_SPACE_CLASSES: dict[type, type] = {}


def _use_cached_action_space(raw: Any) -> None:
    """Give a manipspace env one persistent (seedable) action space.

    ogbench's manipulation envs build a new, unseeded ``Box`` on every ``action_space`` access and
    sample from it during reset, which makes goals irreproducible. The instance is moved to a subclass
    whose ``action_space`` returns one cached Box that :meth:`OGBenchEnv.reset` seeds.
    """
    cls = type(raw)
    if cls not in _CACHED_SPACE_CLASSES:
        _CACHED_SPACE_CLASSES[cls] = type(
            cls.__name__, (cls,), {"action_space": property(lambda self: self._embodia_action_space)}
        )
    with warnings.catch_warnings():  # ogbench casts float64 bounds to a float32 Box
        warnings.simplefilter("ignore", UserWarning)
        space = cls.action_space.fget(raw)
    raw.__class__ = _CACHED_SPACE_CLASSES[cls]
    raw._embodia_action_space = space
