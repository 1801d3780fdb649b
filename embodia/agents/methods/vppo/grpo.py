"""A small GRPO trainer (TRL is not used: not installed here, and its trainer expects a Hugging Face model).

For each prompt, G answers are sampled; reward r_i = exact match (0/1); group-normalised advantages

    A_i = (r_i - mean_j r_j) / (std_j r_j + eps)      (population std over the group of G)

and a PPO-style clipped objective per answer token, averaged over tokens,

    L = -mean_{i,t} min(rho_it A_it, clip(rho_it, 1 - e, 1 + e) A_it) + beta * KL_k3(pi || pi_ref),
    rho_it = pi(y_it | ...) / pi_old(y_it | ...),

with A_it = A_i for every token (GRPO) or VPPO's filtered, shaped advantages (:mod:`.vppo`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch

from embodia.agents.methods.vppo.model import accuracy, generate
from embodia.agents.methods.vppo.tasks import correct, make_batch


def group_advantages(rewards: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """``(r - mean) / (std + eps)`` along the last dimension (a group of answers to one prompt)."""
    mean = rewards.mean(dim=-1, keepdim=True)
    std = rewards.std(dim=-1, unbiased=False, keepdim=True)
    return (rewards - mean) / (std + eps)


def token_logprobs(model, images, prompts, samples) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log pi(y_t | prefix) [B, T], logits [B, T, V])`` of sampled answers."""
    logits = model.answer_logits(images, prompts, samples)
    logp = logits.log_softmax(-1).gather(-1, samples[..., None])[..., 0]
    return logp, logits


def clipped_surrogate(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    token_advantages: torch.Tensor,
    token_mask: torch.Tensor,
    clip: float = 0.2,
    loss_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``-sum(min(rho A, clip(rho) A) * loss_mask) / sum(token_mask)`` over tokens ``[B, T]``.

    ``loss_mask`` (default ``token_mask``) selects the tokens that carry loss; the average is always over
    all response tokens, as the authors' ``average_loss(..., mode="token")``.
    """
    ratio = (logp - old_logp).exp()
    surrogate = torch.minimum(ratio * token_advantages, ratio.clamp(1 - clip, 1 + clip) * token_advantages)
    mask = token_mask.float()
    keep = mask if loss_mask is None else loss_mask.float() * mask
    return -(surrogate * keep).sum() / mask.sum().clamp_min(1.0)


def grpo_loss(logp, old_logp, advantages, token_mask, clip: float = 0.2) -> torch.Tensor:
    """GRPO: every token of trajectory i gets ``advantages[i]``."""
    return clipped_surrogate(logp, old_logp, advantages[:, None].expand_as(logp), token_mask, clip)


@dataclass
class RLConfig:
    """Settings of :func:`train_rl`."""

    method: str = "grpo"
    """``grpo`` or ``vppo``."""
    steps: int = 60
    """RL steps (one batch of rollouts each)."""
    prompts: int = 16
    """Prompts per step."""
    group: int = 8
    """Answers sampled per prompt (G)."""
    lr: float = 1e-3
    """AdamW learning rate."""
    epochs: int = 2
    """Optimiser steps per batch of rollouts (the first has rho = 1)."""
    clip: float = 0.2
    """PPO ratio clip epsilon."""
    beta: float = 0.0
    """Weight of the k3 KL to the starting policy (0: none)."""
    top_k: float = 0.4
    """VPPO: fraction of each answer's tokens (by perception) that receive gradient (authors' script: 0.4)."""
    scaling_min: float = 0.9
    """VPPO: lower end ``a`` of the trajectory advantage scale (authors' ``advantage_scaling_min``: 0.9 in
    their training script, 0.8 as their config default)."""
    perception: str = "k3"
    """VPPO: ``k3`` (the authors' estimate from the sampled token) or ``exact`` (the KL over the vocabulary)."""
    perturbation: str = "patches"
    """VPPO: how the image is perturbed for perception (:data:`.vppo.PERTURBATIONS`)."""
    eval_every: int = 10
    """Evaluate held-out accuracy every this many steps (and at the last)."""


def train_rl(model, task: str, config: RLConfig, seed: int, eval_batch, log: Callable | None = None) -> list:
    """RL-train ``model`` in place; returns ``[(step, held-out greedy accuracy), ...]`` (step 0 included)."""
    from embodia.agents.methods.vppo.vppo import k3_perception, perturb, token_perception, vppo_loss

    if config.method not in ("grpo", "vppo"):
        raise ValueError(f"unknown method {config.method!r}")
    if config.perception not in ("k3", "exact"):
        raise ValueError(f"unknown perception estimate {config.perception!r}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    reference = copy.deepcopy(model).eval() if config.beta > 0 else None
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    curve = [(0, accuracy(model, eval_batch))]
    for step in range(config.steps):
        images, prompts, answers = make_batch(
            task, config.prompts, 20_000 + seed, start=step * config.prompts
        )
        g = config.group
        images, prompts, answers = (t.repeat_interleave(g, dim=0) for t in (images, prompts, answers))
        model.eval()
        samples = generate(model, images, prompts, generator=gen)
        rewards = correct(samples, answers)
        advantages = group_advantages(rewards.view(-1, g)).view(-1)
        mask = torch.ones_like(samples, dtype=torch.bool)
        with torch.no_grad():
            old_logp, _ = token_logprobs(model, images, prompts, samples)
            perception = None
            if config.method == "vppo":
                perturbed = perturb(images, config.perturbation, gen)
                if config.perception == "k3":
                    aug_logp, _ = token_logprobs(model, perturbed, prompts, samples)
                    perception = k3_perception(old_logp, aug_logp)
                else:
                    perception = token_perception(model, images, perturbed, prompts, samples)
            ref_logp = (
                token_logprobs(reference, images, prompts, samples)[0] if reference is not None else None
            )
        model.train()
        for _ in range(config.epochs):
            logp, _ = token_logprobs(model, images, prompts, samples)
            if perception is None:
                loss = grpo_loss(logp, old_logp, advantages, mask, config.clip)
            else:
                loss = vppo_loss(
                    logp,
                    old_logp,
                    advantages,
                    mask,
                    perception,
                    config.top_k,
                    config.scaling_min,
                    config.clip,
                )
            if ref_logp is not None:
                d = ref_logp - logp
                loss = loss + config.beta * (d.exp() - d - 1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            curve.append((step + 1, accuracy(model, eval_batch)))
        if log is not None:
            log(step + 1, config.steps, f"{config.method} reward {rewards.mean().item():.2f}")
    return curve
