"""Scripted kitchen experts: task plans made of motion primitives, executed through the OSC controller.

A plan is a list of primitives (reach, grasp, lift, move, release, pull, push along an arc, press);
each turns the current end-effector pose and a target pose into one action of robosuite's ``OSC_POSE``
controller (delta inputs in the robot base frame, ``achieved`` goal updates):

    a_pos = s min(1, k_p |p* - p| + a_0) (p* - p) / |p* - p|,      a_rot = clip(k_r e_R(R*, R), -1, 1)

a straight-line move at most at speed ``s`` (``a_0`` keeps pushing close to the goal, where the arm's
joint damping and gravity residuals would stall a purely proportional command), with ``e_R``
robosuite's axis-angle orientation error ``0.5 (r1 x r1* + r2 x r2* + r3 x r3*)`` (columns of the
current and target rotations); the gripper entry is -1 (open) or +1 (closed). A primitive ends when its target is reached (or its own condition
holds) or after its step budget; the expert then starts the next one in the same step. Targets are
functions of the simulator state, so moving parts (a door swinging, a drawer sliding) are tracked.

Experts read privileged state (sites, joint angles) from the environment they were made for, like
OGBench's oracles; they are deterministic unless ``noise`` > 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from embodia.envs.kitchen.env import KitchenEnv
    from embodia.envs.kitchen.scene import KitchenScene

OPEN, CLOSED = -1.0, 1.0

Target = Callable[["KitchenScene"], np.ndarray]
Condition = Callable[["KitchenScene"], bool]


def down_rotation(x_axis: np.ndarray | None = None, tilt: float = 0.0) -> np.ndarray:
    """End-effector rotation with the gripper pointing down and its fingers closing along ``x_axis``
    (horizontal; default world +y, robosuite's Panda home orientation). The gripper is symmetric, so of
    ``x_axis`` and ``-x_axis`` the one within 90 degrees of +y is used: the wrist never turns more than
    a quarter turn from home. ``tilt`` > 0 leans the fingers toward +x (the wall)."""
    x = np.array([0.0, 1.0, 0.0]) if x_axis is None else np.array([x_axis[0], x_axis[1], 0.0])
    x /= np.linalg.norm(x)
    if x[1] < 0:
        x = -x
    z = np.array([0.0, 0.0, -1.0])
    rotation = np.column_stack([x, np.cross(z, x), z])
    if tilt:
        c, s = np.cos(-tilt), np.sin(-tilt)
        rotation = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]) @ rotation
    return rotation


def forward_rotation(vertical_fingers: bool = False) -> np.ndarray:
    """End-effector rotation with the gripper pointing at the wall (+x); fingers close along y, or
    along z with ``vertical_fingers`` (to grip a horizontal bar from the front)."""
    x = np.array([0.0, 0.0, 1.0]) if vertical_fingers else np.array([0.0, 1.0, 0.0])
    z = np.array([1.0, 0.0, 0.0])
    return np.column_stack([x, np.cross(z, x), z])


def orientation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis-angle error that rotates ``current`` toward ``target`` (small-angle, world frame)."""
    return 0.5 * (
        np.cross(current[:, 0], target[:, 0])
        + np.cross(current[:, 1], target[:, 1])
        + np.cross(current[:, 2], target[:, 2])
    )


def servo(
    scene: KitchenScene, position: np.ndarray, rotation: np.ndarray, gripper: float, speed: float = 1.0
) -> tuple[np.ndarray, float]:
    """One OSC action toward ``(position, rotation)``; returns it and the remaining position error."""
    error = position - scene.eef_pos
    distance = float(np.linalg.norm(error))
    action = np.zeros(7)
    if distance > 1e-9:
        # straight toward the target; the floor term overcomes the arm's static resistance near the goal
        action[:3] = error / distance * min(1.0, 10.0 * distance + 0.1) * speed
    action[3:6] = np.clip(orientation_error(rotation, scene.eef_rotation) * 4.0, -1.0, 1.0)
    action[6] = gripper
    return action, distance


@dataclass
class MoveTo:
    """Reach / lift / move: servo to a (possibly moving) target pose until within ``tolerance``."""

    target: Target
    rotation: np.ndarray | Callable[[KitchenScene], np.ndarray]
    gripper: float
    tolerance: float = 0.01
    max_steps: int = 80
    speed: float = 1.0
    until: Condition | None = None
    """Optional extra end condition (e.g. 'the drawer is open'); ends the primitive when true."""
    name: str = "move"
    steps: int = field(default=0, init=False)

    def step(self, scene: KitchenScene) -> tuple[np.ndarray, bool]:
        rotation = self.rotation(scene) if callable(self.rotation) else self.rotation
        action, error = servo(scene, self.target(scene), rotation, self.gripper, self.speed)
        self.steps += 1
        rotation_error = np.linalg.norm(orientation_error(rotation, scene.eef_rotation))
        reached = error < self.tolerance and rotation_error < 0.08
        done = self.until(scene) if self.until is not None else reached
        return action, bool(done or self.steps >= self.max_steps)


@dataclass
class Grip:
    """Grasp / release: hold the pose where the primitive started and open or close the gripper."""

    gripper: float
    steps_needed: int = 10
    name: str = "grip"
    steps: int = field(default=0, init=False)
    _hold: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False)

    def step(self, scene: KitchenScene) -> tuple[np.ndarray, bool]:
        if self._hold is None:
            self._hold = (scene.eef_pos, scene.eef_rotation)
        action, _ = servo(scene, self._hold[0], self._hold[1], self.gripper)
        self.steps += 1
        return action, self.steps >= self.steps_needed


class KitchenExpert:
    """Runs the task's plan of primitives (see module docstring); one instance per environment.

    Args:
        env: the :class:`~embodia.envs.kitchen.env.KitchenEnv` it controls.
        noise: std of Gaussian noise added to the arm part of every action (0 = deterministic).
    """

    chunk_size = 1

    def __init__(self, env: KitchenEnv, noise: float = 0.0) -> None:
        self.env = env
        self.noise = float(noise)
        self._rng = np.random.default_rng(0)
        self._plan: list[Any] = []
        self._episode = -1
        self._retries = 0
        self._last_gripper = OPEN

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._episode = -1  # plan again on the first act() of the episode

    def act(self, obs: Any) -> np.ndarray:
        env = self.env
        scene = env.scene
        if self._episode != env.episode_index:
            self._episode = env.episode_index
            self._plan = env.task.expert_plan(scene)
            self._retries = 0
        if self._retries < 2 and env.task.expert_should_retry(scene, self._plan):
            self._retries += 1
            self._plan = env.task.expert_plan(scene)
        action = None
        while self._plan:
            action, done = self._plan[0].step(scene)
            if not done:
                break
            self._plan.pop(0)
        if action is None:  # plan finished: stay still
            action = np.zeros(7)
            action[6] = self._last_gripper
        self._last_gripper = float(action[6])
        if self.noise:
            action[:6] = action[:6] + self._rng.normal(0.0, self.noise, size=6)
        full = np.zeros(env.action_space.shape, dtype=np.float32)
        full[:6] = np.clip(action[:6], -1.0, 1.0)
        full[6:] = action[6]  # every gripper dimension gets the open/close command
        return full
