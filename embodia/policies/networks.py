"""Networks shared by the offline-RL methods: MLPs, observation encoding, critics and actors.

Every method (``bc``, ``iql``, ``gciql``, ``deas``) builds its networks from these pieces, so that a
comparison between methods compares objectives, not architectures (OGBench's reference networks:
MLPs with LayerNorm; here GELU, configurable width and depth).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn


class MLP(nn.Sequential):
    """A ``Sequential`` whose forward pass can run its matrix products in a lower precision.

    With ``matmul_dtype = torch.bfloat16`` the layers run under ``torch.autocast`` (on the CPU the linear
    layers, and then LayerNorm and GELU on their bfloat16 outputs, run in bfloat16; the returned output is cast
    to float32); the weights, their gradients and the optimiser state stay float32, so this is mixed-precision
    training as on GPUs. None (the default): plain float32.
    """

    matmul_dtype: torch.dtype | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.matmul_dtype is None:
            return super().forward(x)
        with torch.autocast(x.device.type, dtype=self.matmul_dtype):
            out = super().forward(x)
        return out.float()


def set_matmul_dtype(module: nn.Module, dtype: torch.dtype | None) -> None:
    """Set the matrix-product precision of every :class:`MLP` inside ``module`` (None: float32)."""
    for sub in module.modules():
        if isinstance(sub, MLP):
            sub.matmul_dtype = dtype


#: /proc/cpuinfo flags of the x86 instructions that make bfloat16 matrix products fast on a CPU
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.cache
def _proc_cpuinfo() -> str | None:
    """``/proc/cpuinfo``, read once per process (None where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            return file.read()
    except OSError:
        return None


def cpu_has_bfloat16(cpuinfo: str | None = None) -> bool | None:
    """Whether this CPU has bfloat16 matrix instructions (AVX512-BF16 or AMX); None where it cannot be told.

    ``cpuinfo`` is the text of Linux's ``/proc/cpuinfo`` (read when None; other systems: None). Without
    these instructions torch emulates bfloat16 products, several times slower than float32 (measured on an
    AVX2-only AMD EPYC: DEAS's update at ~0.2x its float32 rate).
    """
    if cpuinfo is None:
        cpuinfo = _proc_cpuinfo()
        if cpuinfo is None:
            return None
    flags = {flag for line in cpuinfo.splitlines() if line.startswith("flags") for flag in line.split()}
    if not flags:
        return None
    return any(flag in flags for flag in BFLOAT16_CPU_FLAGS)


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, layer_norm: bool = True) -> MLP:
    """``Linear -> [LayerNorm] -> GELU`` blocks, then a linear output layer."""
    layers: list[nn.Module] = []
    width = in_dim
    for size in hidden:
        layers.append(nn.Linear(width, size))
        if layer_norm:
            layers.append(nn.LayerNorm(size))
        layers.append(nn.GELU())
        width = size
    layers.append(nn.Linear(width, out_dim))
    return MLP(*layers)


class ObsNormalizer(nn.Module):
    """Concatenates observation keys into one vector and standardizes it with dataset statistics.

    ``sizes`` (values per key, flattened) is known when fitted or loaded from a folder that records it;
    the ONNX export needs it to give each key its own graph input.
    """

    def __init__(
        self, keys: Sequence[str], mean: np.ndarray, std: np.ndarray, sizes: Sequence[int] | None = None
    ) -> None:
        super().__init__()
        self.keys = list(keys)
        self.sizes = None if sizes is None else [int(n) for n in sizes]
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(np.maximum(std, 1e-3), dtype=torch.float32))

    @property
    def dim(self) -> int:
        return int(self.mean.numel())

    @classmethod
    def fit(cls, keys: Sequence[str], arrays: Mapping[str, np.ndarray]) -> ObsNormalizer:
        parts = [np.asarray(arrays[k], dtype=np.float32).reshape(len(arrays[k]), -1) for k in keys]
        flat = np.concatenate(parts, 1)
        return cls(keys, flat.mean(0), flat.std(0), sizes=[p.shape[1] for p in parts])

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        x = torch.cat([obs[k].reshape(obs[k].shape[0], -1).float() for k in self.keys], dim=-1)
        return (x - self.mean) / self.std


class Critic(nn.Module):
    """``Q(s, a_{t:t+H-1})``: an ensemble of MLPs over the state and a flattened action sequence.

    ``out_dim`` is 1 for a scalar critic or the number of bins of a categorical (distributional) one.
    """

    def __init__(
        self, obs_dim: int, action_dim: int, hidden: Sequence[int], out_dim: int = 1, ensemble: int = 2
    ):
        super().__init__()
        self.nets = nn.ModuleList(mlp(obs_dim + action_dim, hidden, out_dim) for _ in range(ensemble))

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Returns ``(ensemble, batch, out_dim)``."""
        x = torch.cat([obs, actions.reshape(actions.shape[0], -1)], dim=-1)
        return torch.stack([net(x) for net in self.nets])


class Actor(nn.Module):
    """Deterministic ``pi(s) = tanh(f(s))`` over a flattened action sequence of ``horizon`` steps.

    A learned state-independent log-std makes it a Gaussian for AWR's log-likelihood; acting uses the mean.
    """

    def __init__(self, obs_dim: int, action_dim: int, horizon: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.action_dim, self.horizon = action_dim, horizon
        self.net = mlp(obs_dim, hidden, action_dim * horizon)
        self.log_std = nn.Parameter(torch.full((action_dim * horizon,), -1.0))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Mean action sequence, ``(batch, horizon * action_dim)`` in [-1, 1]."""
        return torch.tanh(self.net(obs))

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Gaussian log-likelihood of dataset action sequences (clipped into the tanh range)."""
        mean = self.forward(obs)
        target = actions.reshape(actions.shape[0], -1).clamp(-1 + 1e-4, 1 - 1e-4)
        log_std = self.log_std.clamp(-5.0, 1.0)
        return (-0.5 * ((target - mean) / log_std.exp()) ** 2 - log_std).sum(-1)


def expectile_weights(diff: torch.Tensor, tau: float) -> torch.Tensor:
    """``|tau - 1(diff < 0)|``: the asymmetric weights of expectile regression (diff = target - prediction)."""
    return torch.abs(tau - (diff < 0).float())


def expectile_loss(diff: torch.Tensor, tau: float) -> torch.Tensor:
    """Per-sample ``|tau - 1(u < 0)| * u^2`` (IQL's value loss; ``tau = 0.5`` is half the squared error)."""
    return expectile_weights(diff, tau) * diff**2


def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target <- (1 - tau) * target + tau * source`` (soft target update)."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters()):
            t.lerp_(s, tau)
