"""LaplacianFormer: the kernel claim alone (exact attention in a small ViT) and the solver alone.

(1) Kernels. A 2-layer ViT (dim 64, 4 heads of 16, patch 4) on scikit-learn's 8x8 digits upscaled to 32x32
(an 8 x 8 grid of 64 tokens; rendered here, no download), trained from scratch with the same seeds, batches
and steps for every attention: softmax (torch SDPA, q.k / sqrt(d)), the Gaussian kernel of SOFT
(exp(-||q - k||_2^2 / (2 sqrt(d))), on unscaled q and k), the Laplacian kernel (exp(-||q - k||_1 / 4), unscaled
q and k) -- these three exact (the full 64 x 64 kernel, row-normalised, no approximation) -- and the whole
LaplacianFormer block of :mod:`embodia.nn.laplacian_attention` (16 landmarks pooled in 2-D, the authors' ridge and
Newton-Schulz start, 6 iterations, whitened query-landmark features). Test accuracy per seed, the mean with a
95 % t interval over seeds.

(2) Solver. N = 256 tokens on a 16 x 16 grid (head dim 16, lambda 4), smooth image-like fields plus noise;
m = 16 and 64 landmarks pooled in 2-D. Three inputs: ``untied`` (queries and keys are different fields: the
landmark matrix W = k(L_q, L_k) is not symmetric), ``tied`` (q = k: W symmetric positive definite),
``tied, near rank one`` (q = k scaled by 0.002: all kernel values near 1, W nearly singular). Four solvers:
the authors' (P = W + 0.01 I, X_0 = alpha P, alpha = 1.8 / max row sum^2), the same without the ridge, and the
classical start X_0 = W^T / (||W||_1 ||W||_inf) (embodia's earlier solver) without and with the ridge. For
each: the inverse residual ||I - P X_t||_F / sqrt(m) of the matrix actually inverted, and the relative
(Frobenius) error of the row-normalised Nystrom attention against the exact kernel attention.

    .venv/bin/python scripts/laplacian_attention_experiment.py          # full (about 8 min on 2 loaded cores)
    .venv/bin/python scripts/laplacian_attention_experiment.py --quick  # seconds (tests)

Writes ``results/methods/laplacianformer.json`` (tables ``kernels`` and ``solver``; ``--quick``: under
``runs/quick-results/``; ``--results PATH`` elsewhere) and the raw numbers to ``--out``.
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

import embodia.nn.laplacian_attention as la
from embodia.agents.methods.report import save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results
from embodia.nn.laplacian_attention import (
    LaplacianAttention,
    initial_scale,
    laplacian_attention,
    laplacian_attention_exact,
    laplacian_kernel,
    pool_landmarks,
    regularised,
)

ATTENTIONS = ("softmax", "gaussian", "laplacian", "laplacianformer")
#: --ablation: the LaplacianFormer block with one ingredient swapped (``results/methods/laplacianformer_ablation.json``)
ABLATIONS = ("laplacianformer, rows", "laplacianformer, exact inverse")
GRID = (8, 8)  # 32 x 32 images, patch 4


class ExactAttention(nn.Module):
    """Multi-head attention with an exact, row-normalised kernel: softmax, Gaussian (SOFT's) or Laplacian."""

    def __init__(self, dim: int, heads: int, kernel: str) -> None:
        super().__init__()
        self.heads, self.kernel = heads, kernel
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, dim = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        if self.kernel == "softmax":
            out = F.scaled_dot_product_attention(q, k, v)
        elif self.kernel == "gaussian":
            weights = torch.exp(-torch.cdist(q, k).square() / (2 * math.sqrt(q.shape[-1])))
            out = (weights @ v) / weights.sum(-1, keepdim=True).clamp_min(1e-30)
        else:
            out = laplacian_attention_exact(q, k, v, lam=4.0)
        return self.proj(out.transpose(1, 2).reshape(b, n, dim))


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
            if attention.startswith("laplacianformer"):
                norm = "rows" if attention == "laplacianformer, rows" else "whiten"
                attn: nn.Module = LaplacianAttention(
                    dim, heads=4, landmarks=16, iterations=6, normalization=norm
                )
            else:
                attn = ExactAttention(dim, 4, attention)
            mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            self.blocks.append(nn.ModuleList([nn.LayerNorm(dim), attn, nn.LayerNorm(dim), mlp]))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        for norm1, attn, norm2, mlp in self.blocks:
            z = norm1(h)
            h = h + (attn(z, grid=GRID) if isinstance(attn, LaplacianAttention) else attn(z))
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


def exact_inverse(w: torch.Tensor, iterations: int, ridge: float = 0.01) -> torch.Tensor:
    """The ablation's landmark inverse: (W + ridge I)^-1 by ``torch.linalg.inv`` (``iterations`` unused)."""
    return torch.linalg.inv(regularised(w, ridge))


def train_vit(attention: str, seed: int, steps: int, data: tuple[torch.Tensor, ...]) -> dict:
    if attention == "laplacianformer, exact inverse":  # swap the solver in the layer's module for this run
        solver = la.newton_schulz_inverse
        la.newton_schulz_inverse = exact_inverse
        try:
            return train_vit("laplacianformer", seed, steps, data) | {"attention": attention}
        finally:
            la.newton_schulz_inverse = solver
    x_train, y_train, x_test, y_test = data
    torch.manual_seed(seed)
    model = ViT(attention)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    losses = []
    for _ in range(steps):
        idx = torch.randint(len(y_train), (64,), generator=gen)
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        acc = float((model(x_test).argmax(-1) == y_test).float().mean())
    return {
        "attention": attention,
        "seed": seed,
        "accuracy": acc,
        "final_loss": statistics.mean(losses[-20:]),
        "finite": all(math.isfinite(v) for v in losses),
        "train_s": time.perf_counter() - start,
    }


def t_interval(values: list[float]) -> dict:
    """Mean with a 95 % Student-t interval over seeds (a point interval for one seed)."""
    mean = statistics.mean(values)
    if len(values) < 2:
        return interval(mean, mean, mean)
    from scipy.stats import t

    half = t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return interval(mean, mean - half, mean + half)


def kernels_table(runs: list[dict], attentions: tuple[str, ...] = ATTENTIONS) -> Table:
    table = Table(
        [
            Column("attention", "attention"),
            Column("accuracy", "test accuracy per seed", ".3f"),
            Column("mean", "mean [95 % t interval over seeds]", ".3f"),
            Column("train_s", "train s (all seeds)", ".0f"),
        ]
    )
    for a in attentions:
        accs = [r["accuracy"] for r in runs if r["attention"] == a]
        secs = [r["train_s"] for r in runs if r["attention"] == a]
        table.add(attention=a, accuracy=accs, mean=t_interval(accs), train_s=sum(secs))
    return table


# ---- (2) the solver alone


def image_tokens(side: int, d: int, seed: int, tied: bool, scale: float = 1.0) -> tuple[torch.Tensor, ...]:
    """q, k, v on a side x side grid: smooth random 2-D fields plus 10 % noise (float64)."""
    gen = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, side), torch.linspace(0, 1, side), indexing="ij")
    pos = torch.stack([yy.flatten(), xx.flatten()], -1).double()

    def field() -> torch.Tensor:
        freq = torch.randn(2, d, generator=gen, dtype=torch.float64) * 3
        phase = torch.rand(1, d, generator=gen, dtype=torch.float64) * 2 * math.pi
        noise = 0.1 * torch.randn(side * side, d, generator=gen, dtype=torch.float64)
        return torch.sin(pos @ freq + phase) + noise

    q = field()
    k = q if tied else field()
    return q * scale, k * scale, field()


