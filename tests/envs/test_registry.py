"""Every registered environment honours the environment contract (gymnasium's check_env and more)."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import embodia
from embodia.envs import env_ids, resolve_id
from embodia.errors import UnknownEnvError

ALL_IDS = env_ids()


def test_registry_is_populated_and_namespaced():
    assert len(ALL_IDS) >= 20
    assert all(i.startswith("embodia/") for i in ALL_IDS)
    for family in ("PointMaze", "AntMaze", "CubeSingle", "CubeDouble", "Scene", "Puzzle3x3"):
        assert (
            f"embodia/{family}-v0" in ALL_IDS if "Maze" not in family else any(family in i for i in ALL_IDS)
        )


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_contract(env_id):
    # pixel variants render every step: skip anti-aliasing to keep the suite fast
    kwargs = {"multisamples": 0} if "Visual" in env_id else {}
    env = embodia.make(env_id, render_mode="rgb_array", **kwargs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning from check_env is a failure, except:
            # state observations are unbounded (positions, velocities): infinite Box bounds are honest
            warnings.filterwarnings("ignore", message=".*infinity.*")
            check_env(env.unwrapped, skip_render_check=False)
        obs, info = env.reset(seed=3)
        assert isinstance(obs, dict) and env.observation_space.contains(obs)
        # the stable keys of DESIGN.md: a state vector and/or camera images (rgb, <camera>_rgb)
        assert "state" in obs or any(k == "rgb" or k.endswith("_rgb") for k in obs), sorted(obs)
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert isinstance(info["success"], bool)
        frame = env.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
        unwrapped = env.unwrapped
        state = unwrapped.get_state()
        assert state.dtype == np.float64 and state.ndim == 1
        unwrapped.set_state(state)
        np.testing.assert_array_equal(unwrapped.get_state(), state)
        assert env.spec.max_episode_steps > 0
    finally:
        env.close()


def test_unknown_id_suggests_close_matches():
    with pytest.raises(UnknownEnvError, match="Did you mean embodia/CubeSingle-v0"):
        embodia.make("embodia/CubeSingel-v0")
    assert resolve_id("PointMaze-Medium-v0") == "embodia/PointMaze-Medium-v0"
    assert resolve_id("embodia/pointmaze-medium-v0") == "embodia/PointMaze-Medium-v0"


def test_ids_are_gymnasium_ids():
    env = gymnasium.make("embodia/PointMaze-Medium-v0")
    assert env.spec.id == "embodia/PointMaze-Medium-v0"
    env.close()
