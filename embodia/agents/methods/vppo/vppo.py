"""VPPO's two changes to GRPO: token perception, top-k token filtering and trajectory advantage shaping.

Token perception of answer token t (exact over the small vocabulary, not the paper's k3 sample estimate):

    s_t = KL( pi(. | real image, q, y_<t) || pi(. | perturbed image, q, y_<t) )

Perturbation ``patches``: each 8x8 patch (one grid cell) is blackened with probability 1/2 (at least one
per image), as in the paper; ``blank``: the whole image black.

Filtering: in each answer, the ceil(k * T) tokens of highest s_t (ties: earlier token first) keep their
advantage; the others get none. Shaping, within each group of G answers to one prompt, with
S_i = mean_t s_it and [b_lo, b_hi] = ``shaping``:

    w_i = b_lo + (b_hi - b_lo) * (S_i - min_j S_j) / (max_j S_j - min_j S_j)   (w_i = 1 if max = min)
    A'_i = w_i * A_i                                                            (w_i > 0: sign kept)
"""

from __future__ import annotations

import math

import torch

from embodia.agents.methods.vppo.grpo import clipped_surrogate
from embodia.agents.methods.vppo.tasks import CELL, GRID

PERTURBATIONS = ("patches", "blank")


def perturb(
    images: torch.Tensor, kind: str = "patches", generator: torch.Generator | None = None
) -> torch.Tensor:
    """The perturbed copy of ``images`` ``[B, 3, H, W]`` (see the module docstring)."""
    if kind == "blank":
        return torch.zeros_like(images)
    if kind != "patches":
        raise ValueError(f"unknown perturbation {kind!r}; known: {', '.join(PERTURBATIONS)}")
    b = len(images)
    keep = torch.rand(b, GRID * GRID, generator=generator) >= 0.5
    none = keep.all(dim=1)
    keep[none, torch.randint(GRID * GRID, (int(none.sum()),), generator=generator)] = False
    mask = keep.view(b, 1, GRID, GRID).float()
    mask = mask.repeat_interleave(CELL, dim=2).repeat_interleave(CELL, dim=3)
    return images * mask


@torch.no_grad()
def token_perception(policy, image, perturbed_image, prompt, answer_tokens) -> torch.Tensor:
    """``s [B, T]``: KL between the policy's next-token distributions with the real and the perturbed image.

    ``policy.answer_logits(images, prompts, answers) -> [B, T, V]`` (teacher-forced on ``answer_tokens``).
    """
    real = policy.answer_logits(image, prompt, answer_tokens).log_softmax(-1)
    pert = policy.answer_logits(perturbed_image, prompt, answer_tokens).log_softmax(-1)
    return (real.exp() * (real - pert)).sum(-1).clamp_min(0.0)


def top_k_mask(perception: torch.Tensor, k: float, token_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Bool ``[B, T]``: per row, the ceil(k * n_valid) valid tokens of highest perception (stable ties)."""
    if token_mask is None:
        token_mask = torch.ones_like(perception, dtype=torch.bool)
    scores = perception.masked_fill(~token_mask, -math.inf)
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    n_keep = torch.ceil(k * token_mask.sum(dim=1).float()).long()
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(perception.shape[1]).expand_as(order).contiguous())
    return (ranks < n_keep[:, None]) & token_mask


def shape_advantages(
    advantages: torch.Tensor,
    perception: torch.Tensor,
    group: int,
    shaping: tuple[float, float] = (0.5, 1.5),
    token_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``A'_i = w_i A_i`` with ``w_i`` the group-min-max-normalised mean perception (module docstring)."""
    if token_mask is None:
        token_mask = torch.ones_like(perception, dtype=torch.bool)
    m = token_mask.float()
    mean_s = ((perception * m).sum(1) / m.sum(1).clamp_min(1.0)).view(-1, group)
    lo, hi = mean_s.min(dim=1, keepdim=True).values, mean_s.max(dim=1, keepdim=True).values
    span = hi - lo
    flat = span <= 1e-12
    unit = (mean_s - lo) / torch.where(flat, torch.ones_like(span), span)
    w = torch.where(flat, torch.ones_like(unit), shaping[0] + (shaping[1] - shaping[0]) * unit)
    return advantages * w.view(-1)


def vppo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    token_mask: torch.Tensor,
    perception: torch.Tensor,
    group: int,
    k: float = 0.4,
    shaping: tuple[float, float] = (0.5, 1.5),
    clip: float = 0.2,
) -> torch.Tensor:
    """The clipped GRPO objective with shaped advantages on the top-k perceptive tokens only.

    Averaged over the kept tokens (the others carry no gradient).
    """
    shaped = shape_advantages(advantages, perception, group, shaping, token_mask)
    keep = top_k_mask(perception, k, token_mask)
    return clipped_surrogate(logp, old_logp, shaped[:, None].expand_as(logp), keep, clip)


def sparsity(perception: torch.Tensor, threshold: float = 0.05) -> dict[str, float]:
    """Share of tokens with ``s > threshold``, Gini of ``s`` (0: even, -> 1: concentrated), mean and max."""
    s = perception.flatten().double().sort().values
    n = s.numel()
    total = s.sum().item()
    gini = 0.0
    if total > 0:
        i = torch.arange(1, n + 1, dtype=torch.double)
        gini = float(((2 * i - n - 1) * s).sum() / (n * total))
    return {
        "share_above": float((s > threshold).double().mean()),
        "gini": gini,
        "mean": float(s.mean()),
        "max": float(s.max()),
    }
