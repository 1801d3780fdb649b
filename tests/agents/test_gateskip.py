from __future__ import annotations

import json

import torch

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.gateskip import GateSkipConfig, GateSkipModel, train_gates
from tests.agents.conftest import run_script


def test_gates_skipping_and_learning(tmp_path):
    lm = load_local_lm("smollm2", fresh=True)
    ids = torch.tensor([lm.encode("The capital of France is Paris, and the capital of Italy is Rome.")])
    with torch.no_grad():
        original = lm.model(ids).logits
    gated = GateSkipModel(lm, bias_init=30.0)  # sigmoid(30) == 1: gates open, the model is unchanged
    with torch.no_grad():
        assert torch.allclose(lm.model(ids).logits, original, atol=1e-4)

    # a per-layer budget of 25 % skips exactly floor(0.25 * (T - 1)) tokens per branch (the first is kept)
    gated.set_budget(0.25, "random", seed=0)
    with torch.no_grad():
        skipped_logits = lm.model(ids).logits
    tokens = ids.shape[1]
    assert gated.skipped_fraction == (int(0.25 * tokens)) / tokens
    assert not torch.allclose(skipped_logits, original, atol=1e-2)

    # brief gate training on a fixed batch lowers the training objective
    gated = GateSkipModel(load_local_lm("smollm2", fresh=True), bias_init=5.0)
    config = GateSkipConfig(steps=6, batch_size=2, seq_len=32, sparsity=0.1, seed=0)
    history = train_gates(gated, config)
    assert len(history) == 6
    assert history[-1]["gate_mean"] < history[0]["gate_mean"]  # the sparsity penalty closes gates
    assert all(p.grad is None or p.requires_grad for p in gated.gate_parameters())
    assert not any(p.requires_grad for n, p in gated.lm.model.named_parameters() if ".gate." not in n)

    path = tmp_path / "gates.safetensors"
    gated.save(path)
    other = GateSkipModel(load_local_lm("smollm2", fresh=True))
    other.load(path)
    assert all(torch.equal(a, b) for a, b in zip(gated.state_dict().values(), other.state_dict().values()))


def test_quick_script(tmp_path):
    out = tmp_path / "gs.json"
    assert run_script("gateskip_experiment", "--quick", "--quiet", "--out", str(out)) == 0
    payload = json.loads(out.read_text())
    points = payload["result"]["points"]
    assert {(p["ranking"], p["budget"]) for p in points} == {("gate", 0.0), ("gate", 0.25), ("random", 0.25)}
    assert all(abs(p["skipped_fraction"] - p["budget"]) < 0.05 for p in points)
    assert payload["result"]["baseline_perplexity"] < 100
