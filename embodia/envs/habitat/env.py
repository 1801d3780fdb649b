"""Navigation environments with Habitat's task conventions: PointNav, ObjectNav, instruction navigation,
and several robots in one scene.

One :class:`NavEnv` class serves every id; :class:`NavConfig` says which task. Conventions follow
habitat-lab so that numbers are comparable:

- **Actions** (discrete, habitat-lab's ids): ``0`` STOP, ``1`` MOVE_FORWARD (0.25 m), ``2`` TURN_LEFT and
  ``3`` TURN_RIGHT (30 degrees). Forward motion goes through ``pathfinder.try_step`` - stop at
  obstacles and slide along them - and a step is a *collision* when the robot ends short of its target
  by more than 1e-5 m (habitat-sim's test). STOP ends the episode. ``action_mode="velocity"`` takes
  ``[linear, angular, stop]`` in [-1, 1]: linear maps to ``[0, max_linear_speed]`` and angular to
  ``[-max_angular_speed, max_angular_speed]`` as habitat-lab's ``VelocityAction`` maps them, integrated
  over ``control_period`` seconds; ``stop > 0`` calls STOP. Several robots: one action per robot
  (``MultiDiscrete`` or a ``(robots, 3)`` Box); a robot that would come within two radii of another
  stays put (a collision).
- **Observations**: ``rgb`` (H, W, 3 uint8) and ``depth`` (H, W, 1 float32, metres clipped to
  ``max_depth`` and divided by it when ``normalize_depth``), ``gps`` (position relative to the episode
  start, ``[forward, right]`` in the start frame) and ``compass`` (heading relative to the start, radians,
  left positive) - Habitat's EpisodicGPS/Compass sensors; with ``sensors="none"`` the pose is ``state``
  = ``[gps, compass]`` instead. ``goal``: PointNav ``[rho, phi]`` (pointgoal with GPS+compass, polar,
  phi left positive); ObjectNav the category id (HM3D order); instruction navigation has
  ``instruction`` (UTF-8 bytes, zero padded) instead. Several robots: every key gets a leading robot axis.
- **Metrics** in ``info`` every step: ``success`` (bool; STOP within the task's success distance),
  ``spl``, ``soft_spl``, ``distance_to_goal``, ``collisions``, ``collided``, ``path_length``; reward is
  habitat-lab's PointNav reward (see :mod:`embodia.envs.habitat.metrics`).
- **Episodes** are sampled per reset from the seed (scene, start, goal), or read from a habitat-lab
  dataset (``dataset=``: one file, or a split's top-level file next to its ``content/<scene>.json.gz``;
  scene paths resolve through ``scenes_dir`` and ``scene_map``; see :mod:`embodia.envs.habitat.datasets`);
  ``reset(options={"episode": ...})`` runs a given one, a :class:`NavEpisode` or a habitat-lab episode
  dict. Episodes that come from outside are checked on the navigation mesh when their scene is loaded
  (:mod:`embodia.envs.habitat.episode_check`): off the mesh or on another floor is an error naming the
  episode, unless ``snap=True``, which moves such points onto the mesh and reports each move in the
  reset's ``info["snapped"]``. ObjectNav's ``goal`` is the dataset's ``category_to_task_category_id``.
- ``get_state`` / ``set_state``: robot poses, door positions (fixed size) and each robot's metric
  accumulators; ``make_expert()`` returns the shortest-path follower.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pydantic import Field

from embodia.core.errors import ActionError, EnvArgumentError
from embodia.core.paths import PathArgument, ReadPath
from embodia.core.validation import validate
from embodia.envs.habitat.backend import NavBackend, make_backend, resolve_backend
from embodia.envs.habitat.coords import wrap_angle
from embodia.envs.habitat.datasets import (
    NavDataset,
    SceneResolver,
    category_absent_error,
    check_category,
)
from embodia.envs.habitat.episode_check import MESH_TOLERANCE, SnapRecord, check_episode
from embodia.envs.habitat.episodes import SUCCESS_DISTANCE, TASKS, NavEpisode, sample_episode
from embodia.envs.habitat.errors import NavEpisodeError
from embodia.envs.habitat.habitat_format import DEFAULT_CATEGORY_IDS, episode_from_habitat
from embodia.envs.habitat.instructions import encode_instruction
from embodia.envs.habitat.metrics import EpisodeMetrics
from embodia.envs.habitat.mjcf import RobotSpec
from embodia.envs.habitat.scene import Scene, load_scene, shipped_scene_names

STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = range(4)
ACTION_NAMES = ("stop", "move_forward", "turn_left", "turn_right")
DEFAULT_SCENES = ("apartment_0", "apartment_1", "apartment_2", "office_0")
_SCENE_CACHE: dict[str, Scene] = {}
SceneRef = Annotated[
    str, PathArgument(names=frozenset(shipped_scene_names()), name_prefixes=("procedural:",))
]
"""A scene: a shipped name, ``procedural:<kind>:<seed>``, or a scene JSON path (what a tool confines)."""


@dataclass
class NavConfig:
    """Everything that defines a navigation environment (the ``embodia.make`` keyword arguments)."""

    task: str = "pointnav"
    """``pointnav``, ``objectnav``, ``instructionnav`` or ``multirobot``."""
    num_robots: Annotated[int, Field(ge=1)] = 1
    """Robots in the scene (``multirobot``: 2 or more)."""
    action_mode: str = "discrete"
    """``discrete`` (stop / forward / left / right) or ``velocity`` (``[linear, angular, stop]``)."""
    sensors: str = "rgbd"
    """``rgbd``, ``rgb``, ``depth`` or ``none`` (no rendering: fastest)."""
    width: Annotated[int, Field(ge=1)] = 128
    """Camera image width (pixels)."""
    height: Annotated[int, Field(ge=1)] = 128
    """Camera image height (pixels)."""
    scenes: SceneRef | tuple[SceneRef, ...] = DEFAULT_SCENES
    """Scene references episodes are sampled in (shipped names, JSON paths, ``procedural:<kind>:<seed>``)."""
    dataset: ReadPath | None = None
    """A habitat-lab JSON(.gz) episode file, or a split's top-level file next to its ``content/``;
    episodes are drawn from it instead of sampled."""
    scenes_dir: ReadPath | None = None
    """habitat-lab's scenes directory (``SCENES_DIR``): a scene path ``data/scene_datasets/X/s.glb``
    resolves to the embodia scene JSON ``<scenes_dir>/X/s.json``."""
    scene_map: dict[str, SceneRef] | None = None
    """Habitat scene paths (as in the file, without ``data/scene_datasets/``, or the scene's name) mapped
    to embodia scene references (shipped name, scene JSON, ``procedural:<kind>:<seed>``)."""
    content_scenes: str | tuple[str, ...] = ("*",)
    """The split's scenes to read (content file names), ``"*"`` for all (habitat-lab's ``content_scenes``)."""
    snap: bool = False
    """Move episode points that are off the navigation mesh or on another floor onto it (reported in
    ``info["snapped"]`` and logged) instead of refusing the episode."""
    mesh_tolerance: Annotated[float, Field(ge=0)] = MESH_TOLERANCE
    """Episode points within this distance (m) of the navigation mesh are moved onto it without an error."""
    backend: str = "auto"
    """``auto`` (habitat-sim when it imports, else MuJoCo), ``mujoco`` or ``habitat_sim``."""
    forward_step: Annotated[float, Field(gt=0)] = 0.25
    """MOVE_FORWARD distance (m)."""
    turn_angle: Annotated[float, Field(gt=0, le=180)] = 30.0
    """TURN_LEFT / TURN_RIGHT angle (degrees)."""
    success_distance: Annotated[float, Field(gt=0)] | None = None
    """Success radius (m); ``None`` uses habitat-lab's for the task (0.2, 0.1 to a view point, 3.0)."""
    max_depth: Annotated[float, Field(gt=0)] = 10.0
    """Depth is clipped to this range (m)."""
    normalize_depth: bool = True
    """Divide depth by ``max_depth`` (Habitat's default) so it lies in [0, 1]."""
    render_size: Annotated[int, Field(ge=16)] = 256
    """``render()`` frames are ``render_size`` x ``2 render_size``: the first robot's camera and a top-down map."""
    max_linear_speed: Annotated[float, Field(gt=0)] = 0.5
    """Velocity mode: top forward speed (m/s)."""
    max_angular_speed: Annotated[float, Field(gt=0)] = 60.0
    """Velocity mode: top turn rate (degrees/s)."""
    control_period: Annotated[float, Field(gt=0)] = 0.5
    """Velocity mode: seconds per step."""
    instruction_length: Annotated[int, Field(ge=1)] = 256
    """Instruction navigation: bytes in the ``instruction`` observation."""
    robot: RobotSpec = field(default_factory=RobotSpec)
    """Robot radius, height and camera."""

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.action_mode not in ("discrete", "velocity"):
            raise ValueError(f"action_mode must be 'discrete' or 'velocity', got {self.action_mode!r}")
        if self.sensors not in ("rgbd", "rgb", "depth", "none"):
            raise ValueError(f"sensors must be 'rgbd', 'rgb', 'depth' or 'none', got {self.sensors!r}")
        if self.task == "multirobot" and self.num_robots < 2:
            raise ValueError("the multirobot task needs num_robots >= 2")
        if self.task != "multirobot" and self.num_robots != 1:
            raise ValueError(f"task {self.task!r} has one robot; use task='multirobot' for several")
        self.scenes = tuple(self.scenes) if not isinstance(self.scenes, str) else (self.scenes,)
        if isinstance(self.content_scenes, str):
            self.content_scenes = (self.content_scenes,)
        if isinstance(self.robot, dict):
            self.robot = RobotSpec(**self.robot)


