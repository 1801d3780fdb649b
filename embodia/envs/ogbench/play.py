"""OGBench "play" / "navigate" environments: where offline datasets come from.

OGBench's datasets were collected by a noisy scripted expert pursuing one random target after another
(a cube pose, a button state, a drawer or window position, a maze cell), never the evaluation tasks
themselves. The generation scripts are not in the ogbench wheel; this module rebuilds the procedure
on ogbench's own pieces, as environments, so that generated data replay exactly:

- manipulation: ogbench's ``data_collection`` mode (random scene, random targets from
  ``set_new_target``); the environment moves to a new target once the current one has been held for
  ``settle_steps`` steps (long enough for the oracle to release and lift) or after
  ``max_target_steps`` steps;
- mazes: random start and goal cells; a new random goal as soon as the current one is reached.

Every step is also labelled for one single task (``task_id``, OGBench's single-task variants, reward
computed from the state *before* the action, like ogbench's ``success_timing='pre'``)::

    successes_i = object i (cube, button, drawer, window) matches task k's goal,   r_t = sum_i successes_i - n
    maze:         successes = |xy - goal_k| <= tol,                                   r_t = successes - 1
    sparse=True:  r_t = -1 unless every successes_i, then 0   (the Q-chunking code's (r != 0) * -1)

``info["success"]`` is ``all(successes)``. Play episodes never terminate (the expert keeps playing);
:mod:`embodia.runner.datasets` writes ``info["success"]`` as the terminal flag, which is what OGBench's
relabelled datasets call ``mask = 0``.

``make_expert(noise)`` returns the matching noisy expert: ogbench's Markov oracles (cube, button,
drawer, window) chosen by the current target, or the BFS subgoal oracle in mazes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ogbench.manipspace.oracles.markov.button_markov import ButtonMarkovOracle
from ogbench.manipspace.oracles.markov.cube_markov import CubeMarkovOracle
from ogbench.manipspace.oracles.markov.drawer_markov import DrawerMarkovOracle
from ogbench.manipspace.oracles.markov.window_markov import WindowMarkovOracle

from embodia.envs.ogbench.env import OGBenchEnv, legacy_numpy_seed


class OGBenchPlayEnv(OGBenchEnv):
    """Random-target play in an ogbench environment, labelled for one single task (see module docstring).

    Args:
        ogbench_id: ogbench's id, e.g. ``"cube-single-v0"``.
        task_id: the single task (1-5) whose rewards label the data; ``None`` is ogbench's default task.
        settle_steps: steps a reached target is held before a new one is drawn (manipulation).
        max_target_steps: steps after which an unreached target is replaced.
        **kwargs: rendering arguments of :class:`OGBenchEnv`, and ``sparse`` (the labels' rewards -1 until
            the task is solved, 0 when it is: the Q-chunking authors' ``--sparse``).
    """

    _play = True

    def __init__(
        self,
        ogbench_id: str,
        task_id: int | None = None,
        settle_steps: int = 15,
        max_target_steps: int = 200,
        **kwargs: Any,
    ) -> None:
        super().__init__(ogbench_id, single_task=False, task_id=None, **kwargs)
        self.settle_steps = int(settle_steps)
        self.max_target_steps = int(max_target_steps)
        raw = self.raw
        # Resolve the labelling task the way ogbench resolves its single-task ids (0 = default task).
        saved = getattr(raw, "_reward_task_id", None)
        raw._reward_task_id = 0 if task_id is None else int(task_id)
        raw.set_tasks()
        self.label_task_id = int(raw._reward_task_id)
        raw._reward_task_id = saved
        if not 1 <= self.label_task_id <= len(raw.task_infos):
            raise ValueError(f"task_id must be in 1..{len(raw.task_infos)}, got {task_id}")
        self.label_task = raw.task_infos[self.label_task_id - 1]
        self.kind = _kind(ogbench_id)
        self._streak = 0  # consecutive steps the current target has been achieved
        self._age = 0  # steps since the current target was set
        self.target_version = 0  # increases whenever the target changes (experts watch it)
        if self.is_maze:
            self._free_cells = np.argwhere(raw.maze_map == 0)

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = super().reset(seed=seed, options=options)
        raw = self.raw
        if self.is_maze:
            start, goal = self._random_cells(2)
            raw.set_xy(start)
            raw.set_goal(goal_xy=goal)
            obs = self._observation(raw.get_ob())
        self._streak = self._age = 0
        self.target_version += 1
        info["success"] = bool(self.task_successes().all())
        return obs, info

    def step(self, action: np.ndarray):
        successes = self.task_successes()  # labels come from the state before the action
        obs, _, _, truncated, info = super().step(action)
        self._advance_target()
        info["task_successes"] = successes
        info["success"] = bool(successes.all())
        reward = self.shaped(float(successes.sum() - successes.size))
        return obs, reward, False, truncated, info

    # ------------------------------------------------------------------ labels and targets
    def task_successes(self) -> np.ndarray:
        """Which parts of the labelling task's goal the current state satisfies (bool array)."""
        raw, goal = self.raw, self.label_task
        if self.is_maze:
            return np.array([np.linalg.norm(raw.get_xy() - np.asarray(goal["goal_xy"])) <= raw._goal_tol])
        if self.kind == "cube":
            cubes = np.array([raw._data.joint(f"object_joint_{i}").qpos[:3] for i in range(raw._num_cubes)])
            return np.linalg.norm(cubes - goal["goal_xyzs"], axis=1) <= 0.04
        if self.kind == "puzzle":
            return raw._cur_button_states == goal["goal_button_states"]
        target = goal["goal"]
        cubes = np.array([raw._data.joint(f"object_joint_{i}").qpos[:3] for i in range(raw._num_cubes)])
        return np.concatenate(
            [
                np.linalg.norm(cubes - target["block_xyzs"], axis=1) <= 0.04,
                raw._cur_button_states == target["button_states"],
                [abs(raw._data.joint("drawer_slide").qpos[0] - target["drawer_pos"]) <= 0.04],
                [abs(raw._data.joint("window_slide").qpos[0] - target["window_pos"]) <= 0.04],
            ]
        )

    def _advance_target(self) -> None:
        raw = self.raw
        self._age += 1
        if self.is_maze:
            if (
                np.linalg.norm(raw.get_xy() - raw.cur_goal_xy) <= raw._goal_tol
                or self._age >= 5 * self.max_target_steps
            ):
                raw.set_goal(goal_xy=self._random_cells(1)[0])
                self._age = 0
                self.target_version += 1
            return
        self._streak = self._streak + 1 if raw._success else 0
        if self._streak >= self.settle_steps or self._age >= self.max_target_steps:
            raw.set_new_target(return_info=False)
            self._streak = self._age = 0
            self.target_version += 1

    def _random_cells(self, n: int) -> list[np.ndarray]:
        raw = self.raw
        picks = self.np_random.choice(len(self._free_cells), size=n, replace=False)
        cells = []
        for i, j in self._free_cells[picks]:
            centre = np.asarray(raw.ij_to_xy((i, j)), dtype=np.float64)
            cells.append(centre + self.np_random.uniform(-1, 1, size=2) * raw._maze_unit / 4)
        return cells

    # ------------------------------------------------------------------ state and expert
    def _extra_state(self) -> np.ndarray:
        counters = np.array([self._streak, self._age, self.target_version], dtype=np.float64)
        return np.concatenate([super()._extra_state(), counters])

    def _restore_extra_state(self, extra: np.ndarray) -> None:
        super()._restore_extra_state(extra[:-3])
        self._streak, self._age, self.target_version = (int(v) for v in extra[-3:])

    @property
    def has_expert(self) -> bool:
        return not self.ogbench_id.startswith(("antmaze", "humanoidmaze"))

    def make_expert(self, noise: float = 0.0) -> Any:
        if self.is_maze:
            from embodia.envs.ogbench.experts import MazeSubgoalExpert

            return MazeSubgoalExpert(self, noise=noise)
        return PlayExpert(self, noise=noise)


class PlayExpert:
    """ogbench's Markov oracle for the current play target, plus Gaussian action noise."""

    chunk_size = 1

    def __init__(self, env: OGBenchPlayEnv, noise: float = 0.0) -> None:
        self.env = env
        self.noise = float(noise)
        raw = env.raw
        gripper_closed = env.kind == "puzzle"  # buttons are pressed with a closed gripper
        self.oracles = {
            "cube": CubeMarkovOracle(env=raw, min_norm=0.4, max_step=env.max_target_steps),
            "button": ButtonMarkovOracle(
                env=raw, max_step=env.max_target_steps, gripper_always_closed=gripper_closed
            ),
            "drawer": DrawerMarkovOracle(env=raw, max_step=env.max_target_steps),
            "window": WindowMarkovOracle(env=raw, max_step=env.max_target_steps),
        }
        self._rng = np.random.default_rng(0)
        self._version = -1
        self._oracle: Any = None

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._version = -1

    def act(self, obs: Any) -> np.ndarray:
        raw = self.env.raw
        info = raw.compute_ob_info()
        if self.env.target_version != self._version:
            self._version = self.env.target_version
            self._oracle = self.oracles[info["privileged/target_task"]]
            with legacy_numpy_seed(int(self._rng.integers(2**31))):
                self._oracle.reset(None, info)
        action = np.asarray(self._oracle.select_action(None, info), dtype=np.float64)
        if self.noise:
            action = action + self._rng.normal(0.0, self.noise, size=action.shape)
        return np.clip(action, -1.0, 1.0).astype(np.float32)


def _kind(ogbench_id: str) -> str:
    for kind in ("maze", "cube", "puzzle", "scene"):
        if kind in ogbench_id:
            return kind
    raise ValueError(f"no play variant for {ogbench_id}")
