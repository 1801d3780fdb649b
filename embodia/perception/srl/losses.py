"""The SRL losses (shapes as in :class:`embodia.perception.srl.model.SRLOutput`; ``z`` are L2-normalised,
``tau`` a temperature, ``sg`` stop-gradient).

Feature reconstruction:  L_rec = mean_{t,n} || x_hat_{t,n} - sg(x_{t,n}) ||^2

Every contrastive loss is a supervised-contrastive (SupCon, Khosla et al., arXiv:2004.11362) average over
positives, scaled as in the authors' ``SupConLoss`` by the factor ``tau / tau_base`` (0.1 / 0.07):
    supcon_i(P, D) = - (tau / tau_base) mean_{j in P(i)} [ l_ij - log sum_{j' in D(i)} exp l_ij' ]

Slot-slot contrast across time (SlotContrast; the authors' ``Slot_Slot_Contrastive_Loss``): the B K T slot
vectors ``z(s_{t,b,k})`` of a batch are contrasted all together, ``l = z . z' / tau``; positives of (t,b,k) are
the same slot at t-1 and t+1, the denominator D holds every other slot vector except the same slot at
non-adjacent times:
    L_sc = mean_{t,b,k} supcon_{(t,b,k)}(P = {(t +- 1, b, k)}, D = all but (t' != t +- 1, b, k))

Slot regularisation (warm-up only), after the SRL authors' code: pick the ``r`` most similar slot pairs
(cosine of the last frame's slots, greedily, each slot used once); of each pair take the slot whose
attention over patches ``p_k = softmax_n(q_k . k_n)`` is closest to uniform, and penalise
    L_reg = mean_{t, chosen k} KL(p_k || U_N) = sum_n p_{k,n} (log p_{k,n} + log N)

Deblurring (the authors' ``DECConsLoss``; decoder learns from the sharp encoder), within groups of ``g``
consecutive frames (``G = g N`` patches; the authors: g = 4, so a patch's positives span frames),
``u = z(P(x_hat))`` decoder outputs, ``v = sg(z(P(x)))`` encoder features, ``P`` one bias-free linear map,
``l_ij = u_i . v_j / tau``, D(i) = all G patches:
    L_deblur = 1/2 mean_i [ supcon_i({i}) + supcon_i({j: c^enc_j = c^enc_i}) ]
with ``c^enc = argmax_k A`` the encoder-side (slot-attention) assignment.

Denoising (the authors' ``ENCConsLoss``; encoder side learns from the spatially consistent decoder),
``w = z(Q(h))`` adapter outputs through the bias-free linear ``Q``, ``l_ij = w_i . w_j / tau``, D(i) = all
but i:
    L_denoise = 1/2 mean_i [ supcon_i(topk_x(i) minus {i}) + supcon_i({j != i: c^dec_j = c^dec_i}) ]
with ``topk_x(i)`` the ``topk * g`` patches of the group most similar to ``i`` in the frozen features (the
authors count ``i`` itself among them, then drop it) and ``c^dec = argmax_k m``.

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


TAU_BASE = 0.07
"""The authors' base temperature: every contrastive loss is scaled by ``temperature / TAU_BASE``."""


def supcon_factor(temperature: float, base_temperature: float = TAU_BASE) -> float:
    """The SupCon scale ``tau / tau_base`` the authors put in front of each contrastive loss."""
    return temperature / base_temperature


