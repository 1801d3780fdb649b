"""The per-environment settings table: every entry is a valid config of its learner, with its source."""

from __future__ import annotations

import pytest

from embodia.core.errors import ConfigError
from embodia.core.validation import validate
from embodia.policies import learner_classes
from embodia.policies.paper_settings import PAPER_SETTINGS, method_setting


def test_every_setting_is_a_valid_config_of_its_learner():
    assert set(PAPER_SETTINGS) == {"CubeSingle", "Scene", "Puzzle3x3"}
    for family, methods in PAPER_SETTINGS.items():
        assert list(methods) == ["deas", "deas_best_of_n", "qc_fql", "fql", "iql", "bc"]
        for name, setting in methods.items():
            config = validate(learner_classes(setting.learner)[1], setting.config, where=f"{family} {name}")
            assert setting.source, (family, name)
            if name == "deas":  # the paper's sequence lengths, FQL-style extraction
                assert config.horizon == (4 if family == "CubeSingle" else 8) and config.extraction == "fql"
            if name == "deas_best_of_n":  # the same critic, another extraction
                critic = {k: v for k, v in setting.config.items() if k not in ("extraction", "candidates")}
                assert critic == {
                    k: v for k, v in methods["deas"].config.items() if k not in ("extraction", "alpha")
                }
                assert config.extraction == "best_of_n" and config.candidates == 32
            if name == "qc_fql":
                assert setting.learner == "fql" and config.horizon == 5 and config.action_chunking
    assert method_setting("Puzzle3x3", "fql").config["alpha"] == 1000.0


def test_unknown_entries_are_one_clear_error():
    with pytest.raises(ConfigError, match="known: CubeSingle, Scene, Puzzle3x3"):
        method_setting("Kitchen", "deas")
    with pytest.raises(ConfigError, match="method 'sac'"):
        method_setting("Scene", "sac")
