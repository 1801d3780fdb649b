"""The microwave after RoboCasa's: hinged door, start / stop buttons with an on-latch in the saved state,
RoboCasa's thresholds and "gripper far" checks, and one expert episode per task."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.envs.kitchen.microwave_pnp_tasks import OBJECT_FAR
from embodia.envs.kitchen.microwave_tasks import BUTTON_FAR, MICROWAVE_DOOR_CLOSED, MICROWAVE_DOOR_OPEN

ZERO = np.zeros(7, dtype=np.float32)
MICROWAVE_TASKS = (
    "TurnOnMicrowave",
    "TurnOffMicrowave",
    "PressMicrowaveButton",
    "OpenMicrowaveDoor",
    "CloseMicrowaveDoor",
    "PnPCounterToMicrowave",
    "PnPMicrowaveToCounter",
)


def test_robocasa_door_thresholds():
    assert np.isclose(MICROWAVE_DOOR_OPEN, 0.9 * np.pi / 2)  # RoboCasa: 90 % of a quarter turn
    assert np.isclose(MICROWAVE_DOOR_CLOSED, 0.05 * np.pi / 2)


def test_the_door_swings_on_its_left_hinge_toward_the_room():
    env = embodia.make("embodia/Kitchen-OpenMicrowaveDoor-v0")
    try:
        env.reset(seed=2)
        unwrapped = env.unwrapped
        scene = unwrapped.scene
        hinge = scene.site("microwave_door_hinge")
        closed = scene.site("microwave_door_handle")
        center = unwrapped.layout.module_centers[unwrapped.layout.microwave_module]
        assert hinge[1] > center > closed[1]  # hinge on the left (+y, seen from the room), handle right
        scene.set_joint("microwave_door", np.pi / 2)
        unwrapped.set_state(unwrapped.get_state())  # forward the kinematics
        opened = scene.site("microwave_door_handle")
        radius = np.linalg.norm((closed - hinge)[:2])
        assert np.linalg.norm((opened - hinge)[:2]) == pytest.approx(radius, abs=1e-6)
        assert opened[0] < hinge[0] - 0.8 * radius  # a quarter turn: the handle stands out in the room
        assert abs(opened[1] - hinge[1]) < 0.1
        *_, info = env.step(ZERO)
        assert info["success"]  # and the door stays open: the hinge has no spring
        assert scene.joint("microwave_door") >= MICROWAVE_DOOR_OPEN
    finally:
        env.close()


def test_the_on_latch_follows_robocasa_and_is_saved():
    env = embodia.make("embodia/Kitchen-TurnOffMicrowave-v0")
    try:
        env.reset(seed=0)
        unwrapped = env.unwrapped
        scene, task = unwrapped.scene, unwrapped.task
        started_on = unwrapped.get_state()
        assert started_on[-1] == 1.0 and task.microwave_on(scene)
        scene.set_joint("microwave_button", 0.008)  # start while on: stays on
        task.update(scene)
        assert task.microwave_on(scene)
        scene.set_joint("microwave_button", 0.0)
        scene.set_joint("microwave_stop_button", 0.008)  # stop: off
        task.update(scene)
        assert not task.microwave_on(scene) and unwrapped.get_state()[-1] == 0.0
        scene.set_joint("microwave_stop_button", 0.0)
        scene.set_joint("microwave_door", MICROWAVE_DOOR_OPEN + 0.05)  # door open: start does nothing
        scene.set_joint("microwave_button", 0.008)
        task.update(scene)
        assert not task.microwave_on(scene)
        unwrapped.set_state(started_on)  # the latch comes back with the state
        assert task.microwave_on(scene)
        scene.set_joint("microwave_door", MICROWAVE_DOOR_OPEN + 0.05)  # opening the door turns it off
        task.update(scene)
        assert not task.microwave_on(scene)
    finally:
        env.close()


def test_turn_on_needs_the_gripper_away_from_the_button_but_press_does_not():
    for task_name, expected in (("TurnOnMicrowave", False), ("PressMicrowaveButton", True)):
        env = embodia.make(f"embodia/Kitchen-{task_name}-v0")
        try:
            env.reset(seed=0)
            unwrapped = env.unwrapped
            scene = unwrapped.scene
            assert np.linalg.norm(scene.eef_pos - scene.site("microwave_button")) < BUTTON_FAR
            state = unwrapped.get_state()
            state[-1] = 1.0  # on, with the gripper where it starts (within 15 cm of the start button)
            unwrapped.set_state(state)
            *_, info = env.step(ZERO)
            assert info["success"] is expected, task_name
        finally:
            env.close()


def test_pnp_counts_only_once_the_gripper_is_25_cm_away():
    env = embodia.make("embodia/Kitchen-PnPMicrowaveToCounter-v0")
    try:
        env.reset(seed=0)
        unwrapped = env.unwrapped
        scene = unwrapped.scene
        assert scene.joint("microwave_door") >= MICROWAVE_DOOR_OPEN  # RoboCasa: the door starts open
        assert unwrapped.layout.object_name in ("lemon", "bread roll")  # microwavable
        x, y = unwrapped.task.counter_spot(scene)
        z = unwrapped.layout.counter_height - scene.object.bottom_offset[2] + 0.002
        scene.set_object_pose(np.array([x, y, z]), np.array([1.0, 0.0, 0.0, 0.0]))
        for _ in range(40):  # 0.08 s: the object settles on the countertop
            scene.sim.step()
        unwrapped.set_state(unwrapped.get_state())
        assert np.linalg.norm(scene.eef_pos - scene.object_pos) < OBJECT_FAR
        *_, info = env.step(ZERO)
        assert not info["success"]  # on the counter, but the gripper is close
        scene.mj_data.qpos[scene.arm_qpos[0]] -= 0.8  # swing the arm away (right, off the open door)
        unwrapped.set_state(unwrapped.get_state())
        *_, info = env.step(ZERO)
        assert info["success"]
    finally:
        env.close()


@pytest.mark.parametrize("task", MICROWAVE_TASKS)
def test_expert_succeeds_once(task):
    result = embodia.rollout(f"embodia/Kitchen-{task}-v0", "expert", episodes=1, seed=200)
    assert result.success_rate == 1.0, f"{task}: expert failed on seed 200"
    assert result.episodes[0].terminated
