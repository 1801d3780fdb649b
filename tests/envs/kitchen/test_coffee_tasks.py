"""Coffee machine tasks: the serve button's latch, the mug checks, the layout draws, the experts."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.envs.kitchen.coffee_geometry import MUG_HEIGHT
from embodia.envs.kitchen.coffee_tasks import serve_spot
from embodia.envs.kitchen.layout import N_DRAWN_OBJECTS, OBJECT_KINDS, sample_kitchen

ZERO = np.zeros(7, dtype=np.float32)
UPRIGHT = np.array([1.0, 0.0, 0.0, 0.0])
LYING = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])  # on its side (90 degrees about x)


def _place_mug(scene, xy, bottom_z, quat=UPRIGHT) -> None:
    """Stand the mug with its bottom at ``bottom_z`` (0.5 mm into the surface: it touches at once)."""
    scene.set_object_pose(np.array([xy[0], xy[1], bottom_z + MUG_HEIGHT / 2 - 0.0005]), quat)


def set_coffee_success_state(task: str, env, succeed: bool) -> None:
    """Write a state where the coffee ``task`` holds (``succeed``) or does not (used by test_kitchen)."""
    scene, layout = env.unwrapped.scene, env.unwrapped.layout
    station = scene.site("coffee_machine_station")
    if task == "CoffeePressButton":  # the latch "the machine is on" is the last state entry
        state = env.unwrapped.get_state()
        state[-1] = float(succeed)
        env.unwrapped.set_state(state)
    elif task == "CoffeeSetupMug":  # on the drip tray, or still on the counter beside the machine
        if succeed:
            _place_mug(scene, station[:2], station[2])
        else:
            _place_mug(scene, serve_spot(layout), layout.counter_height)
    else:  # CoffeeServeMug: on the counter beside the machine, or still under the dispenser
        if succeed:
            _place_mug(scene, serve_spot(layout), layout.counter_height)
        else:
            _place_mug(scene, station[:2], station[2])


def _success_after(env, start, place) -> bool:
    """``info["success"]`` one step after ``place`` moved the mug in the state ``start``."""
    env.unwrapped.set_state(start)
    place(env.unwrapped.scene, env.unwrapped.layout)
    *_, info = env.step(ZERO)
    return info["success"]


@pytest.mark.parametrize("task", ["CoffeeSetupMug", "CoffeeServeMug"])
def test_mug_checks_hold_and_fail(task):
    env = embodia.make(f"embodia/Kitchen-{task}-v0")
    try:
        env.reset(seed=2)
        start = env.unwrapped.get_state()
        assert OBJECT_KINDS[env.unwrapped.layout.object_kind] == "mug"
        assert "mug" in env.unwrapped.instruction and "coffee machine dispenser" in env.unwrapped.instruction
        station = env.unwrapped.scene.site("coffee_machine_station")
        goal_on_station = task == "CoffeeSetupMug"

        def on_station(quat):
            return lambda sc, layout: _place_mug(sc, station[:2], station[2], quat)

        def on_counter(quat):
            return lambda sc, layout: _place_mug(sc, serve_spot(layout), layout.counter_height, quat)

        goal, other = (on_station, on_counter) if goal_on_station else (on_counter, on_station)
        assert _success_after(env, start, goal(UPRIGHT))
        assert not _success_after(env, start, other(UPRIGHT))  # in the wrong place
        assert not _success_after(env, start, goal(LYING))  # in the right place, but on its side
        if goal_on_station:  # 4 cm beside the station's centre is too far (RoboCasa's threshold)
            shifted = lambda sc, layout: _place_mug(sc, station[:2] + [0, 0.045], station[2])  # noqa: E731
            assert not _success_after(env, start, shifted)
    finally:
        env.close()


def test_the_coffee_machine_latches_on_and_the_latch_is_in_the_saved_state():
    env = embodia.make("embodia/Kitchen-CoffeePressButton-v0", terminate_on_success=False)
    try:
        obs, _ = env.reset(seed=0)
        expert = env.unwrapped.make_expert()
        expert.reset(0)
        scene = env.unwrapped.scene
        before = env.unwrapped.get_state()
        for _ in range(150):
            obs, _, _, _, info = env.step(expert.act(obs))
            if info["success"]:
                break
        assert info["success"] and scene.joint("coffee_machine_button") >= 0.006
        coffee = scene.mj_model.geom("coffee_machine_coffee").id
        assert scene.mj_model.geom_rgba[coffee, 3] > 0  # coffee runs
        for _ in range(40):  # the expert lets go; the spring pushes the button out; the machine stays on
            obs, _, _, _, info = env.step(expert.act(obs))
        assert scene.joint("coffee_machine_button") < 0.003 and info["success"]
        pressed = env.unwrapped.get_state()
        env.unwrapped.set_state(before)
        *_, info = env.step(ZERO)
        assert not info["success"] and scene.mj_model.geom_rgba[coffee, 3] == 0
        env.unwrapped.set_state(pressed)
        *_, info = env.step(ZERO)
        assert info["success"]
    finally:
        env.close()


def test_layouts_place_the_machine_apart_and_other_tasks_never_draw_the_mug():
    for seed in range(200):
        layout = sample_kitchen(np.random.default_rng(seed))
        kinds = layout.modules
        assert kinds[layout.coffee_module] == "counter" and layout.coffee_module != layout.microwave_module
        neighbours = [
            kinds[i] for i in (layout.coffee_module - 1, layout.coffee_module + 1) if 0 <= i < len(kinds)
        ]
        assert "sink" not in neighbours
        assert layout.object_kind < N_DRAWN_OBJECTS and OBJECT_KINDS[layout.object_kind] != "mug"


@pytest.mark.parametrize(
    ("task", "seed"), [("CoffeeSetupMug", 100), ("CoffeeServeMug", 100), ("CoffeePressButton", 100)]
)
def test_expert_succeeds(task, seed):
    result = embodia.rollout(f"embodia/Kitchen-{task}-v0", "expert", episodes=1, seed=seed)
    assert result.success_rate == 1.0, f"{task} seed {seed}: expert failed"
    assert result.episodes[0].terminated
