"""The VER vision expert library: a small ViT whose last blocks are mixture-of-experts MLPs with named routers.

Wang, Huo, Liang, Du, Sun, Lin, Shang, Peng, Bansal, Ding, Tomizuka, "VER: Vision Expert Transformer for Robot
Learning via Foundation Distillation and Dynamic Routing", arXiv:2510.05213 (2025). The first ``depth -
moe_blocks`` pre-norm transformer blocks are the base vision transformer; the last ``moe_blocks`` replace their
MLP with a mixture of ``E`` expert MLPs (the vision expert library) shared by several routers, one per teacher
during distillation and a new patch-wise ``"downstream"`` router for robot tasks.

Noisy top-K gating (Shazeer et al. 2017, "Outrageously Large Neural Networks", arXiv:1701.06538), per token x:

    h(x) = x W_g + eps * sigma * softplus(x W_noise),   eps ~ N(0, 1)        (noise only in training)
    p(x) = softmax(h(x))                                                    (all E experts: statistics, MI)
    g(x) = softmax(TopK(h(x), K)),  TopK keeps the K largest logits and sets the others to -inf
    y(x) = sum_e g_e(x) * Expert_e(x)                                       (only K nonzero gates per token)

Curriculum Top-K Annealing: ``K(s) = round(E + (K_min - E) * s / S)`` for ``s < S`` (linear from all experts to
``K_min``), ``K_min`` afterwards (:func:`curriculum_top_k`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from embodia.core.errors import EmbodiaError
from embodia.perception.encoders import EncoderOutput


class VERError(EmbodiaError):
    """A VER library, router or schedule that cannot be used (one line)."""


@dataclass
class VERConfig:
    """The expert library's shape (saved in the encoder folder's ``config.json``)."""

    image_size: int = 64
    """Input height and width, pixels."""
    patch: int = 8
    """Patch side, pixels: the token grid is ``image_size // patch`` per side."""
    dim: int = 96
    """Token width D."""
    depth: int = 4
    """Transformer blocks in all (the base blocks plus the MoE blocks)."""
    heads: int = 4
    """Attention heads per block."""
    moe_blocks: int = 2
    """How many of the last blocks have a mixture-of-experts MLP (the expert library)."""
    experts: int = 6
    """Experts E per MoE block."""
    expert_hidden: int = 192
    """Hidden width of each expert MLP (and of the dense blocks' MLPs)."""
    top_k: int = 2
    """K of the teachers' routers (distillation and the library's default)."""
    router_noise: float = 1.0
    """Scale sigma of the routers' learned Gaussian noise (training only; 0 disables it)."""
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    """Per-channel mean the input is normalised with (see :func:`~embodia.perception.encoders.prepare`)."""
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    """Per-channel standard deviation of the input normalisation."""

    def __post_init__(self) -> None:
        self.mean, self.std = tuple(float(v) for v in self.mean), tuple(float(v) for v in self.std)
        problems = []
        if self.image_size % self.patch:
            problems.append(f"image_size {self.image_size} is not a multiple of patch {self.patch}")
        if self.dim % self.heads:
            problems.append(f"dim {self.dim} is not a multiple of heads {self.heads}")
        if not 1 <= self.moe_blocks <= self.depth:
            problems.append(f"moe_blocks {self.moe_blocks} is not in 1..depth={self.depth}")
        if not 1 <= self.top_k <= self.experts:
            problems.append(f"top_k {self.top_k} is not in 1..experts={self.experts}")
        if problems:
            raise VERError(f"invalid VERConfig: {'; '.join(problems)}; fix these fields")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def curriculum_top_k(step: int, experts: int, k_min: int, anneal_steps: int) -> int:
    """Curriculum Top-K Annealing: ``experts`` at step 0, linearly (rounded half up) down to ``k_min`` at step
    ``anneal_steps``, ``k_min`` afterwards."""
    if not 1 <= k_min <= experts:
        raise VERError(f"k_min {k_min} is not in 1..{experts} experts; choose a K_min between 1 and E")
    if anneal_steps <= 0 or step >= anneal_steps:
        return int(k_min)
    k = experts + (k_min - experts) * max(step, 0) / anneal_steps
    return int(min(experts, max(k_min, math.floor(k + 0.5))))


