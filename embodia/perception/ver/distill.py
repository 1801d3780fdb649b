"""Distillation of several frozen vision teachers into the VER expert library (arXiv:2510.05213, Sec. 3).

Wang et al., "VER: Vision Expert Transformer for Robot Learning via Foundation Distillation and Dynamic Routing",
arXiv:2510.05213. Each teacher ``t`` has its own noisy top-K router in every MoE layer and its own linear heads
from the student width D to the teacher's width ``D_t``. Per batch and teacher (student run through router ``t``
with ``K = top_k``; teacher patch tokens reshaped to ``(B, D_t, g_t, g_t)`` and resized bilinearly to the
student grid ``g_s``):

    L_t = sum over (s, y) in {(H_t(z_patches), y_patches), (P_t(z_pooled), y_pooled)} of
          w_cos * mean(1 - cos(s, y)) + w_l1 * mean(smoothL1(s, y))

Mutual information between the teacher and the chosen expert, ``p(e | t)`` the routing probabilities of
router ``t`` averaged over tokens and MoE layers, ``p(t)`` uniform:

    MI = H(sum_t p(t) p(e | t)) - sum_t p(t) H(p(e | t))        in [0, log E]
    L  = sum_t L_t - w_mi * MI

Maximising MI makes the teachers' routers prefer different experts while each router still uses several
(the marginal's entropy term). Optimiser: AdamW on the library and the heads; teachers stay frozen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from embodia.perception.encoder_io import load_encoder, save_encoder
from embodia.perception.encoders import ImageEncoder, prepare
from embodia.perception.ver.model import VERConfig, VERError, VisionExpertLibrary, entropy


@dataclass
class DistillConfig:
    """How to distil the teachers into the library."""

    steps: int = 2000
    """Optimiser steps."""
    batch_size: int = 32
    """Frames per step (sampled with replacement across steps, without within a step)."""
    lr: float = 1e-3
    """AdamW learning rate (constant)."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    cosine_weight: float = 1.0
    """``w_cos``: weight of the ``1 - cos`` feature loss."""
    smooth_l1_weight: float = 1.0
    """``w_l1``: weight of the smooth-L1 feature loss."""
    mi_weight: float = 0.01
    """``w_mi``: weight of the teacher-expert mutual information (subtracted: it is maximised)."""
    seed: int = 0
    """Seed of the library's and heads' initialisation, the router noise and the batch sampling."""


def feature_loss(student: torch.Tensor, teacher: torch.Tensor, config: DistillConfig) -> torch.Tensor:
    """``w_cos * mean(1 - cos) + w_l1 * mean(smoothL1)`` over the last (feature) axis."""
    cosine = 1.0 - F.cosine_similarity(student, teacher, dim=-1)
    return config.cosine_weight * cosine.mean() + config.smooth_l1_weight * F.smooth_l1_loss(student, teacher)


def resize_tokens(patches: torch.Tensor, grid: int, target: int) -> torch.Tensor:
    """``(B, g*g, D)`` row-major tokens -> ``(B, target*target, D)`` by bilinear interpolation of the grid."""
    b, n, d = patches.shape
    if n != grid * grid:
        raise VERError(f"a teacher gave {n} patch tokens for a {grid}x{grid} grid; its `grid` is wrong")
    if grid == target:
        return patches
    maps = patches.transpose(1, 2).reshape(b, d, grid, grid)
    maps = F.interpolate(maps, size=(target, target), mode="bilinear", align_corners=False)
    return maps.flatten(2).transpose(1, 2)


def mutual_information(conditionals: torch.Tensor) -> torch.Tensor:
    """``MI = H(mean_t p(e|t)) - mean_t H(p(e|t))`` for ``conditionals`` ``(T, E)`` (uniform ``p(t)``)."""
    return entropy(conditionals.mean(0)) - entropy(conditionals).mean()


