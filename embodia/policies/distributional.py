"""Categorical value distributions with HL-Gauss targets (Imani & White 2018; Farebrother et al. 2024).

A scalar target ``y`` becomes a distribution over ``K`` bins with edges ``b_0 < ... < b_K`` by
integrating a Gaussian ``N(y, sigma^2)`` over each bin:

    p_i(y) = Phi((b_{i+1} - y) / sigma) - Phi((b_i - y) / sigma),   renormalized over [b_0, b_K]

(``sigma`` = 0.75 bin widths by default). A value head outputs logits over the bins; its value is
``sum_i softmax(logits)_i * c_i`` with bin centres ``c_i``; it is trained with cross-entropy against
``p(y)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Support:
    """``bins`` equal bins covering ``[v_min, v_max]``."""

    v_min: float
    v_max: float
    bins: int = 101
    sigma_ratio: float = 0.75

    def __post_init__(self) -> None:
        if not self.v_max > self.v_min:
            raise ValueError(f"a value support needs v_max > v_min, got [{self.v_min}, {self.v_max}]")

    @property
    def width(self) -> float:
        return (self.v_max - self.v_min) / self.bins

    def edges(self, device: torch.device | str = "cpu") -> torch.Tensor:
        return torch.linspace(self.v_min, self.v_max, self.bins + 1, device=device)

    def centers(self, device: torch.device | str = "cpu") -> torch.Tensor:
        edges = self.edges(device)
        return (edges[:-1] + edges[1:]) / 2


def hl_gauss(target: torch.Tensor, support: Support) -> torch.Tensor:
    """HL-Gauss distribution of each scalar in ``target`` (shape ``(...,)`` -> ``(..., bins)``)."""
    edges = support.edges(target.device)
    sigma = support.sigma_ratio * support.width
    y = target.clamp(support.v_min, support.v_max).unsqueeze(-1)
    cdf = 0.5 * (1.0 + torch.erf((edges - y) / (sigma * math.sqrt(2.0))))
    mass = cdf[..., 1:] - cdf[..., :-1]
    return mass / (cdf[..., -1:] - cdf[..., :1]).clamp_min(1e-8)


def expected_value(logits: torch.Tensor, support: Support) -> torch.Tensor:
    """Mean of the categorical distribution given by ``logits`` (``(..., bins)`` -> ``(...)``)."""
    return (torch.softmax(logits, dim=-1) * support.centers(logits.device)).sum(-1)


def cross_entropy(logits: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """Per-sample cross-entropy ``-sum_i p_i log softmax(logits)_i``."""
    return -(target_probs * torch.log_softmax(logits, dim=-1)).sum(-1)


def value_range(
    r_min: float, r_max: float, horizon: int, gamma1: float, gamma2: float
) -> tuple[float, float]:
    """Bounds of ``sum_k gamma1^k r + gamma2^H V`` at its fixed point, for rewards in ``[r_min, r_max]``.

    Rewards that are all zero (demonstrations that never reach the reward) bound every value at 0; the
    support then spans ``[-1, 1]`` instead of collapsing to a point, whose bins would have no width.
    """
    chunk = sum(gamma1**k for k in range(horizon))
    scale = chunk / (1.0 - gamma2**horizon)
    low, high = min(0.0, r_min * scale), max(0.0, r_max * scale)
    return (-1.0, 1.0) if low == high else (low, high)
