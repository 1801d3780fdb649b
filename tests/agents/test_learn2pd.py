"""Learn2PD: decoding strategies against the one-token reference, EoTP, the masked-diffusion loss by hand,
learning (LM and filter), the tool over a real MCP client, and the script's and benchmark's quick runs."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
import torch
from mcp import ClientSession, stdio_client

from embodia.agents.methods.learn2pd.decode import N_FEATURES, parallel_decode
from embodia.agents.methods.learn2pd.filter import collect_traces, evaluate, train_filter
from embodia.agents.methods.learn2pd.model import LMConfig, MaskedDiffusionLM, diffusion_loss, train_lm
from embodia.agents.methods.learn2pd.pipeline import build, load, save
from embodia.agents.methods.learn2pd.tasks import VOCAB, check, make_batch
from embodia.agents.tools import call_tool, list_tools
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import mcp_server, run_script

torch.set_num_threads(1)
L = 8


def _random_model(seed: int = 0) -> MaskedDiffusionLM:
    torch.manual_seed(seed)
    return MaskedDiffusionLM(LMConfig(d_model=32, heads=2, layers=1)).eval()


def _prompts(task: str = "shuffle", n: int = 16, seed: int = 0) -> torch.Tensor:
    return make_batch(task, n, L, torch.Generator().manual_seed(seed))[0]


def _never(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(x.shape[:-1])


@pytest.fixture(scope="module")
def trained():
    return build("copy", 150, seed=0, trace_prompts=128, d_model=32)


# ------------------------------------------------------------------------------ decoding vs reference
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parallel_strategies_reduce_to_one_token_decoding(seed):
    model, prompts = _random_model(seed), _prompts(seed=seed)
    one = parallel_decode(model, prompts, L, "one")
    assert (one.passes == L).all()
    never_threshold = parallel_decode(model, prompts, L, "threshold", threshold=1.01)
    never_filter = parallel_decode(model, prompts, L, "filter", accept_filter=_never)
    for other in (never_threshold, never_filter):
        assert torch.equal(other.tokens, one.tokens) and torch.equal(other.passes, one.passes)
    for strategy in ("threshold", "filter", "filter+eotp"):
        out = parallel_decode(model, prompts, L, strategy, threshold=0.2, accept_filter=lambda x: x[..., 0])
        assert (out.passes >= 1).all() and (out.passes <= L).all()
        assert (out.tokens != VOCAB.mask).all()


def test_one_token_decoding_matches_a_step_by_step_reference():
    model, prompt = _random_model(3), _prompts(n=1, seed=3)[0]
    answer = torch.full((L,), VOCAB.mask)
    for _ in range(L):
        logits = model(torch.cat([prompt, answer])[None])[0, len(prompt) :]
        probs = logits.clone()
        probs[:, VOCAB.mask] = -math.inf
        probs = probs.softmax(-1)
        conf, pred = probs.max(-1)
        conf[answer != VOCAB.mask] = -1
        i = int(conf.argmax())
        answer[i] = pred[i]
    out = parallel_decode(model, prompt, L, "one")
    assert torch.equal(out.tokens, answer) and int(out.passes) == L


class _FixedModel(torch.nn.Module):
    """Predicts [EOT] at answer position 3 very confidently and weak digits elsewhere, whatever the input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(x.shape[0], x.shape[1], VOCAB.size)
        p = x.shape[1] - L
        logits[:, p:, 5] = torch.linspace(1.0, 2.0, L)
        logits[:, p + 3, VOCAB.eot] = 10.0
        return logits


def test_end_of_text_prediction_fills_the_tail_and_saves_passes():
    prompt = _prompts(n=1)[0]
    plain = parallel_decode(_FixedModel(), prompt, L, "filter", accept_filter=_never)
    eotp = parallel_decode(_FixedModel(), prompt, L, "filter+eotp", accept_filter=_never)
    assert int(plain.passes) == L
    assert int(eotp.passes) == 4  # [EOT] at 3 in pass 1, then positions 0, 1, 2
    assert eotp.tokens[3:].tolist() == [VOCAB.eot] * (L - 3)
    assert eotp.tokens[:3].tolist() == [5, 5, 5]


