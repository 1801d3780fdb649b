"""Low-rank factorised replacement for ``nn.Linear`` from a truncated SVD.

``W = U diag(s) V^T`` is replaced by ``B A`` with ``A = diag(sqrt(s_r)) V_r^T`` (rank x in) and
``B = U_r diag(sqrt(s_r))`` (out x rank). By Eckart-Young the Frobenius error is minimal among rank-r
matrices and ``||W - B A||_F^2 = sum_{i>r} s_i^2``.

Activation-aware variant (given calibration inputs X, rows = tokens): with ``X^T X / n + eps I = L L^T``
(Cholesky), the rank-r W' minimising ``||(W - W') X^T||_F`` is ``[W L]_r L^{-1}``, where ``[.]_r`` is the
truncated SVD; the factors are ``B = U_r sqrt(s_r)`` and ``A = sqrt(s_r) V_r^T L^{-1}``.
"""

from __future__ import annotations

import torch
from torch import nn


class LowRankLinear(nn.Module):
    """``y = second(first(x))``: ``first`` maps in -> rank (no bias), ``second`` rank -> out."""

    def __init__(self, in_features: int, out_features: int, rank: int, bias: bool = True) -> None:
        super().__init__()
        if not 1 <= rank <= min(in_features, out_features):
            raise ValueError(f"rank must be in [1, {min(in_features, out_features)}], got {rank}")
        self.in_features, self.out_features, self.rank = in_features, out_features, rank
        self.first = nn.Linear(in_features, rank, bias=False)
        self.second = nn.Linear(rank, out_features, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))

    @property
    def weight(self) -> torch.Tensor:
        """The dense product ``B A`` (out x in), for analysis."""
        return self.second.weight @ self.first.weight

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}"


def lowrank_params(in_features: int, out_features: int, rank: int) -> int:
    """Weight parameters of a rank-``rank`` factorisation (biases excluded)."""
    return rank * (in_features + out_features)


def factorize_linear(linear: nn.Linear, rank: int, inputs: torch.Tensor | None = None) -> LowRankLinear:
    """The best rank-``rank`` factorisation of ``linear`` (Frobenius; on ``inputs`` if given), bias kept."""
    w = linear.weight.detach().to(torch.float64)
    chol = None
    if inputs is not None:
        x = inputs.detach().to(torch.float64).reshape(-1, linear.in_features)
        cov = x.T @ x / max(len(x), 1)
        eps = 1e-6 * float(cov.diagonal().mean().clamp_min(1e-12))
        chol = torch.linalg.cholesky(cov + eps * torch.eye(linear.in_features, dtype=torch.float64))
        w = w @ chol
    u, s, vh = torch.linalg.svd(w, full_matrices=False)
    root = s[:rank].sqrt()
    first = root[:, None] * vh[:rank]
    if chol is not None:
        first = torch.linalg.solve_triangular(chol, first, upper=False, left=False)
    out = LowRankLinear(linear.in_features, linear.out_features, rank, bias=linear.bias is not None)
    out = out.to(device=linear.weight.device, dtype=linear.weight.dtype)
    with torch.no_grad():
        out.first.weight.copy_(first.to(linear.weight.dtype))
        out.second.weight.copy_((u[:, :rank] * root[None]).to(linear.weight.dtype))
        if linear.bias is not None:
            out.second.bias.copy_(linear.bias.detach())
    return out