def distill(
    teachers: Mapping[str, ImageEncoder],
    frames: np.ndarray,
    library_config: VERConfig,
    config: DistillConfig,
    log_every: int = 50,
) -> tuple[VisionExpertLibrary, list[dict]]:
    """Distil ``teachers`` (frozen ``nn.Module`` encoders, put in eval mode) into a new library on ``uint8``
    ``(N, H, W, 3)`` ``frames``; returns the library (eval mode, default router = the first teacher's, ``K =
    top_k``) and the history: per logged step the total loss, each teacher's loss, MI and expert-usage entropy.
    """
    if not teachers:
        raise VERError("distill needs at least one teacher encoder; pass {name: encoder}")
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise VERError(f"distill needs uint8 frames (N, H, W, 3), got {frames.dtype} {frames.shape}")
    names = list(teachers)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    library = VisionExpertLibrary(library_config, router_names=names, default_k=library_config.top_k)
    patch_heads = nn.ModuleDict({n: nn.Linear(library.dim, int(teachers[n].dim)) for n in names})
    pooled_heads = nn.ModuleDict({n: nn.Linear(library.dim, int(teachers[n].dim)) for n in names})
    for teacher in teachers.values():
        if isinstance(teacher, nn.Module):
            teacher.eval()
    params = [*library.parameters(), *patch_heads.parameters(), *pooled_heads.parameters()]
    optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    batch = min(config.batch_size, len(frames))
    history: list[dict] = []
    library.train()
    for step in range(config.steps):
        chosen = frames[rng.choice(len(frames), size=batch, replace=False)]
        student_input = prepare(chosen, library)
        losses, conditionals, usage = {}, [], []
        for name in names:
            teacher = teachers[name]
            with torch.no_grad():
                target = teacher(prepare(chosen, teacher))
                target_patches = resize_tokens(target.patches.float(), int(teacher.grid), library.grid)
            out = library(student_input, router=name, k=library_config.top_k)
            routing = library.routing()
            losses[name] = feature_loss(
                patch_heads[name](out.patches), target_patches, config
            ) + feature_loss(pooled_heads[name](out.pooled), target.pooled.float(), config)
            probs = torch.stack([r["probs"] for r in routing])  # (layers, B, N, E)
            conditionals.append(probs.reshape(-1, probs.shape[-1]).mean(0))
            chosen_mask = torch.stack([(r["gates"] > 0).float() for r in routing])
            usage.append(chosen_mask.reshape(-1, chosen_mask.shape[-1]).mean(0).detach())
        mi = mutual_information(torch.stack(conditionals))
        loss = sum(losses.values()) - config.mi_weight * mi
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if step % max(log_every, 1) == 0 or step == config.steps - 1:
            total_usage = torch.stack(usage).sum(0)
            record = {"step": step, "loss": float(loss.detach()), "mi": float(mi.detach())}
            record.update({f"loss/{n}": float(v.detach()) for n, v in losses.items()})
            record["usage_entropy"] = float(entropy(total_usage / total_usage.sum()))
            record.update({f"usage_entropy/{n}": float(entropy(u / u.sum())) for n, u in zip(names, usage)})
            history.append(record)
            if not math.isfinite(record["loss"]):
                raise VERError(f"distillation diverged at step {step} (loss {record['loss']}); lower the lr")
    library.default_router, library.default_k = names[0], library_config.top_k
    return library.eval(), history


def save_library(library: VisionExpertLibrary, folder: str | Path) -> Path:
    """Write the library (every router included) as an encoder folder."""
    return save_encoder(library, folder)


def load_library(folder: str | Path) -> VisionExpertLibrary:
    """The library saved in ``folder`` (eval mode), with its routers rebuilt from ``config.json``."""
    library = load_encoder(folder)
    if not isinstance(library, VisionExpertLibrary):
        raise VERError(
            f"{str(folder)!r} holds a {type(library).__name__}, not a VER expert library; "
            "pass a folder written by save_library"
        )
    return library
