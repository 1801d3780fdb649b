"""VER downstream encoder: the frozen expert library with a new trainable patch-wise router (arXiv:2510.05213).

Wang et al., "VER: Vision Expert Transformer for Robot Learning via Foundation Distillation and Dynamic Routing",
arXiv:2510.05213, Sec. 3.3 (Patchwise Expert Routing, Curriculum Top-K Annealing). Every parameter of the
distilled library is frozen; each MoE layer gets a new noisy top-K router ``"downstream"`` (``2 D E`` weights per
layer), the only trainable part besides the policy head. Each patch token chooses its own experts, with

    K(s) = round(E + (K_min - E) * s / S) for s < S,   K_min afterwards      (s = ``step_count``, ``advance()``)

so early on every expert receives gradient through its gate. Expert usage is the downstream gates' mass
``u_e = sum_tokens g_e / #tokens`` (sums to 1), accumulated over forwards; its entropy ``-sum_e u_e log u_e``
in nats lies in ``[0, log E]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from embodia.perception.encoders import EncoderOutput
from embodia.perception.ver.distill import load_library
from embodia.perception.ver.model import VERConfig, VERError, VisionExpertLibrary, curriculum_top_k, entropy

DOWNSTREAM = "downstream"
"""The name of the robot router in every MoE layer."""


class VEREncoder(nn.Module):
    """An :class:`~embodia.perception.encoders.ImageEncoder` for policies: frozen library + trainable router.

    ``library``: a distilled :class:`VisionExpertLibrary` (copied, not modified), or its config (a
    :class:`VERConfig` or its dict; then ``router_names`` names the teachers' routers so saved weights fit).
    ``router_noise``: the downstream routers' noise scale in training (0: deterministic, the default). With
    the distillation's scale 1, a fresh router's logits (~0.02) drown in noise of std ~0.7, so each token's
    expert is random for most of a short run and the policy head fits features that change every step
    (measured in the VER experiment: final training action error 0.15 with noise, 0.12-0.13 without).
    """

    kind = "ver"
    """The name of this class in :mod:`~embodia.perception.encoder_io`'s registry of encoder folders."""

    def __init__(
        self,
        library: VisionExpertLibrary | VERConfig | dict[str, Any] | None = None,
        router_k_min: int = 1,
        anneal_steps: int = 1000,
        anneal: bool = True,
        router_names: list[str] | None = None,
        router_noise: float = 0.0,
    ) -> None:
        super().__init__()
        if isinstance(library, VisionExpertLibrary):
            source = library
            library = VisionExpertLibrary(**source.encoder_config())
            library.load_state_dict(source.state_dict())
        else:
            library = VisionExpertLibrary(library, router_names=router_names or ["default"])
        if DOWNSTREAM in library.router_names:
            raise VERError(f"the library already has a {DOWNSTREAM!r} router; pass a distilled library")
        self.library = library
        self.experts = library.config.experts
        curriculum_top_k(0, self.experts, router_k_min, anneal_steps)  # validates k_min
        self.router_k_min, self.anneal_steps, self.anneal = int(router_k_min), int(anneal_steps), bool(anneal)
        self.teacher_routers = library.router_names
        self.routers = library.add_router(DOWNSTREAM)
        self.router_noise = float(router_noise)
        library.requires_grad_(False)
        for router in self.routers:
            router.noise = self.router_noise
            router.gate.requires_grad_(True)
            router.noise_proj.requires_grad_(self.router_noise > 0)  # unused without noise
        self.image_size, self.grid, self.dim = library.image_size, library.grid, library.dim
        self.mean, self.std = library.mean, library.std
        self.register_buffer("step_count", torch.zeros((), dtype=torch.long))
        self._usage = torch.zeros(self.experts, dtype=torch.float64)
        self._tokens = 0
        self.train(self.training)

    @classmethod
    def from_library_folder(cls, folder: str | Path, **schedule: Any) -> VEREncoder:
        """A downstream encoder on the library saved in ``folder`` (``schedule``: ``router_k_min``,
        ``anneal_steps``, ``anneal``)."""
        return cls(load_library(folder), **schedule)

    def encoder_config(self) -> dict[str, Any]:
        return {
            "library": self.library.config.to_dict(),
            "router_names": list(self.teacher_routers),
            "router_k_min": self.router_k_min,
            "anneal_steps": self.anneal_steps,
            "anneal": self.anneal,
            "router_noise": self.router_noise,
        }

    def train(self, mode: bool = True) -> VEREncoder:
        """Frozen layers (and the teachers' routers) stay in eval mode; the downstream routers follow ``mode``
        (their noise is on only in training)."""
        super().train(mode)
        self.library.eval()
        for router in self.routers:
            router.train(mode)
        return self

    @property
    def k(self) -> int:
        """The current top-K: annealed from E to ``router_k_min`` over ``anneal_steps`` advances, or K_min."""
        if not self.anneal:
            return self.router_k_min
        return curriculum_top_k(int(self.step_count), self.experts, self.router_k_min, self.anneal_steps)

    def advance(self, steps: int = 1) -> int:
        """Count ``steps`` optimiser steps (call after each); returns the new K."""
        self.step_count += int(steps)
        return self.k

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        out = self.library(images, router=DOWNSTREAM, k=self.k)
        with torch.no_grad():
            for layer in self.library.routing():
                gates = layer["gates"].reshape(-1, self.experts)
                self._usage += gates.sum(0).double().cpu()
                self._tokens += gates.shape[0]
        return out

    def routing(self) -> list[dict[str, torch.Tensor]]:
        """Per MoE layer, the last forward's downstream ``{"probs", "gates"}`` ``(B, N, E)``."""
        return self.library.routing()

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def trainable_share(self) -> float:
        """Trainable (router) parameters / all parameters of the encoder."""
        total = sum(p.numel() for p in self.parameters())
        return sum(p.numel() for p in self.trainable_parameters()) / total

    def reset_usage(self) -> None:
        self._usage.zero_()
        self._tokens = 0

    def usage(self) -> torch.Tensor:
        """``(E,)`` fraction of the downstream gate mass per expert since :meth:`reset_usage` (sums to 1;
        uniform before any forward)."""
        if self._tokens == 0:
            return torch.full((self.experts,), 1.0 / self.experts, dtype=torch.float64)
        return self._usage / self._tokens

    def usage_entropy(self) -> float:
        """Entropy of :meth:`usage` in nats, in ``[0, log E]``."""
        return float(entropy(self.usage()))
