"""OGBenchEnv: seeding, exact state save/restore, errors, task selection."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.core.errors import ActionError


def run_actions(env, actions):
    states, observations = [], []
    for action in actions:
        states.append(env.unwrapped.get_state())
        obs, *_ = env.step(action)
        observations.append(obs["state"])
    return np.array(states), np.array(observations)


@pytest.mark.parametrize(
    "env_id",
    ["embodia/PointMaze-Medium-v0", "embodia/CubeSingle-v0", "embodia/Scene-v0", "embodia/Puzzle3x3-v0"],
)
def test_same_seed_same_episode_and_global_rng_untouched(env_id):
    actions = (
        np.random.default_rng(1)
        .uniform(-1, 1, size=(25, *embodia.make(env_id).action_space.shape))
        .astype(np.float32)
    )
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    runs = []
    for _ in range(2):
        env = embodia.make(env_id)
        obs, _ = env.reset(seed=11)
        states, observations = run_actions(env, actions)
        runs.append((obs, states, observations))
        env.close()
    assert np.array_equal(np.random.get_state()[1], before), "the env touched NumPy's global generator"
    (obs_a, states_a, ob_a), (obs_b, states_b, ob_b) = runs
    for key in obs_a:
        np.testing.assert_array_equal(obs_a[key], obs_b[key])
    np.testing.assert_array_equal(states_a, states_b)
    np.testing.assert_array_equal(ob_a, ob_b)
    env = embodia.make(env_id)
    other, _ = env.reset(seed=12)
    assert not np.array_equal(other["state"], obs_a["state"])
    env.close()


@pytest.mark.parametrize(
    "env_id",
    [
        "embodia/PointMaze-Medium-v0",
        "embodia/CubeSingle-v0",
        "embodia/CubeDouble-v0",
        "embodia/Scene-v0",
        "embodia/Puzzle3x3-v0",
    ],
)
def test_set_state_mid_episode_reproduces_the_future_exactly(env_id):
    env = embodia.make(env_id)
    env.reset(seed=5)
    actions = np.random.default_rng(0).uniform(-1, 1, size=(60, *env.action_space.shape)).astype(np.float32)
    run_actions(env, actions[:30])
    saved = env.unwrapped.get_state()
    states_a, obs_a = run_actions(env, actions[30:])
    env.unwrapped.set_state(saved)
    states_b, obs_b = run_actions(env, actions[30:])
    np.testing.assert_array_equal(states_a, states_b)
    np.testing.assert_allclose(obs_a[1:], obs_b[1:], atol=1e-6)
    env.close()


def test_bad_actions_raise_clear_errors():
    env = embodia.make("embodia/CubeSingle-v0")
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"shape \(4,\).*expects \(5,\)"):
        env.step(np.zeros(4))
    with pytest.raises(ActionError, match="NaN"):
        env.step(np.array([0, 0, np.nan, 0, 0]))
    env.close()


def test_set_state_rejects_foreign_states():
    env = embodia.make("embodia/PointMaze-Medium-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="another environment"):
        env.unwrapped.set_state(np.zeros(3))
    env.close()


def test_task_id_fixes_the_goal_and_single_task_has_no_goal():
    goals = []
    for seed in range(4):
        env = embodia.make("embodia/PointMaze-Medium-v0", task_id=2)
        obs, _ = env.reset(seed=seed)
        goals.append(obs["goal"])
        env.close()
    goals = np.array(goals)
    # same task: goals differ only by ogbench's goal noise (at most 1 m per axis)
    assert np.abs(goals - goals[0]).max() <= 2.0 and np.abs(goals - goals[0]).max() > 0
    env = embodia.make("embodia/CubeSingle-SingleTask-v0", task_id=2)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"state"}
    _, reward, *_ = env.step(np.zeros(5, dtype=np.float32))
    assert reward in (-1.0, 0.0)  # ogbench's single-task reward: successes - number of cubes
    env.close()


def test_render_size_and_shadow_setting():
    env = embodia.make("embodia/CubeSingle-v0", render_mode="rgb_array", width=96, height=64, shadow_size=0)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (64, 96, 3) and frame.std() > 1  # not a blank frame
    assert env.unwrapped.model.vis.quality.shadowsize == 0
    env.close()


def test_antmaze_has_no_scripted_expert():
    env = embodia.make("embodia/AntMaze-Medium-v0")
    assert not env.unwrapped.has_expert
    from embodia.core.errors import PolicyError

    with pytest.raises(PolicyError, match="no scripted expert"):
        env.unwrapped.make_expert()
    env.close()
