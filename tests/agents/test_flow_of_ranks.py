"""Flow-of-ranks: the authors' depth power law of Q/K/V widths and their per-matrix singular-value threshold
by hand, a power-law model that learns, Eckart-Young for the factorisation, effective and energy rank by
hand, embodia's own schedules under one budget, compression of plain and Hugging Face models, MASE by hand,
the tool over a real MCP client and the script's quick run."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
import torch
from mcp import ClientSession, stdio_client
from torch import nn

from embodia.agents.methods.flow_of_ranks.compress import (
    compress_transformer,
    find_targets,
    fit_ranks,
    schedule_weights,
)
from embodia.agents.methods.flow_of_ranks.factorize import LowRankLinear, factorize_linear
from embodia.agents.methods.flow_of_ranks.model import (
    ForecasterConfig,
    PatchForecaster,
    evaluate,
    inference_memory,
    load_forecaster,
    make_series,
    mase,
    save_forecaster,
    seasonal_naive,
    split,
    train_forecaster,
    training_memory,
    weight_bytes,
)
from embodia.agents.methods.flow_of_ranks.pretrain import (
    attention_params,
    depth_power_law,
    nearest_power_of_two,
    uniform_widths,
)
from embodia.agents.methods.flow_of_ranks.spectra import effective_rank, energy_rank, singular_values
from embodia.agents.methods.flow_of_ranks.threshold import threshold_rank, truncate_attention
from embodia.agents.tools import call_tool, list_tools
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import mcp_server, run_script

torch.set_num_threads(1)
SMALL = ForecasterConfig(d_model=32, mlp=64, layers=2)


@pytest.fixture(scope="module")
def trained() -> PatchForecaster:
    return train_forecaster(SMALL, 150, seed=0)


# ------------------------------------------------------------------------------ the paper's protocol
def test_nearest_power_of_two_is_the_authors_log_scale_rounding():
    # 2 ** int(round(log2 x)): 6 -> log2 2.58 -> 8 (not 4, the nearer in linear scale); halves to even
    xs = (6.0, 5.0, 2**1.5, 2**2.5, 11.0, 12.0)
    assert [nearest_power_of_two(x, 64) for x in xs] == [8, 4, 4, 4, 8, 16]
    assert nearest_power_of_two(0.3, 16) == 1 and nearest_power_of_two(100.0, 16) == 16


def test_depth_power_law_by_hand():
    # base 2, beta 0.7: 2 (l+1)^0.7 = 2, 3.25, 4.32, 5.28, 6.17, 7.01 -> log2 1, 1.70, 2.11, 2.40, 2.63, 2.81
    assert depth_power_law(6, 2.0, 0.7, 16) == (2, 4, 4, 4, 8, 8)
    # the authors' 15 % Chronos configuration (base_tilde_d 5, beta 0.35) on 12 blocks of 64-wide heads:
    # 5 (l+1)^0.35 = 5, 6.37, ..., 11.19 (l=9, log2 3.48 -> 8), 11.58 (l=10, log2 3.53 -> 16)
    assert depth_power_law(12, 5.0, 0.35, 64) == (4,) + (8,) * 9 + (16, 16)
    assert depth_power_law(3, 40.0, 1.0, 16) == (16, 16, 16)  # capped at the dense head width
    assert uniform_widths((2, 4, 4, 4, 8, 8)) == (5,) * 6
    with pytest.raises(ValueError, match="multiple"):
        uniform_widths((2, 4, 4))


def test_power_law_model_has_the_widths_and_parameters():
    config = ForecasterConfig(d_model=64, heads=4, layers=2, kv_dims=(2, 4))
    model = PatchForecaster(config)
    assert model.layers[0].attn.q.out_features == 8 and model.layers[1].attn.v.out_features == 16
    assert model.layers[1].attn.o.in_features == 16 and model.layers[1].attn.o.out_features == 64
    # per block 4 d inner + 3 inner + d: 2048 + 24 + 64 and 4096 + 48 + 64
    assert attention_params(64, 4, (2, 4)) == 2136 + 4208
    attn = sum(p.numel() for n, p in model.named_parameters() if ".attn." in n)
    assert attn == 6344
    with pytest.raises(ValueError, match="kv_dims"):
        ForecasterConfig(layers=2, kv_dims=(4,))


def test_power_law_model_learns(tmp_path):
    config = ForecasterConfig(d_model=32, mlp=64, layers=2, kv_dims=(2, 4))
    test = make_series(256, 120, torch.Generator().manual_seed(3))
    torch.manual_seed(0)
    before = evaluate(PatchForecaster(config).eval(), test, config)
    model = train_forecaster(config, 60, seed=0, batch=32)
    after = evaluate(model, test, config)
    assert after < 0.7 * before
    back = load_forecaster(save_forecaster(model, tmp_path / "m"))
    assert back.config.kv_dims == (2, 4) and torch.equal(back(test[:, :96]), model(test[:, :96]))
    x = test[:64, :96]
    dense = PatchForecaster(ForecasterConfig(d_model=32, mlp=64, layers=2))
    assert training_memory(model, x) < training_memory(dense, x)  # narrower Q/K/V saved for backward


def _matrix(singular: list[float], seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    n = len(singular)
    u = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))[0]
    v = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))[0]
    return u @ torch.diag(torch.tensor(singular, dtype=torch.float64)) @ v.T


def test_threshold_rank_on_a_hand_made_matrix():
    s = singular_values(_matrix([10.0, 3.0, 1.0, 0.05]))  # s / s_1 = 1, 0.3, 0.1, 0.005
    assert [threshold_rank(s, e) for e in (0.0, 0.001, 0.01, 0.05, 0.2, 0.5, 1.0)] == [4, 4, 3, 3, 2, 1, 1]
    assert threshold_rank(torch.zeros(3), 0.1) == 0
    with pytest.raises(ValueError, match="epsilon"):
        threshold_rank(s, 1.5)


def test_truncate_attention_per_matrix_threshold():
    config = ForecasterConfig(d_model=8, heads=2, mlp=16, layers=2)
    model = PatchForecaster(config).double().eval()
    spectra = {
        "layers.0.attn.q": [8.0, 2.0, 0.5, 0.1, 0.05, 0.02, 0.01, 0.001],  # eps 0.05: s/s1 >= .05 -> rank 3
        "layers.1.attn.k": [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.01, 0.001],  # rank 6: factors 96 > 64 weights
    }
    with torch.no_grad():
        for name, sv in spectra.items():
            model.get_submodule(name).weight.copy_(_matrix(sv, seed=len(name)))
    fc1 = model.layers[0].fc1.weight.clone()
    small, rep = truncate_attention(model, 0.05)
    assert rep.ranks["layers.0.attn.q"] == 3 and rep.ranks["layers.1.attn.k"] == 6
    assert isinstance(small.layers[0].attn.q, LowRankLinear) and small.layers[0].attn.q.rank == 3
    k = small.layers[1].attn.k  # truncated in place: the dense weight minus the two smallest directions
    assert isinstance(k, nn.Linear)
    dropped = float(((model.layers[1].attn.k.weight - k.weight).detach() ** 2).sum())
    assert dropped == pytest.approx(0.01**2 + 0.001**2, rel=1e-4)  # SVD in float32, as the authors
    err_q = float(((model.layers[0].attn.q.weight - small.layers[0].attn.q.weight).detach() ** 2).sum())
    assert err_q == pytest.approx(0.1**2 + 0.05**2 + 0.02**2 + 0.01**2 + 0.001**2, rel=1e-4)
    assert torch.equal(small.layers[0].fc1.weight, fc1)  # the MLP is not touched
    assert set(rep.ranks) == {f"layers.{b}.attn.{p}" for b in (0, 1) for p in "qkvo"}
    assert rep.attention_params_after == 8 * 64 - 64 + 3 * 16
    assert isinstance(model.layers[0].attn.q, nn.Linear)  # the original is untouched


# ------------------------------------------------------------------------------ factorisation
@pytest.mark.parametrize("rank", [1, 3, 7, 12])
def test_factorisation_error_equals_discarded_singular_values(rank):
    torch.manual_seed(rank)
    linear = nn.Linear(20, 12).double()
    s = torch.linalg.svdvals(linear.weight.detach())
    low = factorize_linear(linear, rank)
    err2 = float(((linear.weight - low.weight).detach() ** 2).sum())
    assert err2 == pytest.approx(float((s[rank:] ** 2).sum()), abs=1e-10)
    assert sum(p.numel() for p in low.first.parameters()) == rank * 20


def test_full_rank_factorisation_reproduces_the_layer():
    torch.manual_seed(0)
    linear = nn.Linear(16, 10).double()
    x = torch.randn(5, 16, dtype=torch.float64)
    assert torch.allclose(factorize_linear(linear, 10)(x), linear(x), atol=1e-10)


def test_activation_aware_factorisation_is_no_worse_on_its_inputs():
    torch.manual_seed(1)
    linear = nn.Linear(16, 16).double()
    x = torch.randn(400, 4, dtype=torch.float64) @ torch.randn(4, 16, dtype=torch.float64)  # rank-4 inputs
    x = x + 0.01 * torch.randn(400, 16, dtype=torch.float64)
    plain, aware = factorize_linear(linear, 4), factorize_linear(linear, 4, inputs=x)
    err_plain = (plain(x) - linear(x)).pow(2).sum()
    err_aware = (aware(x) - linear(x)).pow(2).sum()
    assert err_aware <= err_plain and err_aware < 0.01 * err_plain


def test_low_rank_linear_refuses_bad_ranks():
    with pytest.raises(ValueError, match="rank"):
        LowRankLinear(4, 3, 4)


# ------------------------------------------------------------------------------ spectra
def test_effective_rank_by_hand():
    assert effective_rank(singular_values(torch.eye(7))) == pytest.approx(7.0)
    rank_one = torch.outer(torch.arange(1.0, 6.0), torch.tensor([1.0, -2.0, 0.5]))
    assert effective_rank(singular_values(rank_one)) == pytest.approx(1.0, abs=1e-6)
    s = torch.tensor([3.0, 1.0])  # p = (3/4, 1/4)
    assert effective_rank(s) == pytest.approx(math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25))))


def test_energy_rank_by_hand():
    s = torch.tensor([3.0, 2.0, 1.0, 1.0])  # energies 9, 4, 1, 1 of 15
    assert energy_rank(s, 0.5) == 1
    assert energy_rank(s, 0.6) == 1 and energy_rank(s, 0.61) == 2
    assert energy_rank(s, 13 / 15) == 2 and energy_rank(s, 0.9) == 3
    assert energy_rank(s, 1.0) == 4


# ------------------------------------------------------------------------------ schedules and compression
def test_increasing_schedule_grows_with_depth_and_meets_the_uniform_budget():
    model = PatchForecaster(ForecasterConfig(layers=4))
    targets = find_targets(model)
    dense = sum(t.dense for t in targets)
    for budget in (0.25, 0.35, 0.5):
        spent = {}
        for schedule in ("uniform", "increasing"):
            ranks = fit_ranks(targets, schedule_weights(targets, schedule), budget)
            spent[schedule] = sum(t.cost(r) for t, r in zip(targets, ranks, strict=True))
            assert spent[schedule] <= budget * dense
            if schedule == "increasing":
                by_depth = {}
                for t, r in zip(targets, ranks, strict=True):
                    if t.name.endswith("attn.q"):
                        by_depth[t.depth] = r
                values = [by_depth[d] for d in sorted(by_depth)]
                assert values == sorted(values) and values[-1] > values[0]
        assert spent["uniform"] == pytest.approx(spent["increasing"], rel=0.05)
        assert spent["uniform"] == pytest.approx(budget * dense, rel=0.05)


def test_compress_transformer_replaces_block_linears_of_a_plain_model():
    torch.manual_seed(0)
    model = PatchForecaster(ForecasterConfig(layers=3)).eval()
    x = make_series(16, 120, torch.Generator().manual_seed(0))[:, :96]
    small, rep = compress_transformer(model, x, "increasing", 0.4)
    names = {n for n, m in small.named_modules() if isinstance(m, LowRankLinear)}
    assert names == {t.name for t in find_targets(model)} and len(names) == 18
    assert isinstance(small.embed, nn.Linear) and isinstance(small.head, nn.Linear)
    assert isinstance(model.layers[0].attn.q, nn.Linear)  # the original is untouched
    assert rep.params_after < rep.params_before and small(x).shape == (16, 24)
    assert rep.analysis["layers.0.attn.q"]["input"]["full_rank"] == 64
    list_small, _ = compress_transformer(model, None, [4, 8, 16], 1.0)
    assert list_small.layers[2].attn.v.rank == 16 and list_small.layers[0].fc1.rank == 4
    with pytest.raises(ValueError, match="schedule"):
        compress_transformer(model, None, "decreasing")
    with pytest.raises(ValueError, match="calibration"):
        compress_transformer(model, None, "measured")


def test_compress_transformer_on_a_hugging_face_model():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    ids = {"input_ids": torch.randint(50, (4, 12))}
    small, rep = compress_transformer(model, ids, "uniform", 0.5, patterns=(r"query|key|value",))
    assert len(rep.ranks) == 6 and isinstance(small.encoder.layer[1].attention.self.key, LowRankLinear)
    assert small(**ids).last_hidden_state.shape == (4, 12, 32)
    assert rep.params_after < rep.params_before


# ------------------------------------------------------------------------------ memory
def test_weight_bytes_and_inference_memory():
    torch.manual_seed(0)
    x = make_series(64, 120, torch.Generator().manual_seed(0))[:, :96]
    dense = PatchForecaster(ForecasterConfig()).eval()
    n_params = sum(p.numel() for p in dense.parameters())
    assert weight_bytes(dense) == 4 * n_params  # float32, no buffers
    small, rep = compress_transformer(dense, x, "uniform", 0.25)
    assert weight_bytes(small) == 4 * rep.params_after < 0.5 * weight_bytes(dense)
    # one linear layer allocates exactly its float32 output
    assert inference_memory(nn.Linear(10, 1000), torch.randn(8, 10)) == 8 * 1000 * 4
    base = inference_memory(dense, x)
    assert base == inference_memory(dense, x)  # deterministic
    wide = PatchForecaster(ForecasterConfig(mlp=4 * 128)).eval()
    # the GELU MLP's hidden activation (64 series x 8 patches x mlp floats) dominates the peak
    assert inference_memory(wide, x) > base + 3 * 64 * 8 * 128 * 4


# ------------------------------------------------------------------------------ MASE and learning
def test_mase_by_hand():
    context = torch.tensor([[1.0, 2.0, 4.0, 7.0]])  # lag-1 errors 1, 2, 3 -> scale 2
    forecast, target = torch.tensor([[8.0, 9.0]]), torch.tensor([[9.0, 12.0]])  # errors 1, 3 -> 2
    assert mase(forecast, target, context, 1) == pytest.approx(1.0)
    assert seasonal_naive(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), 5, 2).tolist() == [[3.0, 4.0, 3.0, 4.0, 3.0]]


def test_forecaster_beats_seasonal_naive_and_round_trips(trained, tmp_path):
    test = make_series(256, 120, torch.Generator().manual_seed(5))
    ctx, tgt = split(test, SMALL)
    assert evaluate(trained, test, SMALL) < mase(seasonal_naive(ctx, 24, 24), tgt, ctx, 24)
    back = load_forecaster(save_forecaster(trained, tmp_path / "m"))
    assert torch.equal(back(ctx), trained(ctx))


# ------------------------------------------------------------------------------ tool and script
def test_tool_is_listed_and_callable():
    assert "compress_transformer" in {t.name for t in list_tools()}
    args = {"method": "schedule", "budget": 0.5, "train_steps": 20, "eval_series": 32}
    out = call_tool("compress_transformer", args)
    assert out["params_after"] < out["params_before"] and out["method"].startswith("schedule")
    assert out["compressible_params_after"] <= 0.5 * out["compressible_params_before"]
    assert set(out["ranks"]) == set(out["input_effective_ranks"]) and math.isfinite(out["mase_after"])
    out = call_tool("compress_transformer", {"epsilon": 0.6, "train_steps": 20, "eval_series": 32})
    assert out["method"] == "threshold" and len(out["ranks"]) == 8  # q/k/v/o of 2 blocks, MLPs untouched
    assert all(r < 32 for r in out["ranks"].values()) and out["params_after"] < out["params_before"]


def test_tool_over_mcp(tmp_path, trained):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    save_forecaster(trained, ws / "model")
    save_forecaster(trained, outside / "model")
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            args = {"model": "model", "eval_series": 32, "schedule": "uniform"}
            results["ok"] = await session.call_tool("compress_transformer", args)
            results["bad"] = await session.call_tool("compress_transformer", {"schedule": "decreasing"})
            results["escape"] = await session.call_tool(
                "compress_transformer", {"model": str(outside / "model")}
            )

    anyio.run(run)
    schema = results["tools"]["compress_transformer"].input_schema
    assert "decreasing" not in schema["properties"]["schedule"]["enum"]
    assert not results["ok"].is_error, results["ok"].content[0].text
    body = json.loads(results["ok"].content[0].text)
    assert body["params_before"] == sum(p.numel() for p in trained.parameters())
    assert results["bad"].is_error and "schedule" in results["bad"].content[0].text
    message = results["escape"].content[0].text
    assert results["escape"].is_error and "model: path" in message and "is outside the workspace" in message


def test_script_quick_run(tmp_path):
    out, png, results = tmp_path / "for.json", tmp_path / "for.png", tmp_path / "results.json"
    args = ["--quick", "--quiet", "--out", str(out), "--plot", str(png), "--results", str(results)]
    assert run_script("flow_of_ranks_experiment", *args) == 0
    data = json.loads(out.read_text())
    arms = [r["arm"] for r in data["pretraining"]]
    assert arms == ["dense", "power law", "uniform", "reversed"]
    widths = {r["arm"]: r["widths"] for r in data["pretraining"]}
    assert widths["power law"] == [2, 4] and widths["uniform"] == [3, 3] and widths["reversed"] == [4, 2]
    params = {r["arm"]: r["params"] for r in data["pretraining"]}
    assert params["power law"] == params["uniform"] == params["reversed"] < params["dense"]
    assert len(data["threshold"]) == 2 and len(data["embodia_variant"]) == 2
    assert len(data["rank_profile"]) == 2 and png.stat().st_size > 1000
    committed = read_results(RESULTS_DIR / "methods" / "flow_of_ranks.json")
    assert layout_differences(read_results(results), committed) == []
