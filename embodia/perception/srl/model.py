"""The SRL video model: frozen encoder features -> adapter -> Slot Attention per frame (slots of frame t,
carried through a transformer predictor, initialise frame t+1) -> spatial-broadcast MLP decoder that
reconstructs the encoder's features with per-slot alpha masks.

Equations (``x_t`` the encoder's patch tokens of frame t, ``N`` patches, ``K`` slots):

    h_t = MLP(LN(x_t))                                      adapter (trainable part of the encoder side)
    Slot Attention (Locatello et al. 2020, arXiv:2006.15055), i = 1..I:
        A = softmax_k( q(LN(s)) k(LN(h_t))^T / sqrt(d) )     (K, N): attention, softmax over slots
        W = A / sum_n A                                      weighted mean over patches
        s <- s + MLP(GRU(W v(LN(h_t)), s))
    s_1^0 = learned init;  s_{t+1}^0 = Predictor(s_t)         transformer block across slots
    decoder: [y_{k,n}, a_{k,n}] = MLP(s_k + p_n);  m = softmax_k(a);  x_hat_n = sum_k m_{k,n} y_{k,n}

``A`` (from the last iteration) are the encoder-side masks, ``m`` the decoder masks. The deblurring and
denoising losses see features through one bias-free linear map each (``P``: features -> proj_dim, ``Q``:
adapter output -> proj_dim; the authors map both to the slot width). The slot-regulariser
uses ``softmax_n`` of the same logits averaged over iterations (each slot's distribution over patches).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from embodia.perception.encoders import ImageEncoder


@dataclass
class SRLOutput:
    """Everything the SRL losses and the evaluation need, for a batch of clips (B videos, T frames)."""

    slots: torch.Tensor
    """(B, T, K, S) slots after Slot Attention on each frame."""
    attn: torch.Tensor
    """(B, T, K, N) encoder-side masks: the last iteration's attention, softmax over slots."""
    attn_patches: torch.Tensor
    """(B, T, K, N) each slot's attention distribution over patches (softmax over N), averaged over the
    iterations: the input of the slot regulariser."""
    dec_masks: torch.Tensor
    """(B, T, K, N) decoder alpha masks, softmax over slots."""
    recon: torch.Tensor
    """(B, T, N, D) reconstructed encoder features."""
    target: torch.Tensor
    """(B, T, N, D) the encoder's features, standardised per channel (no gradient)."""
    adapted: torch.Tensor
    """(B, T, N, S) adapter output: the features Slot Attention groups."""


def mlp(inp: int, hidden: int, out: int, layers: int = 2) -> nn.Sequential:
    mods: list[nn.Module] = []
    width = inp
    for _ in range(layers - 1):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, out))
    return nn.Sequential(*mods)


def contrast_projector(inp: int, out: int) -> nn.Linear:
    """The projector of a synergistic loss: one linear map without bias (the authors' ``Projector``)."""
    return nn.Linear(inp, out, bias=False)


