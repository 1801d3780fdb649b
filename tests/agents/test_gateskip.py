from __future__ import annotations

import json
import math

import pytest
import torch

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.gateskip import (
    RECIPES,
    GateSkipConfig,
    GateSkipModel,
    _SkipState,
    lr_factor,
    recipe_config,
    sparsity_penalty,
    train_budget,
    train_gates,
)
from embodia.core.errors import ConfigError
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script


def test_gates_skipping_and_learning(tmp_path):
    lm = load_local_lm("smollm2", fresh=True)
    ids = torch.tensor([lm.encode("The capital of France is Paris, and the capital of Italy is Rome.")])
    with torch.no_grad():
        original = lm.model(ids).logits
    torch.manual_seed(0)
    gated = GateSkipModel(lm, bias_init=30.0)  # sigmoid(30 + W h) == 1: gates open, the model is unchanged
    with torch.no_grad():
        assert torch.allclose(lm.model(ids).logits, original, atol=1e-4)
    # the paper's initialisation: W ~ N(0, 0.01^2), b = bias_init
    weights = torch.stack([b.gate.weight for b in gated.branches]).detach()
    assert abs(float(weights.std()) - 0.01) < 2e-4 and abs(float(weights.mean())) < 1e-4
    assert all(torch.all(b.gate.bias == 30.0) for b in gated.branches)

    # a per-layer budget of 25 % skips exactly floor(0.25 * T) tokens per branch (one sequence)
    gated.set_budget(0.25, "random", seed=0)
    with torch.no_grad():
        skipped_logits = lm.model(ids).logits
    tokens = ids.shape[1]
    assert gated.skipped_fraction == (int(0.25 * tokens)) / tokens
    assert not torch.allclose(skipped_logits, original, atol=1e-2)

    # the old variant (an ablation preset) still trains: frozen backbone, the L1 penalty closes the gates
    gated = GateSkipModel(load_local_lm("smollm2", fresh=True), bias_init=5.0, gate_init_std=0.0)
    assert all(torch.all(b.gate.weight == 0) for b in gated.branches)
    config = recipe_config("frozen-gates-l1", steps=4, batch_size=2, seq_len=32)
    backbone = {n: p.clone() for n, p in gated.lm.model.named_parameters() if ".gate." not in n}
    history = train_gates(gated, config)
    assert len(history) == 4 and all(h["skipped_fraction"] == 0 for h in history)
    assert history[-1]["gate_mean"] < history[0]["gate_mean"]  # the sparsity penalty closes gates
    assert all(torch.equal(p, backbone[n]) for n, p in gated.lm.model.named_parameters() if n in backbone)

    path = tmp_path / "gates.safetensors"
    gated.save(path)
    other = GateSkipModel(load_local_lm("smollm2", fresh=True))
    other.load(path)
    assert all(torch.equal(a, b) for a, b in zip(gated.state_dict().values(), other.state_dict().values()))


def test_paper_training_skips_tokens_and_uses_the_l2_penalty():
    """The paper recipe trains with skipping on: the budget ramps, the MLP runs on fewer tokens, and the
    loss's sparsity term is the L2 mean of the gate values; the whole model learns."""
    lm = load_local_lm("smollm2", fresh=True)
    torch.manual_seed(0)
    gated = GateSkipModel(lm)
    config = recipe_config("paper", steps=3, batch_size=2, seq_len=32)
    assert [train_budget(k, config) for k in range(3)] == pytest.approx([0.0, 0.2 / 3, 0.4 / 3])

    mlp_tokens: list[int] = []  # tokens entering layer 5's MLP, one entry per forward pass
    gate_values: list[torch.Tensor] = []
    hooks = [
        lm.layers[5].mlp.branch.register_forward_pre_hook(
            lambda _m, a: mlp_tokens.append(a[0].shape[:-1].numel())
        )
    ]
    hooks += [
        b.gate.register_forward_hook(lambda _m, _i, o: gate_values.append(torch.sigmoid(o).detach()))
        for b in gated.branches
    ]
    before = lm.layers[3].mlp.branch.down_proj.weight.clone()
    try:
        history = train_gates(gated, config)
    finally:
        for hook in hooks:
            hook.remove()

    n = config.batch_size * config.seq_len  # 64 valid tokens per batch: floor(p * 64) skip at each branch
    assert mlp_tokens == [n, n - int(0.2 / 3 * n), n - int(0.4 / 3 * n)]
    assert [h["skipped_fraction"] for h in history] == [0.0, 4 / 64, 8 / 64]
    assert [h["skip_budget"] for h in history] == pytest.approx([0.0, 0.2 / 3, 0.4 / 3])
    # L2 sparsity term by hand: (1 / M) sum_l mean_{b, t, d} g^2 over the M = 60 gated branches
    branches = len(gated.branches)
    for step, record in enumerate(history):
        gates = gate_values[step * branches : (step + 1) * branches]
        by_hand = sum(float((g**2).sum()) / g.numel() for g in gates) / branches
        assert record["sparsity_term"] == pytest.approx(by_hand, rel=1e-5)
        assert record["sparsity_term"] != pytest.approx(
            sum(float(g.mean()) for g in gates) / branches, rel=1e-4
        )
    # full fine-tune: backbone weights moved; afterwards nothing requires grad
    assert not torch.equal(before, lm.layers[3].mlp.branch.down_proj.weight)
    assert not any(p.requires_grad for p in lm.model.parameters())