def test_blocks_decode_left_to_right_and_eotp_fills_later_blocks():
    """Semi-autoregressive blocks of 4 over 8 positions, hand-traced on _FixedModel: [EOT] at 3 is the most
    confident position of block 0, so EoTP fills positions 4-7 in pass 1 and only 0-2 are left (4 passes);
    without EoTP every position costs a pass (8), and the candidates of each pass lie in one block."""
    prompt = _prompts(n=1)[0]
    seen: list[list[int]] = []

    def record(rows, feats, preds, candidates):
        seen.append(candidates[0].nonzero().squeeze(1).tolist())

    plain = parallel_decode(_FixedModel(), prompt, L, "filter", accept_filter=_never, block=4, on_step=record)
    assert int(plain.passes) == L
    assert [max(c) // 4 == min(c) // 4 for c in seen] == [True] * L
    assert seen[0] == [0, 1, 2, 3] and seen[4] == [4, 5, 6, 7]  # block 1 starts after block 0 is done
    # one token per pass inside block 0 takes [EOT]@3 first, then the linspace order 2, 1, 0
    assert plain.tokens.tolist() == [5, 5, 5, VOCAB.eot, 5, 5, 5, 5]
    eotp = parallel_decode(_FixedModel(), prompt, L, "filter+eotp", accept_filter=_never, block=4)
    assert int(eotp.passes) == 4
    assert eotp.tokens.tolist() == [5, 5, 5] + [VOCAB.eot] * (L - 3)
    # threshold 0.3: confidences e^x / (e^x + 11) with x = 1 + i/7 pass 0.3 from i = 4 on (0.304) and [EOT]@3
    # passes; with blocks: pass 1 takes [EOT]@3, passes 2-4 take 2, 1, 0, pass 5 takes 4-7 (5 passes);
    # without blocks pass 1 takes 3-7 at once and 2, 1, 0 follow (4 passes)
    thr = parallel_decode(_FixedModel(), prompt, L, "threshold", threshold=0.3, block=4)
    assert int(thr.passes) == 5
    assert int(parallel_decode(_FixedModel(), prompt, L, "threshold", threshold=0.3).passes) == 4


def test_long_answer_batches_pad_with_eot_and_check():
    prompts, answers = make_batch(
        "reverse", 64, 10, torch.Generator().manual_seed(2), answer_len=48, min_len=3
    )
    assert prompts.shape == (64, 11) and answers.shape == (64, 48)
    lengths = (prompts[:, :10] < 10).sum(dim=1)
    assert lengths.min() >= 3 and lengths.max() <= 10
    assert ((answers < 10).sum(dim=1) == lengths).all()
    assert (answers[:, 10:] == VOCAB.eot).all()
    assert check("reverse", prompts, answers).all()
    assert not check("copy", prompts, answers).all()  # reversed != copied for most prompts
    shifted = answers.roll(1, dims=1)
    assert not check("reverse", prompts, shifted).any()
    with pytest.raises(ValueError, match="answer_len"):
        make_batch("copy", 2, 10, torch.Generator(), answer_len=8)


def test_bad_strategy_and_missing_filter_are_refused():
    with pytest.raises(ValueError, match="unknown strategy"):
        parallel_decode(_FixedModel(), _prompts(n=1)[0], L, "greedy")
    with pytest.raises(ValueError, match="accept_filter"):
        parallel_decode(_FixedModel(), _prompts(n=1)[0], L, "filter")


# ------------------------------------------------------------------------------ loss and tasks
def test_diffusion_loss_matches_a_hand_computation():
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]])
    targets = torch.tensor([[0, 1], [2, 0]])
    masked = torch.tensor([[True, False], [True, True]])
    t = torch.tensor([0.5, 0.25])

    def nll(row, target):
        return -(row[target] - math.log(sum(math.exp(v) for v in row)))

    row0 = nll([2.0, 0.0, 0.0], 0) / (0.5 * 2)
    row1 = (nll([0.0, 0.0, 0.0], 2) + nll([1.0, 2.0, 3.0], 0)) / (0.25 * 2)
    assert diffusion_loss(logits, targets, masked, t).item() == pytest.approx((row0 + row1) / 2, rel=1e-6)


