"""LaplacianFormer attention: the exact kernel against a hand computation, Nystrom with m = N equal to it, the
authors' ridge and initial scale by hand, convergence with the ridge where it fails without, the inverse's
backward, 2-D landmark pooling and whitening by hand, the kernel on unscaled q and k, error falling with
landmarks, the module (and that it learns), no N x N tensor in the Nystrom path, the tool (also over a real
MCP client), the script's and benchmark's quick runs."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
import torch
from mcp import ClientSession, stdio_client

import embodia.nn.laplacian_attention as la
from embodia.agents.tools import ToolArgumentError, call_tool
from embodia.core.errors import ConfigError
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.nn.laplacian_attention import (
    LaplacianAttention,
    LaplacianAttentionConfig,
    initial_scale,
    laplacian_attention,
    laplacian_attention_exact,
    newton_schulz_inverse,
    pool_landmarks,
    regularised,
    whiten,
)
from tests.agents.conftest import mcp_server, run_script


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    """One torch thread: on a loaded 2-core machine two threads make these small passes many times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_exact_kernel_by_hand() -> None:
    q = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    k = torch.tensor([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    v = torch.tensor([[1.0], [2.0], [4.0]])
    lam = 2.0
    expected = []
    for qi in q.tolist():
        weights = [math.exp(-(abs(qi[0] - kj[0]) + abs(qi[1] - kj[1])) / lam) for kj in k.tolist()]
        expected.append(sum(w * vj for w, vj in zip(weights, [1.0, 2.0, 4.0])) / sum(weights))
    out = laplacian_attention_exact(q, k, v, lam)
    assert torch.allclose(out[:, 0], torch.tensor(expected), atol=1e-6)


def test_nystrom_with_every_token_a_landmark_is_exact() -> None:
    gen = torch.Generator().manual_seed(0)
    q, v = (torch.randn(2, 24, 8, generator=gen, dtype=torch.float64) for _ in range(2))
    assert torch.equal(pool_landmarks(q, 24), q)
    exact = laplacian_attention_exact(q, q, v, lam=1.0)
    # tied q = k: W symmetric positive definite, where the authors' start alpha * P converges
    approx = laplacian_attention(
        q, q, v, landmarks=24, iterations=60, lam=1.0, ridge=0.0, normalization="rows"
    )
    assert torch.allclose(approx, exact, atol=1e-8)


def test_ridge_and_initial_scale_by_hand() -> None:
    w = torch.ones(2, 2, dtype=torch.float64)
    p = regularised(w)  # W + 0.01 I
    assert torch.equal(p, torch.tensor([[1.01, 1.0], [1.0, 1.01]], dtype=torch.float64))
    # alpha = 1.8 / (max row sum)^2 = 1.8 / 2.01^2 = 1.8 / 4.0401
    assert float(initial_scale(p)) == pytest.approx(0.4455335263978614, abs=1e-15)
    x0 = newton_schulz_inverse(w, iterations=0)  # X_0 = alpha P
    # alpha * 1.01 = 0.44998886..., alpha * 1 = 0.44553352...
    expected = torch.tensor(
        [[0.4499888616618400, 0.4455335263978614], [0.4455335263978614, 0.4499888616618400]]
    )
    assert torch.allclose(x0, expected.double(), atol=1e-15)
    # one step: X_1 = 2 X_0 - X_0 P X_0
    x1 = newton_schulz_inverse(w, iterations=1)
    assert torch.allclose(x1, 2 * x0 - x0 @ p @ x0, atol=1e-15)
    assert LaplacianAttentionConfig().ridge == 0.01


def test_ridge_makes_the_iteration_converge_where_it_fails_without() -> None:
    w = torch.ones(2, 2, dtype=torch.float64)  # singular (rank one): no inverse without the ridge
    eye = torch.eye(2, dtype=torch.float64)
    x = newton_schulz_inverse(w, iterations=25)
    # (W + 0.01 I)^-1 = [[1.01, -1], [-1, 1.01]] / (1.01^2 - 1) = [[50.2488, -49.7512], [-49.7512, 50.2488]]
    expected = torch.tensor([[1.01, -1.0], [-1.0, 1.01]], dtype=torch.float64) / 0.0201
    assert torch.allclose(x, expected, atol=1e-8)
    assert float((eye - regularised(w) @ x).norm()) < 1e-10
    for iterations in (6, 25, 60):  # without it the residual never drops below 1 (the pseudo-inverse limit)
        x_plain = newton_schulz_inverse(w, iterations=iterations, ridge=0.0)
        assert float((eye - w @ x_plain).norm()) > 0.99


def test_newton_schulz_backward_is_the_inverse_gradient() -> None:
    gen = torch.Generator().manual_seed(2)
    w = torch.rand(5, 5, generator=gen, dtype=torch.float64) * 0.2 + torch.eye(5, dtype=torch.float64)
    w = (w + w.T) / 2  # symmetric positive definite: the authors' start converges
    g = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    ours = w.clone().requires_grad_(True)
    (newton_schulz_inverse(ours, 30) * g).sum().backward()
    ref = w.clone().requires_grad_(True)
    (torch.linalg.inv(regularised(ref)) * g).sum().backward()
    assert torch.allclose(newton_schulz_inverse(w, 30), torch.linalg.inv(regularised(w)), atol=1e-12)
    assert torch.allclose(ours.grad, ref.grad, atol=1e-10)


def test_2d_landmark_pooling_on_a_hand_made_grid() -> None:
    x = torch.arange(16.0).reshape(1, 16, 1)  # a 4 x 4 grid in raster order: rows 0-3, 4-7, 8-11, 12-15
    # 2 x 2 windows: {0,1,4,5}, {2,3,6,7}, {8,9,12,13}, {10,11,14,15}
    assert pool_landmarks(x, 4, grid=(4, 4)).flatten().tolist() == [2.5, 4.5, 10.5, 12.5]
    # along the sequence: {0..3}, {4..7}, ...
    assert pool_landmarks(x, 4).flatten().tolist() == [1.5, 5.5, 9.5, 13.5]
    assert pool_landmarks(x.expand(3, 2, 16, 1), 4, grid=(4, 4)).shape == (3, 2, 4, 1)
    with pytest.raises(ValueError, match="square"):
        pool_landmarks(x, 8, grid=(4, 4))
    with pytest.raises(ValueError, match="grid"):
        pool_landmarks(x, 4, grid=(4, 3))


def test_whitening_by_hand() -> None:
    a = torch.tensor([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]], dtype=torch.float64)
    out = whiten(a, eps=1e-12)
    # column 0: mean 2, variance 2/3 -> (-1, 0, 1) / sqrt(2/3); a constant column becomes 0
    assert torch.allclose(out[:, 0], torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64) / math.sqrt(2 / 3))
    assert torch.allclose(out[:, 1], torch.zeros(3, dtype=torch.float64))


