from __future__ import annotations

import json
import math

import pytest
import torch

from embodia.agents.methods.gateskip import GateSkipConfig
from embodia.agents.methods.gateskip_recall import (
    GatedDecoder,
    RecallConfig,
    evaluate,
    finetune,
    gateskip_recipe,
    pretrain,
    quick_config,
    recall_batch,
)
from embodia.core.errors import ConfigError
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.core.validation import validate
from tests.agents.conftest import run_script


def test_recall_batches_hold_the_pairs_the_query_and_filler():
    config = RecallConfig()
    ids, answers, filler = recall_batch(config, 256, torch.Generator().manual_seed(0))
    assert ids.shape == filler.shape == (256, config.length) and answers.shape == (256,)
    keys, values = config.keys, config.keys + config.values
    for row, answer, fill in zip(ids.tolist(), answers.tolist(), filler.tolist()):
        body = row[:-2]
        assert row[-2] == config.query_token and 0 <= row[-1] < keys
        pair_keys = [i for i, t in enumerate(body) if t < keys]
        assert len(pair_keys) == len({body[i] for i in pair_keys}) == config.pairs  # distinct keys
        assert all(keys <= body[i + 1] < values for i in pair_keys)  # a value right after each key
        assert answer == body[body.index(row[-1]) + 1]  # the value that followed the queried key
        # filler: every body token that is neither a key nor its value; 24 - 2 - 6 = 16 per sequence
        marked = {i for i in pair_keys} | {i + 1 for i in pair_keys}
        assert [not f for f in fill[:-2]] == [i in marked for i in range(len(body))]
        assert sum(fill) == config.length - 2 - 2 * config.pairs == 16
        assert all(values <= body[i] < config.query_token for i in range(len(body)) if i not in marked)
    with pytest.raises(ConfigError, match="do not fit"):
        validate(RecallConfig, {"pairs": 12, "length": 24}, where="test")


def test_ungated_model_has_open_frozen_gates_and_pretraining_learns():
    config = replace_quick(pretrain_steps=80)
    torch.manual_seed(0)
    model = GatedDecoder(config)
    assert float(torch.sigmoid(torch.tensor(30.0))) == 1.0  # the "ungated" gate is exactly 1 in float32
    assert not any(p.requires_grad for p in model.gate_parameters())
    gates_before = [p.clone() for p in model.gate_parameters()]
    losses = pretrain(model, config)
    assert all(torch.equal(a, b) for a, b in zip(gates_before, model.gate_parameters()))
    # it learns: cross-entropy falls from ~ln(29) (any token) below ln(8) = 2.08 (any value)
    assert losses[0] > 3.0 and sum(losses[-10:]) / 10 < 1.8
    # random skipping counts exactly floor(p * B * T) tokens per branch; the filler share is the filler's
    point = evaluate(model, config, 0.25, "random", "ungated")
    assert point.skipped_fraction == 0.25
    assert point.filler_share == pytest.approx(16 / 24, abs=0.03)


def test_gateskip_finetuning_follows_the_paper_recipe_and_learns_to_skip_filler():
    config = replace_quick()
    recipe = gateskip_recipe(config)
    paper = GateSkipConfig()
    changed = {k for k in vars(paper) if getattr(paper, k) != getattr(recipe, k)}
    assert changed == {"steps", "lr", "batch_size"} and paper.lr == 3e-6  # the authors' default stays
    torch.manual_seed(0)
    model = GatedDecoder(config)
    pretrain(model, config)
    history = finetune(model, config)
    # paper gate init: W ~ N(0, 0.01^2), b = 5 -> first mean gate ~ sigmoid(5) = 0.9933
    assert history[0]["gate_mean"] == pytest.approx(1 / (1 + math.exp(-5)), abs=2e-3)
    # budget ramps 0 -> 20 % over the steps: floor(p * 32 * 24) of the batch's tokens skip each branch
    steps, tokens = config.finetune_steps, config.batch_size * config.length
    assert [h["skip_budget"] for h in history] == pytest.approx([k / steps * 0.2 for k in range(steps)])
    assert [h["skipped_fraction"] for h in history] == [
        int(k / steps * 0.2 * tokens) / tokens for k in range(steps)
    ]
    # learning rate: linear warm-up over round(0.15 * 30) = 4 steps, then cosine to 0
    lrs = [h["lr"] for h in history]
    assert lrs[:5] == pytest.approx([0.0, 0.25e-3, 0.5e-3, 0.75e-3, 1e-3])
    assert lrs[17] == pytest.approx(0.5e-3 * (1 + math.cos(math.pi * 13 / 26)))
    # the L2 sparsity term pushes the mean gate down
    assert history[-1]["gate_mean"] < history[0]["gate_mean"] - 1e-3
    # learned importance: gate ranking skips filler far more often than its share of the tokens (2 / 3)
    gate = evaluate(model, config, 0.25, "gate", "gateskip")
    random = evaluate(model, config, 0.25, "random", "gateskip")
    assert gate.skipped_fraction == random.skipped_fraction == 0.25
    assert gate.filler_share > random.filler_share + 0.05

    # the control: same steps and optimiser, no gates (they stay open and frozen), nothing skipped
    control = GatedDecoder(config)
    before = [p.clone() for p in control.gate_parameters()]
    history = finetune(control, config, gated=False)
    assert all(h["skipped_fraction"] == 0 and h["sparsity_term"] == 1.0 for h in history)
    assert all(torch.equal(a, b) for a, b in zip(before, control.gate_parameters()))


def replace_quick(**changes) -> RecallConfig:
    from dataclasses import replace

    return replace(quick_config(RecallConfig()), **changes)


def test_quick_script(tmp_path):
    out, results = tmp_path / "gs.json", tmp_path / "gateskip_recall.json"
    threads = torch.get_num_threads()
    try:
        args = ("--quick", "--quiet", "--seeds", "0", "--out", str(out), "--results", str(results))
        assert run_script("gateskip_recall_experiment", *args) == 0
    finally:
        torch.set_num_threads(threads)
    produced = read_results(results)
    assert layout_differences(produced, read_results(RESULTS_DIR / "methods" / "gateskip_recall.json")) == []
    skipping = produced["tables"]["skipping"]["rows"]
    assert {(r["model"], r["ranking"], r["budget"]) for r in skipping} >= {
        ("ungated", "none", 0.0),
        ("ungated", "random", 0.5),
        ("GateSkip", "gate", 0.15),
        ("GateSkip", "random", 0.5),
    }
    assert all(abs(r["skipped"] - r["budget"]) < 1e-3 for r in skipping)  # floor(p * N) of N tokens
    payload = json.loads(out.read_text())
    assert payload["runs"][0]["history"][-1]["skipped_fraction"] > 0.15  # skipping was on during training
