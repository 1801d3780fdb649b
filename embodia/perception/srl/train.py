"""Training and evaluation of SRL: encoder pretraining (a frame autoencoder, then frozen), the training loop
with its loss schedule, mask prediction and FG-ARI / mBO evaluation.

Schedule (``SRLConfig``, the authors' MOVi-C config ``configs/srl/movi_c.yaml`` of 100k steps: the
regulariser on steps 0..10000, the synergistic losses after step 20000), as fractions of ``steps``: every
step L = w_rec L_rec + w_sc L_sc; with ``use_reg`` and ``step <= reg_end * steps``: + w_reg L_reg; with
``use_synergy`` and ``step > synergy_start * steps``: + w_deblur L_deblur + w_denoise L_denoise (the
equations are in :mod:`.losses`). Between the two the model trains on L_rec + L_sc alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from embodia.core.errors import EmbodiaError
from embodia.perception.encoders import ConvEncoder, ImageEncoder, prepare
from embodia.perception.metrics import fg_ari, mbo, upsample_labels
from embodia.perception.srl import losses
from embodia.perception.srl.model import SRLModel

VARIANTS = ("base", "reg", "srl")


class SRLConfigError(EmbodiaError):
    """An SRL configuration value is out of range."""


@dataclass
class SRLConfig:
    """Model, loss schedule and optimisation of one SRL run."""

    num_slots: int = 7
    """K: slots per frame (objects + background)."""
    slot_dim: int = 32
    """Width of slots, adapter outputs and Slot Attention keys/values."""
    iters: int = 2
    """Slot Attention iterations on frames after the first."""
    first_iters: int = 3
    """Slot Attention iterations on the first frame (slots start from the learned init)."""
    decoder_hidden: int = 64
    """Hidden width of the spatial-broadcast MLP decoder."""
    proj_dim: int = 32
    """Width of the contrast space of the deblurring and denoising losses."""
    steps: int = 500
    """Optimiser steps."""
    batch_size: int = 4
    """Clips per step."""
    clip_frames: int = 4
    """Frames per training clip (evaluation uses whole videos)."""
    lr: float = 1e-3
    """Peak Adam learning rate (linear warm-up over 5% of the steps, then cosine decay to 10%)."""
    grad_clip: float = 1.0
    """Gradient-norm clip."""
    w_rec: float = 1.0
    """Weight of the feature reconstruction loss."""
    w_sc: float = 0.25
    """Weight of the slot-slot contrastive loss across time."""
    temperature: float = 0.1
    """Temperature of all contrastive losses."""
    use_reg: bool = False
    """Add the slot regulariser during the warm-up."""
    w_reg: float = 0.1
    """Weight of the slot regulariser."""
    reg_end: float = 0.1
    """Last step of the regulariser as a fraction of ``steps`` (active while step <= reg_end * steps; the
    authors: 10 %)."""
    reg_pairs: int = 3
    """How many most-similar slot pairs the regulariser picks per video (the authors: 5 of 11 slots; here
    scaled to K = 7)."""
    use_synergy: bool = False
    """Add the deblurring and denoising losses after ``synergy_start``."""
    synergy_start: float = 0.2
    """Start of the synergistic losses as a fraction of ``steps`` (active while step > synergy_start *
    steps; the authors: 20 %)."""
    w_deblur: float = 0.1
    """Weight of the deblurring loss (decoder outputs vs encoder features)."""
    w_denoise: float = 0.1
    """Weight of the denoising loss (adapter features among themselves)."""
    topk: int = 8
    """Nearest patches per frame (in the frozen features) counted as denoising positives (the authors: 8;
    ``topk * group_frames`` per group)."""
    group_frames: int = 4
    """Consecutive frames whose patches are contrasted together in deblurring / denoising (the authors: 4)."""
    base_temperature: float = 0.07
    """tau_base of the SupCon factor tau / tau_base on the contrastive losses (the authors: 0.07)."""
    encoder_dim: int = 64
    """Width of the ConvEncoder trained here (when no encoder is given)."""
    encoder_depth: int = 2
    """Stride-2 blocks of the ConvEncoder: grid = image_size / 2**depth."""
    pretrain_steps: int = 200
    """Autoencoder steps that pretrain the ConvEncoder before it is frozen."""
    standardize: bool = False
    """Standardise the frozen features per channel (training-set mean and std) before the slot model."""
    matmul_precision: str = "float32"
    """``"bfloat16"``: the training steps' matrix products run under bfloat16 autocast (softmaxes, losses and
    evaluation stay float32 where autocast keeps them), faster on a CPU with AVX512-BF16 or AMX
    (``benchmarks/bench_srl_step.py`` measures the ratio per loss phase). ``"float32"``: everything in float32."""
    seed: int = 0
    """Seed of initialisation and clip sampling."""

    def __post_init__(self) -> None:
        if self.num_slots < 2 or self.steps < 1 or self.batch_size < 1 or self.clip_frames < 1:
            raise SRLConfigError("num_slots >= 2, steps, batch_size and clip_frames >= 1 are required")
        if not (0 <= self.reg_end <= 1 and 0 <= self.synergy_start <= 1) or self.group_frames < 1:
            raise SRLConfigError("reg_end and synergy_start are fractions in [0, 1]; group_frames >= 1")
        if self.matmul_precision not in ("float32", "bfloat16"):
            raise SRLConfigError(
                f"matmul_precision is 'float32' or 'bfloat16', not {self.matmul_precision!r}"
            )


def regulariser_active(config: SRLConfig, step: int) -> bool:
    """Whether the slot regulariser is in the loss at ``step`` (the authors: steps 0..10 % inclusive)."""
    return config.use_reg and step <= round(config.reg_end * config.steps)


def synergy_active(config: SRLConfig, step: int) -> bool:
    """Whether deblurring and denoising are in the loss at ``step`` (the authors: after 20 % of the steps)."""
    return config.use_synergy and step > round(config.synergy_start * config.steps)


def variant_config(config: SRLConfig, variant: str) -> SRLConfig:
    """``base`` (reconstruction + slot contrast), ``reg`` (+ warm-up regulariser), ``srl`` (+ deblur/denoise)."""
    if variant not in VARIANTS:
        raise SRLConfigError(f"unknown SRL variant {variant!r}; choose from {VARIANTS}")
    return replace(config, use_reg=variant in ("reg", "srl"), use_synergy=variant == "srl")


def _normalised_frames(rgb: np.ndarray, encoder: ImageEncoder) -> torch.Tensor:
    """uint8 (N, T, H, W, 3) -> (N, T, 3, S, S) encoder input."""
    n, t = rgb.shape[:2]
    x = prepare(rgb.reshape(n * t, *rgb.shape[2:]), encoder)
    return x.reshape(n, t, *x.shape[1:])


def pretrain_encoder(rgb: np.ndarray, config: SRLConfig, log: list | None = None) -> ConvEncoder:
    """Train a :class:`ConvEncoder` as a frame autoencoder on ``rgb`` (N, T, H, W, 3), then freeze it."""
    torch.manual_seed(config.seed)
    size = rgb.shape[2]
    encoder = ConvEncoder(size, config.encoder_dim, config.encoder_depth)
    layers: list[nn.Module] = []
    for i in range(config.encoder_depth):
        last = i == config.encoder_depth - 1
        layers += [nn.ConvTranspose2d(config.encoder_dim, 3 if last else config.encoder_dim, 4, 2, 1)]
        if not last:
            layers += [nn.GELU()]
    decoder = nn.Sequential(*layers)
    frames = _normalised_frames(rgb, encoder).flatten(0, 1)
    params = list(encoder.parameters()) + list(decoder.parameters())
    opt = torch.optim.Adam(params, lr=2e-3)
    gen = torch.Generator().manual_seed(config.seed)
    g = encoder.grid
    for step in range(config.pretrain_steps):
        x = frames[torch.randint(len(frames), (32,), generator=gen)]
        tokens = encoder(x).patches
        out = decoder(tokens.transpose(1, 2).reshape(len(x), -1, g, g))
        loss = nn.functional.mse_loss(out, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log is not None and (step % 50 == 0 or step == config.pretrain_steps - 1):
            log.append({"step": step, "ae_loss": loss.item()})
    encoder.requires_grad_(False).eval()
    return encoder


def build_model(encoder: ImageEncoder, config: SRLConfig) -> SRLModel:
    return SRLModel(
        feat_dim=encoder.dim,
        patches=encoder.grid**2,
        num_slots=config.num_slots,
        slot_dim=config.slot_dim,
        iters=config.iters,
        first_iters=config.first_iters,
        decoder_hidden=config.decoder_hidden,
        proj_dim=config.proj_dim,
    )


def compute_losses(
    model: SRLModel, features: torch.Tensor, config: SRLConfig, step: int
) -> dict[str, torch.Tensor]:
    """The active losses at ``step`` for a batch of encoder tokens (B, T, N, D); ``total`` is weighted."""
    out = model(features)
    terms = {
        "rec": (config.w_rec, losses.reconstruction_loss(out.recon, out.target)),
        "sc": (
            config.w_sc,
            losses.slot_contrastive_loss(out.slots, config.temperature, config.base_temperature),
        ),
    }
    if regulariser_active(config, step):
        terms["reg"] = (
            config.w_reg,
            losses.slot_regularization_loss(out.attn_patches, out.slots, config.reg_pairs),
        )
    if synergy_active(config, step):
        deblur = losses.deblurring_loss(
            model.project_feat(out.recon),
            model.project_feat(out.target).detach(),
            out.attn,
            config.temperature,
            config.group_frames,
            config.base_temperature,
        )
        denoise = losses.denoising_loss(
            model.project_adapted(out.adapted),
            out.target,
            out.dec_masks,
            config.temperature,
            config.topk,
            config.group_frames,
            config.base_temperature,
        )
        terms["deblur"], terms["denoise"] = (config.w_deblur, deblur), (config.w_denoise, denoise)
    result = {name: value for name, (_, value) in terms.items()}
    result["total"] = sum(w * v for w, v in terms.values())
    return result


def train_srl(
    rgb: np.ndarray,
    config: SRLConfig,
    encoder: ImageEncoder | None = None,
    on_checkpoint: Callable[[int, SRLModel], dict] | None = None,
    checkpoints: tuple[int, ...] = (),
) -> tuple[SRLModel, ImageEncoder, list[dict]]:
    """Train SRL on ``rgb`` (N, T, H, W, 3) uint8 videos. Without ``encoder`` a ConvEncoder is pretrained
    here (autoencoder) and frozen. After each step count in ``checkpoints`` (1-based) ``on_checkpoint(steps,
    model)`` is called (model in eval mode, e.g. to evaluate it) and what it returns is logged with
    ``"checkpoint": steps``. Returns the model, the encoder and a log (one dict per logged step)."""
    log: list[dict] = []
    if encoder is None:
        encoder = pretrain_encoder(rgb, config, log)
    features = SRLModel.encode(encoder, _normalised_frames(rgb, encoder))  # (N, T, P, D), computed once
    torch.manual_seed(config.seed)
    model = build_model(encoder, config)
    if config.standardize:
        flat = features.flatten(0, 2)
        model.feat_mean.copy_(flat.mean(0))
        model.feat_std.copy_(flat.std(0).clamp_min(1e-4))
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    warm = max(1, config.steps // 20)

    def schedule(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, config.steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    gen = torch.Generator().manual_seed(config.seed)
    n, t = features.shape[:2]
    clip = min(config.clip_frames, t)
    low_precision = config.matmul_precision == "bfloat16"
    start_time = time.perf_counter()
    for step in range(config.steps):
        idx = torch.randint(n, (min(config.batch_size, n),), generator=gen)
        start = int(torch.randint(t - clip + 1, (1,), generator=gen))
        with torch.autocast(features.device.type, torch.bfloat16, enabled=low_precision):
            terms = compute_losses(model, features[idx, start : start + clip], config, step)
        opt.zero_grad()
        terms["total"].backward()
        nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        sched.step()
        if step % 25 == 0 or step == config.steps - 1:
            entry = {"step": step, "time_s": time.perf_counter() - start_time}
            entry.update({k: v.item() for k, v in terms.items()})
            log.append(entry)
        if on_checkpoint is not None and step + 1 in checkpoints:
            log.append({"checkpoint": step + 1, **on_checkpoint(step + 1, model.eval())})
            model.train()
    return model.eval(), encoder, log


@torch.no_grad()
def _video_outputs(model: SRLModel, encoder: ImageEncoder, rgb: np.ndarray) -> list:
    """The model's :class:`SRLOutput` for each of the uint8 videos (N, T, H, W, 3), one video at a time."""
    model.eval()
    features = SRLModel.encode(encoder, _normalised_frames(rgb, encoder))
    return [model(features[i : i + 1]) for i in range(len(features))]


