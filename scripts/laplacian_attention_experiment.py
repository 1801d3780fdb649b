"""LaplacianFormer attention: approximation error vs landmarks and Newton-Schulz iterations, and a small ViT.

(a) Relative error (Frobenius) of Nystrom Laplacian attention against the exact kernel at N = 1024, d = 64,
lambda = 4, for m in {16, 32, 64, 128} landmarks and 1..10 Newton-Schulz iterations, on random inputs
(i.i.d. Gaussian tokens: the hard case, no low-rank structure) and structured ones (tokens varying
smoothly along the sequence, like neighbouring image patches); plus the same with the landmark inverse
from ``torch.linalg.pinv`` (the Newton-Schulz limit). (b) A 2-layer ViT (dim 64, 4 heads, patch 4) on
scikit-learn's 8x8 digits upscaled to 32x32 (64 tokens; rendered here, no download), softmax attention vs
Laplacian attention (16 landmarks, 6 iterations), same seeds, same steps; test accuracy per seed.

    .venv/bin/python scripts/laplacian_attention_experiment.py          # full (a few minutes on 2 cores)
    .venv/bin/python scripts/laplacian_attention_experiment.py --quick  # seconds (tests)

Writes the results file ``results/methods/laplacianformer.json`` (tables ``approximation`` and ``vit``; a
``--quick`` run writes under ``runs/quick-results/``, ``--results PATH`` elsewhere) and the raw numbers
(every iteration count, every ViT run) to ``--out``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from embodia.agents.methods.report import save_json
from embodia.core.results import Column, Table, default_results_path, write_results
from embodia.nn.laplacian_attention import (
    LaplacianAttention,
    laplacian_attention,
    laplacian_attention_exact,
    laplacian_kernel,
    pool_landmarks,
)


def inputs(kind: str, n: int, d: int, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    if kind == "random":
        return tuple(torch.randn(n, d, generator=gen) * d**-0.5 for _ in range(3))
    t = torch.linspace(0, 1, n)[:, None]
    freq, phase = torch.rand(1, d, generator=gen) * 6, torch.rand(1, d, generator=gen) * 6
    base = torch.sin(freq * 2 * math.pi * t + phase) * d**-0.5
    return tuple(base + 0.05 * d**-0.5 * torch.randn(n, d, generator=gen) for _ in range(3))


def pinv_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: int, lam: float) -> torch.Tensor:
    lq, lk = pool_landmarks(q, m), pool_landmarks(k, m)
    a, b = laplacian_kernel(q, lk, lam), laplacian_kernel(lq, k, lam)
    w_inv = torch.linalg.pinv(laplacian_kernel(lq, lk, lam))
    num = a @ (w_inv @ (b @ v))
    den = a @ (w_inv @ b.sum(-1, keepdim=True))
    return num / den


def approximation(
    n: int, d: int, landmarks: list[int], iterations: list[int], lam: float = 4.0
) -> list[dict]:
    rows = []
    for kind in ("random", "structured"):
        q, k, v = inputs(kind, n, d, seed=0)
        exact = laplacian_attention_exact(q, k, v, lam)
        for m in landmarks:
            row: dict = {"input": kind, "landmarks": m}
            for t in iterations:
                out = laplacian_attention(q, k, v, m, t, lam)
                row[f"ns{t}"] = float((out - exact).norm() / exact.norm())
            row["pinv"] = float((pinv_attention(q, k, v, m, lam) - exact).norm() / exact.norm())
            rows.append(row)
    return rows


class SoftmaxAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, dim = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, dim))


class ViT(nn.Module):
    def __init__(
        self, attention: str, image: int = 32, patch: int = 4, dim: int = 64, depth: int = 2
    ) -> None:
        super().__init__()
        tokens = (image // patch) ** 2
        self.embed = nn.Conv2d(1, dim, patch, patch)
        self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.blocks = nn.ModuleList()
        for _ in range(depth):
            attn = (
                SoftmaxAttention(dim, 4)
                if attention == "softmax"
                else LaplacianAttention(dim, heads=4, landmarks=16, iterations=6)
            )
            mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            self.blocks.append(nn.ModuleList([nn.LayerNorm(dim), attn, nn.LayerNorm(dim), mlp]))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        for norm1, attn, norm2, mlp in self.blocks:
            h = h + attn(norm1(h))
            h = h + mlp(norm2(h))
        return self.head(h.mean(1))


def digits() -> tuple[torch.Tensor, ...]:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.images, dtype=torch.float32)[:, None] / 16.0
    x = F.interpolate(x, size=32, mode="bilinear", align_corners=False)
    y = torch.tensor(data.target)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    split = int(0.8 * len(y))
    return x[:split], y[:split], x[split:], y[split:]


def train_vit(attention: str, seed: int, steps: int, data: tuple[torch.Tensor, ...]) -> dict:
    x_train, y_train, x_test, y_test = data
    torch.manual_seed(seed)
    model = ViT(attention)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(len(y_train), (64,), generator=gen)
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = float((model(x_test).argmax(-1) == y_test).float().mean())
    return {"attention": attention, "seed": seed, "accuracy": acc, "train_s": time.perf_counter() - start}


#: the Newton-Schulz iteration counts the approximation table shows (the run computes more: see --out)
SHOWN_ITERATIONS = (1, 3, 6, 10)


def approximation_table(rows: list[dict]) -> Table:
    table = Table(
        [
            Column("input", "input"),
            Column("landmarks", "landmarks"),
            *(Column(f"ns{t}", f"NS {t} it", ".3f") for t in SHOWN_ITERATIONS),
            Column("pinv", "pinv", ".3f"),
        ]
    )
    for r in rows:
        table.add(**{c.key: r[c.key] for c in table.columns})
    return table


def vit_table(vit: list[dict]) -> Table:
    table = Table(
        [
            Column("attention", "attention"),
            Column("accuracy", "accuracy per seed", ".3f"),
            Column("mean", "mean", ".3f"),
            Column("train_s", "train s (all seeds)", ".0f"),
        ]
    )
    for a in ("softmax", "laplacian"):
        accs = [r["accuracy"] for r in vit if r["attention"] == a]
        secs = [r["train_s"] for r in vit if r["attention"] == a]
        table.add(attention=a, accuracy=accs, mean=statistics.mean(accs), train_s=sum(secs))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--out", default="runs/nn/laplacian_attention.json", help="raw numbers (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/laplacianformer.json)"
    )
    parser.add_argument("--steps", type=int, default=400, help="ViT training steps (batch 64)")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.quick:
        n, landmarks, iterations, steps, seeds = 128, [16, 32], list(SHOWN_ITERATIONS), 3, 1
    else:
        n, landmarks, iterations, steps, seeds = (
            1024,
            [16, 32, 64, 128],
            list(range(1, 11)),
            args.steps,
            args.seeds,
        )
    rows = approximation(n, 64, landmarks, iterations)
    tables = {"approximation": approximation_table(rows)}
    print(f"## Relative error vs the exact Laplacian kernel (N = {n}, d = 64, lambda = 4)\n")
    print(tables["approximation"].markdown())
    data = digits()
    vit = [train_vit(a, s, steps, data) for s in range(seeds) for a in ("softmax", "laplacian")]
    tables["vit"] = vit_table(vit)
    print(f"\n## ViT on 32x32 digits ({steps} steps, batch 64, {seeds} seeds)\n")
    print(tables["vit"].markdown())
    raw = {"approximation": rows, "vit": vit, "n": n, "steps": steps}
    save_json(args.out, raw)
    written = write_results(
        args.results or default_results_path("methods/laplacianformer", quick=args.quick),
        tables,
        title="LaplacianFormer attention: approximation error and a small ViT",
        seeds=range(seeds),
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
