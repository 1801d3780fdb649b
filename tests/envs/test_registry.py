"""Every registered environment honours the environment contract (gymnasium's check_env and more)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import embodia
from embodia.core.env import check_embodied_env, has_expert
from embodia.core.errors import UnknownEnvError
from embodia.envs import catalog, env_ids, resolve_id
from tests.conftest import ROOT

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
        check_embodied_env(env)  # embodia's contract beyond gymnasium (state, success, render, expert, keys)
        assert env.spec.max_episode_steps > 0
        # the shipped catalog (what `embodia envs` prints without building anything) matches the real env
        cached = catalog.entry(env_id)
        assert cached is not None, (
            "not in embodia/envs/catalog.json: run python scripts/update_env_catalog.py"
        )
        stale = "stale catalog entry: run python scripts/update_env_catalog.py"
        assert catalog.space_from_json(cached["observation_space"]) == env.observation_space, stale
        assert catalog.space_from_json(cached["action_space"]) == env.action_space, stale
        assert cached["max_episode_steps"] == env.spec.max_episode_steps, stale
        assert cached["has_expert"] == has_expert(env), stale
        assert cached["renders"] == ("rgb_array" in env.metadata.get("render_modes", [])), stale
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


def _fresh_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_gymnasium_make_after_import_embodia_in_a_fresh_interpreter():
    result = _fresh_python(
        "import sys, gymnasium, embodia\n"
        "heavy = [m for m in ('mujoco', 'ogbench', 'robosuite', 'torch', 'zarr') if m in sys.modules]\n"
        "assert not heavy, f'registering imported {heavy}'\n"
        "env = gymnasium.make('embodia/PointMaze-Medium-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "vec = gymnasium.make_vec('embodia/PointMaze-Medium-v0', num_envs=2, vectorization_mode='sync')\n"
        "obs, info = vec.reset(seed=0)\n"
        "import embodia.runner.episodes\n"
        "assert callable(embodia.rollout), 'embodia.rollout is the function, whatever was imported'\n"
        "print(env.spec.max_episode_steps, obs['state'].shape)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1000", "(2,", "2)"]


def test_gymnasium_make_without_importing_embodia():
    # gymnasium >= 1.0 has no plugin loader (it dropped the "gymnasium.envs" entry points); its own way to
    # make a third-party id without importing the package first is the "module:id" form
    result = _fresh_python(
        "import sys, gymnasium\n"
        "env = gymnasium.make('embodia:embodia/PointMaze-Medium-v0')\n"
        "vec = gymnasium.make_vec('embodia:embodia/CubeSingle-v0', num_envs=2, vectorization_mode='sync')\n"
        "obs, info = vec.reset(seed=0)\n"
        "print(env.spec.id, obs['state'].shape)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["embodia/PointMaze-Medium-v0", "(2,", "28)"]


def test_embodia_envs_reads_the_catalog():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "embodia.cli", "envs", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == len(ALL_IDS)
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert not imported & {"mujoco", "ogbench", "robosuite", "torch"}  # no environment was built
