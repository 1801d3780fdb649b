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
    """Points of history the model reads."""
    horizon: int = 24
    """Points it forecasts."""
    patch: int = 12
    """Points per patch token (``context`` must be a multiple)."""
    d_model: int = 64
    """Width of the residual stream."""
    heads: int = 4
    """Attention heads per block."""
    layers: int = 3
    """Pre-norm transformer blocks."""
    mlp: int = 128
    """Hidden width of each block's GELU MLP."""
    season: int = 24
    """Lag of the seasonal naive forecast that scales MASE."""
    kv_dims: tuple[int, ...] | None = None
    """Per-head inner width of Q/K/V (the authors' ``d_kv``) of every block, one entry per block; ``None``:
    ``d_model // heads`` everywhere (a dense model). :func:`~.pretrain.depth_power_law` gives the paper's
    depth-increasing widths."""

    def __post_init__(self) -> None:
        if self.kv_dims is not None:
            self.kv_dims = tuple(int(k) for k in self.kv_dims)
            if len(self.kv_dims) != self.layers or min(self.kv_dims) < 1:
                raise ValueError(f"kv_dims needs {self.layers} positive widths, got {self.kv_dims}")

    def kv_dim(self, block: int) -> int:
        """Per-head Q/K/V width of ``block``."""
        return self.kv_dims[block] if self.kv_dims is not None else self.d_model // self.heads


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
    """Multi-head attention whose Q/K/V have ``heads * head_dim`` outputs (``head_dim`` may be below
    ``d / heads``: the authors' ``inner_dim = n_heads * d_kv``); ``o`` maps back to ``d``."""

    def __init__(self, d: int, heads: int, head_dim: int | None = None) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, head_dim or d // heads
        inner = heads * self.head_dim
        self.q, self.k, self.v = (nn.Linear(d, inner) for _ in range(3))
        self.o = nn.Linear(inner, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape

        def split_heads(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, n, self.heads, -1).transpose(1, 2)

        y = F.scaled_dot_product_attention(
            split_heads(self.q(x)), split_heads(self.k(x)), split_heads(self.v(x))
        )
        return self.o(y.transpose(1, 2).reshape(b, n, -1))


class Block(nn.Module):
    def __init__(self, config: ForecasterConfig, index: int = 0) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(config.d_model), nn.LayerNorm(config.d_model)
        self.attn = Attention(config.d_model, config.heads, config.kv_dim(index))
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
        self.layers = nn.ModuleList(Block(config, i) for i in range(config.layers))
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
    pool: torch.Tensor | None = None,
) -> PatchForecaster:
    """Train (or fine-tune ``model``) with Adam on fresh synthetic series, L1 loss on the scaled target.

    ``pool``: the training series (default: :func:`training_pool` of ``seed``; pass it to share one pool
    between models trained on the same seed)."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(10_000 + seed)
    model = model if model is not None else PatchForecaster(config)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
    if pool is None:
        pool = training_pool(config, steps, seed, batch)
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


def training_pool(config: ForecasterConfig, steps: int, seed: int = 0, batch: int = 64) -> torch.Tensor:
    """The synthetic series :func:`train_forecaster` samples its batches from (``steps * batch / 4`` of
    them, at least ``4 batch``, at most 8192)."""
    g = torch.Generator().manual_seed(20_000 + seed)
    return make_series(max(4 * batch, min(steps * batch // 4, 8192)), config.context + config.horizon, g)


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
    """Peak bytes of CPU memory allocated during one forward pass of ``inputs`` under ``torch.no_grad()``
    (:func:`peak_memory`): activations, temporaries and the output; weights and ``inputs`` exist before and
    are not counted."""
    with torch.no_grad():
        return peak_memory(lambda: model(inputs))


def training_memory(model: nn.Module, inputs: torch.Tensor) -> int:
    """Peak bytes allocated by one forward pass of ``inputs`` with autograd recording (:func:`peak_memory`):
    the activations saved for the backward pass are alive at its end, so this is the activation memory of a
    training step (without the gradients, which the backward pass allocates)."""
    with torch.enable_grad():
        return peak_memory(lambda: model(inputs))


def peak_memory(fn: Callable[[], object]) -> int:
    """Peak bytes of CPU memory allocated while ``fn()`` runs.

    Measured with ``torch.profiler.profile(activities=[CPU], profile_memory=True)``: every CPU allocation
    and free requested from torch's allocator, sorted by time, running sum, maximum (tensors that exist
    before ``fn`` runs are not counted). Deterministic for a given model and batch (no sampling); it is what
    the allocator was asked for, not the process's RSS (no allocator caching or fragmentation). Reads the
    profiler's event tree (``torch._C._profiler``).
    """
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    del result
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