def test_kernel_on_unscaled_queries_and_keys() -> None:
    torch.manual_seed(0)
    block = LaplacianAttention(8, heads=2, landmarks=None)
    x = torch.randn(1, 5, 8)
    q, k, v = block.qkv(x).reshape(1, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    manual = laplacian_attention_exact(q, k, v, lam=4.0)  # exp(-||q - k||_1 / 4): no head_dim^-1/2 on q, k
    expected = block.proj(manual.transpose(1, 2).reshape(1, 5, 8))
    assert torch.allclose(block(x), expected, atol=1e-6)


def _structured(n: int, d: int, seed: int) -> tuple[torch.Tensor, ...]:
    """Tokens that vary smoothly along the sequence (like neighbouring image patches), plus a little noise."""
    gen = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 1, n)[:, None]
    freq = torch.rand(1, d, generator=gen) * 6
    phase = torch.rand(1, d, generator=gen) * 6
    base = torch.sin(freq * 2 * math.pi * t + phase)
    return tuple(base + 0.05 * torch.randn(n, d, generator=gen) for _ in range(3))


def test_error_decreases_with_landmarks_on_structured_input() -> None:
    q, k, v = _structured(512, 16, seed=1)
    exact = laplacian_attention_exact(q, k, v, lam=4.0)
    errors = [
        float((laplacian_attention(q, k, v, m, 12, 4.0, normalization="rows") - exact).norm() / exact.norm())
        for m in (8, 32, 128)
    ]
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 0.05, errors


def test_module_shape_gradients_and_2d_grid() -> None:
    torch.manual_seed(0)
    block = LaplacianAttention(32, heads=4, landmarks=16, iterations=6)
    assert block.config.normalization == "whiten"
    x = torch.randn(2, 64, 32, requires_grad=True)
    out = block(x, grid=(8, 8))
    assert out.shape == x.shape and torch.isfinite(out).all()
    assert not torch.allclose(out, block(x))  # 2-D and raster landmarks differ
    out.square().mean().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert all(p.grad is not None for p in block.parameters())
    with pytest.raises(ValueError, match="divisible"):
        LaplacianAttention(30, heads=4)
    with pytest.raises(ConfigError):
        LaplacianAttention(32, lam=-1.0)


