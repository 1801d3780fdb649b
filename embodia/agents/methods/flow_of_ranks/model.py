"""A small patch-based time-series transformer, synthetic series to train it on, and MASE.

Series families (length ``context + horizon``): sums of seasonalities (periods 8, 12, 24 and harmonics),
seasonal + linear trend, seasonal + AR(1) noise, random walk + seasonality, and a square wave; each scaled
and shifted at random. The forecaster normalises each context (mean, std), embeds patches of ``patch``
points, runs ``layers`` pre-norm blocks (attention with separate q/k/v/o projections, a GELU MLP) and
maps all patch tokens to the horizon. MASE divides the forecast's mean absolute error by the in-sample
mean absolute error of the seasonal naive forecast (lag ``season``) on the context.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

FAMILIES = ("seasonal", "trend", "ar", "walk", "square")


@dataclass
class ForecasterConfig:
    """Shape of :class:`PatchForecaster`."""

    context: int = 96
    horizon: int = 24
    patch: int = 12
    d_model: int = 64
    heads: int = 4
    layers: int = 3
    mlp: int = 128
    season: int = 24


def make_series(n: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` synthetic series of ``length`` points, families drawn uniformly (see the module docstring)."""
    g = generator
    t = torch.arange(length, dtype=torch.float32)
    family = torch.randint(len(FAMILIES), (n,), generator=g)
    out = torch.zeros(n, length)
    for i in range(n):
        period = float([8, 12, 24][int(torch.randint(3, (1,), generator=g))])
        phase = float(torch.rand(1, generator=g)) * 2 * math.pi
        season = torch.sin(2 * math.pi * t / period + phase)
        season = season + 0.5 * float(torch.rand(1, generator=g)) * torch.sin(
            4 * math.pi * t / period + 2 * phase
        )
        noise = 0.1 * torch.randn(length, generator=g)
        kind = FAMILIES[int(family[i])]
        if kind == "seasonal":
            second = torch.sin(2 * math.pi * t / 24.0 + float(torch.rand(1, generator=g)) * 6.28)
            x = season + 0.5 * second + noise
        elif kind == "trend":
            x = season + (float(torch.rand(1, generator=g)) - 0.5) * 0.06 * t + noise
        elif kind == "ar":
            e = 0.3 * torch.randn(length, generator=g)
            ar = torch.zeros(length)
            phi = 0.5 + 0.4 * float(torch.rand(1, generator=g))
            for j in range(1, length):
                ar[j] = phi * ar[j - 1] + e[j]
            x = season + ar
        elif kind == "walk":
            x = season + 0.1 * torch.cumsum(torch.randn(length, generator=g), 0)
        else:
            x = torch.sign(season) + noise
        out[i] = x * (0.5 + 2 * float(torch.rand(1, generator=g))) + 4 * (
            float(torch.rand(1, generator=g)) - 0.5
        )
    return out