def _log_prob(logits: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """``log softmax`` of ``logits`` (..., G, G) over the ``allowed`` entries of each row (None: all), 0 elsewhere."""
    if allowed is None:
        return logits.log_softmax(dim=-1)
    return logits.masked_fill(~allowed, float("-inf")).log_softmax(dim=-1).masked_fill(~allowed, 0.0)


def _positive_mean(log_prob: torch.Tensor, positive: torch.Tensor, factor: float) -> torch.Tensor:
    """Mean over anchors of ``-factor * mean_{j in positive} log_prob_j`` (``positive`` within the allowed set)."""
    pos = positive.to(log_prob.dtype)
    return -factor * ((pos * log_prob).sum(-1) / pos.sum(-1).clamp_min(1.0)).mean()


def _supcon(
    logits: torch.Tensor, positive: torch.Tensor, allowed: torch.Tensor, factor: float
) -> torch.Tensor:
    """Mean over anchors of ``-factor * mean_{j in positive} log softmax_{allowed}(logits)_j``; (..., G, G)."""
    return _positive_mean(_log_prob(logits, allowed), positive & allowed, factor)


def slot_contrastive_loss(
    slots: torch.Tensor, temperature: float = 0.1, base_temperature: float = TAU_BASE
) -> torch.Tensor:
    """SupCon over all slots of the batch at all frames; positives: the same slot at adjacent frames;
    (B, T, K, S) -> scalar (the authors' ``Slot_Slot_Contrastive_Loss`` with ``batch_contrast``)."""
    b, t, k, _ = slots.shape
    if t < 2:
        return slots.sum() * 0.0
    z = F.normalize(slots, dim=-1).permute(0, 2, 1, 3).reshape(b * k * t, -1)  # row (b, k, t)
    slot_id = torch.arange(b * k, device=slots.device).repeat_interleave(t)
    time = torch.arange(t, device=slots.device).repeat(b * k)
    same_slot = slot_id[:, None] == slot_id[None, :]
    adjacent = (time[:, None] - time[None, :]).abs() == 1
    positive = same_slot & adjacent
    allowed = ~(same_slot & ~adjacent)  # drops the anchor itself and the same slot at non-adjacent frames
    return _supcon(z @ z.T / temperature, positive, allowed, supcon_factor(temperature, base_temperature))


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
    """(B, T, N, ...) -> (B * T // g, g * N, ...): ``g`` consecutive frames' patches side by side (frame-major),
    dropping trailing frames that do not fill a group."""
    b, t, n = x.shape[:3]
    g = max(1, min(frames, t))
    t = (t // g) * g
    return x[:, :t].reshape(b * (t // g), g * n, *x.shape[3:])


def deblurring_loss(
    recon_proj: torch.Tensor,
    target_proj: torch.Tensor,
    enc_masks: torch.Tensor,
    temperature: float = 0.1,
    group_frames: int = 4,
    base_temperature: float = TAU_BASE,
) -> torch.Tensor:
    """Decoder outputs (B,T,N,C) vs detached encoder features (B,T,N,C), contrasted within groups of
    ``group_frames`` frames; positives: the same patch, and patches of any frame of the group that the
    encoder-side masks (B,T,K,N) assign to the same slot."""
    u = F.normalize(_group(recon_proj, group_frames), dim=-1)
    v = F.normalize(_group(target_proj.detach(), group_frames), dim=-1)
    labels = _group(enc_masks.detach().argmax(dim=2).unsqueeze(-1), group_frames).squeeze(-1)  # (G', gN)
    log_prob = _log_prob(u @ v.transpose(1, 2) / temperature, None)  # D(i): every patch of the group
    same = labels.unsqueeze(-1) == labels.unsqueeze(-2)
    eye = torch.eye(u.shape[1], dtype=torch.bool, device=u.device).expand_as(same)
    factor = supcon_factor(temperature, base_temperature)
    return (_positive_mean(log_prob, eye, factor) + _positive_mean(log_prob, same | eye, factor)) / 2


def denoising_loss(
    adapted_proj: torch.Tensor,
    features: torch.Tensor,
    dec_masks: torch.Tensor,
    temperature: float = 0.1,
    topk: int = 8,
    group_frames: int = 4,
    base_temperature: float = TAU_BASE,
) -> torch.Tensor:
    """Adapter outputs (B,T,N,C) contrasted among themselves within groups of ``group_frames`` frames;
    positives: each patch's ``topk * group_frames`` nearest patches of the group in the frozen features
    (B,T,N,D), itself included then dropped, and patches in the same decoder mask (B,T,K,N)."""
    w = F.normalize(_group(adapted_proj, group_frames), dim=-1)
    x = F.normalize(_group(features.detach(), group_frames), dim=-1)
    labels = _group(dec_masks.detach().argmax(dim=2).unsqueeze(-1), group_frames).squeeze(-1)
    size = w.shape[1]
    frames = size // features.shape[2]
    others = ~torch.eye(size, dtype=torch.bool, device=w.device).expand(w.shape[0], size, size)
    selfsim = x @ x.transpose(1, 2)
    kth = selfsim.topk(min(topk * frames, size), dim=-1).values[..., -1:]
    near = selfsim >= kth
    same = labels.unsqueeze(-1) == labels.unsqueeze(-2)
    log_prob = _log_prob(w @ w.transpose(1, 2) / temperature, others)
    factor = supcon_factor(temperature, base_temperature)
    return (
        _positive_mean(log_prob, near & others, factor) + _positive_mean(log_prob, same & others, factor)
    ) / 2
