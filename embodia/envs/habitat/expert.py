"""The shortest-path follower expert (habitat-lab's ``ShortestPathFollower``, greedy on the geodesic path).

Every step, for each robot, the follower asks the path finder for the shortest path from the robot to
the episode's goal(s) (the nearest view point for ObjectNav) and

- calls STOP once the geodesic distance is below the success distance;
- far from the goal (more than 1 m): turns toward the first path point more than 10 cm away when it
  is more than half a turn angle off, and moves forward otherwise (habitat-lab's greedy rule);
- near the goal: searches the short action sequences (breadth first, up to 5 actions of turn/forward,
  forward simulated with ``try_step``) for the first that ends within the success distance of a visible
  goal point, since a 25 cm step can jump over a 10-20 cm success region;
- in velocity mode: turns at a rate proportional to the heading error and drives at the speed that
  reaches the next path point in one control period.

With several robots, a robot whose next step would bring it within two radii of another side-steps:
it turns 90 degrees (right with probability 0.7, else left, from a seeded generator), moves up to two
steps, and resumes; head-on meetings in corridors resolve like traffic keeping right.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from embodia.envs.habitat.coords import wrap_angle
from embodia.envs.habitat.pathfinder import MultiGoalShortestPath

if TYPE_CHECKING:
    from embodia.envs.habitat.env import NavEnv

STOP, MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = range(4)


class ShortestPathFollower:
    """Greedy geodesic follower for a :class:`~embodia.envs.habitat.env.NavEnv` (see module docstring).

    Args:
        env: the (unwrapped) environment it controls; it reads the robot poses and goals from it.
        lookahead: path points closer than this (m) are skipped when choosing the heading.
        approach_radius: below this geodesic distance (m) the follower plans its last actions by search.
        search_depth: longest action sequence the final approach searches.
    """

    chunk_size = 1

    def __init__(
        self, env: NavEnv, lookahead: float = 0.1, approach_radius: float = 1.0, search_depth: int = 5
    ) -> None:
        self.env = env
        self.lookahead = lookahead
        self.approach_radius = approach_radius
        self.search_depth = search_depth
        self._rng = np.random.default_rng(0)
        self._detours: list[tuple[float, int] | None] = []

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._detours = [None] * self.env.config.num_robots

    def act(self, obs: Any) -> np.ndarray:
        env = self.env
        if len(self._detours) != env.config.num_robots:
            self._detours = [None] * env.config.num_robots
        actions = [self._robot_action(i) for i in range(env.config.num_robots)]
        if env.config.action_mode == "discrete":
            return np.asarray(actions[0] if env.config.num_robots == 1 else actions, dtype=np.int64)
        out = np.asarray(actions, dtype=np.float32)
        return out[0] if env.config.num_robots == 1 else out

    # ------------------------------------------------------------------ one robot
    def _robot_action(self, robot: int) -> Any:
        env = self.env
        velocity = env.config.action_mode == "velocity"
        if env.metrics[robot].stop_called:
            return np.array([-1.0, 0.0, 1.0]) if velocity else STOP
        position, yaw = env.backend.get_pose(robot)
        goals = env.goals(robot)
        path = MultiGoalShortestPath(position, list(goals))
        if not env.pathfinder.find_path(path):
            return (
                np.array([-1.0, 0.0, 1.0]) if velocity else STOP
            )  # unreachable: give up, as habitat's follower
        distance = path.geodesic_distance
        if distance < env.success_distance:
            return np.array([-1.0, 0.0, 1.0]) if velocity else STOP
        target = path.points[-1]
        for point in path.points[1:]:
            if np.linalg.norm(point[:2] - position[:2]) > self.lookahead:
                target = point
                break
        heading_error = wrap_angle(math.atan2(target[1] - position[1], target[0] - position[0]) - yaw)
        if velocity:
            return self._velocity_action(position, target, heading_error)
        if env.config.num_robots > 1:
            action = self._avoid_robots(robot, position, yaw, heading_error, distance)
        elif distance < self.approach_radius:
            action = self._final_approach(position, yaw, goals)
            if action is None:
                action = self._greedy(heading_error)
        else:
            action = self._greedy(heading_error)
        return action

    def _avoid_robots(
        self, robot: int, position: np.ndarray, yaw: float, heading_error: float, distance: float
    ) -> int:
        """Greedy following with a side-step around robots in the way (right-hand rule, sometimes left)."""
        env = self.env
        detour = self._detours[robot]
        if detour is not None:
            heading, steps = detour
            error = wrap_angle(heading - yaw)
            if abs(error) > 0.5 * math.radians(env.config.turn_angle) + 1e-6:
                return TURN_LEFT if error > 0 else TURN_RIGHT
            self._detours[robot] = (heading, steps - 1) if steps > 1 else None
            if not self._robot_ahead(robot, position, yaw):
                return MOVE_FORWARD
            self._detours[robot] = None
        if distance < self.approach_radius:
            action = self._final_approach(position, yaw, env.goals(robot))
        else:
            action = None
        action = self._greedy(heading_error) if action is None else action
        if action == MOVE_FORWARD and self._robot_ahead(robot, position, yaw):
            side = -1.0 if self._rng.random() < 0.7 else 1.0
            self._detours[robot] = (wrap_angle(yaw + side * math.pi / 2), 2)
            return TURN_RIGHT if side < 0 else TURN_LEFT
        return action

    def _robot_ahead(self, robot: int, position: np.ndarray, yaw: float) -> bool:
        step = self.env.config.forward_step
        target = position + step * np.array([math.cos(yaw), math.sin(yaw), 0.0])
        return self.env._near_other_robot(robot, self.env.pathfinder.try_step(position, target))

    def _greedy(self, heading_error: float) -> int:
        half_turn = 0.5 * math.radians(self.env.config.turn_angle) + 1e-6
        if abs(heading_error) > half_turn:
            return TURN_LEFT if heading_error > 0 else TURN_RIGHT
        return MOVE_FORWARD

    def _final_approach(self, position: np.ndarray, yaw: float, goals: np.ndarray) -> int | None:
        """First action of the shortest turn/forward sequence that ends within the success distance."""
        env = self.env
        pathfinder = env.pathfinder
        turn = math.radians(env.config.turn_angle)
        radius = env.success_distance - 1e-3
        near = goals[np.linalg.norm(goals[:, :2] - position[:2], axis=1) < self.approach_radius + 0.5]
        if not len(near):
            return None
        queue: deque[tuple[np.ndarray, float, int, int]] = deque([(position, yaw, -1, 0)])
        seen = {(round(position[0], 3), round(position[1], 3), round(wrap_angle(yaw), 3))}
        while queue:
            pos, heading, first, depth = queue.popleft()
            if depth >= self.search_depth:
                continue
            for action in (MOVE_FORWARD, TURN_LEFT, TURN_RIGHT):
                if action == MOVE_FORWARD:
                    target = pos + env.config.forward_step * np.array(
                        [math.cos(heading), math.sin(heading), 0.0]
                    )
                    new_pos, new_heading = pathfinder.try_step(pos, target), heading
                    gaps = np.linalg.norm(near[:, :2] - new_pos[:2], axis=1)
                    k = int(np.argmin(gaps))
                    if (
                        gaps[k] < radius
                        and pathfinder.segments_clear(new_pos[None, :2], near[k : k + 1, :2])[0]
                    ):
                        return action if first < 0 else first
                else:
                    new_pos, new_heading = pos, wrap_angle(heading + (turn if action == TURN_LEFT else -turn))
                key = (round(new_pos[0], 3), round(new_pos[1], 3), round(new_heading, 3))
                if key not in seen:
                    seen.add(key)
                    queue.append((new_pos, new_heading, action if first < 0 else first, depth + 1))
        return None

    def _velocity_action(self, position: np.ndarray, target: np.ndarray, heading_error: float) -> np.ndarray:
        c = self.env.config
        dt = c.control_period
        angular = float(np.clip(heading_error / (math.radians(c.max_angular_speed) * dt), -1.0, 1.0))
        if abs(heading_error) > math.radians(30.0):
            fraction = 0.0
        else:
            reach = float(np.linalg.norm(target[:2] - position[:2]))
            fraction = min(1.0, reach / (c.max_linear_speed * dt)) * math.cos(heading_error)
        return np.array([2.0 * fraction - 1.0, angular, -1.0])
