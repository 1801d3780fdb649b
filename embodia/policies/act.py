"""ACT: Action Chunking with Transformers, a conditional VAE over chunks of actions.

Zhao, Kumar, Levine, Finn, "Learning Fine-Grained Bimanual Manipulation with Low-Cost Hardware", RSS 2023,
arXiv:2304.13705. The policy predicts the next ``k`` actions ``a_{t:t+k}`` from the observation ``o_t``
(state values and / or camera images), as the decoder of a conditional VAE with a latent ``z``:

- **CVAE encoder** (training only): a transformer encoder over ``[CLS, W_s s_t, W_a a_t, ..., W_a a_{t+k-1}]``
  with fixed sinusoidal positions; padded actions (a chunk that runs past the episode's end, the reference
  code's ``is_pad``) are masked out of its attention. Its CLS output gives ``q(z | a, s) = N(mu, diag(sigma^2))``
  through one linear layer (``[mu, log sigma^2]``); ``z = mu + sigma * eps``.
- **Decoder** (the policy): a transformer encoder over ``[W_z z, W_s s_t, image tokens of every camera]``
  (image tokens: a shared backbone's feature map, projected to the model width, with 2-D sinusoidal
  positions; the two 1-D tokens have learned positions; positions are added to queries and keys in every
  layer, as DETR), then a transformer decoder whose ``k`` learned queries cross-attend to it and a linear
  head: ``a_hat_{t:t+k} = pi(o_t, z)``. At inference ``z = 0`` (the prior's mean).

The loss, with ``m_j = 1`` for steps inside the episode (``~is_pad``) and actions standardised with the
dataset's mean and standard deviation (as the reference code):

    L_rec = (1 / (k A)) sum_j m_j || a_hat_{t+j} - a_{t+j} ||_1              (mean over all entries, as the reference)
    L_KL  = E_batch[ sum_i  -1/2 (1 + log sigma_i^2 - mu_i^2 - sigma_i^2) ]   = KL( q(z | a, s) || N(0, I) )
    L     = L_rec + beta * L_KL,   beta = kl_weight (10 in the paper)

Execution: the whole chunk, re-planned after ``execute_steps``, or *temporal ensembling* (the paper's
section IV): the policy is queried every step and the action executed at step ``t`` is the weighted mean of
every prediction made for ``t`` by the chunks of steps ``t-k+1 .. t``, ``a_t = sum_i w_i A_t[i] / sum_i w_i``
with ``w_i = exp(-m i)``, ``i = 0`` the oldest prediction, ``m = 0.01``
(:class:`embodia.policies.act_policy.TemporalEnsembler`).

Images: the default backbone is :class:`ResNetEncoder`, a small ResNet-style CNN trained end to end (the
reference uses an ImageNet-pretrained ResNet-18, which an offline 2-core machine does not have); any image
encoder folder (:mod:`embodia.perception.encoder_io`, e.g. a teacher or VER) or ``hf:FOLDER`` can replace it,
as for pixel BC. Windows: every step of an episode can start a chunk, as in the reference (the chunk is
padded past the end and masked); :meth:`ACT.sample` builds the chunks from the sampler's resident actions.
The policy folder is ``"act"`` (:mod:`embodia.policies.act_policy`), exported to ONNX as one graph.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import torch
from pydantic import Field
from torch import nn

from embodia.core.paths import PathArgument
from embodia.perception.encoder_io import register_encoder_kind
from embodia.perception.encoders import EncoderOutput
from embodia.policies.learner import ChunkedPolicyConfig, OfflineLearner
from embodia.policies.networks import ObsNormalizer

if TYPE_CHECKING:
    from embodia.data.sampling import WindowSampler

register_encoder_kind("act-resnet", "embodia.policies.act:ResNetEncoder")


@dataclass
class ACTConfig(ChunkedPolicyConfig):
    """Hyperparameters of ACT. Defaults: the paper's hyperparameter table (its appendix) and the authors' code
    (``tonyzhaozh/act``: ``imitate_episodes.py``, ``detr/``), as LeRobot's ``ACTConfig`` also reproduces."""

    chunk_field: ClassVar[str] = "chunk"
    chunk: Annotated[int, Field(ge=1)] = 100
    """k (>= 1): actions per predicted chunk (the paper's chunk size 100; the code's ``num_queries``)."""
    temporal_ensemble: Annotated[float, Field(ge=0)] | None = 0.01
    """m (>= 0) of temporal ensembling, ``w_i = exp(-m i)`` (the paper: 0.01); the policy is then queried every
    step. None: no ensembling, chunks run for ``execute_steps`` (the code without ``--temporal_agg``;
    LeRobot's default)."""
    kl_weight: Annotated[float, Field(ge=0)] = 10.0
    """beta (>= 0) of the KL term (the paper and the code: 10)."""
    d_model: Annotated[int, Field(ge=1)] = 512
    """Width of every transformer (the code's ``hidden_dim`` 512); a multiple of ``heads``."""
    heads: Annotated[int, Field(ge=1)] = 8
    """Attention heads (the code's ``nheads`` 8)."""
    feedforward: Annotated[int, Field(ge=1)] = 3200
    """Hidden width of the transformers' feed-forward blocks (the code's ``dim_feedforward`` 3200)."""
    encoder_layers: Annotated[int, Field(ge=1)] = 4
    """Layers of the decoder's transformer encoder (the code's ``enc_layers`` 4)."""
    decoder_layers: Annotated[int, Field(ge=1)] = 1
    """Layers of its transformer decoder. The code sets 7 but, through a bug, uses the output of the first
    only (tonyzhaozh/act issue 25); LeRobot matches that with 1, and so does this default."""
    vae_layers: Annotated[int, Field(ge=1)] = 4
    """Layers of the CVAE encoder (the code: 4, as ``enc_layers``)."""
    latent_dim: Annotated[int, Field(ge=1)] = 32
    """Size of z (the code: 32)."""
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.1
    """Dropout in the transformers (the code: 0.1)."""
    lr: Annotated[float, Field(gt=0)] = 1e-5
    """AdamW learning rate of the transformers and heads (the code: 1e-5)."""
    lr_backbone: Annotated[float, Field(gt=0)] = 1e-5
    """AdamW learning rate of the image backbone (the code's ``lr_backbone`` 1e-5)."""
    weight_decay: Annotated[float, Field(ge=0)] = 1e-4
    """AdamW weight decay (the code: 1e-4)."""
    image_keys: tuple[str, ...] = ()
    """Camera observation keys (``uint8`` ``(H, W, 3)``), all through one shared backbone (the code shares
    ``backbones[0]`` between cameras); empty: a state-only policy."""
    state_keys: tuple[str, ...] = ("state",)
    """Flat observation keys of the state token (the paper's joint positions), standardised with dataset
    statistics; may be empty when there are cameras."""
    encoder: Annotated[str, PathArgument(names=frozenset({"resnet"}), path_prefixes=("hf:",))] = "resnet"
    """``resnet`` (:class:`ResNetEncoder`, trained end to end), a saved encoder folder, or ``hf:FOLDER``."""
    image_size: Annotated[int, Field(ge=8)] = 64
    """Input size of the ``resnet`` backbone (embodia's camera tasks render 64 x 64; the paper's 480 x 640
    images go through an ImageNet ResNet-18); images of another size are resized."""
    freeze_encoder: bool = False
    """No gradient into the image backbone (sensible for a pretrained encoder folder)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of heads ({self.heads})")
        if not self.image_keys and not self.state_keys:
            raise ValueError("ACT needs observations: give image_keys, state_keys or both")
        if self.temporal_ensemble is not None and self.execute_steps not in (None, 1):
            raise ValueError(
                "temporal_ensemble queries the policy every step: execute_steps must be 1 or unset "
                f"(got {self.execute_steps}); set temporal_ensemble to null to execute chunks"
            )


def kl_divergence(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """``KL(N(mu, exp(logvar)) || N(0, I))`` summed over the latent dimensions, averaged over the batch."""
    return (-0.5 * (1.0 + logvar - mu.pow(2) - logvar.exp())).sum(-1).mean()


def sinusoid_1d(length: int, dim: int) -> torch.Tensor:
    """``(length, dim)`` fixed positions: ``sin`` / ``cos`` of ``p / 10000^(2i / dim)`` interleaved (the
    Transformer's table, which the code's CVAE encoder uses)."""
    position = torch.arange(length, dtype=torch.float64)[:, None]
    rates = torch.pow(10000.0, -2.0 * (torch.arange(dim, dtype=torch.float64) // 2) / dim)
    angles = position * rates[None]
    table = torch.where(torch.arange(dim) % 2 == 0, angles.sin(), angles.cos())
    return table.float()


def sinusoid_2d(grid: int, dim: int) -> torch.Tensor:
    """``(grid * grid, dim)`` positions of a row-major feature map: the first half of the channels encodes
    the row, the second the column (DETR's normalised sine embedding, scale ``2 pi``, which ACT uses)."""
    half = dim // 2
    steps = (torch.arange(grid, dtype=torch.float64) + 1) / (grid + 1e-6) * 2 * math.pi
    rates = torch.pow(10000.0, 2.0 * (torch.arange(half, dtype=torch.float64) // 2) / half)
    angles = steps[:, None] / rates[None]
    table = torch.where(torch.arange(half) % 2 == 0, angles.sin(), angles.cos())  # (grid, half)
    rows = table[:, None, :].expand(grid, grid, half)
    cols = table[None, :, :].expand(grid, grid, half)
    out = torch.cat([rows, cols], dim=-1).reshape(grid * grid, 2 * half)
    if out.shape[1] < dim:  # an odd width: one zero channel
        out = torch.cat([out, out.new_zeros(grid * grid, dim - out.shape[1])], dim=1)
    return out.float()


class _Block(nn.Module):
    """A ResNet basic block (two 3x3 convolutions and a skip), GroupNorm instead of BatchNorm."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(min(8, cout), cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(min(8, cout), cout)
        self.skip = (
            nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.GroupNorm(min(8, cout), cout)
            )
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(self.norm2(self.conv2(y)) + self.skip(x))


class ResNetEncoder(nn.Module):
    """ACT's default image backbone here: a small ResNet (a stride-2 stem, then stages of basic blocks of
    ``widths`` channels, stride 2 from the second stage on), an :class:`~embodia.perception.encoders.ImageEncoder`
    whose patches are the cells of its last feature map. ResNet-18 has four stages of two blocks and ImageNet
    BatchNorm statistics (frozen in the code); from scratch with small batches, GroupNorm is the stable choice."""

    kind = "act-resnet"

    def __init__(self, image_size: int = 64, widths: Sequence[int] = (32, 64, 128), blocks: int = 2) -> None:
        super().__init__()
        self.image_size, self.widths, self.blocks = int(image_size), [int(w) for w in widths], int(blocks)
        self.mean, self.std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's, as the code
        layers: list[nn.Module] = [
            nn.Conv2d(3, self.widths[0], 3, stride=2, padding=1, bias=False),
            nn.GroupNorm(min(8, self.widths[0]), self.widths[0]),
            nn.ReLU(),
        ]
        cin = self.widths[0]
        for stage, width in enumerate(self.widths):
            for block in range(self.blocks):
                layers.append(_Block(cin, width, 2 if stage > 0 and block == 0 else 1))
                cin = width
        self.net = nn.Sequential(*layers)
        self.dim = cin
        self.grid = -(-self.image_size // 2 ** len(self.widths))  # ceil: stride-2 convs with padding 1

    def encoder_config(self) -> dict[str, Any]:
        return {"image_size": self.image_size, "widths": self.widths, "blocks": self.blocks}

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        tokens = self.net(images).flatten(2).transpose(1, 2)
        return EncoderOutput(tokens, tokens.mean(dim=1))


class EncoderLayer(nn.Module):
    """DETR's post-norm transformer encoder layer: positions added to queries and keys, ReLU feed-forward."""

    def __init__(self, d: int, heads: int, feedforward: int, dropout: float) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(d, feedforward), nn.ReLU(), nn.Dropout(dropout), nn.Linear(feedforward, d)
        )
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop1, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, pad: torch.Tensor | None = None) -> torch.Tensor:
        q = x + pos
        x = self.norm1(x + self.drop1(self.attn(q, q, x, key_padding_mask=pad, need_weights=False)[0]))
        return self.norm2(x + self.drop2(self.ff(x)))


