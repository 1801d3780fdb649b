"""Diffusion Policy, the CNN variant: a denoising diffusion model over action sequences.

Chi, Feng, Du, Xu, Cousineau, Burchfiel, Song, "Diffusion Policy: Visuomotor Policy Learning via Action
Diffusion", RSS 2023, arXiv:2303.04137.

Horizons (the paper's Sec. 3.1 / Fig. 3): at step ``t`` the policy sees the last ``T_o`` observations
``O_t = (o_{t-T_o+1} .. o_t)``, predicts ``T_p`` actions ``A_t = (a_{t-T_o+1} .. a_{t-T_o+T_p})`` and executes
``T_a`` of them, ``a_t .. a_{t+T_a-1}`` (the ones from the current step on), before it plans again (receding
horizon; the paper's defaults T_p = 16, T_o = 2, T_a = 8).

Training (DDPM, Ho et al. arXiv:2006.11239, epsilon prediction; the paper's eq. 5): with the normalised
action sequence ``A^0`` (min-max to [-1, 1] per action dimension, as the authors' code), a noise-schedule step
``k ~ U{0 .. K-1}`` and ``eps ~ N(0, I)``,

    A^k = sqrt(alpha_bar_k) A^0 + sqrt(1 - alpha_bar_k) eps,     L = || eps - eps_theta(O_t, A^k, k) ||^2

with ``K = 100`` and the "squaredcos_cap_v2" schedule (Nichol & Dhariwal, arXiv:2102.09672):
``alpha_bar(s) = cos^2((s + 0.008) / 1.008 * pi / 2)``, ``beta_k = min(1 - alpha_bar((k+1)/K) / alpha_bar(k/K),
0.999)``, ``alpha_bar_k = prod_{j<=k} (1 - beta_j)`` (diffusers' ``DDPMScheduler`` computes it; nothing is
hand-written here).

Sampling (DDIM, Song et al. arXiv:2010.02502, eta = 0, diffusers' ``DDIMScheduler``): ``S`` steps at the
"leading" timesteps ``k_i = (S - 1 - i) * (K // S)``; from ``A^{k_0} ~ N(0, I)``,

    x0 = clip((A^k - sqrt(1 - abar_k) eps_theta) / sqrt(abar_k), -1, 1)
    A^{k'} = sqrt(abar_{k'}) x0 + sqrt(1 - abar_{k'}) eps_theta,     k' = k - K // S   (abar_{k'<0} = 1)

The denoiser ``eps_theta`` is a 1-D temporal U-Net over the action sequence (the authors'
``ConditionalUnet1D``): residual blocks of two (Conv1d, GroupNorm, Mish) layers, down- and up-sampled by
strided / transposed convolutions with skip connections; every block is FiLM-conditioned (Perez et al.,
arXiv:1709.07871) on ``c = [emb(k), f(O_t)]``, ``h <- gamma(c) * h + beta(c)`` per channel, where ``emb`` is
a sinusoidal embedding followed by an MLP and ``f(O_t)`` concatenates the features of the ``T_o`` observations
(state keys min-max normalised to [-1, 1]; each camera through its own small CNN, or a saved ``ImageEncoder``
folder, as :mod:`embodia.policies.pixel_bc`). The policy samples with an exponential moving average of the
weights (the authors' ``EMAModel``: decay ``1 - (1 + step)^-0.75`` capped at 0.9999).

The result is a ``"diffusion_policy"`` folder (:mod:`embodia.policies.diffusion_folder`: writing and loading
it, the policy that runs it with torch, and the NumPy DDIM sampler over the exported ONNX denoiser that a
torch-free robot install runs). ``embodia train diffusion_policy --dataset D`` trains it; the paper's network is
large for a CPU (``down_dims`` 256-512-1024): ``--config '{"down_dims": [64, 128, 256]}'`` is a small one.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field
from torch import nn

from embodia.core.paths import PathArgument
from embodia.policies.learner import ChunkedPolicyConfig, OfflineLearner
from embodia.policies.networks import ObsNormalizer

if TYPE_CHECKING:
    from embodia.data.sampling import WindowSampler


@dataclass
class DiffusionPolicyConfig(ChunkedPolicyConfig):
    """Hyperparameters of Diffusion Policy (CNN). Defaults: the paper and the authors' code
    (real-stanford/diffusion_policy, ``train_diffusion_unet_*`` configs); LeRobot's port agrees on all but
    the U-Net width."""

    chunk_field: ClassVar[str] = "n_action_steps"
    horizon: Annotated[int, Field(ge=2)] = 16
    """T_p: actions predicted per decision (the paper: 16)."""
    n_obs_steps: Annotated[int, Field(ge=1)] = 2
    """T_o: observations the policy is conditioned on, the current one and T_o - 1 before it (the paper: 2)."""
    n_action_steps: Annotated[int, Field(ge=1)] = 8
    """T_a: actions executed per decision, from the current step on (the paper: 8)."""
    state_keys: tuple[str, ...] = ("state",)
    """Flat observation keys, min-max normalised to [-1, 1] with dataset limits (the authors' "limits" mode)."""
    image_keys: tuple[str, ...] = ()
    """Camera keys (uint8 ``(H, W, 3)``), each through its own image encoder (the authors: one ResNet-18 per
    camera; here a small CNN or ``encoder``)."""
    encoder: Annotated[str, PathArgument(names=frozenset({"cnn"}), path_prefixes=("hf:",))] = "cnn"
    """``cnn`` (:class:`~embodia.perception.encoders.ConvEncoder`, trained end to end), a saved encoder folder,
    or ``hf:FOLDER`` (as :mod:`embodia.policies.pixel_bc`)."""
    freeze_encoder: bool = False
    """No gradient into the image encoders (the authors train theirs end to end)."""
    token_channels: Annotated[int, Field(ge=1)] = 8
    """Channels each image patch token is projected to before flattening (embodia's pixel path)."""
    shift: Annotated[int, Field(ge=0)] = 4
    """Random-shift augmentation in pixels in training (the authors: a random crop of ~90 % of the image)."""
    down_dims: tuple[Annotated[int, Field(ge=1)], ...] = (256, 512, 1024)
    """Channels of the U-Net's levels (the authors' ``ConditionalUnet1D`` default; LeRobot: 512, 1024, 2048).
    The sequence is halved between levels: ``horizon`` must be divisible by ``2 ** (len - 1)``."""
    kernel_size: Annotated[int, Field(ge=1)] = 5
    """Temporal convolution width (the paper's configs: 5)."""
    n_groups: Annotated[int, Field(ge=1)] = 8
    """GroupNorm groups; must divide every ``down_dims`` entry (the authors: 8)."""
    step_embed_dim: Annotated[int, Field(ge=2)] = 128
    """Width of the diffusion-step embedding (the paper's configs and LeRobot: 128)."""
    num_train_timesteps: Annotated[int, Field(ge=2)] = 100
    """K: diffusion steps of training (the paper: 100)."""
    beta_schedule: Literal["squaredcos_cap_v2", "linear", "scaled_linear"] = "squaredcos_cap_v2"
    """diffusers' noise schedule (the paper: squaredcos_cap_v2, "the best we found" in the authors' configs)."""
    beta_start: Annotated[float, Field(gt=0, lt=1)] = 1e-4
    """First beta of the linear schedules (unused by squaredcos_cap_v2; the authors: 1e-4)."""
    beta_end: Annotated[float, Field(gt=0, lt=1)] = 0.02
    """Last beta of the linear schedules (unused by squaredcos_cap_v2; the authors: 0.02)."""
    clip_sample: bool = True
    """Clip the predicted clean sequence to [-1, 1] at every sampling step (the authors: True)."""
    num_inference_steps: Annotated[int, Field(ge=1)] = 8
    """S: DDIM sampling steps (the authors' DDIM configs: 8; their DDPM sampling uses all 100)."""
    lr: Annotated[float, Field(gt=0)] = 1e-4
    """AdamW learning rate (the authors: 1e-4)."""
    betas: tuple[Annotated[float, Field(ge=0, lt=1)], Annotated[float, Field(ge=0, lt=1)]] = (0.95, 0.999)
    """AdamW betas (the authors: 0.95, 0.999)."""
    weight_decay: Annotated[float, Field(ge=0)] = 1e-6
    """AdamW weight decay (the authors: 1e-6)."""
    lr_warmup_steps: Annotated[int, Field(ge=0)] = 500
    """Linear learning-rate warm-up (the authors: 500 steps, then cosine decay over the run; embodia's
    learners do not know the run's length, so the rate stays constant after the warm-up)."""
    ema_power: Annotated[float, Field(gt=0)] = 0.75
    """EMA warm-up exponent: decay ``1 - (1 + step)^-power`` (the authors: 0.75)."""
    ema_max_decay: Annotated[float, Field(ge=0, le=1)] = 0.9999
    """EMA decay cap (the authors: 0.9999); 0 turns the average off (the policy is the trained network)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_obs_steps - 1 + self.n_action_steps > self.horizon:
            raise ValueError(
                f"n_obs_steps - 1 + n_action_steps ({self.n_obs_steps - 1 + self.n_action_steps}) cannot exceed "
                f"horizon ({self.horizon}): the executed actions are part of the predicted sequence"
            )
        if not self.down_dims:
            raise ValueError("down_dims needs at least one level")
        if self.horizon % 2 ** (len(self.down_dims) - 1):
            raise ValueError(
                f"horizon ({self.horizon}) must be divisible by 2 ** (len(down_dims) - 1) = "
                f"{2 ** (len(self.down_dims) - 1)}: the U-Net halves the sequence between levels"
            )
        if any(d % self.n_groups for d in self.down_dims):
            raise ValueError(f"n_groups ({self.n_groups}) must divide every down_dims entry {self.down_dims}")
        if self.num_inference_steps > self.num_train_timesteps:
            raise ValueError("num_inference_steps cannot exceed num_train_timesteps")
        if not self.state_keys and not self.image_keys:
            raise ValueError("the policy needs at least one state key or image key")


# --- noise schedules (diffusers) -------------------------------------------------------------------------


def schedulers(config: Any) -> tuple[Any, Any]:
    """diffusers' ``DDPMScheduler`` (training: ``add_noise``) and ``DDIMScheduler`` (sampling) of ``config``
    (a :class:`DiffusionPolicyConfig`, or a folder's ``"schedule"`` record as a namespace)."""
    from diffusers import DDIMScheduler, DDPMScheduler

    common = {
        "num_train_timesteps": int(config.num_train_timesteps),
        "beta_start": float(config.beta_start),
        "beta_end": float(config.beta_end),
        "beta_schedule": str(config.beta_schedule),
        "clip_sample": bool(config.clip_sample),
        "prediction_type": "epsilon",
    }
    return DDPMScheduler(**common), DDIMScheduler(**common, set_alpha_to_one=True, steps_offset=0)


# --- the denoiser: a FiLM-conditioned 1-D temporal U-Net -------------------------------------------------


class StepEmbedding(nn.Module):
    """``emb(k)``: sinusoidal features of the diffusion step (Vaswani et al.) through Linear-Mish-Linear."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        half = dim // 2
        self.register_buffer("freqs", torch.exp(torch.arange(half) * -(math.log(10000.0) / max(half - 1, 1))))
        self.mlp = nn.Sequential(nn.Linear(2 * half, 4 * dim), nn.Mish(), nn.Linear(4 * dim, dim))

    def forward(self, k: torch.Tensor) -> torch.Tensor:
        angles = k.to(self.freqs.dtype)[:, None] * self.freqs[None]
        return self.mlp(torch.cat([angles.sin(), angles.cos()], dim=-1))


def conv_block(c_in: int, c_out: int, kernel: int, groups: int) -> nn.Sequential:
    """Conv1d (same length), GroupNorm, Mish."""
    return nn.Sequential(
        nn.Conv1d(c_in, c_out, kernel, padding=kernel // 2), nn.GroupNorm(groups, c_out), nn.Mish()
    )


class FiLMBlock(nn.Module):
    """Residual block: ``conv(h) -> gamma(c) * . + beta(c) -> conv -> + residual(h)``."""

    def __init__(self, c_in: int, c_out: int, cond_dim: int, kernel: int, groups: int) -> None:
        super().__init__()
        self.first, self.second = (
            conv_block(c_in, c_out, kernel, groups),
            conv_block(c_out, c_out, kernel, groups),
        )
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * c_out))
        self.residual = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        scale, bias = self.film(cond).unsqueeze(-1).chunk(2, dim=1)
        return self.second(scale * self.first(x) + bias) + self.residual(x)


class ConditionalUnet1D(nn.Module):
    """``eps_theta(A^k, k, c)``: ``(B, T_p, A)`` noisy actions, ``(B,)`` steps, ``(B, C)`` observation
    features -> ``(B, T_p, A)`` predicted noise."""

    def __init__(
        self, action_dim: int, cond_dim: int, down_dims: tuple[int, ...], kernel: int, groups: int, embed: int
    ) -> None:
        super().__init__()
        self.step_embedding = StepEmbedding(embed)
        cond = embed + cond_dim
        dims = [action_dim, *down_dims]
        pairs = list(zip(dims[:-1], dims[1:]))
        self.down = nn.ModuleList()
        for i, (c_in, c_out) in enumerate(pairs):
            last = i == len(pairs) - 1
            self.down.append(
                nn.ModuleList([
                    FiLMBlock(c_in, c_out, cond, kernel, groups),
                    FiLMBlock(c_out, c_out, cond, kernel, groups),
                    nn.Identity() if last else nn.Conv1d(c_out, c_out, 3, stride=2, padding=1),
                ])
            )  # fmt: skip
        mid = down_dims[-1]
        self.mid = nn.ModuleList([FiLMBlock(mid, mid, cond, kernel, groups) for _ in range(2)])
        self.up = nn.ModuleList()
        for c_in, c_out in reversed(pairs[1:]):
            self.up.append(
                nn.ModuleList([
                    FiLMBlock(2 * c_out, c_in, cond, kernel, groups),
                    FiLMBlock(c_in, c_in, cond, kernel, groups),
                    nn.ConvTranspose1d(c_in, c_in, 4, stride=2, padding=1),
                ])
            )  # fmt: skip
        self.final = nn.Sequential(
            conv_block(down_dims[0], down_dims[0], kernel, groups), nn.Conv1d(down_dims[0], action_dim, 1)
        )

    def forward(self, sample: torch.Tensor, k: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        c = torch.cat([self.step_embedding(k), cond], dim=-1)
        x, skips = sample.transpose(1, 2), []
        for first, second, downsample in self.down:
            x = second(first(x, c), c)
            skips.append(x)
            x = downsample(x)
        for block in self.mid:
            x = block(x, c)
        for first, second, upsample in self.up:
            x = upsample(second(first(torch.cat([x, skips.pop()], dim=1), c), c))
        return self.final(x).transpose(1, 2)


# --- observations and the whole policy network -------------------------------------------------------------


class ObservationFeatures(nn.Module):
    """``f(O_t)``: each of the ``T_o`` observations to ``[camera features..., normalised states]``, concatenated
    over time. Inputs: ``(B, T_o, H, W, 3)`` uint8 per camera key, ``(B, T_o, n)`` per state key."""

    def __init__(
        self,
        state_keys: list[str],
        state_mean: torch.Tensor,
        state_std: torch.Tensor,
        image_keys: list[str],
        encoders: list[nn.Module],
        n_obs_steps: int,
        token_channels: int = 8,
        freeze_encoder: bool = False,
    ) -> None:
        super().__init__()
        from embodia.perception.pixel_observations import PixelObservationEncoder

        self.state_keys, self.image_keys, self.n_obs_steps = (
            list(state_keys),
            list(image_keys),
            int(n_obs_steps),
        )
        empty = torch.zeros(0)
        self.cameras = nn.ModuleList(
            PixelObservationEncoder(
                enc, [key], empty, empty + 1, token_channels=token_channels, freeze_encoder=freeze_encoder
            )
            for key, enc in zip(image_keys, encoders)
        )
        self.register_buffer("state_mean", torch.as_tensor(state_mean, dtype=torch.float32).reshape(-1))
        self.register_buffer("state_std", torch.as_tensor(state_std, dtype=torch.float32).reshape(-1))
        self.frame_dim = sum(int(c.dim) for c in self.cameras) + int(self.state_mean.numel())
        self.dim = self.n_obs_steps * self.frame_dim

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        key = (self.image_keys or self.state_keys)[0]
        batch, steps = obs[key].shape[:2]
        parts = [cam({k: obs[k].flatten(0, 1)}) for k, cam in zip(self.image_keys, self.cameras)]
        if self.state_keys:
            states = torch.cat([obs[k].reshape(batch * steps, -1).float() for k in self.state_keys], dim=-1)
            parts.append((states - self.state_mean) / self.state_std)
        return torch.cat(parts, dim=-1).reshape(batch, steps * self.frame_dim)


class DiffusionActor(nn.Module):
    """What a policy folder holds: the observation features, the denoiser and the action limits."""

    def __init__(
        self, observations: ObservationFeatures, unet: ConditionalUnet1D, action_dim: int, horizon: int
    ) -> None:
        super().__init__()
        self.observations, self.unet = observations, unet
        self.action_dim, self.horizon = int(action_dim), int(horizon)
        self.register_buffer("action_low", -torch.ones(action_dim))
        self.register_buffer("action_high", torch.ones(action_dim))

    def normalize_actions(self, actions: torch.Tensor) -> torch.Tensor:
        return 2.0 * (actions - self.action_low) / (self.action_high - self.action_low) - 1.0

    def unnormalize_actions(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 1.0) / 2.0 * (self.action_high - self.action_low) + self.action_low

    @torch.no_grad()
    def sample(
        self, obs: dict[str, torch.Tensor], noise: torch.Tensor, ddim: Any, steps: int
    ) -> torch.Tensor:
        """DDIM from ``noise`` ``(B, T_p, A)``: the normalised action sequences (torch + diffusers)."""
        cond = self.observations(obs)
        ddim.set_timesteps(steps)
        x = noise
        for k in ddim.timesteps:
            eps = self.unet(x, k.expand(x.shape[0]), cond)
            x = ddim.step(eps, k, x, eta=0.0).prev_sample
        return x


def build_actor(
    config: DiffusionPolicyConfig, action_dim: int, state_mean: Any, state_std: Any, encoders: list[nn.Module]
) -> DiffusionActor:
    """The network of ``config`` (``encoders``: one image encoder per camera key)."""
    observations = ObservationFeatures(
        list(config.state_keys), torch.as_tensor(state_mean), torch.as_tensor(state_std), list(config.image_keys),
        encoders, config.n_obs_steps, config.token_channels, config.freeze_encoder,
    )  # fmt: skip
    unet = ConditionalUnet1D(
        action_dim,
        observations.dim,
        tuple(config.down_dims),
        config.kernel_size,
        config.n_groups,
        config.step_embed_dim,
    )
    return DiffusionActor(observations, unet, action_dim, config.horizon)


def ema_decay(step: int, power: float, max_decay: float) -> float:
    """The authors' EMA warm-up at optimisation step ``step`` (0, 1, ... : updates done before this one):
    ``min(1 - (1 + s)^-power, max_decay)`` with ``s = step - 1``, and 0 (a copy) while ``s <= 0``
    (their ``EMAModel`` with update_after_step 0, inv_gamma 1, min_value 0)."""
    s = max(0, step - 1)
    return 0.0 if s <= 0 else min(1.0 - (1.0 + s) ** -power, max_decay)


# --- the learner ------------------------------------------------------------------------------------------


class DiffusionPolicy(OfflineLearner):
    """Diffusion Policy (see the module docstring): DDPM training, EMA weights, DDIM sampling."""

    name: ClassVar[str] = "diffusion_policy"
    config_class: ClassVar[type] = DiffusionPolicyConfig
    needs_reward: ClassVar[bool] = False

    @classmethod
    def observation_keys(cls, config: DiffusionPolicyConfig) -> list[str]:
        return [*config.image_keys, *config.state_keys]

    @classmethod
    def window_for(cls, config: DiffusionPolicyConfig) -> int:
        """The actions from the current step on: ``T_p - (T_o - 1)`` (the earlier ones come from :meth:`sample`)."""
        return config.horizon - config.n_obs_steps + 1

    @classmethod
    def fit_normalizer_for(cls, config: DiffusionPolicyConfig, sampler: WindowSampler) -> ObsNormalizer:
        """Min-max to [-1, 1] as a standardisation: mean = (max + min) / 2, std = (max - min) / 2; a dimension
        whose range is under 1e-4 is only centred (std 1), as the authors' ``range_eps``."""
        if not config.state_keys:
            return ObsNormalizer([], np.zeros(0, np.float32), np.ones(0, np.float32), sizes=[])
        parts = [
            np.asarray(sampler.arrays[k], np.float32).reshape(len(sampler.arrays[k]), -1)
            for k in config.state_keys
        ]
        flat = np.concatenate(parts, axis=1)
        low, high = flat.min(0), flat.max(0)
        half = np.where(high - low < 1e-4, 1.0, (high - low) / 2)
        return ObsNormalizer(
            list(config.state_keys), (high + low) / 2, half, sizes=[p.shape[1] for p in parts]
        )

    def build(self) -> None:
        from diffusers.optimization import get_constant_schedule_with_warmup

        from embodia.perception.pixel_observations import make_image_encoder

        cfg = self.config
        encoders = [make_image_encoder(cfg.encoder) for _ in cfg.image_keys]
        self.model = build_actor(cfg, self.action_dim, self.normalizer.mean, self.normalizer.std, encoders)
        self.ema_model = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.actor = self.ema_model if cfg.ema_max_decay > 0 else self.model
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay
        )
        self.lr_schedule = get_constant_schedule_with_warmup(self.optimizer, cfg.lr_warmup_steps)
        self.ddpm, self.ddim = schedulers(cfg)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.steps = 0
        self.actions_fitted = False

    def fit_action_limits(self, actions: np.ndarray) -> None:
        """Per-dimension min and max of the dataset's actions (the normalisation to [-1, 1]); a dimension whose
        range is under 1e-4 gets limits centre -+ 1 (only centred, as the authors' ``range_eps``)."""
        flat = np.asarray(actions, np.float32).reshape(len(actions), -1)
        low, high = flat.min(0), flat.max(0)
        narrow = high - low < 1e-4
        centre = (high + low) / 2
        low, high = np.where(narrow, centre - 1, low), np.where(narrow, centre + 1, high)
        for model in (self.model, self.ema_model):
            model.action_low.copy_(torch.from_numpy(low.astype(np.float32)))
            model.action_high.copy_(torch.from_numpy(high.astype(np.float32)))
        self.actions_fitted = True

    def sample(self, sampler: WindowSampler, batch_size: int) -> dict[str, Any]:
        """Windows with ``T_o`` observations and ``T_p`` actions, the earlier steps repeated at an episode's
        start (the authors' ``pad_before``); after its end the sampler repeats the last action."""
        from embodia.data.sampling import to_torch

        if not self.actions_fitted:
            self.fit_action_limits(sampler.arrays["action"])
        window = sampler.sample(batch_size)
        starts = sampler.last_starts
        ends = sampler.episode_ends
        begins = np.concatenate([[0], ends[:-1]])[np.searchsorted(ends, starts, side="right")]
        frames, past_actions = [], []
        for back in range(self.config.n_obs_steps - 1, 0, -1):
            earlier = sampler.windows(np.maximum(starts - back, begins))
            frames.append(earlier["obs"])
            past_actions.append(earlier["action"][:, :1])
        frames.append(window["obs"])
        obs = {k: np.stack([f[k] for f in frames], axis=1) for k in window["obs"]}
        actions = np.concatenate([*past_actions, window["action"]], axis=1).astype(np.float32)
        return to_torch({"obs": obs, "action": actions})

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        from embodia.perception.pixel_observations import random_shift

        cfg = self.config
        self.model.train()
        obs = dict(batch["obs"])
        # a shift per frame (the authors crop a sample's T_o frames alike)
        for key in cfg.image_keys:
            frames = obs[key]
            obs[key] = random_shift(frames.flatten(0, 1), cfg.shift, self.generator).reshape(frames.shape)
        clean = self.model.normalize_actions(batch["action"].float())
        noise = torch.randn(clean.shape, generator=self.generator)
        k = torch.randint(0, cfg.num_train_timesteps, (len(clean),), generator=self.generator)
        noisy = self.ddpm.add_noise(clean, noise, k)
        loss = nn.functional.mse_loss(self.model.unet(noisy, k, self.model.observations(obs)), noise)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.lr_schedule.step()
        decay = ema_decay(self.steps, cfg.ema_power, cfg.ema_max_decay)
        self.steps += 1
        with torch.no_grad():
            for average, trained in zip(self.ema_model.parameters(), self.model.parameters()):
                if trained.requires_grad:
                    average.lerp_(trained, 1.0 - decay)
                else:
                    average.copy_(trained)
            for average, trained in zip(self.ema_model.buffers(), self.model.buffers()):
                average.copy_(trained)
        return {"diffusion_loss": float(loss.detach()), "ema_decay": decay}

    def modules(self) -> dict[str, nn.Module]:
        return {"model": self.model, "ema_model": self.ema_model}

    def export(self, folder: Path, meta: dict[str, Any]) -> Any:
        from embodia.policies.diffusion_folder import load_diffusion_policy, save_diffusion_policy

        save_diffusion_policy(folder, self.actor, self.config, meta=meta, state_sizes=self.normalizer.sizes)
        return load_diffusion_policy(Path(folder), "torch")
