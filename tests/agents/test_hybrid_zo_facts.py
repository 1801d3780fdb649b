from __future__ import annotations

import copy
import json

import pytest
import torch

from embodia.agents.methods.hybrid_zo import zo_projected_gradient
from embodia.agents.methods.hybrid_zo_facts import (
    FactsConfig,
    FactsTask,
    TinyLMConfig,
    accuracy,
    finetune_facts,
    pretrain,
    steps_for_budget,
)
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script

SMALL = FactsTask(n_values=8, n_relations=2, n_old_keys=8, n_new_keys=8)
TINY = TinyLMConfig(d_model=32, n_layers=1, n_heads=2, d_mlp=64, pretrain_steps=150, pretrain_batch=16)


@pytest.fixture(scope="module")
def pretrained() -> torch.nn.Module:
    torch.set_num_threads(1)
    return pretrain(SMALL, TINY, seed=0)


def test_facts_are_new_keys_with_the_query_last():
    task = FactsTask()
    old_x, _ = task.facts(new=False, seed=0)
    new_x, new_y = task.facts(new=True, seed=0)
    assert set(old_x[:, 0].tolist()).isdisjoint(new_x[:, 0].tolist())  # new keys never seen in pretraining
    assert (new_x[:, 2] == task.query_token).all() and len(new_x) == task.n_new_keys * task.n_relations
    assert int(new_y.min()) >= 0 and int(new_y.max()) < task.n_values
    assert int(new_x.max()) == task.vocab - 1


def test_pretraining_stores_the_old_facts_and_full_fine_tuning_learns_the_new(pretrained):
    old_x, old_y = SMALL.facts(new=False, seed=0)
    assert accuracy(pretrained, old_x, old_y) == 1.0
    result = finetune_facts(
        copy.deepcopy(pretrained), SMALL, FactsConfig(mode="full", steps=150, lr_fo=0.1, batch_size=16), 0
    )
    assert result.new_before <= 0.4 and result.new_after >= 0.9


def test_equal_forward_passes_and_the_paper_scope(pretrained):
    budget = 12
    assert [steps_for_budget(m, budget) for m in ("lora", "zo", "hybrid", "full")] == [12, 6, 4, 12]
    n_base = sum(p.numel() for p in pretrained.parameters())
    for mode, (forward, backward) in {"lora": (12, 12), "zo": (12, 0), "hybrid": (12, 4)}.items():
        config = FactsConfig(mode=mode, steps=steps_for_budget(mode, budget), batch_size=4)
        result = finetune_facts(copy.deepcopy(pretrained), SMALL, config, 0)
        assert (result.forward_passes, result.backward_passes) == (forward, backward)
        lora = 1 * 2 * (4 * 32 + 32 * 4)  # one block, q and v, rank 4 (A and B)
        assert result.trainable_fo == (lora if mode != "zo" else 0)
        assert result.trainable_zo == (n_base if mode != "lora" else 0)  # every weight but LoRA


def test_one_zo_step_is_the_seeded_two_point_update(pretrained):
    """w1 = w0 - lr * g_hat * z(seed), with g_hat the two-point estimate on the same facts and seed."""
    config = FactsConfig(mode="zo", steps=1, batch_size=16, lr_zo=0.05, seed=3)
    model = copy.deepcopy(pretrained)
    finetune_facts(model, SMALL, config, 0)
    reference = copy.deepcopy(pretrained)
    params = list(reference.parameters())
    x, y = SMALL.facts(new=True, seed=0)
    seed = config.seed * 1_000_003 + 1

    def loss() -> float:
        return float(torch.nn.functional.cross_entropy(reference(x), y))

    g_hat, _, _ = zo_projected_gradient(loss, params, seed, config.mu)
    assert abs(config.lr_zo * g_hat) > 0.1  # a step far larger than the tolerance below
    generator = torch.Generator().manual_seed(seed)
    for p0, p1 in zip(params, model.parameters()):
        z = torch.randn(p0.shape, generator=generator)
        assert torch.allclose(p1, p0 - config.lr_zo * g_hat * z, atol=1e-3)  # batch order: float rounding


def test_the_random_sign_control_moves_as_far_as_zo(pretrained):
    """The control's ZO step is the same step as ZO's or its opposite: same size, no gradient sign."""
    deltas = []
    for control in (False, True):
        model = copy.deepcopy(pretrained)
        config = FactsConfig(mode="zo", steps=1, batch_size=16, lr_zo=0.05, seed=3, zo_random_sign=control)
        finetune_facts(model, SMALL, config, 0)
        deltas.append(
            torch.cat([(p1 - p0).flatten() for p0, p1 in zip(pretrained.parameters(), model.parameters())])
        )
    step, control = deltas
    assert step.norm() > 0.1
    assert torch.allclose(control, step, atol=1e-5) or torch.allclose(control, -step, atol=1e-5)


def test_unknown_mode_is_refused(pretrained):
    with pytest.raises(ValueError, match="mode must be one of"):
        finetune_facts(copy.deepcopy(pretrained), SMALL, FactsConfig(mode="adam"), 0)


def test_quick_script(tmp_path):
    out, results = tmp_path / "facts.json", tmp_path / "hybrid_zo_facts.json"
    assert (
        run_script(
            "hybrid_zo_facts_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results)
        )
        == 0
    )
    assert (
        layout_differences(
            read_results(results), read_results(RESULTS_DIR / "methods" / "hybrid_zo_facts.json")
        )
        == []
    )
    rows = json.loads(out.read_text())["seeds"][0]["rows"]
    assert {r["forward_passes"] for label, r in rows.items() if "LoRA's steps" not in label} == {24}
    assert rows["hybrid, LoRA's steps (3x forwards)"]["forward_passes"] == 72