class DecoderLayer(nn.Module):
    """DETR's post-norm decoder layer: self-attention of the queries, cross-attention to the encoder's tokens."""

    def __init__(self, d: int, heads: int, feedforward: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(d, feedforward), nn.ReLU(), nn.Dropout(dropout), nn.Linear(feedforward, d)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(3))
        self.drops = nn.ModuleList(nn.Dropout(dropout) for _ in range(3))

    def forward(
        self, y: torch.Tensor, query_pos: torch.Tensor, memory: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        q = y + query_pos
        y = self.norms[0](y + self.drops[0](self.self_attn(q, q, y, need_weights=False)[0]))
        attended = self.cross_attn(y + query_pos, memory + pos, memory, need_weights=False)[0]
        y = self.norms[1](y + self.drops[1](attended))
        return self.norms[2](y + self.drops[2](self.ff(y)))


class ACTModel(nn.Module):
    """The CVAE of the module docstring. ``forward(obs)`` is the policy: raw observations (``uint8`` images,
    state values) to a chunk ``(B, chunk, action_dim)`` in the environment's units, with ``z = 0``;
    :meth:`loss` is the training objective. The state and action statistics are buffers (saved with it)."""

    def __init__(
        self,
        config: ACTConfig,
        action_dim: int,
        state_mean: Any,
        state_std: Any,
        action_mean: Any = None,
        action_std: Any = None,
        encoder: nn.Module | None = None,
    ) -> None:
        super().__init__()
        cfg, d = config, config.d_model
        self.action_dim, self.horizon, self.latent_dim = int(action_dim), int(cfg.chunk), int(cfg.latent_dim)
        self.image_keys, self.state_keys = list(cfg.image_keys), list(cfg.state_keys)
        self.freeze_encoder = bool(cfg.freeze_encoder)
        zeros, ones = np.zeros(action_dim, np.float32), np.ones(action_dim, np.float32)
        self.register_buffer("state_mean", torch.as_tensor(state_mean, dtype=torch.float32).reshape(-1))
        self.register_buffer(
            "state_std", torch.as_tensor(state_std, dtype=torch.float32).reshape(-1).clamp_min(1e-3)
        )
        self.register_buffer(
            "action_mean", torch.as_tensor(zeros if action_mean is None else action_mean).float()
        )
        self.register_buffer(
            "action_std", torch.as_tensor(ones if action_std is None else action_std).float().clamp_min(1e-3)
        )
        self.state_dim = int(self.state_mean.numel())
        if self.state_keys and not self.state_dim:
            raise ValueError("state_keys are given but the state statistics are empty")
        layers = cfg.encoder_layers, cfg.decoder_layers, cfg.vae_layers
        block = (d, cfg.heads, cfg.feedforward, cfg.dropout)
        # CVAE encoder q(z | a, s)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        nn.init.normal_(self.cls, std=0.02)
        self.vae_action = nn.Linear(action_dim, d)
        self.vae_state = nn.Linear(self.state_dim, d) if self.state_dim else None
        self.vae_encoder = nn.ModuleList(EncoderLayer(*block) for _ in range(layers[2]))
        self.to_latent = nn.Linear(d, 2 * self.latent_dim)
        vae_tokens = 1 + (1 if self.state_dim else 0) + self.horizon
        self.register_buffer("vae_pos", sinusoid_1d(vae_tokens, d)[None], persistent=False)
        # the policy pi(o, z)
        self.from_latent = nn.Linear(self.latent_dim, d)
        self.state_in = nn.Linear(self.state_dim, d) if self.state_dim else None
        self.token_pos = nn.Parameter(torch.zeros(1, 1 + (1 if self.state_dim else 0), d))
        nn.init.normal_(self.token_pos, std=0.02)
        self.encoder = encoder if self.image_keys else None
        if self.encoder is not None:
            if self.freeze_encoder:
                self.encoder.requires_grad_(False)
            self.image_in = nn.Linear(int(self.encoder.dim), d)  # the code's 1x1 input_proj convolution
            self.register_buffer("image_pos", sinusoid_2d(int(self.encoder.grid), d)[None], persistent=False)
        self.encoder_layers = nn.ModuleList(EncoderLayer(*block) for _ in range(layers[0]))
        self.decoder_layers = nn.ModuleList(DecoderLayer(*block) for _ in range(layers[1]))
        self.decoder_norm = nn.LayerNorm(d)
        self.queries = nn.Parameter(torch.zeros(1, self.horizon, d))
        nn.init.normal_(self.queries, std=0.02)
        self.head = nn.Linear(d, action_dim)

    def train(self, mode: bool = True) -> ACTModel:
        super().train(mode)
        if self.freeze_encoder and self.encoder is not None:
            self.encoder.eval()
        return self

    def state(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
        """The standardised state values ``(B, state_dim)`` (None for a camera-only policy)."""
        if not self.state_dim:
            return None
        first = obs[self.state_keys[0]]
        values = torch.cat([obs[k].reshape(first.shape[0], -1).float() for k in self.state_keys], dim=-1)
        return (values - self.state_mean) / self.state_std

    def image_tokens(self, obs: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens ``(B, cameras * N, d)`` of every camera (one shared backbone) and their positions."""
        from embodia.perception.pixel_observations import images_to_input

        assert self.encoder is not None
        cameras = len(self.image_keys)
        frames = torch.cat([obs[k] for k in self.image_keys], dim=0)
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze_encoder):
            patches = self.encoder(images_to_input(frames, self.encoder)).patches
        tokens = self.image_in(patches)  # (cameras * B, N, d), camera-major
        n, d = tokens.shape[1], tokens.shape[2]
        tokens = tokens.reshape(cameras, -1, n, d).transpose(0, 1).reshape(-1, cameras * n, d)
        return tokens, self.image_pos.repeat(1, len(self.image_keys), 1)

    def posterior(
        self, state: torch.Tensor | None, actions: torch.Tensor, pad: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``mu, logvar`` ``(B, latent)`` of ``q(z | a, s)``; ``actions`` standardised, ``pad`` True where padded."""
        b = actions.shape[0]
        tokens = [self.cls.expand(b, -1, -1)]
        if self.vae_state is not None and state is not None:
            tokens.append(self.vae_state(state)[:, None])
        tokens.append(self.vae_action(actions))
        x = torch.cat(tokens, dim=1)
        mask = torch.cat([pad.new_zeros(b, x.shape[1] - pad.shape[1]), pad], dim=1)
        for layer in self.vae_encoder:
            x = layer(x, self.vae_pos, mask)
        mu, logvar = self.to_latent(x[:, 0]).chunk(2, dim=-1)
        return mu, logvar

    def decode(
        self, obs: Mapping[str, torch.Tensor], state: torch.Tensor | None, z: torch.Tensor
    ) -> torch.Tensor:
        """``pi(o, z)``: the standardised chunk ``(B, chunk, action_dim)``."""
        tokens = [self.from_latent(z)[:, None]]
        if self.state_in is not None and state is not None:
            tokens.append(self.state_in(state)[:, None])
        pos = [self.token_pos]
        if self.encoder is not None:
            image, image_pos = self.image_tokens(obs)
            tokens.append(image)
            pos.append(image_pos)
        memory, memory_pos = torch.cat(tokens, dim=1), torch.cat(pos, dim=1)
        for layer in self.encoder_layers:
            memory = layer(memory, memory_pos)
        y = torch.zeros_like(self.queries).expand(memory.shape[0], -1, -1)
        for decoder in self.decoder_layers:
            y = decoder(y, self.queries, memory, memory_pos)
        return self.head(self.decoder_norm(y))

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The policy: a chunk ``(B, chunk, action_dim)`` in the environment's units, ``z = 0``."""
        state = self.state(obs)
        first = obs[(self.image_keys or self.state_keys)[0]]
        z = torch.zeros(first.shape[0], self.latent_dim, dtype=torch.float32, device=first.device)
        return self.decode(obs, state, z) * self.action_std + self.action_mean

    def loss(
        self, obs: Mapping[str, torch.Tensor], actions: torch.Tensor, valid: torch.Tensor, kl_weight: float
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """``L = L_rec + beta L_KL`` for chunks ``actions`` ``(B, chunk, A)`` with ``valid`` ``(B, chunk)``."""
        state = self.state(obs)
        target = (actions.float() - self.action_mean) / self.action_std
        pad = valid < 0.5
        mu, logvar = self.posterior(state, target, pad)
        z = mu + (0.5 * logvar).exp() * torch.randn_like(mu)
        predicted = self.decode(obs, state, z)
        rec = ((predicted - target).abs() * valid[..., None]).mean()
        kl = kl_divergence(mu, logvar)
        loss = rec + kl_weight * kl
        return loss, {
            "l1_loss": float(rec.detach()),
            "kl_loss": float(kl.detach()),
            "act_loss": float(loss.detach()),
        }


class ACTStatistics(ObsNormalizer):
    """The state keys' statistics (an :class:`ObsNormalizer`) and the actions' mean and standard deviation."""

    def __init__(
        self,
        keys: Sequence[str],
        mean: Any,
        std: Any,
        sizes: Sequence[int] | None,
        action_mean: Any,
        action_std: Any,
    ):
        super().__init__(keys, mean, std, sizes)
        self.register_buffer("action_mean", torch.as_tensor(action_mean, dtype=torch.float32).reshape(-1))
        self.register_buffer(
            "action_std", torch.as_tensor(np.maximum(action_std, 1e-3), dtype=torch.float32).reshape(-1)
        )


def chunk_batch(sampler: WindowSampler, batch_size: int, chunk: int) -> dict[str, Any]:
    """Observations at uniform starts and the ``chunk`` actions from each, padded past the episode's last step
    (the last action repeated, ``valid`` 0: the reference's ``is_pad``)."""
    from embodia.data.sampling import to_torch

    windows = sampler.sample(batch_size)
    starts = sampler.last_starts
    last = sampler.episode_last[starts]
    raw = starts[:, None] + np.arange(chunk)[None]
    actions = np.asarray(sampler.arrays["action"])[np.minimum(raw, last[:, None])]
    actions = actions.reshape(len(starts), chunk, -1)
    return to_torch(
        {"obs": windows["obs"], "action": actions, "valid": (raw <= last[:, None]).astype(np.float32)}
    )


class ACT(OfflineLearner):
    """The ACT learner (see the module docstring); its actor is an :class:`ACTModel`."""

    name: ClassVar[str] = "act"
    config_class: ClassVar[type] = ACTConfig
    needs_reward: ClassVar[bool] = False
    """imitates actions only"""

    @classmethod
    def observation_keys(cls, config: ACTConfig) -> list[str]:
        return [*config.image_keys, *config.state_keys]

    @classmethod
    def window_for(cls, config: ACTConfig) -> int:
        """1: the sampler gives observations at every start; :meth:`sample` adds the (padded) chunks."""
        return 1

    @classmethod
    def fit_normalizer_for(cls, config: ACTConfig, sampler: WindowSampler) -> ACTStatistics:
        """The state keys' and the actions' mean and standard deviation over the store."""
        actions = np.asarray(sampler.arrays["action"], dtype=np.float64).reshape(
            len(sampler.arrays["action"]), -1
        )
        if config.state_keys:
            states = ObsNormalizer.fit(list(config.state_keys), sampler.arrays)
            mean, std, sizes = states.mean.numpy(), states.std.numpy(), states.sizes
        else:
            mean, std, sizes = np.zeros(0, np.float32), np.ones(0, np.float32), []
        return ACTStatistics(list(config.state_keys), mean, std, sizes, actions.mean(0), actions.std(0))

    def build(self) -> None:
        cfg = self.config
        encoder = None
        if cfg.image_keys:
            if cfg.encoder == "resnet":
                encoder = ResNetEncoder(cfg.image_size)
            else:
                from embodia.perception.pixel_observations import make_image_encoder

                encoder = make_image_encoder(cfg.encoder)
        n = self.normalizer
        self.actor = ACTModel(
            cfg,
            self.action_dim,
            n.mean,
            n.std,
            getattr(n, "action_mean", None),
            getattr(n, "action_std", None),
            encoder,
        )
        backbone = [p for p in (encoder.parameters() if encoder is not None else ()) if p.requires_grad]
        ids = {id(p) for p in backbone}
        rest = [p for p in self.actor.parameters() if p.requires_grad and id(p) not in ids]
        groups = [{"params": rest, "lr": cfg.lr}] + (
            [{"params": backbone, "lr": cfg.lr_backbone}] if backbone else []
        )
        self.optimizer = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)

    def sample(self, sampler: WindowSampler, batch_size: int) -> dict[str, Any]:
        return chunk_batch(sampler, batch_size, self.config.chunk)

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        self.actor.train()
        actions = batch["action"].float().reshape(len(batch["action"]), self.config.chunk, self.action_dim)
        loss, metrics = self.actor.loss(batch["obs"], actions, batch["valid"].float(), self.config.kl_weight)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return metrics

    def modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}

    def export(self, folder: Path, meta: dict[str, Any]) -> Any:
        from embodia.policies.act_policy import load_act_policy, save_act_policy

        save_act_policy(folder, self.actor, self.config, meta=meta, state_sizes=self.normalizer.sizes)
        return load_act_policy(Path(folder), "torch")
