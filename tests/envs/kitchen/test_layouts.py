"""Kitchen layouts and styles: catalogue ids fix the kitchen, lists restrict the draw, a state carries its
kitchen, and an L-shaped kitchen passes the environment contracts."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import embodia
from embodia.core.env import check_embodied_env
from embodia.data.store import TrajectoryStore
from embodia.envs.kitchen.layout import (
    LAYOUTS,
    MODULE_KINDS,
    N_LAYOUTS,
    N_STYLES,
    STYLES,
    KitchenLayout,
    layout_geometry,
    layout_table,
    sample_kitchen,
    style_table,
)
from embodia.runner.replay import replay

TASK = "embodia/Kitchen-OpenDrawer-v0"
L_LEFT = next(i for i, spec in enumerate(LAYOUTS) if spec.left_return and not spec.right_return)
U_SHAPED = next(i for i, spec in enumerate(LAYOUTS) if spec.left_return and spec.right_return)


def _geometry(layout) -> tuple:
    """What a layout id fixes, as comparable values."""
    return (
        layout.modules,
        layout.module_widths,
        layout.counter_height,
        layout.counter_depth,
        layout.microwave_module,
        layout.coffee_module,
        layout.cabinet_module,
        layout.return_left,
        layout.return_right,
    )


def test_the_catalogue_varies_the_run_and_every_layout_keeps_the_tasks_constraints():
    lengths, counters = set(), set()
    for i, spec in enumerate(LAYOUTS):
        geometry = layout_geometry(i)
        kinds = [MODULE_KINDS[code] for code in geometry["module_codes"]]
        assert kinds.count("counter") == spec.counters and len(kinds) == spec.counters + 3
        sink, stove = kinds.index("sink"), kinds.index("stove")
        assert abs(stove - kinds.index("drawer")) == 1 and abs(stove - sink) > 1
        assert abs(geometry["microwave_module"] - sink) > 1 and abs(geometry["coffee_module"] - sink) > 1
        assert geometry["microwave_module"] != geometry["coffee_module"]
        # no wall cabinet over the coffee machine; the robot beside its hinge is not before the microwave
        assert geometry["cabinet_module"] != geometry["coffee_module"]
        assert geometry["microwave_module"] != geometry["cabinet_module"] - geometry["hinge_sign"]
        assert (geometry["return_left"] > 0) == spec.left_return
        assert (geometry["return_right"] > 0) == spec.right_return
        lengths.add(round(sum(geometry["module_widths"]), 2))
        counters.add(spec.counters)
        kitchen = sample_kitchen(np.random.default_rng(i), layouts=(i,))
        assert KitchenLayout.from_vector(kitchen.to_vector()) == kitchen  # shorter runs: padded slots
    assert len(lengths) == N_LAYOUTS and counters == {3, 4, 5}  # runs of different lengths
    assert N_STYLES == len(STYLES) >= 12 and len({s.name for s in STYLES}) == N_STYLES


def test_a_list_of_ids_only_draws_from_the_list():
    layouts, styles = set(), set()
    for seed in range(40):
        kitchen = sample_kitchen(np.random.default_rng(seed), layouts=(1, 4), styles=(7,))
        layouts.add(kitchen.layout_id)
        styles.add(kitchen.style_id)
        again = sample_kitchen(np.random.default_rng(0), layouts=(kitchen.layout_id,))
        assert _geometry(kitchen) == _geometry(again)
    assert layouts == {1, 4} and styles == {7}
    drawn = {sample_kitchen(np.random.default_rng(seed)).layout_id for seed in range(100)}
    assert drawn == set(range(N_LAYOUTS))  # None: the whole catalogue


def test_a_layout_id_fixes_the_geometry_and_the_seed_the_episode():
    envs = [embodia.make(TASK, layout=3), embodia.make(TASK, layout=[3])]
    try:
        for env, seed in zip(envs, (0, 1)):
            env.reset(seed=seed)
        first, second = (env.unwrapped.layout for env in envs)
        assert first.layout_id == second.layout_id == 3
        assert _geometry(first) == _geometry(second)
        positions = [env.unwrapped.scene.object_pos for env in envs]
        assert np.linalg.norm(positions[0] - positions[1]) > 1e-3  # the seed draws the episode
        assert (first.robot_x, first.robot_y) != (second.robot_x, second.robot_y)
        # the same seed and arguments give the same kitchen
        envs[1].reset(seed=0)
        np.testing.assert_array_equal(envs[1].unwrapped.get_state(), envs[0].unwrapped.get_state())
    finally:
        for env in envs:
            env.close()


def test_a_style_changes_colours_but_not_geometry():
    envs = [embodia.make(TASK, layout=5, style=style) for style in (0, 1)]
    try:
        for env in envs:
            env.reset(seed=2)
        models = [env.unwrapped.scene.mj_model for env in envs]
        assert _geometry(envs[0].unwrapped.layout) == _geometry(envs[1].unwrapped.layout)
        for name in ("geom_pos", "geom_size", "body_pos", "body_quat"):
            np.testing.assert_array_equal(getattr(models[0], name), getattr(models[1], name))
        assert not np.array_equal(models[0].mat_rgba, models[1].mat_rgba)
        assert [env.unwrapped.layout.style_id for env in envs] == [0, 1]
        handles = [model.mat_rgba[model.material("drawer_metal").id] for model in models]
        assert not np.array_equal(*handles)  # the handle finish: matte black (industrial), steel
    finally:
        for env in envs:
            env.close()


def test_an_l_shaped_layout_builds_its_return_beside_the_run():
    env = embodia.make(TASK, layout=L_LEFT, render_mode="rgb_array", width=48, height=32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", message=".*infinity.*")  # proprioception is unbounded
            check_env(env.unwrapped, skip_render_check=False)
        check_embodied_env(env)
        env.reset(seed=0)
        layout, model = env.unwrapped.layout, env.unwrapped.scene.mj_model
        run_end = sum(layout.module_widths) / 2
        assert layout.return_left > 0 and layout.return_right == 0
        data = env.unwrapped.scene.mj_data
        for name in ("return_left0_top", "return_left1_top", "corner_left_top"):
            assert model.geom(name).id >= 0
        return_top = data.geom_xpos[model.geom("return_left1_top").id]
        # along the side wall beyond the blind corner, reaching from the cabinet fronts toward the room
        assert return_top[1] > run_end + layout.corner_width and return_top[0] < 0
        assert not any(model.geom(g).name.startswith("return_right") for g in range(model.ngeom))
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"layout": N_LAYOUTS}, f"layout must be an id in 0..{N_LAYOUTS - 1}"),
        ({"layout": [0, -1]}, "layout must be an id"),
        ({"layout": []}, "layout must be an id"),
        ({"layout": "3"}, "layout must be an id"),
        ({"style": N_STYLES}, f"style must be an id in 0..{N_STYLES - 1}"),
        ({"style": 1.5}, "style must be an id"),
    ],
)
def test_an_out_of_range_id_is_a_clear_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        embodia.make(TASK, **kwargs)


def test_a_state_carries_its_kitchen_into_an_env_of_another_layout():
    source, target = embodia.make(TASK, layout=2), embodia.make(TASK, layout=5)
    try:
        source.reset(seed=4)
        for _ in range(3):
            source.step(np.full(7, 0.2, dtype=np.float32))
        state = source.unwrapped.get_state()
        target.reset(seed=4)
        assert target.unwrapped.layout.layout_id == 5
        target.unwrapped.set_state(state)
        assert target.unwrapped.layout.layout_id == 2
        assert _geometry(target.unwrapped.layout) == _geometry(source.unwrapped.layout)
        np.testing.assert_array_equal(target.unwrapped.get_state(), state)
        action = np.full(7, -0.3, dtype=np.float32)
        np.testing.assert_array_equal(target.step(action)[0]["state"], source.step(action)[0]["state"])
    finally:
        source.close()
        target.close()


def test_the_guide_shows_the_catalogue_tables():
    guide = (Path(__file__).resolve().parents[3] / "docs" / "guides" / "kitchens.md").read_text()
    assert layout_table() in guide, "update the layout table in docs/guides/kitchens.md from layout_table()"
    assert style_table() in guide, "update the style table in docs/guides/kitchens.md from style_table()"


def test_a_recorded_store_keeps_the_layout_arguments_and_replays(tmp_path):
    store_path = tmp_path / "layouts.zarr"
    result = embodia.rollout(
        TASK, "random", episodes=2, seed=0, max_steps=3, record=store_path, env_kwargs={"layout": [3, 7]}
    )
    assert len(result.episodes) == 2
    store = TrajectoryStore(store_path)
    assert store.episode_meta(1).env_kwargs == {"layout": [3, 7]}
    for replayed in replay(store, verify=True, tolerance=1e-9):
        assert replayed.max_deviation <= 1e-9


def test_every_layout_gives_states_of_one_size():
    # a store holds one state shape: the shortest one-wall run and the longest U-shaped kitchen (the most
    # static bodies) must give states of the same size
    assert LAYOUTS[0].counters == 3 and not LAYOUTS[0].left_return and not LAYOUTS[0].right_return
    assert LAYOUTS[9].counters == 5 and LAYOUTS[9].left_return and LAYOUTS[9].right_return
    env = embodia.make(TASK, layout=[0, 9])
    try:
        sizes = {}
        for seed in range(8):
            env.reset(seed=seed)
            sizes[env.unwrapped.layout.layout_id] = len(env.unwrapped.get_state())
            if len(sizes) == 2:
                break
        assert len(sizes) == 2 and len(set(sizes.values())) == 1, sizes
    finally:
        env.close()