def test_checker_accepts_right_answers_and_refuses_wrong_ones():
    for task in ("copy", "reverse", "sort", "shuffle"):
        prompts, answers = make_batch(task, 32, L, torch.Generator().manual_seed(1))
        assert check(task, prompts, answers).all(), task
        wrong = answers.clone()
        wrong[:, 0] = VOCAB.eot
        assert not check(task, prompts, wrong).any(), task
    prompts = torch.tensor([[1, 1, 2] + [VOCAB.eot] * (L - 3) + [VOCAB.sep]])
    ok = torch.tensor([[2, 1, 1] + [VOCAB.eot] * (L - 3)])
    dup = torch.tensor([[2, 2, 1] + [VOCAB.eot] * (L - 3)])
    late = torch.tensor([[2, 1, VOCAB.eot, 1] + [VOCAB.eot] * (L - 4)])
    assert check("shuffle", prompts, ok).all() and not check("shuffle", prompts, dup).any()
    assert not check("shuffle", prompts, late).any()


# ------------------------------------------------------------------------------ learning
def test_lm_learns_copy_and_filter_beats_a_constant(trained):
    prompts, _ = make_batch("copy", 128, L, torch.Generator().manual_seed(99))
    acc = evaluate("copy", trained.model, prompts, L, "one")["accuracy"]
    assert acc > 0.5  # chance is ~0
    # filter on held-out traces of a weaker model (labels mixed) vs the majority-class constant
    weak = train_lm(LMConfig(task="shuffle", d_model=32), 60, seed=1)
    x, y = collect_traces(weak, _prompts(n=128, seed=5), L)
    xt, yt = collect_traces(weak, _prompts(n=128, seed=6), L)
    f = train_filter(x, y, steps=300)
    assert x.shape[1] == N_FEATURES
    acc_filter = ((f(xt) >= 0.5).float() == yt).float().mean().item()
    assert acc_filter > max(yt.mean().item(), 1 - yt.mean().item()) + 0.02


def test_save_and_load_round_trip(trained, tmp_path):
    back = load(save(trained, tmp_path / "m"))
    prompts = _prompts("copy", 8)
    a = parallel_decode(trained.model, prompts, L, "filter", accept_filter=trained.accept_filter)
    b = parallel_decode(back.model, prompts, L, "filter", accept_filter=back.accept_filter)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.passes, b.passes)


# ------------------------------------------------------------------------------ tool, script, benchmark
def test_tool_is_listed_and_callable():
    assert "parallel_decode" in {t.name for t in list_tools()}
    out = call_tool("parallel_decode", {"task": "copy", "n": 8, "train_steps": 20})
    assert out["one_token_forward_passes"] == L and 1 <= out["forward_passes"] <= L


def test_tool_over_mcp(tmp_path, trained):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    save(trained, ws / "model")
    save(trained, outside / "model")
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            results["ok"] = await session.call_tool("parallel_decode", {"model": "model", "n": 16})
            results["bad"] = await session.call_tool("parallel_decode", {"strategy": "greedy"})
            results["escape"] = await session.call_tool("parallel_decode", {"model": str(outside / "model")})

    anyio.run(run)
    schema = results["tools"]["parallel_decode"].input_schema
    assert "greedy" not in schema["properties"]["strategy"]["enum"]
    assert not results["ok"].is_error, results["ok"].content[0].text
    body = json.loads(results["ok"].content[0].text)
    assert body["task"] == "copy" and body["one_token_forward_passes"] == L
    assert results["bad"].is_error and "strategy" in results["bad"].content[0].text
    message = results["escape"].content[0].text
    assert results["escape"].is_error and "model: path" in message and "is outside the workspace" in message


def test_script_and_benchmark_quick_runs(tmp_path):
    out, results = tmp_path / "l2pd.json", tmp_path / "results.json"
    assert (
        run_script("learn2pd_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results))
        == 0
    )
    data = json.loads(out.read_text())
    rows = {r["strategy"]: r for r in data["seeds"][0]["rows"]}
    assert rows["one"]["passes"] == 48  # the long-answer setting: one token per pass costs every position
    # blocks of 16: any other strategy needs at least one pass per block unless EoTP ends decoding early
    assert all(r["passes"] >= 3 for k, r in rows.items() if "eotp" not in k)
    for task in ("shuffle", "sort", "copy_long"):  # the committed runs have the layout the script writes
        committed = read_results(RESULTS_DIR / "methods" / f"learn2pd_{task}.json")
        assert layout_differences(read_results(results), committed) == []
    from benchmarks.bench_parallel_decoding import main

    bench = tmp_path / "bench.json"
    assert main(["--quick", "--results", str(bench)]) == 0
    committed = read_results(RESULTS_DIR / "benchmarks" / "parallel_decoding.json")
    assert layout_differences(read_results(bench), committed) == []
