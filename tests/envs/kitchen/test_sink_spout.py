"""The faucet's swivel spout and RoboCasa's TurnSinkSpout (the joint, the left/right sectors, the
instruction drawn by the seed, an expert episode), and PnPSinkToCounter (start in the basin, the check's
parts, an expert episode)."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.envs.kitchen.layout import sample_kitchen
from embodia.envs.kitchen.sink_tasks import GRIPPER_FAR, SPOUT_TURNED, PnPSinkToCounter, on_countertop

ZERO = np.zeros(7, dtype=np.float32)


@pytest.fixture(scope="module")
def env():
    env = embodia.make("embodia/Kitchen-TurnSinkSpout-v0", terminate_on_success=False)
    yield env
    env.close()


def test_spout_swivels_a_quarter_turn_each_way_and_carries_the_water(env):
    env.reset(seed=0)
    scene = env.unwrapped.scene
    model = scene.mj_model
    joint = model.joint("sink_spout")
    np.testing.assert_allclose(model.jnt_range[joint.id], [-1.57, 1.57])
    scene.set_joint("sink_spout", 0.0)
    env.step(ZERO)
    middle = scene.site("sink_spout_tip")
    assert abs(middle[1] - scene.site("sink_basin")[1]) < 1e-3  # over the basin's middle
    scene.set_joint("sink_spout", 0.8)  # positive: the nozzle toward -y, the robot's right
    env.step(ZERO)
    right = scene.site("sink_spout_tip")
    assert right[1] < middle[1] - 0.1 and right[0] > middle[0]
    water = model.geom("sink_water").id
    assert model.geom_bodyid[water] == model.body("sink_spout").id  # the stream follows the nozzle


def test_success_needs_the_instructed_side_past_robocasas_sector(env):
    _, info = env.reset(seed=0)
    turn = env.unwrapped.layout.spout_turn
    assert info["instruction"] == f"turn the sink spout to the {'left' if turn < 0 else 'right'}"
    scene = env.unwrapped.scene
    for angle, expected in ((SPOUT_TURNED + 0.03, True), (SPOUT_TURNED - 0.03, False)):
        for side, want in ((turn, expected), (-turn, False)):
            scene.set_joint("sink_spout", side * angle)
            *_, info = env.step(ZERO)
            assert info["success"] == want, (side, angle)


def test_the_seed_draws_both_directions():
    turns = {sample_kitchen(np.random.default_rng(seed)).spout_turn for seed in range(10)}
    assert turns == {-1.0, 1.0}


def test_expert_turns_the_spout():
    result = embodia.rollout("embodia/Kitchen-TurnSinkSpout-v0", "expert", episodes=1, seed=1)
    assert result.success_rate == 1.0 and result.episodes[0].terminated


def test_pick_from_the_sink_starts_in_the_basin_and_needs_a_release():
    env = embodia.make("embodia/Kitchen-PnPSinkToCounter-v0")
    try:
        _, info = env.reset(seed=2)
        scene, layout = env.unwrapped.scene, env.unwrapped.layout
        assert (
            info["instruction"] == f"pick the {layout.object_name} from the sink and place it on the counter"
        )
        obj, basin = scene.object_pos, scene.site("sink_basin")
        assert obj[2] < layout.counter_height - layout.basin_depth / 2  # down in the basin
        assert np.all(np.abs(obj[:2] - basin[:2]) < [layout.basin_length / 2, layout.basin_width / 2])
        # on the countertop beside the sink: success exactly when the gripper is > 25 cm away (RoboCasa)
        for x in (0.12, layout.counter_depth - 0.08):
            spot = np.array([x, PnPSinkToCounter.counter_spot_y(layout), layout.counter_height])
            height = -scene.object.bottom_offset[2] + 0.002
            scene.set_object_pose(spot + [0.0, 0.0, height], np.array([1.0, 0.0, 0.0, 0.0]))
            for _ in range(3):  # let it settle onto the countertop
                *_, info = env.step(ZERO)
            assert on_countertop(scene)
            far = np.linalg.norm(scene.eef_pos - scene.object_pos) > GRIPPER_FAR
            assert info["success"] == far
    finally:
        env.close()


def test_expert_takes_the_object_out_of_the_sink():
    result = embodia.rollout("embodia/Kitchen-PnPSinkToCounter-v0", "expert", episodes=1, seed=3)
    assert result.success_rate == 1.0 and result.episodes[0].terminated
