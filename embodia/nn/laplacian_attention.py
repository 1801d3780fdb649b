"""Laplacian-kernel attention with a Nystrom approximation and a Newton-Schulz landmark inverse.

Paper: Z. Feng, S. Lian, C. Wang, M. Zhang, T. Tan, R. Xu, W. Meng and X. Zhang, "LaplacianFormer:
Rethinking Linear Attention with Laplacian Kernel", ICLR 2026, arXiv:2604.20368.

Softmax similarity is replaced by the Laplacian kernel on the L1 distance,

    k(q, k) = exp(-||q - k||_1 / lambda)                       (lambda ~ 4)

and attention is kernel smoothing with a row normaliser,

    Attn(Q, K, V) = D^-1 K V,    K_ij = k(q_i, k_j),    D = diag(K 1).

:func:`laplacian_attention_exact` computes this with the full N x N kernel (the reference for tests).

Nystrom approximation. Queries and keys are average-pooled into m contiguous segments, giving landmarks
L_q, L_k (m x d). With A = K(Q, L_k) (N x m), W = K(L_q, L_k) (m x m), B = K(L_q, K) (m x N):

    K ~ A W^+ B,    Attn ~ (A (W^+ (B V))) / (A (W^+ (B 1)))

evaluated right to left, so nothing larger than N x m is ever formed (L1 distances by ``torch.cdist(p=1)``).
With m = N the pooling is the identity and the approximation is exact (for invertible W).

Newton-Schulz inverse (no SVD, no explicit inverse): X_{t+1} = X_t (2I - W X_t) from

    X_0 = W^T / (||W||_1 ||W||_inf)

(the classical initialisation that makes ||I - W X_0||_2 < 1 for nonsingular W, so the iteration converges
quadratically to W^-1; for singular W it tends to the pseudo-inverse). ``iterations`` steps are run.

Injective feature map. The paper argues that a low-rank (Nystrom) kernel loses fine-grained token
information and adds a provably injective feature map before the kernel. What is implemented here is a
simpler stand-in, stated honestly: phi(u_i) = W_phi u_i + gamma * s(i), a learned square linear map
(identity at initialisation, so invertible until trained far) plus a learned per-head scale of a fixed
sinusoidal encoding s(i) of the token position, applied to queries and keys. It makes identical tokens at
different positions attend differently (the property the tests check); it is not the paper's construction and carries no
injectivity proof beyond W_phi being invertible for a fixed position.

:class:`LaplacianAttention` is a multi-head block ``x (B, N, dim) -> (B, N, dim)`` like a standard
attention block; queries and keys are scaled by head_dim^-1/2 before the kernel (as softmax attention
scales its logits). :func:`laplacian_attention` is the functional form on (..., N, d) tensors.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

_EPS = 1e-6


def laplacian_kernel(a: torch.Tensor, b: torch.Tensor, lam: float) -> torch.Tensor:
    """exp(-||a_i - b_j||_1 / lam) for a (..., n, d), b (..., m, d) -> (..., n, m)."""
    return torch.exp(-torch.cdist(a, b, p=1) / lam)


def laplacian_attention_exact(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lam: float = 4.0
) -> torch.Tensor:
    """Reference: D^-1 K V with the full N x N Laplacian kernel (quadratic memory; for tests and errors)."""
    kernel = laplacian_kernel(q, k, lam)
    return (kernel @ v) / kernel.sum(-1, keepdim=True)


def newton_schulz_inverse(w: torch.Tensor, iterations: int) -> torch.Tensor:
    """X <- X (2I - W X) from X0 = W^T / (||W||_1 ||W||_inf), batched over leading dimensions."""
    norm_1 = w.abs().sum(-2).amax(-1)  # max column sum
    norm_inf = w.abs().sum(-1).amax(-1)  # max row sum
    x = w.transpose(-1, -2) / (norm_1 * norm_inf)[..., None, None]
    eye2 = 2 * torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)
    for _ in range(iterations):
        x = x @ (eye2 - w @ x)
    return x


def pool_landmarks(x: torch.Tensor, landmarks: int) -> torch.Tensor:
    """Average of ``landmarks`` contiguous segments of the token axis: (..., N, d) -> (..., m, d)."""
    n, d = x.shape[-2:]
    if landmarks >= n:
        return x
    flat = x.reshape(-1, n, d).transpose(1, 2)
    pooled = F.adaptive_avg_pool1d(flat, landmarks).transpose(1, 2)
    return pooled.reshape(*x.shape[:-2], landmarks, d)


def laplacian_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    landmarks: int = 64,
    iterations: int = 6,
    lam: float = 4.0,
) -> torch.Tensor:
    """Nystrom Laplacian attention on (..., N, d) tensors; memory O(N m), never an N x N tensor."""
    lq, lk = pool_landmarks(q, landmarks), pool_landmarks(k, landmarks)
    a = laplacian_kernel(q, lk, lam)  # N x m
    w_inv = newton_schulz_inverse(laplacian_kernel(lq, lk, lam), iterations)  # m x m
    b = laplacian_kernel(lq, k, lam)  # m x N
    ones = torch.ones(*v.shape[:-1], 1, dtype=v.dtype, device=v.device)
    bv = b @ torch.cat([v, ones], dim=-1)  # m x (d + 1): values and the row normaliser together
    out = a @ (w_inv @ bv)
    num, den = out[..., :-1], out[..., -1:]
    den = torch.where(den.abs() < _EPS, torch.full_like(den, _EPS), den)
    return num / den


def sinusoidal_positions(n: int, dim: int, device: torch.device | None = None) -> torch.Tensor:
    """The fixed sinusoidal encoding s(i) of positions 0..n-1: (n, dim)."""
    pos = torch.arange(n, dtype=torch.float32, device=device)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32, device=device) * (-math.log(10000.0) / dim))
    enc = torch.zeros(n, dim, device=device)
    enc[:, 0::2] = torch.sin(pos * freq)
    enc[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return enc


class InjectiveFeatureMap(nn.Module):
    """phi(u_i) = W_phi u_i + gamma_h * s(i): a learned linear map (identity at start) plus a positional term.

    Applied to queries and keys only: two copies of a token among other tokens get different attention rows
    (so different outputs); values are left as they are.
    """

    def __init__(self, head_dim: int, heads: int, position_scale: float = 0.1) -> None:
        super().__init__()
        self.linear = nn.Linear(head_dim, head_dim, bias=False)
        nn.init.eye_(self.linear.weight)
        self.gamma = nn.Parameter(torch.full((heads, 1, 1), float(position_scale)))

    def forward(self, u: torch.Tensor) -> torch.Tensor:  # (B, H, N, d)
        n, d = u.shape[-2:]
        return self.linear(u) + self.gamma * sinusoidal_positions(n, d, u.device).to(u.dtype)


class LaplacianAttention(nn.Module):
    """Multi-head Laplacian attention block: x (B, N, dim) -> (B, N, dim).

    ``landmarks=None`` uses the exact kernel (quadratic; for small N and tests).
    """

    def __init__(
        self,
        dim: int,
        heads: int = 4,
        landmarks: int | None = 64,
        iterations: int = 6,
        lam: float = 4.0,
        feature_map: bool = True,
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads, self.head_dim = heads, dim // heads
        self.landmarks, self.iterations, self.lam = landmarks, iterations, lam
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.feature_map = InjectiveFeatureMap(self.head_dim, heads) if feature_map else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, dim = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scale = self.head_dim**-0.5
        q, k = q * scale, k * scale
        if self.feature_map is not None:
            q, k = self.feature_map(q), self.feature_map(k)
        if self.landmarks is None:
            out = laplacian_attention_exact(q, k, v, self.lam)
        else:
            out = laplacian_attention(q, k, v, self.landmarks, self.iterations, self.lam)
        return self.proj(out.transpose(1, 2).reshape(b, n, dim))
