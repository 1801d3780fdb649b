"""The environment contract checker names every clause an environment breaks."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import embodia
from embodia.core.env import EnvContractError, check_embodied_env, has_expert, supports_state


def test_a_plain_gymnasium_env_breaks_the_embodia_contract():
    env = gymnasium.make("CartPole-v1")
    with pytest.raises(EnvContractError) as error:
        check_embodied_env(env)
    message = str(error.value)
    assert "CartPole-v1 breaks the environment contract" in message
    assert "observations must be dicts" in message
    assert "no get_state() / set_state(state)" in message
    assert "info['success'] must be a bool" in message
    assert not supports_state(env) and not has_expert(env)


class Broken(gymnasium.Env):
    """Dict observations, but a float32 state that set_state ignores and an int success flag."""

    observation_space = gymnasium.spaces.Dict({"state": gymnasium.spaces.Box(-1, 1, (2,))})
    action_space = gymnasium.spaces.Box(-1, 1, (2,))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"state": np.zeros(2, np.float32)}, {}

    def step(self, action):
        return {"state": np.zeros(2, np.float32)}, 0.0, False, False, {"success": 0}

    def get_state(self) -> np.ndarray:
        return np.zeros(3, np.float32)

    def set_state(self, state: np.ndarray) -> None:
        pass


def test_an_embodia_env_passes_and_a_broken_one_is_caught():
    env = embodia.make("embodia/PointMaze-Medium-v0", render_mode="rgb_array")
    check_embodied_env(env)
    assert supports_state(env) and has_expert(env)
    env.close()
    with pytest.raises(EnvContractError) as error:
        check_embodied_env(Broken())
    assert "get_state() must return a flat float64 array" in str(error.value)
    assert "info['success'] must be a bool on every step, got 0" in str(error.value)
