"""VPPO's two changes to GRPO: token perception, top-k token filtering and trajectory advantage shaping.

Followed from the authors' code (huaixuheqing/VPPO-RL: ``verl/workers/actor/dp_actor.py``,
``DataParallelPPOActor.update_policy``; ``verl/trainer/core_algos.py``, ``compute_policy_loss`` and
``average_loss``; ``examples/configs/train_vppo_7b.sh`` for k = 0.4 and ``advantage_scaling_min`` = 0.9).

Token perception of answer token y_t (paper Eq. 3). The authors estimate it from the sampled token with k3:

    d_t = log pi(y_t | perturbed image, q, y_<t) - log pi_old(y_t | real image, q, y_<t)   (clamped to +-20)
    s_t = clamp(exp(d_t) - d_t - 1, 0, 10)                                                 (:func:`k3_perception`)

:func:`token_perception` is its expectation, the exact KL( pi(. | real) || pi(. | perturbed) ) over the small
vocabulary (the tool reports it). Perturbation ``patches``: each 8x8 patch (one grid cell) is blackened with
probability 1/2 (the authors' ``perc_utils.random_patch_blackening``, here with at least one patch per image);
``blank``: the whole image black.

Filtering (paper Eq. 6): in each answer, the ceil(k * T) tokens of highest s_t (ties: earlier token first)
keep their advantage; the others get none. The clipped objective is then averaged over *all* response tokens
of the batch (the authors' ``loss_avg_mode = "token"``: the filtered tokens count in the denominator with a
zero loss), so a kept token's gradient has the same scale as under GRPO.

Shaping (paper Eq. 5, in the authors' form), over the whole mini-batch (not per group), with
S_i = mean_t s_it and a = ``scaling_min``:

    n_i = clamp((S_i - min_j S_j) / (max_j S_j - min_j S_j), 0, 1)      (w_i = 1 for all if max - min <= 1e-6)
    w_i = a + n_i * (1 - a) / (mean_j n_j + 1e-8)                       (w in [a, a + (1 - a) / mean n])
    A'_i = w_i * A_i

so the mean of w over the batch is exactly 1 and w > 0 keeps each advantage's sign.
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


def k3_perception(real_logp: torch.Tensor, perturbed_logp: torch.Tensor) -> torch.Tensor:
    """The authors' per-token perception from the sampled tokens' log-probabilities (module docstring)."""
    d = (perturbed_logp - real_logp).clamp(-20.0, 20.0)
    return (d.exp() - d - 1).clamp(0.0, 10.0)


def shape_advantages(
    advantages: torch.Tensor,
    perception: torch.Tensor,
    scaling_min: float = 0.9,
    token_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``A'_i = w_i A_i`` with ``w_i`` the batch-min-max-normalised mean perception mapped to
    ``[a, a + (1 - a) / mean n]`` (module docstring)."""
    if token_mask is None:
        token_mask = torch.ones_like(perception, dtype=torch.bool)
    m = token_mask.float()
    valid = m.sum(1) > 0
    score = (perception * m).sum(1) / m.sum(1).clamp_min(1.0)
    w = torch.ones_like(score)
    if int(valid.sum()) > 1:
        lo, hi = score[valid].min(), score[valid].max()
        if hi - lo > 1e-6:
            n = ((score[valid] - lo) / (hi - lo)).clamp(0.0, 1.0)
            w[valid] = scaling_min + n * (1.0 - scaling_min) / (n.mean() + 1e-8)
    return advantages * w


def vppo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    token_mask: torch.Tensor,
    perception: torch.Tensor,
    k: float = 0.4,
    scaling_min: float = 0.9,
    clip: float = 0.2,
) -> torch.Tensor:
    """The clipped GRPO objective with shaped advantages on the top-k perceptive tokens only, averaged over
    all response tokens (``token_mask``), the filtered ones counting as zero (module docstring)."""
    shaped = shape_advantages(advantages, perception, scaling_min, token_mask)
    keep = top_k_mask(perception, k, token_mask)
    return clipped_surrogate(logp, old_logp, shaped[:, None].expand_as(logp), token_mask, clip, keep)


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
