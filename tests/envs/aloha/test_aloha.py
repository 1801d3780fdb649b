"""The ALOHA tasks through gym-aloha: contract, seeding, exact state, scripted experts, recording and replay."""

from __future__ import annotations

import numpy as np
import pytest
from gym_aloha.utils import sample_box_pose, sample_insertion_pose

import embodia
from embodia.core.env import check_embodied_env
from embodia.core.errors import ActionError, EnvArgumentError
from embodia.data.store import TrajectoryStore
from embodia.envs import env_ids
from embodia.envs.aloha.experts import joint_trajectory
from embodia.runner.replay import replay

IDS = ("embodia/AlohaTransferCube-v0", "embodia/AlohaInsertion-v0")


def test_ids_are_registered():
    assert set(IDS) <= set(env_ids())


@pytest.mark.parametrize("env_id", IDS)
def test_contract_with_the_top_camera(env_id):
    env = embodia.make(env_id, render_mode="rgb_array", cameras=("top",), camera_width=64, camera_height=48)
    try:
        check_embodied_env(env)
        obs, info = env.reset(seed=1)
        assert set(obs) == {"state", "top_rgb"} and info["success"] is False
        assert obs["state"].shape == (14,) and obs["state"].dtype == np.float32
        assert obs["top_rgb"].shape == (48, 64, 3) and obs["top_rgb"].dtype == np.uint8
        assert obs["top_rgb"].std() > 0  # a picture, not a blank frame
        assert env.render().shape == (240, 320, 3)
        # ACT's qpos: the arms at gym-aloha's start pose, both grippers (normalised) nearly closed
        assert np.allclose(obs["state"][[1, 2, 8, 9]], [-0.96, 1.16, -0.96, 1.16], atol=1e-6)
    finally:
        env.close()


def test_seeds_place_objects_as_gym_aloha_does():
    env = embodia.make("embodia/AlohaInsertion-v0")
    env.reset(seed=7)
    assert np.array_equal(env.unwrapped.object_state(), np.concatenate(sample_insertion_pose(7)))
    cube = embodia.make("embodia/AlohaTransferCube-v0")
    cube.reset(seed=7)
    first = cube.unwrapped.object_state()
    assert np.array_equal(first, sample_box_pose(7))
    cube.reset(seed=8)
    assert not np.allclose(cube.unwrapped.object_state()[:2], first[:2])


def test_set_state_reproduces_the_future_exactly():
    env = embodia.make("embodia/AlohaTransferCube-v0").unwrapped
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    start = env.action_for(env.qpos())
    for _ in range(5):
        env.step(start + rng.normal(0, 0.05, 14))
    state = env.get_state()
    actions = [start + rng.normal(0, 0.05, 14) for _ in range(10)]
    first = [env.step(a) for a in actions]
    env.reset(seed=5)  # somewhere else entirely
    env.set_state(state)
    assert np.array_equal(env.get_state(), state)
    second = [env.step(a) for a in actions]
    for (obs_a, reward_a, *_), (obs_b, reward_b, *_) in zip(first, second):
        assert np.array_equal(obs_a["state"], obs_b["state"]) and reward_a == reward_b
    with pytest.raises(ValueError, match="expects"):
        env.set_state(state[:-1])


@pytest.mark.parametrize(("env_id", "seed"), [(IDS[0], 11), (IDS[1], 12)])
def test_scripted_expert_solves_the_task(env_id, seed):
    result = embodia.rollout(env_id, "expert", episodes=1, seed=seed)
    assert result.success_rate == 1.0
    # gym-aloha's success is its maximum reward, and the episode ends there
    assert result.episodes[0].length < 400


def test_end_effector_rollout_reaches_the_maximum_reward():
    trajectory, best = joint_trajectory("transfer_cube", np.asarray(sample_box_pose(4), dtype=np.float64))
    assert trajectory.shape == (400, 14) and best == 4.0
    # the gripper commands: closed at the start, open while approaching the cube
    assert trajectory[0, 13] == pytest.approx(0.0) and trajectory[90, 13] > 0.9


def test_recorded_expert_episode_replays_exactly(tmp_path):
    store_path = tmp_path / "insertion.zarr"
    result = embodia.rollout(IDS[1], "expert", episodes=1, seed=3, record=store_path, record_sim_state=True)
    assert result.success_rate == 1.0
    store = TrajectoryStore(store_path)
    assert {"state", "action", "sim_state"} <= set(store.keys)
    (replayed,) = replay(store, verify=True, tolerance=0.0)
    assert replayed.success and replayed.max_deviation == 0.0


def test_bad_arguments_and_actions_are_refused_in_one_line():
    with pytest.raises(EnvArgumentError, match="unknown camera 'wrist'.*top"):
        embodia.make(IDS[0], cameras=("wrist",))
    with pytest.raises(EnvArgumentError, match="camera_width must be a positive integer"):
        embodia.make(IDS[0], camera_width=0)
    env = embodia.make(IDS[0])
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"expects \(14,\)"):
        env.step(np.zeros(16, dtype=np.float32))
    with pytest.raises(ActionError, match="NaN"):
        env.step(np.full(14, np.nan, dtype=np.float32))


def test_scaled_and_absolute_actions_drive_the_arms_alike():
    scaled = embodia.make(IDS[0]).unwrapped
    absolute = embodia.make(IDS[0], absolute_actions=True).unwrapped
    assert scaled.action_space.low.min() == -1 and scaled.action_space.high.max() == 1
    assert absolute.action_space.high[1] == pytest.approx(1.25664)  # the shoulder's range, radians
    scaled.reset(seed=0)
    absolute.reset(seed=0)
    start = scaled.qpos()
    targets = start + np.linspace(-0.1, 0.1, 14)
    targets[[6, 13]] = [1.0, 0.5]
    action = scaled.action_for(targets)
    assert np.allclose(scaled.joint_targets(action), targets)
    for _ in range(3):
        obs_scaled, *_ = scaled.step(action.astype(np.float32))
        obs_absolute, *_ = absolute.step(targets.astype(np.float32))
    # float32 rounding of the two encodings differs by ~1e-7 rad; the arms end where each other's do
    assert np.allclose(obs_scaled["state"], obs_absolute["state"], atol=1e-4)
    assert not np.allclose(obs_scaled["state"], start, atol=1e-3)  # and they did move


def test_expert_works_with_absolute_actions():
    result = embodia.rollout(IDS[0], "expert", episodes=1, seed=4, env_kwargs={"absolute_actions": True})
    assert result.success_rate == 1.0


def test_a_diverging_simulation_truncates_the_episode():
    env = embodia.make(IDS[0]).unwrapped
    env.reset(seed=7)
    env.action_space.seed(7)  # uniformly random joint targets: this sequence diverges at step 9
    with pytest.warns(UserWarning, match="BADQACC.*truncated"):
        for _ in range(20):
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            if truncated:
                break
    assert truncated and not terminated and info["success"] is False and reward == 0.0
    assert "BADQACC" in info["physics_error"]
    obs, _ = env.reset(seed=7)  # the next episode starts clean
    assert np.allclose(obs["state"][[1, 2]], [-0.96, 1.16], atol=1e-6)
    _, _, _, truncated, _ = env.step(env.action_for(env.qpos()))
    assert not truncated
