from __future__ import annotations

import json

import pytest
import torch

from embodia.agents.methods.cold_steer import (
    METHODS,
    SteeringExample,
    _example_batch,
    _example_loss,
    build_steering,
    finite_difference_fn,
    positivity_examples,
    steered_generate,
    unit_kernel_vector,
)
from embodia.agents.tools import ToolArgumentError, call_tool
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script

LAYER = 10


def test_examples_are_disjoint_between_train_and_heldout():
    train, heldout = positivity_examples(16), positivity_examples(20, split="heldout")
    assert {e.prompt for e in train}.isdisjoint({e.prompt for e in heldout})
    assert {e.target for e in train}.isdisjoint({e.target for e in heldout})
    with pytest.raises(ValueError, match="only 20 train examples"):
        positivity_examples(21)


def _examples_loss(lm, examples, steering=None) -> float:
    """mean_i L_i (the loss the edits descend) with ``steering`` on each example's prompt positions."""
    ids, mask, spans = _example_batch(lm, examples)
    shifts = [steering.shift_for(lm.encode(e.prompt)) for e in examples] if steering else []

    def edit(hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden.clone()
        for row, (start, _) in enumerate(spans):
            hidden[row, :start] += shifts[row]
        return hidden

    with torch.no_grad():
        if steering is None:
            logits = lm.model(ids, attention_mask=mask).logits
        else:
            with lm.hook(LAYER, edit):
                logits = lm.model(ids, attention_mask=mask).logits
    return float(_example_loss(lm, logits, ids, spans))


@pytest.mark.parametrize("method", METHODS)
def test_a_small_step_lowers_the_examples_own_loss(smol, method):
    """First order: a small step along each method's edit lowers the examples' loss. (Not necessarily
    p(target) / (p(target) + p(other)): the loss does not see ``other``, and with the positive words the
    unit-kernel edit raises both sentiment words.)"""
    examples = positivity_examples(4)
    steering = build_steering(smol, method, LAYER, examples, alpha=0.1)
    assert _examples_loss(smol, examples, steering) < _examples_loss(smol, examples) - 0.1


def _reference_gradients(lm, examples):
    """Per example, one at a time, with transformers' own ``labels`` loss (mean over the target tokens):
    dL_i / dZ at every position of block LAYER's output, and the last prompt token's index."""
    grads, last = [], []
    for ex in examples:
        prompt, target = lm.encode(ex.prompt), lm.encode(ex.target)
        ids = torch.tensor([prompt + target])
        labels = torch.tensor([[-100] * len(prompt) + target])
        kept: list[torch.Tensor] = []

        def keep(_module, _inputs, output, kept=kept):
            hidden = output[0] if isinstance(output, tuple) else output
            hidden.retain_grad()
            kept.append(hidden)

        handle = lm.layers[LAYER].register_forward_hook(keep)
        try:
            loss = lm.model(ids, labels=labels).loss
        finally:
            handle.remove()
        loss.backward()
        lm.model.zero_grad(set_to_none=True)
        grads.append(kept[0].grad[0].detach())
        last.append(len(prompt) - 1)
    return grads, last


def test_unit_kernel_direction_is_the_mean_last_prompt_token_gradient(smol):
    """COLD-Kernel-Steer with kappa = 1 (authors' code): v = mean_i dL_i/dZ_i at example i's last prompt
    token; the edit is -v. Examples of different lengths and multi-token targets exercise the padding."""
    examples = [
        SteeringExample("The movie was", " terrible"),
        SteeringExample("Honestly, the food at the new place was", " absolutely dreadful"),
        SteeringExample("My day", " was awful"),
    ]
    grads, last = _reference_gradients(smol, examples)
    expected = -torch.stack([g[t] for g, t in zip(grads, last)]).mean(0)
    v = unit_kernel_vector(smol, LAYER, examples)
    assert v.shape == (smol.hidden_size,)
    torch.testing.assert_close(v, expected, rtol=1e-4, atol=1e-5 * float(expected.abs().max()))
    # what embodia did before: the gradient summed over every position, prompt and target
    every_position = -torch.stack([g.sum(0) for g in grads]).mean(0)
    cosine = torch.nn.functional.cosine_similarity(every_position, expected, dim=0)
    assert float(cosine) < 0.95


def _shifts_applied(lm, steering, prompt: str, **kwargs) -> list[torch.Tensor]:
    """Per forward pass of a steered generation: block LAYER's output as block LAYER + 1 receives it minus
    the raw output (a hook registered before the steering's sees the raw one)."""
    raw, received = [], []

    def pre(_module, args, kwargs_):
        received.append((args[0] if args else kwargs_["hidden_states"]).detach().clone())

    handle = lm.layers[LAYER + 1].register_forward_pre_hook(pre, with_kwargs=True)
    try:
        with lm.hook(LAYER, lambda hidden: raw.append(hidden.detach().clone())):
            steered_generate(lm, prompt, steering, max_new_tokens=3, **kwargs)
    finally:
        handle.remove()
    return [r - w for r, w in zip(received, raw)]


def test_generation_steers_the_prompt_and_not_generated_tokens_unless_asked(smol):
    steering = build_steering(smol, "unit_kernel", LAYER, positivity_examples(2), alpha=0.5)
    prompt = "The lecture this morning was"
    n = len(smol.encode(prompt))
    for steer_generated in (False, True):
        shifts = _shifts_applied(smol, steering, prompt, steer_generated=steer_generated)
        assert [s.shape[1] for s in shifts] == [n, 1, 1]  # the prompt pass, then one token per pass
        torch.testing.assert_close(shifts[0][0], steering.vector.expand(n, -1))
        for later in shifts[1:]:
            expected = steering.vector if steer_generated else torch.zeros_like(steering.vector)
            torch.testing.assert_close(later[0, 0], expected)


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

    out, results = tmp_path / "cs.json", tmp_path / "cold_steer.json"
    assert (
        run_script(
            "cold_steer_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results)
        )
        == 0
    )
    produced = read_results(results)
    for name in ("cold_steer", "cold_steer_all_positions"):
        assert layout_differences(produced, read_results(RESULTS_DIR / "methods" / f"{name}.json")) == [], (
            name
        )
    points = json.loads(out.read_text())["result"]["points"]
    assert {p["method"] for p in points} == set(METHODS)
