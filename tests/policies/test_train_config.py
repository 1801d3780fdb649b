"""Training configs are validated field by field; methods that learn from rewards refuse a store without them."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from embodia.core.errors import ConfigError, EmbodiaError
from embodia.data.store import TrajectoryStore
from embodia.policies import learner_classes, learner_names
from embodia.policies.bc import BCConfig
from embodia.policies.deas import DEAS, DEASConfig
from embodia.policies.gciql import GCIQLConfig
from embodia.policies.iql import IQLConfig
from embodia.policies.networks import ObsNormalizer
from embodia.policies.train import TrainConfig, check_train_config, method_config_for, train

# (method, --config JSON, what the one-line error must say)
BAD_OPTIONS = [
    ("deas", '{"horizon": 0}', "deas config: horizon: Input should be greater than or equal to 1 (got 0)"),
    ("deas", '{"gamma2": "x"}', "deas config: gamma2: Input should be a valid number"),
    ("deas", '{"gamma2": 1.0}', "deas config: gamma2: Input should be less than 1"),
    ("deas", '{"gamma1": 0}', "deas config: gamma1: Input should be greater than 0"),
    ("deas", '{"expectile": 1.0}', "deas config: expectile: Input should be less than 1"),
    ("deas", '{"bins": 1}', "deas config: bins: Input should be greater than or equal to 2"),
    (
        "deas",
        '{"hidden": [64, 0]}',
        "deas config: hidden.1: Input should be greater than or equal to 1 (got 0)",
    ),
    (
        "deas",
        '{"extraction": "dpo"}',
        "deas config: extraction: Input should be 'ddpg_bc', 'awr', 'fql' or 'best_of_n'",
    ),
    ("deas", '{"horizon": 4, "execute_steps": 5}', "execute_steps (5) cannot exceed horizon (4)"),
    ("deas", '{"horizon": 2.5}', "deas config: horizon: Input should be a valid integer"),
    ("deas", '{"horizon": 8, "horizn": 4}', "deas config: horizn: Unexpected keyword argument (got 4)"),
    ("iql", '{"lr": NaN}', "iql config: lr: Input should be a finite number (got nan)"),
    ("iql", '{"lr": Infinity}', "iql config: lr: Input should be a finite number (got inf)"),
    ("iql", '{"lr": -0.001}', "iql config: lr: Input should be greater than 0"),
    ("iql", '{"n_step": 0}', "iql config: n_step: Input should be greater than or equal to 1"),
    ("iql", '{"gamma": 1.5}', "iql config: gamma: Input should be less than or equal to 1"),
    ("iql", '{"polyak": 0}', "iql config: polyak: Input should be greater than 0"),
    ("bc", '{"chunk": -1}', "bc config: chunk: Input should be greater than or equal to 1"),
    ("bc", '{"hidden": "wide"}', "bc config: hidden: Input should be a valid tuple"),
    ("bc", '{"chunks": 2}', "bc config: chunks: Unexpected keyword argument (got 2)"),
    ("gciql", '{"gamma": 1.0}', "gciql config: gamma: Input should be less than 1"),
    ("gciql", '{"p_current": 0.7, "p_future": 0.5}', "p_current + p_future must be <= 1"),
    ("gciql", '{"alpha": -1}', "gciql config: alpha: Input should be greater than or equal to 0"),
]


@pytest.mark.parametrize(
    ("method", "text", "message"), BAD_OPTIONS, ids=[f"{m}-{t}" for m, t, _ in BAD_OPTIONS]
)
def test_bad_method_options_name_the_field(method, text, message):
    with pytest.raises(ConfigError) as info:
        method_config_for(method, json.loads(text))  # as `embodia train METHOD --config TEXT` parses it
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_good_method_options_keep_defaults_and_take_json_lists():
    config = method_config_for("deas", {"horizon": 8, "hidden": [128, 128], "execute_steps": 2})
    assert config == DEASConfig(horizon=8, hidden=(128, 128), execute_steps=2)
    assert isinstance(config.hidden, tuple)
    for name in learner_names():
        assert method_config_for(name, {}) == learner_classes(name)[1]()  # every default is inside its range
    assert method_config_for("gciql", {"p_current": 0.5, "p_future": 0.5}).p_future == 0.5


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("steps", 0, "steps: Input should be greater than or equal to 1 (got 0)"),
        ("batch_size", 0, "batch_size: Input should be greater than or equal to 1"),
        ("eval_every", -1, "eval_every: Input should be greater than or equal to 0"),
        ("eval_episodes", -1, "eval_episodes: Input should be greater than or equal to 0"),
        ("log_every", 0, "log_every: Input should be greater than or equal to 1"),
        (
            "method",
            "ppo",
            "unknown method 'ppo'; choose one of act, bc, deas, diffusion_policy, flow_bc, fql, gciql, iql, pixel_bc, "
            "pixel_flow_bc",
        ),
        ("steps", "many", "steps: Input should be a valid integer"),
        ("learning_rate", 1e-3, "learning_rate: Unexpected keyword argument"),
    ],
)
def test_bad_train_config_names_the_field(field, value, message):
    with pytest.raises(ConfigError, match=f"train config: {message}".replace("(", r"\(").replace(")", r"\)")):
        check_train_config({"method": "bc", "dataset": "d.zarr", "out": "run", field: value})


def test_configs_built_in_python_are_checked_by_the_learners():
    normalizer = ObsNormalizer(["state"], np.zeros(2), np.ones(2))
    with pytest.raises(ConfigError, match="deas config: horizon: Input should be greater than or equal to 1"):
        DEAS(DEASConfig(horizon=0), normalizer, action_dim=2, reward_range=(0.0, 1.0))
    for config_cls in (IQLConfig, BCConfig, GCIQLConfig, DEASConfig):
        bad = dataclasses.replace(config_cls(), lr=float("nan"))  # the constructor alone accepts it
        method = next(name for name in learner_names() if learner_classes(name)[1] is config_cls)
        with pytest.raises(ConfigError, match=f"{method} config: lr: Input should be a finite number"):
            learner_classes(method)[0](bad, normalizer, 2, (0.0, 1.0))


@pytest.fixture
def rewardless(tmp_path):
    """A tiny store with state, goal and action but no ``reward`` key (3 episodes of 12 steps)."""
    path = tmp_path / "noreward.zarr"
    rng = np.random.default_rng(0)
    with TrajectoryStore(path, mode="a") as store:
        for seed in range(3):
            store.add_episode(
                {
                    "state": rng.normal(size=(12, 2)).astype(np.float32),
                    "goal": np.zeros((12, 2), np.float32),
                    "action": rng.uniform(-1, 1, size=(12, 2)).astype(np.float32),
                },
                env_id="embodia/PointMaze-Medium-v0",
                seed=seed,
            )
    assert "reward" not in TrajectoryStore(path).keys
    return path


@pytest.mark.parametrize("method", ["iql", "deas"])
def test_reward_methods_refuse_a_store_without_rewards(rewardless, tmp_path, method):
    out = tmp_path / "run"
    with pytest.raises(EmbodiaError) as info:
        train(TrainConfig(method=method, dataset=str(rewardless), out=str(out), steps=5, eval_episodes=0))
    assert str(info.value) == (
        f"store {str(rewardless)!r} has no 'reward' key: {method} learns from rewards; record with rewards or use bc"
    )
    assert not out.exists()  # refused before the run directory is made


def test_cli_refuses_iql_without_rewards_and_bad_options_in_one_line(rewardless, tmp_path, cli):
    result = cli("train", "iql", "--dataset", str(rewardless), "--out", str(tmp_path / "iql"), "--steps", "5")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no 'reward' key: iql learns from rewards" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    result = cli(
        "train",
        "deas",
        "--dataset",
        str(rewardless),
        "--out",
        str(tmp_path / "d"),
        "--config",
        '{"horizon": 0}',
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: deas config: horizon: Input should be greater than or equal to 1 (got 0)"
    ]
    assert not (tmp_path / "iql").exists() and not (tmp_path / "d").exists()


def test_bc_and_gciql_train_on_a_store_without_rewards(rewardless, tmp_path):
    for method, options in (("bc", {"chunk": 2, "hidden": [16]}), ("gciql", {"hidden": [16]})):
        result = train(
            TrainConfig(
                method=method,
                dataset=rewardless,  # a pathlib.Path is fine
                out=tmp_path / method,
                steps=6,
                batch_size=8,
                eval_every=0,
                eval_episodes=0,
                log_every=3,
                method_config=options,
            )
        )
        assert result["step"] == 6 and not result["interrupted"]
        assert (tmp_path / method / "policy").is_dir()
        resolved = json.loads((tmp_path / method / "train_config.json").read_text())["resolved"]
        assert resolved["hidden"] == [16]


def test_train_help_shows_every_methods_defaults_and_their_sources(cli):
    out = cli("train", "--help", check=True).stdout
    assert "deas (DEASConfig):" in out and "fql (FQLConfig):" in out and "bc (BCConfig):" in out
    assert "extraction='fql': Policy extraction (the paper's OGBench table" in out
    assert (
        "alpha=300.0: Weight (>= 0) of the behaviour term: FQL's distillation weight, 300 as FQL states"
        in out
    )
    assert "gamma2=0.999:" in out and "paper:" in out