def iterate(p: torch.Tensor, x: torch.Tensor, iterations: int) -> torch.Tensor:
    for _ in range(iterations):
        x = 2 * x - x @ p @ x
    return x


SOLVERS = {
    "authors (ridge 0.01, X0 = alpha P)": (0.01, "alpha"),
    "authors' start, no ridge": (0.0, "alpha"),
    "classical X0 = W^T/(|W|_1 |W|_inf), no ridge": (0.0, "classical"),
    "classical start, ridge 0.01": (0.01, "classical"),
}
INPUTS = {"untied": (False, 1.0), "tied": (True, 1.0), "tied, near rank one": (True, 0.002)}


def solve(w: torch.Tensor, ridge: float, start: str, iterations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(P, X_t) for one solver."""
    p = regularised(w, ridge)
    if start == "alpha":
        x0 = initial_scale(p)[..., None, None] * p
    else:
        x0 = p.transpose(-1, -2) / (p.abs().sum(-2).amax(-1) * p.abs().sum(-1).amax(-1))[..., None, None]
    return p, iterate(p, x0, iterations)


def nystrom_rows(q, k, v, m: int, grid, ridge: float, start: str, iterations: int) -> torch.Tensor:  # noqa: ANN001
    lq, lk = pool_landmarks(q, m, grid), pool_landmarks(k, m, grid)
    _, x = solve(laplacian_kernel(lq, lk, 4.0), ridge, start, iterations)
    a, b = laplacian_kernel(q, lk, 4.0), laplacian_kernel(lq, k, 4.0)
    return (a @ (x @ (b @ v))) / (a @ (x @ b.sum(-1, keepdim=True)))


SOLVER_ITERATIONS = (6, 12, 25)


def solver_rows(side: int, d: int, landmarks: list[int]) -> list[dict]:
    rows = []
    grid = (side, side)
    for name, (tied, scale) in INPUTS.items():
        q, k, v = image_tokens(side, d, seed=0, tied=tied, scale=scale)
        exact = laplacian_attention_exact(q, k, v, 4.0)
        for m in landmarks:
            w = laplacian_kernel(pool_landmarks(q, m, grid), pool_landmarks(k, m, grid), 4.0)
            eig = torch.linalg.eigvals(w)
            for solver, (ridge, start) in SOLVERS.items():
                row: dict = {
                    "input": name,
                    "landmarks": m,
                    "solver": solver,
                    "cond": float(torch.linalg.cond(w)),
                    "min_real_eig": float(eig.real.min()),
                }
                for t in SOLVER_ITERATIONS:
                    p, x = solve(w, ridge, start, t)
                    residual = float((torch.eye(m, dtype=w.dtype) - p @ x).norm() / math.sqrt(m))
                    out = nystrom_rows(q, k, v, m, grid, ridge, start, t)
                    error = float((out - exact).norm() / exact.norm())
                    # an iteration that overflowed (inf / NaN) is None: "—" in the table
                    row[f"res{t}"] = residual if math.isfinite(residual) else None
                    row[f"err{t}"] = error if math.isfinite(error) else None
                rows.append(row)
    return rows


def solver_table(rows: list[dict]) -> Table:
    table = Table(
        [
            Column("input", "input"),
            Column("landmarks", "m"),
            Column("solver", "solver"),
            Column("cond", "cond(W)", ".3g"),
            *(Column(f"res{t}", f"residual, {t} it", ".2g") for t in SOLVER_ITERATIONS),
            *(Column(f"err{t}", f"attention error, {t} it", ".3g") for t in SOLVER_ITERATIONS),
        ]
    )
    for r in rows:
        table.add(**{c.key: r[c.key] for c in table.columns})
    return table


def check_module_matches(side: int = 16, d: int = 16) -> float:
    """The module's authors' solver (row-normalised) equals this script's: max abs difference."""
    q, k, v = image_tokens(side, d, seed=0, tied=False)
    ours = laplacian_attention(q, k, v, 16, 6, normalization="rows", grid=(side, side))
    theirs = nystrom_rows(q, k, v, 16, (side, side), 0.01, "alpha", 6)
    return float((ours - theirs).abs().max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--out", default="runs/nn/laplacian_attention.json", help="raw numbers (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/laplacianformer.json)"
    )
    parser.add_argument("--steps", type=int, default=250, help="ViT training steps (batch 64)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--ablation",
        action="store_true",
        help="only the ablation (whitening -> row normaliser; Newton-Schulz -> exact inverse): writes "
        "results/methods/laplacianformer_ablation.json",
    )
    args = parser.parse_args(argv)
    if args.ablation:
        return ablation(args)
    steps, seeds, landmarks = (3, 1, [16]) if args.quick else (args.steps, args.seeds, [16, 64])
    torch.set_num_threads(1)

    mismatch = check_module_matches()
    rows = solver_rows(16, 16, landmarks)
    tables = {"solver": solver_table(rows)}
    print("## Solver alone (N = 256, 16 x 16 grid, head dim 16, lambda 4)\n")
    print(tables["solver"].markdown())

    data = digits()
    runs = [train_vit(a, s, steps, data) for s in range(seeds) for a in ATTENTIONS]
    tables["kernels"] = kernels_table(runs)
    print(f"\n## Kernels in a ViT on 32x32 digits ({steps} steps, batch 64, {seeds} seeds)\n")
    print(tables["kernels"].markdown())
    raw = {
        "solver": rows,
        "module_vs_script_max_abs_difference": mismatch,
        "vit": runs,
        "steps": steps,
        "solver_tokens": 256,
        "solver_head_dim": 16,
        "torch_threads": 1,
    }
    save_json(args.out, raw)
    written = write_results(
        args.results or default_results_path("methods/laplacianformer", quick=args.quick),
        {"kernels": tables["kernels"], "solver": tables["solver"]},
        title="LaplacianFormer: exact kernels in a small ViT, and the Newton-Schulz solver with and without the ridge",
        seeds=range(seeds),
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


def ablation(args: argparse.Namespace) -> int:
    steps, seeds = (3, 1) if args.quick else (args.steps, args.seeds)
    torch.set_num_threads(1)
    data = digits()
    runs = [train_vit(a, s, steps, data) for s in range(seeds) for a in ABLATIONS]
    table = kernels_table(runs, ABLATIONS)
    print(f"## LaplacianFormer ablation ({steps} steps, batch 64, {seeds} seeds)\n")
    print(table.markdown())
    raw = {"vit": runs, "steps": steps, "torch_threads": 1}
    save_json(args.out.replace(".json", "_ablation.json"), raw)
    written = write_results(
        args.results or default_results_path("methods/laplacianformer_ablation", quick=args.quick),
        {"ablation": table},
        title="LaplacianFormer in a small ViT with one ingredient swapped (row normaliser, exact inverse)",
        seeds=range(seeds),
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