def _labels(outputs: list, source: str, grid: int, size: tuple[int, int]) -> np.ndarray:
    """Per-pixel slot ids (N, T, H, W): the argmax over slots of each output's decoder masks or attention."""
    labels = []
    for out in outputs:
        masks = out.dec_masks if source == "decoder" else out.attn
        labels.append(masks.argmax(dim=2).reshape(1, masks.shape[1], grid, grid))
    return upsample_labels(torch.cat(labels), size)


def predict_masks(
    model: SRLModel, encoder: ImageEncoder, rgb: np.ndarray, source: str = "decoder"
) -> np.ndarray:
    """Per-pixel slot ids (N, T, H, W) for uint8 videos (N, T, H, W, 3): the argmax over slots of the decoder
    masks (``source="decoder"``) or of the slot attention (``"attention"``), upsampled (nearest)."""
    return _labels(_video_outputs(model, encoder, rgb), source, encoder.grid, rgb.shape[2:4])


def slot_similarity(slots: torch.Tensor) -> float:
    """Mean cosine similarity between different slots of the same frame, for slots (..., K, S): 1.0 when the
    slots have collapsed onto one vector (every slot then decodes the same thing and no mask can win)."""
    unit = nn.functional.normalize(slots.float(), dim=-1)
    cos = unit @ unit.transpose(-1, -2)
    k = cos.shape[-1]
    return float(((cos.sum(dim=(-1, -2)) - cos.diagonal(dim1=-2, dim2=-1).sum(-1)) / (k * k - k)).mean())


