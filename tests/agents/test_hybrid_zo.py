from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.hybrid_zo import (
    HybridConfig,
    LoRALinear,
    _perturb,
    _zo_parameters,
    finetune,
    topic_dataset,
    zo_projected_gradient,
)
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script


def test_two_point_estimate_is_the_directional_derivative_and_restores_weights():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.randn(16, 6)
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]

    def loss() -> float:
        return float(model(x).pow(2).mean())

    estimate, _, noise = zo_projected_gradient(loss, params, seed=7, mu=1e-3)
    # the same z, regenerated from the seed: grad . z by autograd
    generator = torch.Generator().manual_seed(7)
    z = [torch.randn(p.shape, generator=generator) for p in params]
    grads = torch.autograd.grad(model(x).pow(2).mean(), params)
    exact = sum(float((g * zi).sum()) for g, zi in zip(grads, z))
    assert estimate == pytest.approx(exact, rel=1e-2, abs=1e-4)
    assert noise == 8 * 6 * 4  # the largest noise tensor: the first weight, float32
    for p, b in zip(params, before):
        assert torch.allclose(p, b, atol=1e-6)
    _perturb(params, 7, 0.5)
    _perturb(params, 7, -0.5)
    assert all(torch.allclose(p, b, atol=1e-6) for p, b in zip(params, before))


def test_lora_starts_as_the_base_layer():
    base = nn.Linear(10, 4)
    lora = LoRALinear(base, rank=2, alpha=4)
    x = torch.randn(3, 10)
    assert torch.equal(lora(x), base(x))


def test_data_splits_are_disjoint_and_balanced():
    train, test = topic_dataset("train"), topic_dataset("test")
    assert {s for s, _ in train}.isdisjoint({s for s, _ in test})
    assert sorted({y for _, y in train}) == [0, 1, 2, 3]
    assert [sum(y == k for _, y in test) for k in range(4)] == [len(test) // 4] * 4


EMBEDDING = 49_152 * 576  # SmolLM2's token embeddings, tied with the LM head (one tensor)
BLOCK = 2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536 + 2 * 576  # q, o; k, v; three MLP; two norms
FINAL_NORM = 576


def test_zo_covers_every_weight_but_lora_by_default_or_only_the_blocks(smol):
    """The documented ZO parameter sets, with their counts and largest noise tensors (float32)."""
    assert BLOCK == 3_540_096 and smol.model.lm_head.weight is smol.model.model.embed_tokens.weight
    every_block = set(range(30))
    paper = _zo_parameters(smol, every_block)  # default: the paper's choice
    assert sum(p.numel() for p in paper) == sum(p.numel() for p in smol.model.parameters()) == 134_515_008
    assert sum(p.numel() for p in paper) == EMBEDDING + FINAL_NORM + 30 * BLOCK
    assert any(p is smol.model.lm_head.weight for p in paper)
    assert max(p.numel() * 4 for p in paper) == EMBEDDING * 4  # 108.0 MiB of transient noise
    blocks = _zo_parameters(smol, every_block, "blocks")
    assert sum(p.numel() for p in blocks) == 30 * BLOCK == 106_202_880
    assert max(p.numel() * 4 for p in blocks) == 1536 * 576 * 4  # 3.4 MiB
    assert not any(p is smol.model.model.norm.weight for p in blocks)
    with pytest.raises(ValueError, match="zo_scope must be one of all, blocks"):
        _zo_parameters(smol, every_block, "embeddings")


@pytest.mark.parametrize(("mode", "scope"), [("zo", "all"), ("zo", "blocks"), ("lora", "all")])
def test_memory_and_pass_accounting(mode, scope):
    lm = load_local_lm("smollm2", fresh=True)
    config = HybridConfig(
        mode=mode, steps=1, batch_size=2, eval_every=1, zo_layers="29", zo_scope=scope, test_limit=4
    )
    result = finetune(lm, config)
    memory = result.memory
    if mode == "zo":
        assert memory["saved_activations"] == 0 and memory["gradients"] == 0
        block = sum(p.numel() for p in lm.layers[29].parameters())
        if scope == "all":  # block 29, the embeddings / LM head and the final norm
            assert result.trainable_zo == block + EMBEDDING + FINAL_NORM
            assert memory["zo_noise"] == EMBEDDING * 4  # the largest tensor: the embeddings
        else:
            assert result.trainable_zo == block
            assert memory["zo_noise"] == 1536 * 576 * 4  # one MLP projection: the largest block weight
        assert (result.forward_passes, result.backward_passes) == (2, 0) and result.trainable_fo == 0
    else:
        lora_bytes = result.trainable_fo * 4
        assert memory["gradients"] == lora_bytes and memory["zo_noise"] == 0
        assert memory["saved_activations"] > 10 * lora_bytes  # activations dominate LoRA's memory
        assert (result.forward_passes, result.backward_passes) == (1, 1) and result.trainable_zo == 0


def test_quick_script(tmp_path):
    out, results = tmp_path / "hz.json", tmp_path / "hybrid_zo.json"
    assert (
        run_script("hybrid_zo_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results))
        == 0
    )
    committed = read_results(RESULTS_DIR / "methods" / "hybrid_zo_blocks.json")
    assert layout_differences(read_results(results), committed) == []
    results = {r["mode"]: r for r in json.loads(out.read_text())["results"]}
    assert set(results) == {"lora", "zo", "hybrid"}
    assert results["hybrid"]["forward_passes"] == 2 * 3 and results["hybrid"]["backward_passes"] == 2
    assert results["hybrid"]["memory"]["total"] > results["zo"]["memory"]["total"]
