"""Scripted experts for the ALOHA tasks, made the way the ACT authors made their demonstrations.

ACT (Zhao et al., RSS 2023; ``scripted_policy.py`` and ``record_sim_episodes.py`` of tonyzhaozh/act)
scripts each task as timed end-effector waypoints for the two grippers, runs them open loop in the
end-effector ("mocap") version of the task, where each gripper body is welded to a mocap target, and
records that rollout's joint positions; the joint trajectory, with the gripper commands in place of the
measured gripper openings, is then replayed as actions in the joint-space task. Replay is what makes
the demonstrations joint-space actions a policy can learn. This module does the same with gym-aloha's
end-effector tasks and MJCF (``gym_aloha.tasks.sim_end_effector``):

1. :func:`waypoints` gives each arm's keyframes (step, position, orientation, gripper opening) from the
   objects' initial poses; positions, orientations and openings are interpolated linearly between them.
2. :func:`joint_trajectory` runs them in the end-effector physics (objects placed where the joint-space
   episode has them) and returns one 14-D joint target per step.
3. :class:`AlohaScriptedExpert` plans on its first action of an episode and then returns the trajectory
   step by step: the action at step ``t`` is the end-effector rollout's joint state at step ``t``.

The keyframes follow ACT's: transfer cube -- the right gripper, pitched 60 degrees down, picks the cube
from above and carries it to a meeting point over the table's centre, the left gripper comes in rolled
90 degrees, closes on the cube, the right one opens and both move apart; insertion -- each gripper
picks its object (right: peg, left: socket) and the two move towards each other at the meeting point
until the peg enters the socket. ACT's ``inject_noise`` (uniform noise on the end-effector targets) is
``noise``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from embodia.envs.aloha.env import AlohaEnv

#: steps of the scripted plans (ACT's ``episode_len`` for both simulated tasks)
PLAN_STEPS = 400
#: end-effector task class and MJCF of each joint-space task
END_EFFECTOR_TASKS = {
    "transfer_cube": ("TransferCubeEndEffectorTask", "bimanual_viperx_end_effector_transfer_cube.xml"),
    "insertion": ("InsertionEndEffectorTask", "bimanual_viperx_end_effector_insertion.xml"),
}
#: the mocap welds' impedance (solimp d0, dwidth, width) in the end-effector rollout. gym-aloha's MJCF says
#: ".25 .25 0.001"; with MuJoCo 3.8.1 such soft welds let gravity and the joints' friction hold each gripper
#: off its target (measured over the scripted rollouts: ~1 cm and 20-28 degrees typically, up to 6 cm and 70
#: degrees), so the script's grasps miss and no episode succeeds. Stiff welds make the grippers track their
#: targets to ~1 mm and ~0.5 degrees, as the ACT authors' scripts assume. Only the expert's private
#: end-effector model is changed; the joint-space task is gym-aloha's as shipped.
WELD_IMPEDANCE = (0.95, 0.99, 0.001)
#: the free objects' joints in the end-effector MJCF, in ``AlohaEnv.object_state`` order
OBJECT_JOINTS = {"transfer_cube": ("red_box_joint",), "insertion": ("red_peg_joint", "blue_socket_joint")}


def axis_angle_quat(axis: tuple[float, float, float], degrees: float) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a rotation by ``degrees`` about ``axis``."""
    half = np.radians(degrees) / 2
    return np.concatenate([[np.cos(half)], np.sin(half) * np.asarray(axis, dtype=np.float64)])


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of (w, x, y, z) quaternions (``b`` applied in ``a``'s frame)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def _keyframe(step: int, xyz: np.ndarray, quat: np.ndarray, gripper: float) -> np.ndarray:
    return np.concatenate([[step], xyz, quat, [gripper]]).astype(np.float64)


def waypoints(
    task: str, objects: np.ndarray, start_left: np.ndarray, start_right: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each arm's keyframes as rows ``(step, x, y, z, qw, qx, qy, qz, gripper)`` (gripper 0 closed, 1 open).

    Args:
        task: ``"transfer_cube"`` or ``"insertion"``.
        objects: the objects' initial poses (:meth:`AlohaEnv.object_state`).
        start_left: the left mocap target's pose at reset (x, y, z, qw, qx, qy, qz).
        start_right: the right one's.
    """
    left0 = _keyframe(0, start_left[:3], start_left[3:], 0.0)
    right0 = _keyframe(0, start_right[:3], start_right[3:], 0.0)
    pitch_down = quat_multiply(start_right[3:], axis_angle_quat((0, 1, 0), -60))
    if task == "transfer_cube":
        cube = objects[:3]
        meet = np.array([0.0, 0.5, 0.25])
        rolled = axis_angle_quat((1, 0, 0), 90)  # the left gripper's fingers vertical, facing the cube
        level = np.array([1.0, 0.0, 0.0, 0.0])
        left = [
            left0,
            _keyframe(100, meet + [-0.1, 0, -0.02], rolled, 1),  # towards the meeting point, opening
            _keyframe(260, meet + [0.02, 0, -0.02], rolled, 1),  # around the cube
            _keyframe(310, meet + [0.02, 0, -0.02], rolled, 0),  # close on it
            _keyframe(360, meet + [-0.1, 0, -0.02], level, 0),  # pull it away
            _keyframe(PLAN_STEPS, meet + [-0.1, 0, -0.02], level, 0),
        ]
        right = [
            right0,
            _keyframe(90, cube + [0, 0, 0.08], pitch_down, 1),  # above the cube, opening
            _keyframe(130, cube + [0, 0, -0.015], pitch_down, 1),  # down around it
            _keyframe(170, cube + [0, 0, -0.015], pitch_down, 0),  # grasp
            _keyframe(200, meet + [0.05, 0, 0], pitch_down, 0),  # carry it up and over
            _keyframe(220, meet, pitch_down, 0),  # to the meeting point
            _keyframe(310, meet, pitch_down, 1),  # release it to the left gripper
            _keyframe(360, meet + [0.1, 0, 0], pitch_down, 1),  # move out of the way
            _keyframe(PLAN_STEPS, meet + [0.1, 0, 0], pitch_down, 1),
        ]
    elif task == "insertion":
        peg, socket = objects[:3], objects[7:10]
        meet = np.array([0.0, 0.5, 0.15])
        lift = 0.00715  # the right gripper holds the peg this much higher, level with the socket's hole
        # ACT builds the left gripper's orientation from the right one's start pose, mirrored
        pitch_left = quat_multiply(start_right[3:], axis_angle_quat((0, 1, 0), 60))
        left, right = [left0], [right0]
        for frames, obj, quat, side, dz in (
            (left, socket, pitch_left, -1, 0.0),
            (right, peg, pitch_down, 1, lift),
        ):
            frames += [
                _keyframe(120, obj + [0, 0, 0.08], quat, 1),  # above the object, opening
                _keyframe(170, obj + [0, 0, -0.03], quat, 1),  # down around it
                _keyframe(220, obj + [0, 0, -0.03], quat, 0),  # grasp
                # lift to either side of the meeting point
                _keyframe(285, meet + [side * 0.1, 0, dz], quat, 0),
                _keyframe(340, meet + [side * 0.05, 0, dz], quat, 0),  # push peg into socket
                _keyframe(PLAN_STEPS, meet + [side * 0.05, 0, dz], quat, 0),
            ]
    else:
        raise ValueError(f"no scripted expert for ALOHA task {task!r}")
    return np.stack(left), np.stack(right)


def interpolate(frames: np.ndarray, step: float) -> np.ndarray:
    """The target ``(x, y, z, qw, qx, qy, qz, gripper)`` at ``step``: linear between keyframes, held after."""
    return np.array([np.interp(step, frames[:, 0], frames[:, k]) for k in range(1, frames.shape[1])])


def joint_trajectory(
    task: str,
    objects: np.ndarray,
    steps: int = PLAN_STEPS,
    noise: float = 0.0,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, float]:
    """Run the scripted end-effector plan in gym-aloha's mocap physics and return its joint trajectory.

    Returns:
        ``(trajectory, best_reward)``: ``trajectory[t]`` (``steps`` rows, 14-D) is the joint target for the
        joint-space step ``t`` (the end-effector rollout's arm joints at step ``t``, its gripper commands in
        place of the measured openings, as ACT's ``record_sim_episodes.py``); ``best_reward`` is the highest
        reward the end-effector rollout reached (4 = solved there).
    """
    from dm_control import mujoco as dm_mujoco
    from gym_aloha import constants
    from gym_aloha.tasks import sim_end_effector

    from embodia.envs.aloha.env import CONTROL_DT

    class_name, xml_file = END_EFFECTOR_TASKS[task]
    physics = dm_mujoco.Physics.from_xml_path(str(constants.ASSETS_DIR / xml_file))
    ee_task = getattr(sim_end_effector, class_name)()
    n_sub_steps = round(CONTROL_DT / physics.model.opt.timestep)
    physics.model.eq_solimp[:, :3] = WELD_IMPEDANCE
    with physics.reset_context():
        ee_task.initialize_robots(physics)
        for i, joint in enumerate(OBJECT_JOINTS[task]):
            address = physics.model.jnt_qposadr[physics.model.name2id(joint, "joint")]
            physics.data.qpos[address : address + 7] = objects[7 * i : 7 * i + 7]
    start = [np.concatenate([physics.data.mocap_pos[i], physics.data.mocap_quat[i]]) for i in (0, 1)]
    left, right = waypoints(task, objects, *start)
    rng = rng if rng is not None else np.random.default_rng(0)

    def joint_targets() -> np.ndarray:
        qpos = np.asarray(ee_task.get_qpos(physics), dtype=np.float64)
        ctrl = physics.data.ctrl
        qpos[6] = constants.normalize_puppet_gripper_position(ctrl[0])
        qpos[13] = constants.normalize_puppet_gripper_position(ctrl[2])
        return qpos

    trajectory = [joint_targets()]
    best = 0.0
    for t in range(steps - 1):
        targets = [interpolate(left, t), interpolate(right, t)]
        if noise:
            for target in targets:
                target[:3] += rng.uniform(-noise, noise, size=3)
        ee_task.before_step(np.concatenate(targets), physics)
        physics.step(n_sub_steps)
        best = max(best, float(ee_task.get_reward(physics)))
        trajectory.append(joint_targets())
    return np.stack(trajectory), best


class AlohaScriptedExpert:
    """ACT's scripted policy for an :class:`AlohaEnv` (see the module docstring).

    On its first action of an episode it reads the objects' poses from the environment (privileged
    state, as ACT's script reads ``env_state``), runs the end-effector rollout and then returns its joint
    trajectory one step at a time, encoded as the environment's actions (scaled or absolute, see
    :meth:`AlohaEnv.action_for`); past the plan's end it holds the last target.

    Args:
        env: the environment it acts in (unwrapped).
        noise: half-width (m) of uniform noise on the end-effector targets (ACT's ``inject_noise``: 0.01).
    """

    chunk_size = 1

    def __init__(self, env: AlohaEnv, noise: float = 0.0) -> None:
        self.env = env
        self.noise = float(noise)
        self._rng = np.random.default_rng(0)
        self._trajectory: np.ndarray | None = None
        self._step = 0
        #: the best reward of the last end-effector rollout (4: the script solved the task there)
        self.planned_reward = 0.0

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._trajectory = None
        self._step = 0

    def act(self, obs: object) -> np.ndarray:
        # a new episode: nothing planned yet, or the simulation clock is back at zero (a reset)
        if self._trajectory is None or self.env.physics.data.time == 0.0:
            self._trajectory, self.planned_reward = joint_trajectory(
                self.env.task_name, self.env.object_state(), noise=self.noise, rng=self._rng
            )
            self._step = 0
        targets = self._trajectory[min(self._step, len(self._trajectory) - 1)]
        self._step += 1
        return self.env.action_for(targets).astype(np.float32)
