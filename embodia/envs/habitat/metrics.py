"""Habitat's navigation metrics (habitat-lab ``Success``, ``SPL``, ``SoftSPL``, ``DistanceToGoal``, ``Collisions``).

For an episode with shortest-path (geodesic) length ``l`` from the start to the goal, an agent path of
length ``p`` (sum of the distances between consecutive positions, collisions and slides included) and a
final geodesic distance to the goal ``d_T`` (Anderson et al., "On Evaluation of Embodied Navigation
Agents", 2018):

- success ``S = 1`` iff the agent called STOP with ``d_T < success_distance`` (0.2 m for PointNav; for
  ObjectNav the goal is the set of view points around the objects and the threshold 0.1 m);
- ``SPL = S * l / max(l, p)``;
- ``soft-SPL = max(0, 1 - d_T / l) * l / max(l, p)`` (success replaced by progress toward the goal);
- ``distance_to_goal = d_t``, the geodesic distance after step ``t``;
- ``collisions``: the number of steps whose motion was cut short by an obstacle.

The dense reward is habitat-lab's PointNav reward: ``r_t = (d_{t-1} - d_t) - 0.01`` plus 2.5 on success.

Degenerate episodes follow habitat-lab's ``SPL`` / ``SoftSPL`` measures (``habitat/tasks/nav/nav.py``),
which compute exactly these products, ``ep_success * (l / max(l, p))``, with no special case. With a
zero-length shortest path (the start already at the goal) and a zero-length agent path (the agent only
turned, or stopped at once) the ratio is 0 / 0: NaN, whether or not the episode succeeded (``0 * NaN``),
so such an episode has no SPL rather than a perfect one (habitat-lab gets NaN where the distances are
NumPy scalars; with habitat-sim's Python-float geodesic distance the same division raises
``ZeroDivisionError``). With ``l = 0`` and ``p > 0`` SPL is 0 even on success. An unreachable goal
(``l = inf``) gives ``inf / inf``: NaN. soft-SPL gets the same ratio, times
``max(0, 1 - d_T / l)`` (``d_T / 0`` is inf, or NaN when ``d_T = 0``; ``max(0, NaN)`` is 0 as in Python).
Means over episodes must therefore skip NaN (or report how many episodes had none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

SLACK_REWARD = -0.01
SUCCESS_REWARD = 2.5


def path_length(positions: Sequence[Sequence[float]]) -> float:
    """Length of a trajectory: the sum of the distances between consecutive positions (2D or 3D)."""
    points = np.asarray(positions, dtype=np.float64)
    if len(points) < 2:
        return 0.0
    return float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())


def success(stop_called: bool, distance_to_goal: float, success_distance: float) -> bool:
    """Habitat success: STOP was called within ``success_distance`` of the goal."""
    return bool(stop_called) and float(distance_to_goal) < float(success_distance)


def _path_ratio(shortest: float, agent: float) -> float:
    """habitat-lab's ``l / max(l, p)`` in IEEE arithmetic: 0 / 0 and inf / inf are NaN, not an error."""
    denominator = max(shortest, agent)  # Python's max: the first argument when they are equal, as habitat-lab
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(shortest) / np.float64(denominator))


def spl(is_success: bool, shortest_path_length: float, agent_path_length: float) -> float:
    """Success weighted by (normalised inverse) path length: ``S * l / max(l, p)``, habitat-lab's formula.

    NaN when ``l = p = 0`` (and when ``l`` is infinite), successful or not; see the module docstring.
    """
    ratio = _path_ratio(float(shortest_path_length), float(agent_path_length))
    return float(bool(is_success)) * ratio


def soft_spl(final_distance: float, shortest_path_length: float, agent_path_length: float) -> float:
    """habitat-lab's soft-SPL: ``max(0, 1 - d_T / l) * l / max(l, p)`` (NaN when ``l = p = 0``)."""
    shortest = float(shortest_path_length)
    with np.errstate(divide="ignore", invalid="ignore"):
        covered = float(np.float64(final_distance) / np.float64(shortest))
    progress = max(0.0, 1.0 - covered)  # max(0, NaN) is 0, as in habitat-lab
    return progress * _path_ratio(shortest, float(agent_path_length))


@dataclass
class EpisodeMetrics:
    """Running metrics of one robot in one episode; :meth:`update` after every step."""

    success_distance: float
    start_distance: float = float("inf")
    distance_to_goal: float = float("inf")
    path_length: float = 0.0
    collisions: int = 0
    stop_called: bool = False
    success: bool = False
    last_position: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def reset(self, position: Sequence[float], distance_to_goal: float) -> None:
        self.start_distance = float(distance_to_goal)
        self.distance_to_goal = float(distance_to_goal)
        self.path_length = 0.0
        self.collisions = 0
        self.stop_called = False
        self.success = False
        self.last_position = np.asarray(position, dtype=np.float64).copy()

    def update(
        self, position: Sequence[float], distance_to_goal: float, collided: bool, stop_called: bool
    ) -> float:
        """Account for one step; returns habitat-lab's PointNav reward for it."""
        position = np.asarray(position, dtype=np.float64)
        self.path_length += float(np.linalg.norm(position - self.last_position))
        self.last_position = position.copy()
        previous = self.distance_to_goal
        self.distance_to_goal = float(distance_to_goal)
        self.collisions += int(bool(collided))
        self.stop_called = self.stop_called or bool(stop_called)
        newly = not self.success and success(self.stop_called, self.distance_to_goal, self.success_distance)
        self.success = self.success or newly
        progress = (
            previous - self.distance_to_goal
            if math.isfinite(previous) and math.isfinite(self.distance_to_goal)
            else 0.0
        )
        return progress + SLACK_REWARD + (SUCCESS_REWARD if newly else 0.0)

    @property
    def spl(self) -> float:
        return spl(self.success, self.start_distance, self.path_length)

    @property
    def soft_spl(self) -> float:
        return soft_spl(self.distance_to_goal, self.start_distance, self.path_length)

    def as_dict(self) -> dict[str, float | int | bool]:
        return {
            "success": self.success,
            "spl": self.spl,
            "soft_spl": self.soft_spl,
            "distance_to_goal": self.distance_to_goal,
            "collisions": self.collisions,
            "path_length": self.path_length,
        }

    def to_array(self) -> np.ndarray:
        """The running state as floats (for ``get_state``)."""
        return np.array(
            [
                self.start_distance,
                self.distance_to_goal,
                self.path_length,
                self.collisions,
                self.stop_called,
                self.success,
                *self.last_position,
            ],
            dtype=np.float64,
        )

    def from_array(self, values: np.ndarray) -> None:
        self.start_distance, self.distance_to_goal, self.path_length = (float(v) for v in values[:3])
        self.collisions = int(values[3])
        self.stop_called, self.success = bool(values[4]), bool(values[5])
        self.last_position = np.asarray(values[6:9], dtype=np.float64).copy()

    STATE_SIZE = 9