class SlotAttention(nn.Module):
    """Slot Attention (Locatello et al. 2020) with a GRU update and a residual MLP."""

    def __init__(self, inp_dim: int, slot_dim: int, iters: int = 2, eps: float = 1e-8) -> None:
        super().__init__()
        self.iters, self.eps, self.scale = int(iters), eps, slot_dim**-0.5
        self.norm_in, self.norm_slots, self.norm_mlp = (
            nn.LayerNorm(inp_dim),
            nn.LayerNorm(slot_dim),
            nn.LayerNorm(slot_dim),
        )
        self.to_k = nn.Linear(inp_dim, slot_dim, bias=False)
        self.to_v = nn.Linear(inp_dim, slot_dim, bias=False)
        self.to_q = nn.Linear(slot_dim, slot_dim, bias=False)
        self.gru = nn.GRUCell(slot_dim, slot_dim)
        self.mlp = mlp(slot_dim, 2 * slot_dim, slot_dim)

    def forward(
        self, slots: torch.Tensor, inputs: torch.Tensor, iters: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """slots (B, K, S), inputs (B, N, D) -> (slots, attn softmax over slots (B, K, N), attn softmax over
        patches averaged over iterations (B, K, N))."""
        x = self.norm_in(inputs)
        keys, values = self.to_k(x), self.to_v(x)
        iters = self.iters if iters is None else int(iters)
        attn = per_patch = None
        over_patches = torch.zeros(())
        for _ in range(iters):
            q = self.to_q(self.norm_slots(slots))
            logits = torch.einsum("bkd,bnd->bkn", q, keys) * self.scale
            attn = logits.softmax(dim=1)
            over_patches = over_patches + logits.softmax(dim=2)
            per_patch = (attn + self.eps) / (attn + self.eps).sum(dim=-1, keepdim=True)
            updates = torch.einsum("bkn,bnd->bkd", per_patch, values)
            b, k, s = slots.shape
            slots = self.gru(updates.reshape(b * k, s), slots.reshape(b * k, s)).reshape(b, k, s)
            slots = slots + self.mlp(self.norm_mlp(slots))
        assert attn is not None
        return slots, attn, over_patches / iters


class Predictor(nn.Module):
    """One transformer block over the K slots of a frame: predicts the next frame's initial slots."""

    def __init__(self, slot_dim: int, heads: int = 4) -> None:
        super().__init__()
        self.block = nn.TransformerEncoderLayer(
            slot_dim, heads, dim_feedforward=2 * slot_dim, dropout=0.0, batch_first=True, norm_first=True
        )

    def forward(self, slots: torch.Tensor) -> torch.Tensor:
        return self.block(slots)


class BroadcastDecoder(nn.Module):
    """Spatial-broadcast MLP decoder: every slot + a learned position embedding per patch -> a feature and
    an alpha logit per patch; alphas are normalised over slots (masks) and mix the features."""

    def __init__(self, slot_dim: int, feat_dim: int, patches: int, hidden: int = 128) -> None:
        super().__init__()
        # initialised as the authors' MLPDecoder (srl/modules/decoders.py): std slot_dim^-1/2, so the
        # position is as large as a slot's content from the start
        self.position = nn.Parameter(torch.randn(1, 1, patches, slot_dim) * slot_dim**-0.5)
        self.net = mlp(slot_dim, hidden, feat_dim + 1, layers=3)

    def forward(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """slots (B, K, S) -> (recon (B, N, D), masks (B, K, N))."""
        out = self.net(slots.unsqueeze(2) + self.position)  # (B, K, N, D+1)
        masks = out[..., -1].softmax(dim=1)
        recon = (masks.unsqueeze(-1) * out[..., :-1]).sum(dim=1)
        return recon, masks


class SRLModel(nn.Module):
    """Slot model over any :class:`ImageEncoder`'s patch tokens (the encoder itself is not a submodule: it
    is frozen and its features may be precomputed, see :meth:`encode`)."""

    def __init__(
        self,
        feat_dim: int,
        patches: int,
        num_slots: int = 6,
        slot_dim: int = 64,
        iters: int = 2,
        first_iters: int = 3,
        decoder_hidden: int = 128,
        proj_dim: int = 64,
    ) -> None:
        super().__init__()
        self.num_slots, self.first_iters = int(num_slots), int(first_iters)
        self.init_slots = nn.Parameter(torch.randn(1, num_slots, slot_dim) * slot_dim**-0.5)
        self.adapter = nn.Sequential(nn.LayerNorm(feat_dim), mlp(feat_dim, 2 * feat_dim, slot_dim))
        self.slot_attention = SlotAttention(slot_dim, slot_dim, iters)
        self.predictor = Predictor(slot_dim)
        self.decoder = BroadcastDecoder(slot_dim, feat_dim, patches, decoder_hidden)
        # Projectors of the synergistic losses, each one bias-free linear map as the authors' ``Projector``
        # (srl/modules/projector.py): decoder output / encoder features -> contrast space (deblurring),
        # adapter output -> contrast space (denoising). A linear map cannot absorb the contrast objective
        # the way a non-linear head could.
        self.project_feat = contrast_projector(feat_dim, proj_dim)
        self.project_adapted = contrast_projector(slot_dim, proj_dim)
        # Per-channel standardisation of the frozen features (set from the training set, see train_srl).
        self.register_buffer("feat_mean", torch.zeros(feat_dim))
        self.register_buffer("feat_std", torch.ones(feat_dim))

    @staticmethod
    @torch.no_grad()
    def encode(encoder: ImageEncoder, frames: torch.Tensor, chunk: int = 64) -> torch.Tensor:
        """Normalised frames (B, T, 3, S, S) -> the frozen encoder's patch tokens (B, T, N, D)."""
        b, t = frames.shape[:2]
        flat = frames.reshape(b * t, *frames.shape[2:])
        out = torch.cat([encoder(flat[i : i + chunk]).patches for i in range(0, len(flat), chunk)])
        return out.reshape(b, t, *out.shape[1:])

    def forward(self, features: torch.Tensor) -> SRLOutput:
        """Encoder tokens (B, T, N, D) -> :class:`SRLOutput`."""
        features = ((features - self.feat_mean) / self.feat_std).detach()
        b, t, n, _ = features.shape
        adapted = self.adapter(features)
        slots = self.init_slots.expand(b, -1, -1)
        all_slots, attns, over_patches = [], [], []
        for step in range(t):
            slots, attn, reg = self.slot_attention(
                slots, adapted[:, step], self.first_iters if step == 0 else None
            )
            all_slots.append(slots)
            attns.append(attn)
            over_patches.append(reg)
            slots = self.predictor(slots)
        slots_bt = torch.stack(all_slots, dim=1)
        recon, masks = self.decoder(slots_bt.flatten(0, 1))
        return SRLOutput(
            slots=slots_bt,
            attn=torch.stack(attns, dim=1),
            attn_patches=torch.stack(over_patches, dim=1),
            dec_masks=masks.reshape(b, t, self.num_slots, n),
            recon=recon.reshape(b, t, n, -1),
            target=features,
            adapted=adapted,
        )
