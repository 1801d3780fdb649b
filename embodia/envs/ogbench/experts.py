"""Scripted experts for the OGBench environments, built on the oracles that ship in the ogbench wheel.

- Mazes (point mass): ogbench's BFS subgoal oracle (``MazeEnv.get_oracle_subgoal``) gives the next
  cell centre on a shortest path; the expert moves toward it at full speed, and toward the goal itself
  once it is in the goal's cell.
- Manipulation (cube, puzzle, scene): see :mod:`embodia.envs.ogbench.manip_experts`.

Experts read privileged simulator state through the environment they were made for; they are
policies in embodia's sense (``reset(seed)``, ``act(obs)``) and are seeded per episode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from embodia.envs.ogbench.env import OGBenchEnv


class MazeSubgoalExpert:
    """Shortest-path expert for point-mass mazes (ogbench's BFS subgoal oracle + a P controller).

    Args:
        env: the :class:`OGBenchEnv` it controls.
        noise: std of Gaussian noise added to actions (0 = deterministic expert).
    """

    chunk_size = 1

    def __init__(self, env: OGBenchEnv, noise: float = 0.0) -> None:
        self.env = env
        self.noise = noise
        self._rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: Any) -> np.ndarray:
        raw = self.env.raw
        xy = np.asarray(raw.get_xy(), dtype=np.float64)
        goal = np.asarray(raw.cur_goal_xy, dtype=np.float64)
        if raw.xy_to_ij(xy) == raw.xy_to_ij(goal):
            target = goal
        else:
            target, _ = raw.get_oracle_subgoal(xy, goal)
        direction = target - xy
        norm = np.linalg.norm(direction)
        # Point actions move the mass by 0.2 * action per step; saturate far away, slow down close in.
        action = direction / max(norm, 1e-8) * min(1.0, norm / 0.2)
        if self.noise:
            action = action + self._rng.normal(0.0, self.noise, size=2)
        return np.clip(action, -1.0, 1.0).astype(np.float32)


def make_ogbench_expert(env: OGBenchEnv, noise: float = 0.0) -> Any:
    """The scripted expert for ``env`` (an :class:`OGBenchEnv`)."""
    base = env.ogbench_id.removeprefix("visual-")
    if base.startswith("pointmaze"):
        return MazeSubgoalExpert(env, noise=noise)
    from embodia.envs.ogbench.manip_experts import make_manip_expert

    return make_manip_expert(env, noise=noise)