def mask_confidence(masks: torch.Tensor) -> float:
    """Mean over patches of the winning slot's mask value, for masks (..., K, N) normalised over K: 1/K when
    the masks are uniform (the decoder mixes every slot everywhere), 1.0 when every patch has one owner."""
    return float(masks.max(dim=-2).values.mean())


def evaluate(
    model: SRLModel, encoder: ImageEncoder, rgb: np.ndarray, true_masks: np.ndarray
) -> dict[str, float]:
    """Video FG-ARI and mBO (decoder masks, as the paper reports), FG-ARI of the attention masks, and two
    diagnostics that locate a failure to segment: :func:`slot_similarity` and the decoder masks'
    :func:`mask_confidence` (averaged over the videos)."""
    outputs = _video_outputs(model, encoder, rgb)
    pred = _labels(outputs, "decoder", encoder.grid, rgb.shape[2:4])
    attn = _labels(outputs, "attention", encoder.grid, rgb.shape[2:4])
    return {
        "fg_ari": fg_ari(true_masks, pred),
        "mbo": mbo(true_masks, pred),
        "fg_ari_attn": fg_ari(true_masks, attn),
        "slot_similarity": float(np.mean([slot_similarity(o.slots) for o in outputs])),
        "mask_confidence": float(np.mean([mask_confidence(o.dec_masks) for o in outputs])),
    }