def test_batch_level_threshold_on_a_hand_built_example():
    importance = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]])
    state = _SkipState()
    state.skip = 0.25  # N = 8 valid tokens: floor(0.25 * 8) = 2 skip, both in row 0 (one batch threshold)
    assert state.keep_mask(importance).tolist() == [[False, False, True, True], [True] * 4]
    state.threshold = "sequence"  # the old rule: floor(0.25 * 4) = 1 per row
    assert state.keep_mask(importance).tolist() == [[False, True, True, True], [False, True, True, True]]
    state.threshold = "batch"
    state.keep_first = True  # the optional attention-sink rule: first tokens never skip
    assert state.keep_mask(importance).tolist() == [[True, False, False, True], [True] * 4]
    state.keep_first = False
    # invalid (padding) tokens are neither counted nor skipped: N = 6, floor(0.25 * 6) = 1
    state.token_mask = torch.tensor([[False, True, True, True], [True, True, True, False]])
    keep = state.keep_mask(importance)
    assert keep.tolist() == [[False, False, True, True], [True, True, True, False]]
    state.count(keep, importance.shape)
    assert (state.skipped, state.total) == (1, 6)
    # random ranking uses the same batch-level rule: exactly 2 of 8 skip, wherever they fall
    state.token_mask, state.ranking = None, "random"
    assert int((~state.keep_mask(importance)).sum()) == 2
    state.skip = 0.0
    assert state.keep_mask(importance) is None


def test_recipes_schedules_and_penalties():
    paper = recipe_config()
    assert paper == GateSkipConfig()
    assert (paper.finetune, paper.sparsity_loss, paper.sparsity, paper.lr) == ("full", "l2", 1.0, 3e-6)
    assert (paper.threshold, paper.keep_first, paper.gate_init_std, paper.detach_gate_input) == (
        "batch",
        False,
        0.01,
        True,
    )
    assert (paper.train_skip_start, paper.train_skip_end, paper.betas) == (0.0, 0.2, (0.9, 0.95))
    frozen = recipe_config("frozen-backbone")
    assert (frozen.finetune, frozen.lr, frozen.sparsity_loss) == ("gates", 1e-4, "l2")
    old = recipe_config("frozen-gates-l1", steps=16)
    assert (old.finetune, old.sparsity_loss, old.sparsity, old.train_skip_end, old.threshold) == (
        "gates",
        "l1",
        0.1,
        0.0,
        "sequence",
    )
    assert (
        old.steps == 16
        and old.keep_first
        and old.gate_init_std == 0
        and set(RECIPES)
        == {
            "paper",
            "frozen-backbone",
            "frozen-gates-l1",
        }
    )
    with pytest.raises(ConfigError, match="train_skip_end"):
        recipe_config("paper", train_skip_end=1.5)
    with pytest.raises(ConfigError, match="bogus"):
        recipe_config("paper", bogus=1)
    with pytest.raises(ConfigError, match="train_skip_end"):
        recipe_config("paper", train_skip_start=0.3, train_skip_end=0.1)

    # the budget ramps linearly 0 -> 0.2 over all steps (or ramp_steps, then stays)
    config = recipe_config(steps=10)
    assert [train_budget(k, config) for k in range(10)] == pytest.approx([0.02 * k for k in range(10)])
    config = recipe_config(steps=10, ramp_steps=5)
    assert [train_budget(k, config) for k in (0, 5, 9)] == pytest.approx([0.0, 0.2, 0.2])
    # learning rate: linear warm-up from 0 over 15 % of the steps, then cosine to 0
    config = recipe_config(steps=100)
    assert [lr_factor(k, config) for k in (0, 5, 15)] == pytest.approx([0.0, 1 / 3, 1.0])
    assert lr_factor(99, config) < 1e-3 and lr_factor(57, config) == pytest.approx(
        0.5 * (1 + math.cos(math.pi * 42 / 85))
    )
    assert lr_factor(50, recipe_config("frozen-gates-l1", steps=100)) == 1.0

    gates = [torch.tensor([[[0.5, 1.0]]]), torch.tensor([[[0.2, 0.4], [0.6, 0.8]]])]
    assert float(sparsity_penalty(gates, "l2")) == pytest.approx((1.25 / 2 + 1.2 / 4) / 2)
    assert float(sparsity_penalty(gates, "l1")) == pytest.approx((0.75 + 0.5) / 2)


def test_quick_script(tmp_path):
    out, results = tmp_path / "gs.json", tmp_path / "gateskip.json"
    assert (
        run_script("gateskip_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results))
        == 0
    )
    produced = read_results(results)
    for name in (
        "gateskip",
        "gateskip_frozen_backbone",
        "gateskip_frozen_gates_l1",
        "gateskip_frozen_gates_l1_earlier",
    ):
        assert layout_differences(produced, read_results(RESULTS_DIR / "methods" / f"{name}.json")) == [], (
            name
        )
    payload = json.loads(out.read_text())
    points = payload["result"]["points"]
    assert payload["recipe"] == "paper" and payload["config"]["finetune"] == "full"
    assert {(p["ranking"], p["budget"]) for p in points} == {("gate", 0.0), ("gate", 0.25), ("random", 0.25)}
    assert all(abs(p["skipped_fraction"] - p["budget"]) < 0.05 for p in points)
    assert payload["result"]["history"][-1]["skipped_fraction"] > 0  # skipping was on during training
    assert payload["result"]["baseline_perplexity"] < 100
