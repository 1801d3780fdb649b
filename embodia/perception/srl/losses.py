"""The SRL losses (shapes as in :class:`embodia.perception.srl.model.SRLOutput`; ``z`` are L2-normalised,
``tau`` a temperature, ``sg`` stop-gradient).

Feature reconstruction:  L_rec = mean_{t,n} || x_hat_{t,n} - sg(x_{t,n}) ||^2

Slot-slot contrast across time (SlotContrast): anchors ``z(s_{t,k})`` of all videos, positive the same
slot of the same video at t+1, negatives every other slot of every video at t+1 (InfoNCE, both directions):
    L_sc = - mean_{t,b,k} log softmax_{(b',k')}( z(s_{t,b,k}) . z(s_{t+1,b',k'}) / tau )[(b,k)]

Slot regularisation (warm-up only), after the SRL authors' code: pick the ``r`` most similar slot pairs
(cosine of the last frame's slots, greedily, each slot used once); of each pair take the slot whose
attention over patches ``p_k = softmax_n(q_k . k_n)`` is closest to uniform, and penalise
    L_reg = mean_{t, chosen k} KL(p_k || U_N) = sum_n p_{k,n} (log p_{k,n} + log N)

Deblurring (decoder learns from the sharp encoder), within groups of ``g`` frames (``G = g N`` patches),
``u = z(P(x_hat))`` decoder outputs, ``v = sg(z(P(x)))`` encoder features, ``l_ij = u_i . v_j / tau``:
    L_deblur = 1/2 [ -log softmax_j(l_i)[i]  -  mean_{j: c^enc_j = c^enc_i} log softmax_j(l_i)[j] ]
with ``c^enc = argmax_k A`` the encoder-side (slot-attention) assignment.

Denoising (encoder side learns from the spatially consistent decoder), ``w = z(Q(h))`` adapter outputs,
``l_ij = w_i . w_j / tau`` without ``j = i``:
    L_denoise = 1/2 [ - mean_{j in topk_x(i)} log softmax_j(l_i)[j] - mean_{j: c^dec_j = c^dec_i} log softmax_j(l_i)[j] ]
with ``topk_x(i)`` the patches most similar to ``i`` in the frozen features and ``c^dec = argmax_k m``.

Note: ../shared/PAPERS.md words the regulariser as "the slot closest to uniform is pushed away from
uniform"; the authors' released code (hynnsk/SRL, ``Slot_Redundancy_Loss``) *minimises* the KL to uniform
of that slot (it releases the redundant duplicate). We follow the code.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F


def reconstruction_loss(recon: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error between reconstructed and (detached) encoder features."""
    return F.mse_loss(recon, target.detach())