def test_layer_learns_a_tiny_task() -> None:
    """One whitened LaplacianFormer layer fits y_i = mean of the tokens' first feature (a global mix)."""
    torch.manual_seed(0)
    block = LaplacianAttention(8, heads=2, landmarks=4, iterations=6)
    opt = torch.optim.Adam(block.parameters(), lr=1e-2)
    x = torch.randn(32, 16, 8)
    target = x[..., :1].mean(1, keepdim=True).expand(32, 16, 8)
    losses = []
    for _ in range(60):
        loss = (block(x, grid=(4, 4)) - target).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0], (losses[0], losses[-1])


def test_nystrom_path_never_forms_an_n_by_n_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 16384
    shapes: list[tuple[int, ...]] = []
    real_cdist = torch.cdist

    def recording_cdist(a: torch.Tensor, b: torch.Tensor, p: float = 2.0) -> torch.Tensor:
        out = real_cdist(a, b, p=p)
        shapes.append(tuple(out.shape))
        return out

    monkeypatch.setattr(la.torch, "cdist", recording_cdist)
    q, k, v = (torch.randn(1, 1, n, 16) * 0.25 for _ in range(3))
    with torch.no_grad():
        out = laplacian_attention(q, k, v, landmarks=32, iterations=6)
    assert out.shape == (1, 1, n, 16) and torch.isfinite(out).all()
    assert shapes and all(math.prod(s[-2:]) <= n * 32 for s in shapes), shapes


def test_tool_in_process() -> None:
    result = call_tool("laplacian_attention_check", {"tokens": 256, "dim": 16, "landmarks": 16})
    assert 0 < result["relative_error"] < 0.5 and result["tokens"] == 256 and result["ridge"] == 0.01
    assert set(result["seconds"]) == {"laplacian", "exact_kernel", "sdpa"}
    with pytest.raises(ToolArgumentError):
        call_tool("laplacian_attention_check", {"tokens": 100_000})


def test_tool_over_mcp(tmp_path: Any) -> None:
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(tmp_path)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            results["ok"] = await session.call_tool("laplacian_attention_check", {"tokens": 128, "dim": 8})
            results["big"] = await session.call_tool("laplacian_attention_check", {"tokens": 9000})

    anyio.run(run)
    schema = results["tools"]["laplacian_attention_check"].input_schema
    assert schema["properties"]["tokens"]["maximum"] == 8192
    assert not results["ok"].is_error, results["ok"].content[0].text
    assert results["ok"].structured_content["tokens"] == 128
    assert results["big"].is_error and "tokens" in results["big"].content[0].text


def test_script_quick(tmp_path: Any) -> None:
    out, results = tmp_path / "exp.json", tmp_path / "results.json"
    assert (
        run_script("laplacian_attention_experiment", "--quick", "--out", str(out), "--results", str(results))
        == 0
    )
    payload = json.loads(out.read_text())
    assert payload["solver"] and payload["vit"]
    # the script's own authors' solver (the table's) is the module's
    assert payload["module_vs_script_max_abs_difference"] < 1e-12
    committed = read_results(RESULTS_DIR / "methods" / "laplacianformer.json")
    assert layout_differences(read_results(results), committed) == []
    ablation = tmp_path / "ablation.json"
    assert (
        run_script(
            "laplacian_attention_experiment",
            "--quick",
            "--ablation",
            "--results",
            str(ablation),
            "--out",
            str(out),
        )
        == 0
    )
    committed = read_results(RESULTS_DIR / "methods" / "laplacianformer_ablation.json")
    produced = read_results(ablation)
    assert [r["attention"] for r in produced["tables"]["ablation"]["rows"]] == [
        "laplacianformer, rows",
        "laplacianformer, exact inverse",
    ]
    assert layout_differences(produced, committed) == []


def test_benchmark_quick(tmp_path: Any) -> None:
    from benchmarks.bench_laplacian_attention import main

    out = tmp_path / "bench.json"
    assert main(["--quick", "--results", str(out)]) == 0
    produced = read_results(out)
    assert [r["tokens"] for r in produced["data"]["results"]] == [1024]
    assert [r["tokens"] for r in produced["tables"]["backward"]["rows"]] == [1024]
    record = produced["data"]["results"][0]["backward"]
    assert record["laplacian_s"] > 0 and record["sdpa_s"] > 0 and record["laplacian_mib"] >= 0
    committed = read_results(RESULTS_DIR / "benchmarks" / "laplacian_attention.json")
    assert layout_differences(produced, committed) == []
