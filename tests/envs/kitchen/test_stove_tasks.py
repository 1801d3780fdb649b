"""Stove tasks: knob angle -> burner on/off and its flame, success checks, instructions, one expert episode each."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.envs.kitchen.layout import BURNERS, MODULE_KINDS, sample_kitchen
from embodia.envs.kitchen.stove_tasks import burner_words
from embodia.envs.kitchen.task import BURNER_ON

ZERO = np.zeros(7, dtype=np.float32)
STOVE_TASKS = ("TurnOnStove", "TurnOffStove", "PnPCounterToStove", "PnPStoveToCounter")


def _settle(env, steps: int = 10) -> dict:
    """Step with zero actions until a placed object has landed (robosuite's bottom offsets of the can and
    the milk carton lie below their collision geoms, so objects placed by them drop a little); the last
    step's info."""
    for _ in range(steps):
        *_, info = env.step(ZERO)
    return info


def _flame_alpha(scene, burner: str) -> float:
    model = scene.mj_model
    return float(model.geom_rgba[model.geom(f"stove_flame_{burner}").id, 3])


def test_every_kitchen_has_the_stove_beside_the_drawer_away_from_the_sink():
    burners = set()
    for seed in range(60):
        layout = sample_kitchen(np.random.default_rng(seed))
        modules = layout.modules
        assert modules.count("stove") == 1 and "stove" in MODULE_KINDS
        stove = modules.index("stove")
        neighbours = {modules[i] for i in (stove - 1, stove + 1) if 0 <= i < len(modules)}
        assert "drawer" in neighbours and "sink" not in neighbours, modules
        assert modules[layout.cabinet_module] not in ("sink", "stove")
        burners.add(BURNERS[layout.stove_burner])
        assert np.array_equal(type(layout).from_vector(layout.to_vector()).to_vector(), layout.to_vector())
    assert burners == set(BURNERS)  # the seed chooses the burner


def test_knob_angle_turns_its_burner_and_flame_on_and_off():
    env = embodia.make("embodia/Kitchen-TurnOnStove-v0", terminate_on_success=False)
    try:
        env.reset(seed=0)
        scene, task = env.unwrapped.scene, env.unwrapped.task
        named = task.burner(scene.layout)
        assert all(_flame_alpha(scene, b) == 0.0 for b in BURNERS)  # every burner starts off
        for burner in BURNERS:
            for angle, lit in ((BURNER_ON - 0.05, False), (BURNER_ON + 0.05, True), (0.0, False)):
                scene.set_joint(f"stove_knob_{burner}", angle)
                *_, info = env.step(ZERO)
                assert (_flame_alpha(scene, burner) > 0) == lit, (burner, angle)
                assert info["success"] == (lit and burner == named), (burner, angle)
        # the knob stays where it was turned (friction), and its range stops at RoboCasa's 0..pi
        scene.set_joint(f"stove_knob_{named}", 0.8)
        for _ in range(20):
            env.step(ZERO)
        assert abs(scene.joint(f"stove_knob_{named}") - 0.8) < 0.02
        joint = scene.mj_model.joint(f"stove_knob_{named}")
        np.testing.assert_allclose(joint.range, [0.0, np.pi], atol=1e-3)
    finally:
        env.close()


@pytest.mark.parametrize("task", STOVE_TASKS)
def test_instruction_names_the_seeded_burner(task):
    env = embodia.make(f"embodia/Kitchen-{task}-v0")
    try:
        instructions = []
        for seed in (0, 1):
            _, info = env.reset(seed=seed)
            burner = BURNERS[env.unwrapped.layout.stove_burner]
            assert f" {burner_words(burner)} burner" in info["instruction"]
            instructions.append(info["instruction"])
        # a saved state rebuilds its own kitchen and instruction
        state = env.unwrapped.get_state()
        env.reset(seed=0)
        env.unwrapped.set_state(state)
        assert env.unwrapped.instruction == instructions[1]
    finally:
        env.close()


def test_counter_to_stove_check_needs_the_named_burner_and_a_resting_object():
    env = embodia.make("embodia/Kitchen-PnPCounterToStove-v0", terminate_on_success=False)
    try:
        env.reset(seed=2)
        scene, task, layout = env.unwrapped.scene, env.unwrapped.task, env.unwrapped.layout
        start = env.unwrapped.get_state()
        half = -scene.object.bottom_offset[2]
        upright = np.array([1.0, 0.0, 0.0, 0.0])

        def success_with_object_on(burner: str, offset=(0.0, 0.0)) -> bool:
            env.unwrapped.set_state(start)
            site = scene.site(f"stove_burner_{burner}")
            scene.set_object_pose(
                np.array([site[0] + offset[0], site[1] + offset[1], site[2] + half + 0.002]), upright
            )
            return _settle(env)["success"]

        named = task.burner(layout)
        assert success_with_object_on(named)
        assert success_with_object_on(named, (0.05, 0.03))  # inside RoboCasa's 8 cm
        assert not success_with_object_on(named, (0.1, 0.0))
        assert not any(success_with_object_on(b) for b in BURNERS if b != named)
        # held up above the burner: not resting on it
        env.unwrapped.set_state(start)
        site = scene.site(f"stove_burner_{named}")
        scene.set_object_pose(np.array([site[0], site[1], site[2] + half + 0.1]), upright)
        *_, info = env.step(ZERO)
        assert not info["success"]
    finally:
        env.close()


def test_stove_to_counter_check_wants_the_countertop_off_the_stove():
    env = embodia.make("embodia/Kitchen-PnPStoveToCounter-v0", terminate_on_success=False)
    try:
        env.reset(seed=3)
        scene, task, layout = env.unwrapped.scene, env.unwrapped.task, env.unwrapped.layout
        start = env.unwrapped.get_state()
        half = -scene.object.bottom_offset[2]
        upright = np.array([1.0, 0.0, 0.0, 0.0])
        assert not _settle(env)["success"] and task.on_burner(scene)  # it starts on the burner

        def success_at(x: float, y: float) -> bool:
            env.unwrapped.set_state(start)
            scene.set_object_pose(np.array([x, y, layout.counter_height + half + 0.002]), upright)
            return _settle(env)["success"]

        spot = task.counter_spot(layout)
        assert success_at(*spot)
        stove_y = task.stove_center(layout)
        # on the stove's countertop strip in front of the cooktop (off the burner, but on the stove)
        assert not success_at(0.07, stove_y + 0.3 * task.free_side(layout))
    finally:
        env.close()


@pytest.mark.parametrize(("task", "seed"), [(t, 200) for t in STOVE_TASKS])
def test_expert_succeeds(task, seed):
    result = embodia.rollout(f"embodia/Kitchen-{task}-v0", "expert", episodes=1, seed=seed)
    assert result.success_rate == 1.0, f"{task} seed {seed}: expert failed"
    assert result.episodes[0].terminated
