"""The per-environment settings table: every entry is a valid config of its learner, with its source."""

from __future__ import annotations

import pytest

from embodia.core.errors import ConfigError
from embodia.core.validation import validate
from embodia.policies import learner_classes
from embodia.policies.paper_settings import PAPER_SETTINGS, method_setting


def test_every_setting_is_a_valid_config_of_its_learner():
    assert set(PAPER_SETTINGS) == {"CubeSingle", "CubeDouble", "Scene", "Puzzle3x3"}
    for family, methods in PAPER_SETTINGS.items():
        assert list(methods) == ["deas", "deas_gamma2_099", "deas_best_of_n", "qc_fql", "fql", "iql", "bc"]
        for name, setting in methods.items():
            config = validate(learner_classes(setting.learner)[1], setting.config, where=f"{family} {name}")
            assert setting.source, (family, name)
            if name == "deas":  # the paper's sequence lengths, FQL-style extraction
                assert (
                    config.horizon == (4 if family.startswith("Cube") else 8) and config.extraction == "fql"
                )
            if name == "deas_gamma2_099":  # the paper's DEAS but for gamma2 (and the support that follows it)
                changed = {k for k in setting.config if setting.config[k] != methods["deas"].config[k]}
                assert config.gamma2 == 0.99 and changed <= {"gamma2", "v_min"}
                if methods["deas"].config["v_min"] is not None:
                    assert config.v_min == pytest.approx(-1 / (1 - 0.99))
            if name == "deas_best_of_n":  # the same critic, another extraction
                critic = {k: v for k, v in setting.config.items() if k not in ("extraction", "candidates")}
                assert critic == {
                    k: v for k, v in methods["deas"].config.items() if k not in ("extraction", "alpha")
                }
                assert config.extraction == "best_of_n" and config.candidates == 32
            if name == "qc_fql":  # the Q-chunking authors' chunk length and alpha
                assert setting.learner == "fql" and config.horizon == 5 and config.action_chunking
                assert config.alpha == 100.0
    assert method_setting("Puzzle3x3", "fql").config["alpha"] == 1000.0


def test_unknown_entries_are_one_clear_error():
    with pytest.raises(ConfigError, match="known: CubeSingle, CubeDouble, Scene, Puzzle3x3"):
        method_setting("Kitchen", "deas")
    with pytest.raises(ConfigError, match="method 'sac'"):
        method_setting("Scene", "sac")


def test_sparse_rewards_where_the_q_chunking_authors_use_them_and_the_support_follows():
    from embodia.policies.paper_settings import SPARSE_REWARDS, sparse_rewards

    assert set(SPARSE_REWARDS) == set(PAPER_SETTINGS)
    assert [f for f in PAPER_SETTINGS if sparse_rewards(f)] == ["Scene", "Puzzle3x3"]
    for (
        family
    ) in PAPER_SETTINGS:  # rewards in {-1, 0}: the authors' support -1 / (1 - gamma2); else the data's
        rewards_in_minus_one_zero = sparse_rewards(family) or family == "CubeSingle"
        v_min = method_setting(family, "deas").config["v_min"]
        assert v_min == (-1000.0 if rewards_in_minus_one_zero else None), family


def test_deas_defaults_are_the_papers_settings():
    from embodia.policies.deas import DEASConfig

    config = DEASConfig()
    assert (config.extraction, config.alpha, config.value_target) == ("fql", 300.0, "distribution")
    assert (config.gamma1, config.gamma2, config.expectile, config.distributional) == (0.9, 0.999, 0.7, True)
