"""``parallel_decode``: unmask a masked-diffusion LM's answer over several forward passes.

Each pass runs the model on ``prompt | answer`` (still-masked answer positions hold [MASK]), takes per
masked position i the prediction yhat_i = argmax_v p_i(v) ([MASK] excluded) and its confidence
c_i = max_v p_i(v), and unmasks a set A of positions (never empty):

    one          A = {argmax_i c_i}                                   (one token per pass: the baseline)
    threshold    A = {i : c_i >= tau}, or {argmax_i c_i} when empty  (confidence-threshold decoding)
    filter       A = {i : f_phi(features_i) >= rho}, or {argmax_i c_i} when empty   (Learn2PD)
    filter+eotp  as filter, and End-of-Text Prediction: once an [EOT] prediction at position j is
                 accepted, every masked position after j becomes [EOT] in the same pass.

With ``block`` (LLaDA's semi-autoregressive decoding, which the paper evaluates with: generation length
256-1024 in blocks of 32), only the masked positions of the leftmost block that still has any are
candidates for A, so every block costs at least one pass; the confidence fallback, threshold and filter
act within that block, while EoTP fills [EOT] over all later blocks — which is why it saves passes on a
long padding tail. ``block=None`` is one block over the whole answer. As in LLaDA's ``generate.py``
(ML-GSAI/LLaDA: confidences past the current block set to -inf), blocks are decoded left to right;
Learn2PD's own code was not in the sources read here, so the block semantics follow LLaDA's.

Decoding ends when no position is masked. ``one`` needs exactly L passes for an answer of L positions;
the others at most L. Features of f_phi (:func:`features`): confidence, entropy, top-2 margin, relative
position, fraction of the answer already unmasked, and whether the prediction is [EOT].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from embodia.agents.methods.learn2pd.tasks import VOCAB

STRATEGIES = ("one", "threshold", "filter", "filter+eotp")
N_FEATURES = 6


@dataclass
class DecodeResult:
    """Decoded answers ``[B, L]`` and forward passes per row ``[B]``."""

    tokens: torch.Tensor
    passes: torch.Tensor


def features(probs: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Per-position features ``[B, L, N_FEATURES]`` from answer probabilities ``[B, L, V]``."""
    top2 = probs.topk(2, dim=-1).values
    conf = top2[..., 0]
    entropy = -(probs * probs.clamp_min(1e-12).log()).sum(-1)
    b, n = masked.shape
    pos = (torch.arange(n, dtype=probs.dtype) / max(n - 1, 1)).expand(b, n)
    done = (1.0 - masked.float().mean(dim=1, keepdim=True)).expand(b, n)
    is_eot = (probs.argmax(-1) == VOCAB.eot).float()
    return torch.stack([conf, entropy, top2[..., 0] - top2[..., 1], pos, done, is_eot], dim=-1)


@torch.no_grad()
def parallel_decode(
    model: Callable[[torch.Tensor], torch.Tensor],
    prompt: torch.Tensor,
    answer_len: int,
    strategy: str = "one",
    threshold: float = 0.9,
    accept_filter: Callable[[torch.Tensor], torch.Tensor] | None = None,
    filter_threshold: float = 0.9,
    on_step: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], None] | None = None,
    block: int | None = None,
) -> DecodeResult:
    """Decode ``answer_len`` tokens after ``prompt`` (``[P]`` or ``[B, P]``) with ``strategy``.

    ``accept_filter`` maps features ``[..., N_FEATURES]`` to acceptance probabilities (needed by the
    filter strategies), accepted where at least ``filter_threshold`` (rho).
    ``on_step(rows, feats, preds, candidates)`` sees every pass (trace collection); ``candidates`` are the
    masked positions of the current block. ``block``: block length of semi-autoregressive decoding.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if strategy.startswith("filter") and accept_filter is None:
        raise ValueError(f"strategy {strategy!r} needs an accept_filter")
    single = prompt.dim() == 1
    prompt = prompt[None] if single else prompt
    b, p = prompt.shape
    answer = torch.full((b, answer_len), VOCAB.mask, dtype=torch.long)
    passes = torch.zeros(b, dtype=torch.long)
    block_of = torch.arange(answer_len) // (block or answer_len)
    while True:
        masked = answer == VOCAB.mask
        rows = masked.any(dim=1).nonzero().squeeze(1)
        if rows.numel() == 0:
            break
        passes[rows] += 1
        m = masked[rows]
        logits = model(torch.cat([prompt[rows], answer[rows]], dim=1))[:, p:].clone()
        logits[..., VOCAB.mask] = float("-inf")
        probs = logits.softmax(-1)
        conf, pred = probs.max(-1)
        feats = features(probs, m)
        current = torch.where(m, block_of, answer_len).min(dim=1, keepdim=True).values
        m = m & (block_of[None] == current)
        if on_step is not None:
            on_step(rows, feats, pred, m)
        best = torch.where(m, conf, torch.tensor(-1.0)).argmax(dim=1)
        accept = torch.zeros_like(m)
        if strategy == "threshold":
            accept = m & (conf >= threshold)
        elif strategy.startswith("filter"):
            accept = m & (accept_filter(feats) >= filter_threshold)
        accept[torch.arange(len(rows)), best] = True
        new = answer[rows]
        new[accept] = pred[accept]
        if strategy == "filter+eotp":
            eot = accept & (pred == VOCAB.eot)
            has = eot.any(dim=1)
            first = torch.where(eot, torch.arange(answer_len), answer_len).min(dim=1).values
            after = (torch.arange(answer_len)[None] > first[:, None]) & has[:, None] & (new == VOCAB.mask)
            new[after] = VOCAB.eot
        answer[rows] = new
    if single:
        return DecodeResult(answer[0], passes[0])
    return DecodeResult(answer, passes)