def _scene(ref: str) -> Scene:
    if ref not in _SCENE_CACHE:
        _SCENE_CACHE[ref] = load_scene(ref)
    return _SCENE_CACHE[ref]


class NavEnv(gymnasium.Env):
    """A Habitat-style navigation task (see module docstring). Keyword arguments are :class:`NavConfig` fields."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    config_type = NavConfig
    """the keyword arguments' type: whoever passes untrusted ones confines its path fields by type"""

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        if render_mode not in (None, "rgb_array"):
            raise EnvArgumentError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.config = validate(NavConfig, kwargs, where="navigation environment", error=EnvArgumentError)
        self.render_mode = render_mode
        self.backend_name = resolve_backend(self.config.backend)
        self.success_distance = (
            self.config.success_distance
            if self.config.success_distance is not None
            else SUCCESS_DISTANCE[self.config.task]
        )
        c = self.config
        self._resolver = SceneResolver(c.scenes_dir, c.scene_map)
        self._dataset: NavDataset | None = None
        if c.dataset:
            self._dataset = NavDataset.load(
                c.dataset,
                scenes_dir=c.scenes_dir,
                scene_map=c.scene_map,
                content_scenes=c.content_scenes,
                task=c.task,
                scene_loader=_scene,
            )
            self._resolver = self._dataset.resolver
            wrong = [ep for ep in self._dataset.episodes if ep.num_robots != c.num_robots]
            if wrong:
                raise NavEpisodeError(
                    f"{c.dataset}: episode {wrong[0].episode_id!r} has {wrong[0].num_robots} robot(s), this "
                    f"environment {c.num_robots}; set num_robots={wrong[0].num_robots}"
                )
        self.category_ids = (
            self._dataset.category_to_task_category_id
            if self._dataset is not None
            else dict(DEFAULT_CATEGORY_IDS)
        )
        self.snapped: list[SnapRecord] = []
        self.backend: NavBackend | None = None
        self._scene_ref: str | None = None
        self.episode: NavEpisode | None = None
        self.metrics = [EpisodeMetrics(self.success_distance) for _ in range(self.config.num_robots)]
        self.observation_space = self._observation_space()
        self.action_space = self._action_space()
        # load the first scene now, so that state sizes and spaces are concrete before the first reset
        self._load_scene(self._dataset.episodes[0].scene_id if self._dataset else self.config.scenes[0])

    # ------------------------------------------------------------------ spaces
    def _stack(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape if self.config.num_robots == 1 else (self.config.num_robots, *shape)

    def _observation_space(self) -> spaces.Dict:
        c = self.config
        obs: dict[str, spaces.Space] = {}
        image = (c.height, c.width)
        if c.sensors in ("rgbd", "rgb"):
            obs["rgb"] = spaces.Box(0, 255, self._stack((*image, 3)), np.uint8)
        if c.sensors in ("rgbd", "depth"):
            high = 1.0 if c.normalize_depth else c.max_depth
            obs["depth"] = spaces.Box(0.0, high, self._stack((*image, 1)), np.float32)
        if c.sensors == "none":
            obs["state"] = spaces.Box(-np.inf, np.inf, self._stack((3,)), np.float32)
        else:
            obs["gps"] = spaces.Box(-np.inf, np.inf, self._stack((2,)), np.float32)
            obs["compass"] = spaces.Box(-np.pi, np.pi, self._stack((1,)), np.float32)
        if c.task in ("pointnav", "multirobot"):
            low = np.broadcast_to(np.array([0.0, -np.pi], np.float32), self._stack((2,)))
            high = np.broadcast_to(np.array([np.inf, np.pi], np.float32), self._stack((2,)))
            obs["goal"] = spaces.Box(low.copy(), high.copy(), dtype=np.float32)
        elif c.task == "objectnav":
            obs["goal"] = spaces.Box(0, max(self.category_ids.values()), (1,), np.int64)
        else:
            obs["instruction"] = spaces.Box(0, 255, (c.instruction_length,), np.uint8)
        return spaces.Dict(obs)

    def _action_space(self) -> spaces.Space:
        n = self.config.num_robots
        if self.config.action_mode == "discrete":
            return spaces.Discrete(4) if n == 1 else spaces.MultiDiscrete([4] * n)
        return spaces.Box(-1.0, 1.0, self._stack((3,)), np.float32)

    # ------------------------------------------------------------------ scenes and episodes
    @property
    def scene(self) -> Scene:
        return self.backend.scene

    @property
    def pathfinder(self):
        return self.backend.pathfinder

    def _load_scene(self, ref: str) -> None:
        if ref == self._scene_ref and self.backend is not None:
            return
        if self.backend is not None:
            self.backend.close()
        extra = (
            {"width": self.config.width, "height": self.config.height}
            if self.backend_name == "habitat_sim"
            else {}
        )
        self.backend = make_backend(
            self.backend_name,
            _scene(ref),
            num_robots=self.config.num_robots,
            robot=self.config.robot,
            **extra,
        )
        self._scene_ref = ref
        if self._dataset is not None:
            c = self.config
            self._dataset.check_scene(ref, self.pathfinder, snap=c.snap, mesh_tolerance=c.mesh_tolerance)

    def _given_episode(self, value: Any) -> tuple[NavEpisode, list[SnapRecord]]:
        """``options["episode"]`` (a NavEpisode or a habitat-lab episode dict), resolved and checked."""
        where = "reset(options['episode'])"
        c = self.config
        if isinstance(value, Mapping):
            goal_sets = self._dataset.goal_sets if self._dataset is not None else {}
            episode = episode_from_habitat(
                value, goal_sets=goal_sets, objectnav=c.task == "objectnav", where=where
            )
        elif isinstance(value, NavEpisode):
            episode = value
        else:
            raise NavEpisodeError(
                f"{where} must be a NavEpisode or a habitat-lab episode dict, got {type(value).__name__}"
            )
        ref = self._resolver.resolve(episode.scene_id)
        if ref is None:
            raise self._resolver.error(where, episode.scene_id)
        if ref != episode.scene_id:
            episode = dataclasses.replace(
                episode, scene_id=ref, habitat_scene_id=episode.habitat_scene_id or episode.scene_id
            )
        if episode.task != c.task:
            raise NavEpisodeError(
                f"{where}: episode {episode.episode_id!r} is of task {episode.task}, this environment's "
                f"task is {c.task}; use the environment of task {episode.task!r}"
            )
        if episode.task == "objectnav":
            check_category(episode, self.category_ids, where)
            categories = _scene(ref).object_categories()
            if episode.object_category not in categories:
                raise category_absent_error(episode, categories, where)
        self._load_scene(ref)
        return check_episode(
            episode, self.pathfinder, snap=c.snap, mesh_tolerance=c.mesh_tolerance, where=where
        )

    def _next_episode(self, options: dict[str, Any]) -> tuple[NavEpisode, list[SnapRecord]]:
        if "episode" in options:
            return self._given_episode(options["episode"])
        if self._dataset is not None:
            count = len(self._dataset.episodes)
            index = int(options.get("episode_index", int(self.np_random.integers(count)))) % count
            self._load_scene(self._dataset.episodes[index].scene_id)  # checks that scene's episodes
            return self._dataset.episodes[index], self._dataset.snapped.get(index, [])
        scenes = self.config.scenes
        ref = options.get("scene", scenes[int(self.np_random.integers(len(scenes)))])
        self._load_scene(ref)
        rng = np.random.default_rng(int(self.np_random.integers(2**63 - 1)))
        episode = sample_episode(
            self.config.task,
            self.pathfinder,
            self.scene,
            ref,
            rng,
            self.config.num_robots,
            str(self._episode_count),
        )
        return episode, []

    _episode_count = 0

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        episode, snapped = self._next_episode(dict(options or {}))
        if episode.num_robots != self.config.num_robots:
            raise NavEpisodeError(
                f"episode {episode.episode_id} has {episode.num_robots} robots, this environment {self.config.num_robots}"
            )
        self._load_scene(episode.scene_id)
        self.episode = episode
        self.snapped = snapped
        self._episode_count += 1
        self._goal_lists = [np.asarray(g, dtype=np.float64).reshape(-1, 3) for g in episode.goals]
        for i in range(self.config.num_robots):
            position = self.pathfinder.snap_point(episode.start_positions[i])
            self.backend.set_pose(i, position, episode.start_yaws[i])
            self.metrics[i].reset(position, self._distance(i, position))
        self._start = [self.backend.get_pose(i) for i in range(self.config.num_robots)]
        self._trajectories = [[pose[0].copy()] for pose in self._start]
        info = self._info(collided=[False] * self.config.num_robots)
        info.update(episode_id=episode.episode_id, scene_id=episode.scene_id)
        if episode.instruction is not None:
            info["instruction"] = episode.instruction
        if episode.object_category is not None:
            info["object_category"] = episode.object_category
        if snapped:
            info["snapped"] = [record.as_dict() for record in snapped]
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        actions = self._split_action(action)
        collided = [False] * self.config.num_robots
        reward = 0.0
        for i, robot_action in enumerate(actions):
            metrics = self.metrics[i]
            if metrics.stop_called:
                continue  # a robot that stopped stays stopped
            stop, hit = self._act(i, robot_action)
            collided[i] = hit
            position, _ = self.backend.get_pose(i)
            self._trajectories[i].append(position.copy())
            reward += metrics.update(position, self._distance(i, position), hit, stop)
        terminated = all(m.stop_called for m in self.metrics)
        return self._observation(), reward, terminated, False, self._info(collided)

    def _split_action(self, action: Any) -> list[Any]:
        n = self.config.num_robots
        if self.config.action_mode == "discrete":
            values = np.asarray(action).reshape(-1)
            if values.shape != (n,) or not np.all(np.isin(values, (0, 1, 2, 3))):
                raise ActionError(
                    f"action {np.asarray(action).tolist()} is not {n} discrete action(s) in 0..3 (stop, forward, left, right)"
                )
            return [int(v) for v in values]
        values = np.asarray(action, dtype=np.float32).reshape(-1, 3)
        if values.shape != (n, 3):
            raise ActionError(
                f"velocity action has shape {np.shape(action)}, expected {self.action_space.shape}"
            )
        if not np.isfinite(values).all():
            raise ActionError(f"action contains NaN or inf: {values.tolist()}; check the policy's output")
        return list(np.clip(values, -1.0, 1.0))

    def _act(self, robot: int, action: Any) -> tuple[bool, bool]:
        """Apply one robot's action; returns ``(stop called, collided)``."""
        position, yaw = self.backend.get_pose(robot)
        c = self.config
        if c.action_mode == "discrete":
            if action == STOP:
                return True, False
            if action in (TURN_LEFT, TURN_RIGHT):
                turn = math.radians(c.turn_angle) * (1 if action == TURN_LEFT else -1)
                self.backend.set_pose(robot, position, wrap_angle(yaw + turn))
                return False, False
            heading, distance = yaw, c.forward_step
            new_yaw = yaw
        else:
            linear, angular, stop = (float(v) for v in action)
            if stop > 0.0:
                return True, False
            speed = 0.5 * (linear + 1.0) * c.max_linear_speed
            rate = math.radians(angular * c.max_angular_speed)
            new_yaw = wrap_angle(yaw + rate * c.control_period)
            heading, distance = yaw + 0.5 * rate * c.control_period, speed * c.control_period
        target = position + distance * np.array([math.cos(heading), math.sin(heading), 0.0])
        reached = self.pathfinder.try_step(position, target)
        if self._near_other_robot(robot, reached):
            reached = position
        self.backend.set_pose(robot, reached, new_yaw)
        return False, bool(np.linalg.norm(reached[:2] - target[:2]) > 1e-5)

    def _near_other_robot(self, robot: int, position: np.ndarray) -> bool:
        limit = 2.0 * self.config.robot.radius
        for other in range(self.config.num_robots):
            if other != robot and np.linalg.norm(self.backend.get_pose(other)[0][:2] - position[:2]) < limit:
                return True
        return False

    def _distance(self, robot: int, position: np.ndarray) -> float:
        return float(self.pathfinder.geodesic_distance(position, self._goal_lists[robot]))

    # ------------------------------------------------------------------ observations and info
    def _robot_observation(self, robot: int) -> dict[str, np.ndarray]:
        c = self.config
        position, yaw = self.backend.get_pose(robot)
        start_position, start_yaw = self._start[robot]
        delta = position[:2] - start_position[:2]
        cs, sn = math.cos(start_yaw), math.sin(start_yaw)
        gps = np.array([cs * delta[0] + sn * delta[1], -(-sn * delta[0] + cs * delta[1])], dtype=np.float32)
        compass = np.array([wrap_angle(yaw - start_yaw)], dtype=np.float32)
        obs: dict[str, np.ndarray] = {}
        if c.sensors != "none":
            rgb, depth = self.backend.render(robot, c.width, c.height, depth=c.sensors in ("rgbd", "depth"))
            if c.sensors in ("rgbd", "rgb"):
                obs["rgb"] = rgb
            if depth is not None:
                depth = np.clip(depth, 0.0, c.max_depth)
                if c.normalize_depth:
                    depth = depth / c.max_depth
                obs["depth"] = depth.astype(np.float32)[..., None]
            obs["gps"], obs["compass"] = gps, compass
        else:
            obs["state"] = np.concatenate([gps, compass]).astype(np.float32)
        if c.task in ("pointnav", "multirobot"):
            goal = self._goal_lists[robot][0]
            offset = goal[:2] - position[:2]
            rho = float(np.linalg.norm(offset))
            phi = wrap_angle(math.atan2(offset[1], offset[0]) - yaw) if rho > 1e-9 else 0.0
            obs["goal"] = np.array([rho, phi], dtype=np.float32)
        elif c.task == "objectnav":
            obs["goal"] = np.array([self.category_ids[self.episode.object_category]], dtype=np.int64)
        else:
            obs["instruction"] = encode_instruction(self.episode.instruction or "", c.instruction_length)
        return obs

    def _observation(self) -> dict[str, np.ndarray]:
        per_robot = [self._robot_observation(i) for i in range(self.config.num_robots)]
        if self.config.num_robots == 1:
            return per_robot[0]
        return {key: np.stack([o[key] for o in per_robot]) for key in per_robot[0]}

    def _info(self, collided: list[bool]) -> dict[str, Any]:
        per_robot = [m.as_dict() for m in self.metrics]
        if self.config.num_robots == 1:
            info = dict(per_robot[0])
            info["collided"] = collided[0]
            return info
        return {
            "success": all(r["success"] for r in per_robot),
            "spl": float(np.mean([r["spl"] for r in per_robot])),
            "soft_spl": float(np.mean([r["soft_spl"] for r in per_robot])),
            "distance_to_goal": [r["distance_to_goal"] for r in per_robot],
            "collisions": int(sum(r["collisions"] for r in per_robot)),
            "collided": list(collided),
            "robots": per_robot,
        }

    # ------------------------------------------------------------------ rendering
    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode='rgb_array'; returning None")
            return None
        from embodia.envs.habitat.topdown import TopDownMap

        size = self.config.render_size
        rgb, _ = self.backend.render(0, size, size, depth=False)
        key = (id(self.pathfinder), self._scene_ref)
        if getattr(self, "_map_key", None) != key:
            self._map, self._map_key = TopDownMap(self.pathfinder, self.scene, scale=2), key
        top = self._map
        top.reset()
        if self.episode is not None:
            for i in range(self.config.num_robots):
                goals = self._goal_lists[i]
                for g in goals[:: max(1, len(goals) // 40)]:
                    top.goal(g, radius_m=0.12 if len(goals) > 1 else 0.15)
                top.polyline(self._trajectories[i], (0, 0, 0))
                position, yaw = self.backend.get_pose(i)
                top.robot(position, yaw, i, self.config.robot.radius)
        return np.concatenate([rgb, top.fitted(size)], axis=1)

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()

    # ------------------------------------------------------------------ embodia extras
    @property
    def has_expert(self) -> bool:
        return True

    def make_expert(self, **kwargs: Any):
        """The greedy shortest-path follower for this environment (see :mod:`embodia.envs.habitat.expert`)."""
        from embodia.envs.habitat.expert import ShortestPathFollower

        return ShortestPathFollower(self, **kwargs)

    def goals(self, robot: int = 0) -> np.ndarray:
        """The current episode's goal points of one robot, ``(G, 3)``."""
        return self._goal_lists[robot]

    def set_goals(self, robot: int, points: Any) -> None:
        """Replace robot ``robot``'s goal points (``(G, 3)`` or one ``(3,)`` point) within the episode.

        The goal observation, ``distance_to_goal`` (and so the reward's progress term) and the
        shortest-path follower use the new points from now on; path length and collisions keep
        accumulating. Used by multi-step agents (NavCraft's executor) that give a robot one waypoint after
        another, and after a door change rebuilt the navigation mesh.
        """
        if self.episode is None:
            raise gymnasium.error.ResetNeeded("call reset() before set_goals()")
        if not 0 <= robot < self.config.num_robots:
            raise EnvArgumentError(
                f"robot {robot} does not exist; this environment has {self.config.num_robots}"
            )
        goals = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if not len(goals) or not np.isfinite(goals).all():
            raise EnvArgumentError(
                f"goal points must be finite (G, 3) coordinates, got {np.asarray(points).tolist()}"
            )
        self._goal_lists[robot] = goals
        position, _ = self.backend.get_pose(robot)
        self.metrics[robot].distance_to_goal = self._distance(robot, position)

    def get_state(self) -> np.ndarray:
        """Robot poses, door positions and each robot's metric accumulators: one float64 array of fixed size."""
        parts = [self.backend.get_state()] + [m.to_array() for m in self.metrics]
        return np.concatenate(parts).astype(np.float64)

    def set_state(self, state: np.ndarray) -> None:
        """Restore a :meth:`get_state` array (same scene, within the episode it was taken from)."""
        state = np.asarray(state, dtype=np.float64)
        size = EpisodeMetrics.STATE_SIZE
        n = self.config.num_robots
        expected = len(self.backend.get_state()) + n * size
        if state.shape != (expected,):
            raise ValueError(
                f"state has shape {state.shape}, this environment expects ({expected},); was it recorded elsewhere?"
            )
        backend_size = expected - n * size
        self.backend.set_state(state[:backend_size])
        for i, metrics in enumerate(self.metrics):
            metrics.from_array(state[backend_size + i * size : backend_size + (i + 1) * size])
