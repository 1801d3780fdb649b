"""VPPO: token perception against an analytic KL on constructed models, top-k filtering, advantage shaping
and GRPO advantages by hand, the losses, learning, the tool over a real MCP client, the script's quick run."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
import torch
from mcp import ClientSession, stdio_client

from embodia.agents.methods.vppo.grpo import RLConfig, group_advantages, grpo_loss, train_rl
from embodia.agents.methods.vppo.model import TinyVLM, accuracy, generate, load_model, save_model, sft
from embodia.agents.methods.vppo.tasks import EOS, INDEX, VOCAB_SIZE, correct, make_batch, question
from embodia.agents.methods.vppo.vppo import (
    perturb,
    shape_advantages,
    token_perception,
    top_k_mask,
    vppo_loss,
)
from embodia.agents.tools import call_tool, list_tools
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import mcp_server, run_script

torch.set_num_threads(1)
V = VOCAB_SIZE


class _Blind(torch.nn.Module):
    """Logits depend on the prompt and the answer prefix only, never on the image."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Embedding(V, V)

    def answer_logits(self, images, prompts, answers):
        return self.table(prompts[:, :1]) + self.table(answers)


class _SeesAtOne(torch.nn.Module):
    """Answer position 0: fixed logits ``u``; position 1: ``mean(image) * v``."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.u, self.v = torch.randn(V, generator=g), torch.randn(V, generator=g) * 3

    def answer_logits(self, images, prompts, answers):
        m = images.mean(dim=(1, 2, 3))
        return torch.stack([self.u.expand(len(images), V), m[:, None] * self.v], dim=1)


def _kl_by_hand(p_logits: list[float], q_logits: list[float]) -> float:
    zp, zq = sum(math.exp(x) for x in p_logits), sum(math.exp(x) for x in q_logits)
    return sum(
        math.exp(a) / zp * ((a - math.log(zp)) - (b - math.log(zq))) for a, b in zip(p_logits, q_logits)
    )


# ------------------------------------------------------------------------------ perception vs reference
def test_a_model_that_ignores_the_image_has_zero_perception():
    images, prompts, answers = make_batch("mixed", 8, 0)
    s = token_perception(_Blind(), images, perturb(images, "patches"), prompts, answers)
    assert s.shape == (8, 2) and torch.equal(s, torch.zeros(8, 2))


@pytest.mark.parametrize("perturbation", ["blank", "patches"])
def test_perception_is_the_analytic_kl_at_the_image_dependent_position(perturbation):
    images, prompts, answers = make_batch("count", 4, 3)
    model = _SeesAtOne()
    perturbed = perturb(images, perturbation, torch.Generator().manual_seed(0))
    s = token_perception(model, images, perturbed, prompts, answers)
    assert torch.equal(s[:, 0], torch.zeros(4))
    for i in range(4):
        m_real, m_pert = images[i].mean().item(), perturbed[i].mean().item()
        want = _kl_by_hand([m_real * x for x in model.v.tolist()], [m_pert * x for x in model.v.tolist()])
        assert want > 1e-3 and s[i, 1].item() == pytest.approx(want, rel=1e-4, abs=1e-6)


def test_patch_perturbation_blackens_whole_cells_only():
    images = torch.rand(6, 3, 24, 24)
    out = perturb(images, "patches", torch.Generator().manual_seed(0))
    cells = out.view(6, 3, 3, 8, 3, 8)
    black = (cells == 0).all(dim=5).all(dim=3).all(dim=1)  # [6, 3, 3]
    kept = (cells == images.view(6, 3, 3, 8, 3, 8)).all(dim=5).all(dim=3).all(dim=1)
    assert (black | kept).all() and black.flatten(1).any(dim=1).all()
    with pytest.raises(ValueError, match="unknown perturbation"):
        perturb(images, "noise")


# ------------------------------------------------------------------------------ filtering, shaping, GRPO
def test_top_k_keeps_exactly_the_most_perceptive_tokens():
    s = torch.tensor([[0.1, 0.5, 0.3, 0.0, 0.2], [0.2, 0.2, 0.1, 0.9, 0.0]])
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    keep = top_k_mask(s, 0.4, mask)  # row 0: ceil(2.0) = 2 of 5; row 1: ceil(1.2) = 2 of the 3 valid
    assert keep.tolist() == [[False, True, True, False, False], [True, True, False, False, False]]
    ties = top_k_mask(torch.tensor([[0.2, 0.2, 0.1]]), 0.3)  # ceil(0.9) = 1: the earlier of the tie
    assert ties.tolist() == [[True, False, False]]


def test_advantage_shaping_by_hand_and_sign_preserved():
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, -2.0])
    s = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.5, 0.5], [0.5, 0.0], [0.3, 0.1], [0.3, 0.1]])
    out = shape_advantages(adv[:4], s[:4], group=4, shaping=(0.5, 1.5))
    # mean s = 0, 1, .5, .25 -> w = .5, 1.5, 1, .75; a flat group (last two) -> w = 1
    assert out[:4].tolist() == pytest.approx([0.5, -1.5, 0.5, -0.375])
    out2 = shape_advantages(adv[4:], s[4:], group=2)
    assert out2.tolist() == pytest.approx([2.0, -2.0])
    g = torch.Generator().manual_seed(0)
    a, p = torch.randn(64, generator=g), torch.rand(64, 3, generator=g)
    shaped = shape_advantages(a, p, group=8)
    assert torch.equal(torch.sign(shaped), torch.sign(a))
    assert ((shaped / a).abs() >= 0.5 - 1e-6).all() and ((shaped / a).abs() <= 1.5 + 1e-6).all()


def test_group_advantages_by_hand():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    a = group_advantages(r)
    assert a[0].tolist() == pytest.approx([1, -1, -1, 1], abs=1e-3)
    assert a[1].tolist() == [0, 0, 0, 0]
    std = math.sqrt(0.25 * 0.75)
    assert a[2].tolist() == pytest.approx([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std], rel=1e-3)


def test_losses_at_ratio_one_by_hand_and_vppo_grads_only_kept_tokens():
    logp = torch.log(torch.tensor([[0.5, 0.9], [0.2, 0.8]])).requires_grad_()
    adv, mask = torch.tensor([1.0, -1.0]), torch.ones(2, 2, dtype=torch.bool)
    assert grpo_loss(logp, logp.detach(), adv, mask).item() == pytest.approx(0.0)
    s = torch.tensor([[0.4, 0.0], [0.0, 0.2]])
    loss = vppo_loss(logp, logp.detach(), adv, mask, s, group=2, k=0.5, shaping=(0.5, 1.5))
    # kept: (0, 0) and (1, 1); mean s: .2 and .1 -> w = 1.5, .5 -> A' = 1.5, -.5; loss = -(1.5 - .5) / 2
    assert loss.item() == pytest.approx(-0.5)
    loss.backward()
    assert logp.grad[0, 1].item() == 0 and logp.grad[1, 0].item() == 0
    assert logp.grad[0, 0].item() == pytest.approx(-0.75) and logp.grad[1, 1].item() == pytest.approx(0.25)


def test_questions_are_deterministic_and_checked_by_exact_match():
    a, b = question("count", 5, 2), question("count", 5, 2)
    assert (a[0] == b[0]).all() and a[1:] == b[1:] and a[2][1] == EOS
    _, prompts, answers = make_batch("colour", 16, 0)
    assert (prompts[:, 0] == INDEX["colour"]).all()
    wrong = answers.clone()
    wrong[:, 1] = INDEX["0"]
    assert correct(answers, answers).all() and not correct(wrong, answers).any()


# ------------------------------------------------------------------------------ learning
@pytest.fixture(scope="module")
def warm():
    torch.manual_seed(0)
    return sft(TinyVLM(), "colour", 300, seed=0)


def test_sft_uses_the_image(warm):
    batch = make_batch("colour", 256, 4242)
    blind = (batch[2][:, 0] == INDEX["none"]).float().mean().item()  # best image-blind answer
    acc = accuracy(warm, batch)
    assert acc > blind + 0.15, (acc, blind)
    s = token_perception(
        warm, batch[0], perturb(batch[0], "blank"), batch[1], generate(warm, *batch[:2], True)
    )
    assert s[:, 0].mean() > 10 * s[:, 1].mean()  # the colour word depends on the image, [EOS] does not


def test_rl_runs_and_keeps_the_policy_sane(warm):
    import copy

    batch = make_batch("colour", 128, 77)
    for method in ("grpo", "vppo"):
        model = copy.deepcopy(warm)
        curve = train_rl(model, "colour", RLConfig(method=method, steps=6, eval_every=3), 0, batch)
        assert [s for s, _ in curve] == [0, 3, 6]
        assert curve[-1][1] > curve[0][1] - 0.1
    with pytest.raises(ValueError, match="unknown method"):
        train_rl(warm, "colour", RLConfig(method="ppo"), 0, batch)


# ------------------------------------------------------------------------------ tool, script
def test_tool_is_listed_and_callable():
    assert "token_perception" in {t.name for t in list_tools()}
    out = call_tool("token_perception", {"n": 4, "sft_steps": 10, "task": "count"})
    assert out["task"] == "count" and len(out["questions"]) == 4 and 0 <= out["share_above"] <= 1
    assert all(len(q["perception"]) == 2 for q in out["questions"])


def test_tool_over_mcp(tmp_path, warm):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    save_model(warm, ws / "model", "colour")
    save_model(warm, outside / "model", "colour")
    assert torch.equal(load_model(ws / "model")[0].pos, warm.pos)
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            results["ok"] = await session.call_tool("token_perception", {"model": "model", "n": 8})
            results["bad"] = await session.call_tool("token_perception", {"perturbation": "noise"})
            results["escape"] = await session.call_tool("token_perception", {"model": str(outside / "model")})

    anyio.run(run)
    schema = results["tools"]["token_perception"].input_schema
    assert set(schema["properties"]["perturbation"]["enum"]) == {"patches", "blank"}
    assert not results["ok"].is_error, results["ok"].content[0].text
    body = json.loads(results["ok"].content[0].text)
    assert body["task"] == "colour" and len(body["questions"]) == 8 and body["accuracy"] > 0.4
    assert results["bad"].is_error and "perturbation" in results["bad"].content[0].text
    message = results["escape"].content[0].text
    assert results["escape"].is_error and "model: path" in message and "is outside the workspace" in message


def test_script_quick_run(tmp_path):
    out, plot, results = tmp_path / "vppo.json", tmp_path / "vppo.png", tmp_path / "results.json"
    args = ["--quick", "--quiet", "--out", str(out), "--plot", str(plot), "--results", str(results)]
    assert run_script("vppo_experiment", *args) == 0
    data = json.loads(out.read_text())
    assert [s for s, _ in data["runs"][0]["grpo"]["curve"]] == [0, 2, 4] and plot.stat().st_size > 0
    produced = read_results(results)
    assert [row["step"] for row in produced["tables"]["accuracy"]["rows"]] == [0, 2, 4]
    for name in ("vppo_count", "vppo_count_lr1e-3"):  # the committed runs have the layout the script writes
        committed = read_results(RESULTS_DIR / "methods" / f"{name}.json")
        assert layout_differences(produced, committed) == []
