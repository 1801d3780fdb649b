"""Laplacian-kernel attention with a Nystrom approximation and a Newton-Schulz landmark inverse.

Paper: Z. Feng, S. Lian, C. Wang, M. Zhang, T. Tan, R. Xu, W. Meng and X. Zhang, "LaplacianFormer:
Rethinking Linear Attention with Laplacian Kernel", ICLR 2026, arXiv:2604.20368. The authors publish CUDA
kernels for the L1 distance and the solver (``BirdWithDreams/LaplacianFormer``: ``src/NewtonInverse_cuda_kernel.cu``,
``src/LaplaceSubtraction_cuda_kernel.cu``), not the model code; where the paper and those kernels differ, the
kernels are followed and it is said below.

Kernel. Softmax similarity is replaced by the Laplacian kernel on the L1 distance,

    k(q, k) = exp(-||q - k||_1 / lambda),    lambda = 4,

on the *unscaled* queries and keys (the authors' distance kernel takes q and k as they come; the paper's
lambda = 4 is chosen for them, so no head_dim^-1/2 factor is applied). :func:`laplacian_attention_exact` is
kernel smoothing with the full N x N kernel, ``D^-1 K V``, ``D = diag(K 1)`` (the reference).

Nystrom approximation. Queries and keys are average-pooled into m landmarks L_q, L_k (m x d): for image
tokens over 2-D windows of the h x w token grid (a sqrt(m) x sqrt(m) grid of landmarks), for sequences
over contiguous segments (:func:`pool_landmarks`). With A = k(Q, L_k) (N x m), W = k(L_q, L_k) (m x m),
B = k(L_q, K) (m x N):

    K ~ A W^-1 B,

evaluated right to left, so nothing larger than N x m is ever formed (L1 distances by ``torch.cdist(p=1)``).

Newton-Schulz inverse, as the authors' CUDA kernel does it (``NewtonInverse_cuda_kernel.cu``): the matrix
inverted is the ridge-regularised P = W + 0.01 I (their comment: without the ridge the iteration
diverges), started from

    X_0 = alpha P,    alpha = 1.8 / (max_i sum_j P_ij)^2,

and iterated X_{t+1} = 2 X_t - X_t P X_t (= X_t (2I - P X_t)). The paper's text states X_0 = alpha W^T with
alpha from a norm of W; the kernel is followed. Its backward is the kernel's too: the gradient of an exact
inverse, dL/dW = -X^T G X^T (G = dL/dX), not back-propagation through the iterations
(:class:`NewtonSchulzInverse`). Row sums are taken of |P| (the same for the non-negative kernel matrices).

Feature normalisation ("injective normalisation"). The paper normalises (whitens) the query-landmark
kernel features A before they meet the landmark inverse, and drops the row normaliser D^-1:

    A_hat = (A - mu) / sqrt(sigma^2 + eps),    out = A_hat W^-1 (B V),

with mu, sigma^2 the mean and variance of each landmark column of A (eps = 1e-5). The paper's method text
(its Eqs. 4-6, a diagonal whitening estimator) could not be read here: the definition above is taken from a
public reproduction that cites those equations (``BirdWithDreams/atml-project-laplacianformer``,
``src/models/laplacian_attn.py``), which estimates mu and sigma^2 over batch and tokens; here they are
estimated over the tokens of each sample and head (so an output never depends on the other images of a batch)
with the biased variance. Which axes the paper averages over, and whether it keeps a row normaliser, are
not known. ``normalization="rows"`` keeps kernel smoothing instead, ``(A W^-1 B V) / (A W^-1 B 1)``, which
approximates :func:`laplacian_attention_exact` (the error tables use it); the normaliser is clamped at 1e-6.

Not reproduced: the paper's depth-wise convolution on V and its CUDA kernels. :class:`LaplacianAttention` is
a multi-head block ``x (B, N, dim) -> (B, N, dim)`` configured by :class:`LaplacianAttentionConfig`;
:func:`laplacian_attention` is the functional form on (..., N, d) tensors.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from embodia.core.validation import validate

#: the authors' ridge: P = W + RIDGE * I is what the Newton-Schulz kernel inverts
RIDGE = 0.01
#: the authors' initial scale: X_0 = alpha P, alpha = ALPHA_NUMERATOR / (max row sum of P)^2
ALPHA_NUMERATOR = 1.8
#: eps of the feature whitening
WHITEN_EPS = 1e-5
_EPS = 1e-6

Normalization = Literal["whiten", "rows"]


def laplacian_kernel(a: torch.Tensor, b: torch.Tensor, lam: float) -> torch.Tensor:
    """exp(-||a_i - b_j||_1 / lam) for a (..., n, d), b (..., m, d) -> (..., n, m)."""
    return torch.exp(-torch.cdist(a, b, p=1) / lam)


def laplacian_attention_exact(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lam: float = 4.0
) -> torch.Tensor:
    """Reference: D^-1 K V with the full N x N Laplacian kernel (quadratic memory; for tests and errors)."""
    kernel = laplacian_kernel(q, k, lam)
    return (kernel @ v) / kernel.sum(-1, keepdim=True)


def regularised(w: torch.Tensor, ridge: float = RIDGE) -> torch.Tensor:
    """P = W + ridge * I (batched over leading dimensions)."""
    return w + ridge * torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)


def initial_scale(p: torch.Tensor) -> torch.Tensor:
    """alpha = 1.8 / (max row sum of |P|)^2 per matrix, shape (...,)."""
    return ALPHA_NUMERATOR / p.abs().sum(-1).amax(-1) ** 2


def _iterate(p: torch.Tensor, iterations: int) -> torch.Tensor:
    x = initial_scale(p)[..., None, None] * p
    for _ in range(iterations):
        x = 2 * x - x @ p @ x
    return x


class NewtonSchulzInverse(torch.autograd.Function):
    """X ~ (W + ridge I)^-1 by Newton-Schulz; backward dL/dW = -X^T G X^T (the authors' kernel's)."""

    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, iterations: int, ridge: float) -> torch.Tensor:
        with torch.no_grad():
            x = _iterate(regularised(w, ridge), iterations)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (x,) = ctx.saved_tensors
        xt = x.transpose(-1, -2)
        return -(xt @ grad @ xt), None, None


def newton_schulz_inverse(w: torch.Tensor, iterations: int, ridge: float = RIDGE) -> torch.Tensor:
    """(W + ridge I)^-1 by ``iterations`` Newton-Schulz steps from alpha P (batched); see the module docstring."""
    return NewtonSchulzInverse.apply(w, iterations, ridge)


def landmark_grid(landmarks: int) -> tuple[int, int]:
    """The s x s grid of ``landmarks`` = s^2 image landmarks (ValueError if not a square)."""
    side = math.isqrt(landmarks)
    if side * side != landmarks:
        raise ValueError(f"2-D landmark pooling needs a square number of landmarks, got {landmarks}")
    return side, side


def pool_landmarks(x: torch.Tensor, landmarks: int, grid: tuple[int, int] | None = None) -> torch.Tensor:
    """Average-pooled landmarks: (..., N, d) -> (..., m, d); m >= N returns ``x``.

    ``grid=None``: ``landmarks`` contiguous segments of the token axis (sequences). ``grid=(h, w)``: tokens
    in raster order on an h x w image grid, pooled over 2-D windows into a sqrt(m) x sqrt(m) landmark grid
    (adaptive average pooling; landmarks in raster order of that grid).
    """
    n, d = x.shape[-2:]
    if landmarks >= n:
        return x
    flat = x.reshape(-1, n, d).transpose(1, 2)  # (batch, d, N)
    if grid is None:
        pooled = F.adaptive_avg_pool1d(flat, landmarks)
    else:
        h, w = grid
        if h * w != n:
            raise ValueError(f"grid {h} x {w} does not hold {n} tokens")
        pooled = F.adaptive_avg_pool2d(flat.reshape(-1, d, h, w), landmark_grid(landmarks)).flatten(2)
    return pooled.transpose(1, 2).reshape(*x.shape[:-2], landmarks, d)


def whiten(a: torch.Tensor, eps: float = WHITEN_EPS) -> torch.Tensor:
    """(A - mu) / sqrt(sigma^2 + eps), mu and sigma^2 of each column over the token axis (-2)."""
    mu = a.mean(-2, keepdim=True)
    var = a.var(-2, unbiased=False, keepdim=True)
    return (a - mu) / torch.sqrt(var + eps)


def laplacian_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    landmarks: int = 64,
    iterations: int = 6,
    lam: float = 4.0,
    *,
    ridge: float = RIDGE,
    normalization: Normalization = "whiten",
    grid: tuple[int, int] | None = None,
) -> torch.Tensor:
    """Nystrom Laplacian attention on (..., N, d) tensors; memory O(N m), never an N x N tensor.

    ``normalization="whiten"``: the paper's A_hat W^-1 B V; ``"rows"``: kernel smoothing that approximates
    :func:`laplacian_attention_exact`. ``grid``: the (h, w) token grid of an image (2-D landmark pooling).
    """
    lq, lk = pool_landmarks(q, landmarks, grid), pool_landmarks(k, landmarks, grid)
    a = laplacian_kernel(q, lk, lam)  # N x m
    w_inv = newton_schulz_inverse(laplacian_kernel(lq, lk, lam), iterations, ridge)  # m x m
    b = laplacian_kernel(lq, k, lam)  # m x N
    if normalization == "whiten":
        return whiten(a) @ (w_inv @ (b @ v))
    if normalization != "rows":
        raise ValueError(f"unknown normalization {normalization!r}")
    ones = torch.ones(*v.shape[:-1], 1, dtype=v.dtype, device=v.device)
    bv = b @ torch.cat([v, ones], dim=-1)  # m x (d + 1): values and the row normaliser together
    out = a @ (w_inv @ bv)
    num, den = out[..., :-1], out[..., -1:]
    den = torch.where(den.abs() < _EPS, torch.full_like(den, _EPS), den)
    return num / den


@dataclass
class LaplacianAttentionConfig:
    """Settings of :class:`LaplacianAttention` (the paper's and the authors' kernels' defaults)."""

    heads: Annotated[int, Field(ge=1, le=256)] = 4
    """Number of attention heads (``dim`` must be divisible by it)."""
    landmarks: Annotated[int, Field(ge=1, le=4096)] | None = 64
    """Nystrom landmarks m (a square number for image tokens); None = the exact N x N kernel smoothing."""
    iterations: Annotated[int, Field(ge=0, le=100)] = 6
    """Newton-Schulz iterations of the landmark inverse."""
    lam: Annotated[float, Field(gt=0, le=1000)] = 4.0
    """Kernel width lambda in exp(-||q - k||_1 / lambda), on unscaled q and k."""
    ridge: Annotated[float, Field(ge=0, le=10)] = RIDGE
    """Ridge added to the landmark matrix before the inverse (the authors': 0.01)."""
    normalization: Normalization = "whiten"
    """``whiten``: the paper's normalised query-landmark features; ``rows``: kernel smoothing D^-1 K V."""


class LaplacianAttention(nn.Module):
    """Multi-head Laplacian attention block: x (B, N, dim) -> (B, N, dim).

    ``LaplacianAttention(dim, config)`` or ``LaplacianAttention(dim, heads=4, landmarks=16, ...)`` (keywords
    are fields of :class:`LaplacianAttentionConfig`). ``forward(x, grid=(h, w))`` pools landmarks in 2-D
    for image tokens in raster order; without ``grid`` along the sequence.
    """

    def __init__(self, dim: int, config: LaplacianAttentionConfig | None = None, **fields: Any) -> None:
        super().__init__()
        config = dataclasses.replace(config or LaplacianAttentionConfig(), **fields)
        self.config = validate(LaplacianAttentionConfig, config, where="LaplacianAttention config")
        if dim % self.config.heads:
            raise ValueError(f"dim {dim} is not divisible by heads {self.config.heads}")
        self.heads, self.head_dim = self.config.heads, dim // self.config.heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, grid: tuple[int, int] | None = None) -> torch.Tensor:
        b, n, dim = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        c = self.config
        if c.landmarks is None:
            out = laplacian_attention_exact(q, k, v, c.lam)
        else:
            out = laplacian_attention(
                q,
                k,
                v,
                c.landmarks,
                c.iterations,
                c.lam,
                ridge=c.ridge,
                normalization=c.normalization,
                grid=grid,
            )
        return self.proj(out.transpose(1, 2).reshape(b, n, dim))