def slot_contrastive_loss(slots: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """InfoNCE across consecutive frames: slot k of video b at t vs at t+1; (B, T, K, S) -> scalar."""
    b, t, k, _ = slots.shape
    if t < 2:
        return slots.sum() * 0.0
    z = F.normalize(slots, dim=-1)
    labels = torch.arange(b * k, device=slots.device)
    total = slots.new_zeros(())
    for step in range(t - 1):
        a, c = z[:, step].reshape(b * k, -1), z[:, step + 1].reshape(b * k, -1)
        logits = a @ c.T / temperature
        total = total + (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
    return total / (t - 1)


def choose_redundant_slots(attn_patches: torch.Tensor, slots: torch.Tensor, pairs: int) -> torch.Tensor:
    """(B, K) bool: the slot closest to uniform of each of the ``pairs`` most similar slot pairs."""
    b, _, k, n = attn_patches.shape
    last = F.normalize(slots[:, -1], dim=-1)
    sim = last @ last.transpose(1, 2)
    kl = (attn_patches * (attn_patches.clamp_min(1e-8).log() + math.log(n))).sum(-1).mean(1)  # (B, K)
    chosen = torch.zeros(b, k, dtype=torch.bool, device=slots.device)
    upper = torch.triu(torch.ones(k, k, dtype=torch.bool, device=slots.device), diagonal=1)
    for _ in range(min(pairs, k - 1)):
        ok = upper & ~chosen[:, :, None] & ~chosen[:, None, :]
        if not ok.any():
            break
        flat = sim.masked_fill(~ok, float("-inf")).flatten(1).argmax(1)
        i, j = flat // k, flat % k
        rows = torch.arange(b, device=slots.device)
        pick = torch.where(kl[rows, i] <= kl[rows, j], i, j)
        valid = ok.flatten(1).any(1)
        chosen[rows[valid], pick[valid]] = True
    return chosen


def slot_regularization_loss(attn_patches: torch.Tensor, slots: torch.Tensor, pairs: int = 2) -> torch.Tensor:
    """KL(p_k || uniform) of the redundant slot of each of the most similar pairs; (B,T,K,N),(B,T,K,S)."""
    n = attn_patches.shape[-1]
    with torch.no_grad():
        chosen = choose_redundant_slots(attn_patches.detach(), slots.detach(), pairs)  # (B, K)
    kl = (attn_patches * (attn_patches.clamp_min(1e-8).log() + math.log(n))).sum(-1)  # (B, T, K)
    weight = chosen[:, None, :].float()
    return (kl * weight).sum() / (weight.sum() * kl.shape[1]).clamp_min(1.0)


def _group(x: torch.Tensor, frames: int) -> torch.Tensor:
    """(B, T, N, ...) -> (B * T // g, g * N, ...), dropping trailing frames that do not fill a group."""
    b, t, n = x.shape[:3]
    g = max(1, min(frames, t))
    t = (t // g) * g
    return x[:, :t].reshape(b * (t // g), g * n, *x.shape[3:])


def _mean_log_prob(log_prob: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    pos = positive.float()
    return -((pos * log_prob).sum(-1) / pos.sum(-1).clamp_min(1.0)).mean()


def deblurring_loss(
    recon_proj: torch.Tensor,
    target_proj: torch.Tensor,
    enc_masks: torch.Tensor,
    temperature: float = 0.1,
    group_frames: int = 2,
) -> torch.Tensor:
    """Decoder outputs (B,T,N,C) vs detached encoder features (B,T,N,C); positives: the same patch and
    patches the encoder-side masks (B,T,K,N) assign to the same slot."""
    u = F.normalize(_group(recon_proj, group_frames), dim=-1)
    v = F.normalize(_group(target_proj.detach(), group_frames), dim=-1)
    labels = _group(enc_masks.detach().argmax(dim=2).unsqueeze(-1), group_frames).squeeze(-1)  # (G', gN)
    log_prob = (u @ v.transpose(1, 2) / temperature).log_softmax(dim=-1)
    same = labels.unsqueeze(-1) == labels.unsqueeze(-2)
    eye = torch.eye(u.shape[1], dtype=torch.bool, device=u.device).expand_as(same)
    return (_mean_log_prob(log_prob, eye) + _mean_log_prob(log_prob, same | eye)) / 2


def denoising_loss(
    adapted_proj: torch.Tensor,
    features: torch.Tensor,
    dec_masks: torch.Tensor,
    temperature: float = 0.1,
    topk: int = 4,
    group_frames: int = 2,
) -> torch.Tensor:
    """Adapter outputs (B,T,N,C) contrasted among themselves; positives: each patch's ``topk`` nearest
    patches in the frozen features (B,T,N,D), and patches in the same decoder mask (B,T,K,N)."""
    w = F.normalize(_group(adapted_proj, group_frames), dim=-1)
    x = F.normalize(_group(features.detach(), group_frames), dim=-1)
    labels = _group(dec_masks.detach().argmax(dim=2).unsqueeze(-1), group_frames).squeeze(-1)
    g = w.shape[1]
    eye = torch.eye(g, dtype=torch.bool, device=w.device)
    logits = (w @ w.transpose(1, 2) / temperature).masked_fill(eye, float("-inf"))
    log_prob = logits.log_softmax(dim=-1).masked_fill(eye, 0.0)
    selfsim = (x @ x.transpose(1, 2)).masked_fill(eye, float("-inf"))
    near = torch.zeros_like(eye).expand(w.shape[0], g, g).clone()
    near.scatter_(-1, selfsim.topk(min(topk, g - 1), dim=-1).indices, True)
    same = (labels.unsqueeze(-1) == labels.unsqueeze(-2)) & ~eye
    return (_mean_log_prob(log_prob, near) + _mean_log_prob(log_prob, same)) / 2
