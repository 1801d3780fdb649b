from __future__ import annotations

import json

import pytest
import torch

from embodia.agents.methods.cold_steer import (
    METHODS,
    build_steering,
    finite_difference_fn,
    positivity_examples,
    target_probability,
)
from embodia.agents.tools import ToolArgumentError, call_tool
from tests.agents.conftest import run_script

LAYER = 10


def test_examples_are_disjoint_between_train_and_heldout():
    train, heldout = positivity_examples(16), positivity_examples(20, split="heldout")
    assert {e.prompt for e in train}.isdisjoint({e.prompt for e in heldout})
    assert {e.target for e in train}.isdisjoint({e.target for e in heldout})
    with pytest.raises(ValueError, match="only 20 train examples"):
        positivity_examples(21)


@pytest.mark.parametrize("method", METHODS)
def test_a_small_step_raises_the_target_on_the_examples_themselves(smol, method):
    """First order: a small step along each method's edit lowers the examples' loss."""
    examples = positivity_examples(4)
    before = target_probability(smol, examples)
    after = target_probability(smol, examples, build_steering(smol, method, LAYER, examples, alpha=0.1))
    assert sum(after) > sum(before)


def test_finite_difference_approximates_the_kernel_update(smol):
    """The central difference converges: halving eps barely changes it (a one-sided one gives 0.91 here)."""
    examples = positivity_examples(2)
    ids = smol.encode("The lecture this morning was")
    dz = finite_difference_fn(smol, LAYER, examples, rel_eps=1e-4)(ids)
    dz_half = finite_difference_fn(smol, LAYER, examples, rel_eps=5e-5)(ids)
    assert dz.shape == (len(ids), smol.hidden_size) and torch.isfinite(dz).all()
    cosine = torch.nn.functional.cosine_similarity(dz.flatten(), dz_half.flatten(), dim=0)
    assert float(cosine) > 0.93
    assert float(dz.norm() / dz_half.norm()) == pytest.approx(1.0, rel=0.1)


def test_tool_and_quick_script(smol, tmp_path):
    result = call_tool(
        "cold_steer",
        {
            "method": "unit_kernel",
            "n_examples": 4,
            "layer": LAYER,
            "queries": [
                {"prompt": "The lecture this morning was", "target": " dreadful", "other": " superb"}
            ],
            "generate_tokens": 4,
        },
    )
    (query,) = result["queries"]
    assert query["p_target_after"] > query["p_target_before"]
    assert isinstance(query["generation"], str)
    with pytest.raises(ToolArgumentError, match="layer must be in 0..29"):
        call_tool("cold_steer", {"layer": 30})

    out = tmp_path / "cs.json"
    assert run_script("cold_steer_experiment", "--quick", "--quiet", "--out", str(out)) == 0
    points = json.loads(out.read_text())["result"]["points"]
    assert {p["method"] for p in points} == set(METHODS)