class NoisyTopKRouter(nn.Module):
    """Noisy top-K gating over ``experts`` experts for ``dim``-wide tokens (module docstring)."""

    def __init__(self, dim: int, experts: int, noise: float = 1.0) -> None:
        super().__init__()
        self.experts, self.noise = int(experts), float(noise)
        self.gate = nn.Linear(dim, experts, bias=False)
        self.noise_proj = nn.Linear(dim, experts, bias=False)
        nn.init.normal_(self.gate.weight, std=0.02)
        nn.init.zeros_(self.noise_proj.weight)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """``h(x)``: clean logits, plus learned Gaussian noise in training mode."""
        h = self.gate(x)
        if self.training and self.noise > 0:
            h = h + torch.randn_like(h) * self.noise * F.softplus(self.noise_proj(x))
        return h

    def forward(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens ``(T, D)`` -> gates ``(T, E)`` (exactly ``k`` nonzero per token, summing to 1) and the full
        softmax probabilities ``(T, E)``."""
        if not 1 <= k <= self.experts:
            raise VERError(f"top-k {k} is not in 1..{self.experts} experts; pass K between 1 and E")
        h = self.logits(x)
        top, index = h.topk(k, dim=-1)
        gates = torch.zeros_like(h).scatter(-1, index, torch.softmax(top, dim=-1))
        return gates, torch.softmax(h, dim=-1)


def expert_mlp(dim: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))


class MoEMLP(nn.Module):
    """``experts`` expert MLPs shared by named routers; ``forward(x, router, k)`` mixes the chosen experts."""

    def __init__(
        self, dim: int, hidden: int, experts: int, router_names: Sequence[str], noise: float = 1.0
    ) -> None:
        super().__init__()
        self.dim, self.num_experts, self.noise = int(dim), int(experts), float(noise)
        self.experts = nn.ModuleList(expert_mlp(dim, hidden) for _ in range(experts))
        self.routers = nn.ModuleDict()
        for name in router_names:
            self.add_router(name)
        self.last_probs: torch.Tensor | None = None
        """``(B, N, E)`` softmax routing probabilities of the last forward (with their graph)."""
        self.last_gates: torch.Tensor | None = None
        """``(B, N, E)`` top-K gates of the last forward."""

    def add_router(self, name: str) -> NoisyTopKRouter:
        """A new router ``name`` over the same experts."""
        if name in self.routers:
            raise VERError(f"the MoE layer already has a router named {name!r}; choose another name")
        self.routers[name] = NoisyTopKRouter(self.dim, self.num_experts, self.noise)
        return self.routers[name]

    def forward(self, x: torch.Tensor, router: str, k: int) -> torch.Tensor:
        if router not in self.routers:
            raise VERError(f"no router {router!r} in the MoE layer; known: {', '.join(self.routers)}")
        flat = x.reshape(-1, x.shape[-1])
        gates, probs = self.routers[router](flat, k)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows = gates[:, e].nonzero(as_tuple=True)[0]  # only the tokens that chose expert e
            if rows.numel():
                out = out.index_add(0, rows, gates[rows, e, None] * expert(flat[rows]))
        self.last_probs = probs.reshape(*x.shape[:-1], -1)
        self.last_gates = gates.reshape(*x.shape[:-1], -1)
        return out.reshape(x.shape)


class Block(nn.Module):
    """Pre-norm transformer block: ``x + Attn(LN(x))``, then ``x + MLP(LN(x))`` (a :class:`MoEMLP` or dense)."""

    def __init__(self, config: VERConfig, moe: bool, router_names: Sequence[str]) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(config.dim), nn.LayerNorm(config.dim)
        self.attn = nn.MultiheadAttention(config.dim, config.heads, batch_first=True)
        if moe:
            self.mlp: nn.Module = MoEMLP(
                config.dim, config.expert_hidden, config.experts, router_names, config.router_noise
            )
        else:
            self.mlp = expert_mlp(config.dim, config.expert_hidden)

    def forward(self, x: torch.Tensor, router: str, k: int) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        h = self.norm2(x)
        return x + (self.mlp(h, router, k) if isinstance(self.mlp, MoEMLP) else self.mlp(h))


class VisionExpertLibrary(nn.Module):
    """Patch embedding + position embedding + ``depth`` blocks (the last ``moe_blocks`` with MoE MLPs) + LN.

    ``forward(images, router, k)`` routes every MoE layer with the named router; called with the images alone it
    uses ``default_router`` and ``default_k``, so the library is an :class:`~.encoders.ImageEncoder`.
    """

    kind = "ver-library"
    """The name of this class in :mod:`~embodia.perception.encoder_io`'s registry of encoder folders."""

    def __init__(
        self,
        config: VERConfig | dict[str, Any] | None = None,
        router_names: Sequence[str] = ("default",),
        default_router: str | None = None,
        default_k: int | None = None,
    ) -> None:
        super().__init__()
        config = VERConfig(**config) if isinstance(config, dict) else (config or VERConfig())
        if not router_names:
            raise VERError("a VisionExpertLibrary needs at least one router name (e.g. one per teacher)")
        self.config = config
        self.image_size, self.dim = config.image_size, config.dim
        self.grid = config.image_size // config.patch
        self.mean, self.std = config.mean, config.std
        self.embed = nn.Conv2d(3, config.dim, config.patch, stride=config.patch)
        self.position = nn.Parameter(torch.zeros(1, self.grid * self.grid, config.dim))
        nn.init.normal_(self.position, std=0.02)
        first_moe = config.depth - config.moe_blocks
        self.blocks = nn.ModuleList(
            Block(config, i >= first_moe, list(router_names)) for i in range(config.depth)
        )
        self.norm = nn.LayerNorm(config.dim)
        self.default_router = default_router or router_names[0]
        self.default_k = int(default_k or config.top_k)

    def moe_layers(self) -> list[MoEMLP]:
        return [b.mlp for b in self.blocks if isinstance(b.mlp, MoEMLP)]

    @property
    def router_names(self) -> list[str]:
        return list(self.moe_layers()[0].routers)

    def add_router(self, name: str) -> list[NoisyTopKRouter]:
        """A new router ``name`` in every MoE layer (e.g. ``"downstream"``); returns them."""
        return [layer.add_router(name) for layer in self.moe_layers()]

    def encoder_config(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "router_names": self.router_names,
            "default_router": self.default_router,
            "default_k": self.default_k,
        }

    def forward(self, images: torch.Tensor, router: str | None = None, k: int | None = None) -> EncoderOutput:
        """``(B, 3, S, S)`` normalised images -> patches ``(B, N, D)`` (final LN) and their mean ``(B, D)``."""
        router = router or self.default_router
        k = int(k or self.default_k)
        if router not in self.router_names:
            raise VERError(f"no router {router!r} in the library; known: {', '.join(self.router_names)}")
        x = self.embed(images).flatten(2).transpose(1, 2) + self.position
        for block in self.blocks:
            x = block(x, router, k)
        x = self.norm(x)
        return EncoderOutput(x, x.mean(dim=1))

    def routing(self) -> list[dict[str, torch.Tensor]]:
        """Per MoE layer, the last forward's ``{"probs": (B, N, E), "gates": (B, N, E)}``."""
        return [{"probs": m.last_probs, "gates": m.last_gates} for m in self.moe_layers()]


def entropy(p: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Shannon entropy in nats of distributions along ``dim`` (``0 log 0 = 0``)."""
    return -(p * torch.log(p.clamp_min(1e-12))).sum(dim)