def split(series: torch.Tensor, config: ForecasterConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(context, target) of each series."""
    return series[:, : config.context], series[:, config.context : config.context + config.horizon]


def mase(forecast: torch.Tensor, target: torch.Tensor, context: torch.Tensor, season: int) -> float:
    """Mean over series of ``mean|y - yhat| / mean_t |x_t - x_{t-season}|`` (scale from the context)."""
    scale = (context[:, season:] - context[:, :-season]).abs().mean(1).clamp_min(1e-8)
    return float(((forecast - target).abs().mean(1) / scale).mean())


def seasonal_naive(context: torch.Tensor, horizon: int, season: int) -> torch.Tensor:
    """Repeat the last ``season`` points of each context over the horizon."""
    reps = math.ceil(horizon / season)
    return context[:, -season:].repeat(1, reps)[:, :horizon]


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape

        def split_heads(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, n, self.heads, d // self.heads).transpose(1, 2)

        y = F.scaled_dot_product_attention(
            split_heads(self.q(x)), split_heads(self.k(x)), split_heads(self.v(x))
        )
        return self.o(y.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, config: ForecasterConfig) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(config.d_model), nn.LayerNorm(config.d_model)
        self.attn = Attention(config.d_model, config.heads)
        self.fc1, self.fc2 = nn.Linear(config.d_model, config.mlp), nn.Linear(config.mlp, config.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class PatchForecaster(nn.Module):
    """Context (batch, context) -> forecast (batch, horizon)."""

    def __init__(self, config: ForecasterConfig) -> None:
        super().__init__()
        if config.context % config.patch:
            raise ValueError("context must be a multiple of patch")
        self.config = config
        n = config.context // config.patch
        self.embed = nn.Linear(config.patch, config.d_model)
        self.pos = nn.Parameter(0.02 * torch.randn(n, config.d_model))
        self.layers = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(n * config.d_model, config.horizon)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        mean, std = context.mean(1, keepdim=True), context.std(1, keepdim=True).clamp_min(1e-5)
        x = ((context - mean) / std).unfold(1, self.config.patch, self.config.patch)
        h = self.embed(x) + self.pos
        for block in self.layers:
            h = block(h)
        return self.head(self.norm(h).flatten(1)) * std + mean


def train_forecaster(
    config: ForecasterConfig,
    steps: int,
    seed: int = 0,
    batch: int = 64,
    lr: float = 2e-3,
    model: PatchForecaster | None = None,
    log: Callable[[int, int, str], None] | None = None,
) -> PatchForecaster:
    """Train (or fine-tune ``model``) with Adam on fresh synthetic series, L1 loss on the scaled target."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(10_000 + seed)
    model = model if model is not None else PatchForecaster(config)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
    pool = make_series(max(4 * batch, min(steps * batch // 4, 8192)), config.context + config.horizon, g)
    for step in range(steps):
        idx = torch.randint(len(pool), (batch,), generator=g)
        ctx, tgt = split(pool[idx], config)
        scale = ctx.std(1, keepdim=True).clamp_min(1e-5)
        loss = ((model(ctx) - tgt).abs() / scale).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if log and (step % 50 == 0 or step == steps - 1):
            log(step + 1, steps, f"loss {loss.item():.3f}")
    return model.eval()


def evaluate(model: nn.Module, series: torch.Tensor, config: ForecasterConfig) -> float:
    """MASE of ``model`` on held-out ``series``."""
    ctx, tgt = split(series, config)
    with torch.no_grad():
        return mase(model(ctx), tgt, ctx, config.season)


def latency(model: nn.Module, inputs: torch.Tensor, repeats: int = 50) -> float:
    """Median seconds of one forward pass of ``inputs`` (after two warm-up passes)."""
    times = []
    with torch.no_grad():
        for i in range(repeats + 2):
            start = time.perf_counter()
            model(inputs)
            if i >= 2:
                times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def weight_bytes(model: nn.Module) -> int:
    """Bytes of all parameters and buffers of ``model`` (``sum(numel * element_size)``, exact)."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def inference_memory(model: nn.Module, inputs: torch.Tensor) -> int:
    """Peak bytes of CPU memory allocated during one forward pass of ``inputs`` under ``torch.no_grad()``.

    Measured with ``torch.profiler.profile(activities=[CPU], profile_memory=True)``: every CPU allocation
    and free the pass requests from torch's allocator (activations, temporaries, the output; weights and
    ``inputs`` exist before and are not counted), sorted by time, running sum, maximum. Deterministic for
    a given model and batch (no sampling); it is what the allocator was asked for, not the process's RSS
    (no allocator caching or fragmentation). Reads the profiler's event tree (``torch._C._profiler``).
    """
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model(inputs)
    stack, allocations = list(prof.profiler.kineto_results.experimental_event_tree()), []
    while stack:
        event = stack.pop()
        stack.extend(event.children)
        if event.tag == _EventType.Allocation and event.extra_fields.device.type == "cpu":
            allocations.append((event.start_time_ns, event.extra_fields.alloc_size))
    current = peak = 0
    for _, size in sorted(allocations):
        current += size
        peak = max(peak, current)
    return peak


def save_forecaster(model: PatchForecaster, folder: str | Path) -> Path:
    """``config.json`` + ``model.safetensors`` in ``folder``."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(
        json.dumps({"type": "flow_of_ranks_forecaster", **asdict(model.config)})
    )
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    return folder


def load_forecaster(folder: str | Path) -> PatchForecaster:
    """The dense forecaster saved by :func:`save_forecaster`."""
    from safetensors.torch import load_file

    folder = Path(folder)
    raw = json.loads((folder / "config.json").read_text())
    if raw.pop("type", None) != "flow_of_ranks_forecaster":
        raise ValueError(f"{folder} does not hold a flow-of-ranks forecaster")
    model = PatchForecaster(ForecasterConfig(**raw))
    model.load_state_dict(load_file(str(folder / "model.safetensors")))
    return model.eval()


def profile_modules(config: ForecasterConfig) -> list[dict[str, str]]:
    """Per block, the modules whose outputs :func:`~.spectra.depth_profile` measures: the normalised hidden
    state entering the block and its Q, K and V projections."""
    return [
        {
            "hidden": f"layers.{d}.norm1",
            "q": f"layers.{d}.attn.q",
            "k": f"layers.{d}.attn.k",
            "v": f"layers.{d}.attn.v",
        }
        for d in range(config.layers)
    ]
