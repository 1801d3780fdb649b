"""LaplacianFormer attention: the exact kernel against a hand computation, Nystrom with m = N equal to it,
error falling with landmarks, Newton-Schulz against the inverse, the feature map, the module, no N x N
tensor in the Nystrom path, the tool (also over a real MCP client), the script's and benchmark's quick runs."""

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
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.nn.laplacian_attention import (
    LaplacianAttention,
    laplacian_attention,
    laplacian_attention_exact,
    newton_schulz_inverse,
    pool_landmarks,
)
from tests.agents.conftest import mcp_server, run_script


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
    q, k, v = (torch.randn(2, 24, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    assert torch.equal(pool_landmarks(q, 24), q)
    exact = laplacian_attention_exact(q, k, v, lam=1.0)
    approx = laplacian_attention(q, k, v, landmarks=24, iterations=60, lam=1.0)
    assert torch.allclose(approx, exact, atol=1e-8)


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
        float((laplacian_attention(q, k, v, m, iterations=30, lam=4.0) - exact).norm() / exact.norm())
        for m in (8, 32, 128)
    ]
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 0.05, errors


def test_newton_schulz_converges_to_the_inverse() -> None:
    gen = torch.Generator().manual_seed(2)
    w = torch.randn(3, 16, 16, generator=gen, dtype=torch.float64) + 6 * torch.eye(16, dtype=torch.float64)
    x = newton_schulz_inverse(w, 30)
    assert torch.allclose(x, torch.linalg.pinv(w), atol=1e-10)
    residuals = [float((torch.eye(16) - w[0] @ newton_schulz_inverse(w[0], t)).norm()) for t in (1, 3, 6)]
    assert residuals[0] > residuals[1] > residuals[2]


def test_feature_map_separates_identical_tokens() -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 8, 32)
    x[0, 5] = x[0, 0]  # the same token at positions 0 and 5, among other tokens
    for landmarks in (None, 4):
        with_map = LaplacianAttention(32, heads=4, landmarks=landmarks, iterations=8)
        out = with_map(x)
        assert (out[0, 0] - out[0, 5]).abs().max() > 1e-4
        without = LaplacianAttention(32, heads=4, landmarks=landmarks, iterations=8, feature_map=False)
        plain = without(x)
        assert torch.allclose(plain[0, 0], plain[0, 5], atol=1e-5)


def test_module_shape_and_gradients() -> None:
    torch.manual_seed(0)
    block = LaplacianAttention(32, heads=4, landmarks=8, iterations=6)
    x = torch.randn(2, 50, 32, requires_grad=True)
    out = block(x)
    assert out.shape == x.shape and torch.isfinite(out).all()
    out.square().mean().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert all(p.grad is not None for p in block.parameters())
    with pytest.raises(ValueError, match="divisible"):
        LaplacianAttention(30, heads=4)


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
    result = call_tool(
        "laplacian_attention_check", {"tokens": 256, "dim": 16, "landmarks": 256, "iterations": 40}
    )
    assert result["relative_error"] < 1e-3 and result["tokens"] == 256
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
    assert payload["approximation"] and payload["vit"]
    committed = read_results(RESULTS_DIR / "methods" / "laplacianformer.json")
    assert layout_differences(read_results(results), committed) == []


def test_benchmark_quick(tmp_path: Any) -> None:
    from benchmarks.bench_laplacian_attention import main

    out = tmp_path / "bench.json"
    assert main(["--quick", "--results", str(out)]) == 0
    produced = read_results(out)
    assert [r["tokens"] for r in produced["data"]["results"]] == [1024, 2048]
    assert [r["tokens"] for r in produced["tables"]["backward"]["rows"]] == [1024, 2048]
    committed = read_results(RESULTS_DIR / "benchmarks" / "laplacian_attention.json")
    assert layout_differences(produced, committed) == []
