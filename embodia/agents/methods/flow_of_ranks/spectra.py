"""Singular spectra, effective rank and energy rank of weights and of activations on calibration data.

Effective rank (Roy & Vetterli, 2007): with p_i = s_i / sum_j s_j, ``erank = exp(-sum_i p_i log p_i)``; it
is n for n equal singular values and 1 for a rank-one matrix. Energy rank: the smallest r with
``sum_{i<=r} s_i^2 >= e * sum_i s_i^2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn


def singular_values(matrix: torch.Tensor) -> torch.Tensor:
    """Singular values (descending, float64) of a matrix; leading dimensions are flattened into rows."""
    m = matrix.detach().to(torch.float64)
    if m.dim() != 2:
        m = m.reshape(-1, m.shape[-1])
    return torch.linalg.svdvals(m)


def effective_rank(s: torch.Tensor) -> float:
    """``exp`` of the entropy of the normalised singular values ``s`` (zeros ignored)."""
    s = s[s > 0].to(torch.float64)
    if s.numel() == 0:
        return 0.0
    p = s / s.sum()
    return math.exp(float(-(p * p.log()).sum()))


def energy_rank(s: torch.Tensor, energy: float = 0.99) -> int:
    """Smallest r whose first r singular values hold at least ``energy`` of the squared total."""
    if not 0.0 < energy <= 1.0:
        raise ValueError(f"energy must be in (0, 1], got {energy}")
    e = s.to(torch.float64) ** 2
    total = float(e.sum())
    if total == 0.0:
        return 0
    cum = torch.cumsum(e, 0) / total
    return int(torch.searchsorted(cum, torch.tensor(energy - 1e-12, dtype=torch.float64))) + 1


def run_model(model: nn.Module, data: Any) -> Any:
    """``model(**data)`` for a mapping (Hugging Face inputs), ``model(*data)`` for a tuple, else ``model(data)``."""
    if isinstance(data, dict):
        return model(**data)
    if isinstance(data, tuple):
        return model(*data)
    return model(data)


def capture_inputs(
    model: nn.Module, data: Any, names: Iterable[str], outputs: bool = False
) -> dict[str, torch.Tensor]:
    """Inputs (outputs if ``outputs``) of the named submodules on one forward pass of ``data``, flattened to
    (tokens, features)."""
    modules = dict(model.named_modules())
    seen: dict[str, torch.Tensor] = {}
    hooks = []

    def hook_for(name: str) -> Callable:
        def hook(_module: nn.Module, args: tuple, out: Any) -> None:
            x = (out if outputs else args[0]).detach()
            seen[name] = x.reshape(-1, x.shape[-1])

        return hook

    for name in names:
        hooks.append(modules[name].register_forward_hook(hook_for(name)))
    try:
        with torch.no_grad():
            run_model(model, data)
    finally:
        for h in hooks:
            h.remove()
    return seen


def spectrum_summary(s: torch.Tensor, energy: float = 0.99) -> dict[str, float]:
    """Effective rank, energy rank and full rank of one spectrum."""
    return {
        "effective_rank": effective_rank(s),
        "energy_rank": energy_rank(s, energy),
        "full_rank": int(s.numel()),
    }


def analyse(model: nn.Module, data: Any, names: Iterable[str], energy: float = 0.99) -> dict[str, dict]:
    """Per named linear module: spectrum summary of its weight and of its input activations on ``data``."""
    names = list(names)
    modules = dict(model.named_modules())
    inputs = capture_inputs(model, data, names)
    out = {}
    for name in names:
        out[name] = {
            "weight": spectrum_summary(singular_values(modules[name].weight), energy),
            "input": spectrum_summary(singular_values(inputs[name]), energy) if name in inputs else None,
        }
    return out


def depth_profile(model: nn.Module, data: Any, layers: list[dict[str, str]]) -> list[dict[str, float]]:
    """Effective ranks per block: ``layers[d]`` names the modules whose outputs to measure, e.g.
    ``{"hidden": "layers.0.norm1", "q": "layers.0.attn.q", ...}``; returns ``[{"hidden": erank, ...}, ...]``."""
    names = [n for layer in layers for n in layer.values()]
    outs = capture_inputs(model, data, names, outputs=True)
    return [{k: effective_rank(singular_values(outs[n])) for k, n in layer.items()} for layer in layers]
