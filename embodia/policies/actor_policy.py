"""Trained actors as policy folders: ``config.json`` (``"type": "actor"``) + ``model.safetensors``.

Every offline-RL method here (BC, IQL, GCIQL, DEAS) ends in the same kind of network: an
observation normalizer and an MLP actor that outputs ``horizon`` actions. This module writes that
pair to a folder and loads it back as an embodia policy; sequences (``horizon > 1``) are returned as
``(horizon, action_dim)`` chunks that :func:`embodia.runner.rollout` executes step by step.

A folder may also hold ``model.onnx`` (``embodia export PATH --onnx``, :mod:`embodia.policies.onnx_export`),
recorded in config.json under ``"onnx"``; :func:`load_actor_policy` then runs it through ONNX Runtime
(:mod:`embodia.policies.onnx_policy`) when asked to, or when torch is not installed. This module imports
no torch at module level: a torch-free robot install imports it to find the ``"actor"`` loader.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.core.policy import register_policy_type

if TYPE_CHECKING:
    from embodia.policies.networks import Actor, ObsNormalizer

#: the file an ONNX export writes beside config.json
ONNX_FILE = "model.onnx"
#: config.json keys that describe the folder's format; every other key is metadata (method, env_id, ...)
FORMAT_KEYS = (
    "type", "obs_keys", "obs_dim", "obs_sizes", "action_dim", "horizon", "hidden", "onnx", "noise_dim", "flow_steps",
    "best_of_n", "critic_bins",
)  # fmt: skip


def actor_meta(config: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata of a policy folder's config (what ``policy.meta`` holds)."""
    return {k: v for k, v in config.items() if k not in FORMAT_KEYS}


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file (ties an exported model.onnx to the weights it was exported from)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def torch_available() -> bool:
    """Whether torch can be imported (checked without importing it; ``sys.modules["torch"] = None`` blocks it)."""
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def observation_values(
    obs: Mapping[str, Any], keys: list[str], dim: int, sizes: list[int] | None = None
) -> list[np.ndarray]:
    """Each key's values as a ``(1, n)`` float32 row; the errors of every actor runtime (torch, ONNX).

    Raises:
        PolicyError: a key is missing, the values do not add up to ``dim``, or a key has the wrong size.
    """
    missing = [k for k in keys if k not in obs]
    if missing:
        raise PolicyError(f"policy needs observation keys {keys}, the environment gives {sorted(obs)}")
    return observation_batch({k: np.asarray(obs[k]).reshape(1, -1) for k in keys}, keys, dim, sizes)


def observation_batch(
    obs_batch: Mapping[str, Any], keys: list[str], dim: int, sizes: list[int] | None = None
) -> list[np.ndarray]:
    """Each key's values as a ``(batch, n)`` float32 array; the batched :func:`observation_values`.

    Raises:
        PolicyError: a key is missing, the keys disagree on the batch size, the values do not add up to
            ``dim``, or a key has the wrong size.
    """
    missing = [k for k in keys if k not in obs_batch]
    if missing:
        raise PolicyError(f"policy needs observation keys {keys}, the environment gives {sorted(obs_batch)}")
    arrays = [np.asarray(obs_batch[k], dtype=np.float32) for k in keys]
    if any(a.ndim == 0 for a in arrays) or len({len(a) for a in arrays}) != 1:
        raise PolicyError(
            f"a batch of observations needs a leading batch axis of one length for keys {keys}, got shapes "
            f"{[a.shape for a in arrays]}"
        )
    values = [np.ascontiguousarray(a.reshape(len(a), -1)) for a in arrays]
    total = sum(v.shape[1] for v in values)
    if total != dim:
        raise PolicyError(f"policy expects {dim} observation values, got {total}")
    for key, value, size in zip(keys, values, sizes or ()):
        if value.shape[1] != size:
            raise PolicyError(
                f"policy expects {size} values for observation key {key!r}, got {value.shape[1]}"
            )
    return values


class ActorPolicy:
    """``act(obs)``: normalize the observation keys, run the actor, return one action or a chunk."""

    def __init__(
        self,
        actor: Actor,
        normalizer: ObsNormalizer,
        execute_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ):
        import torch

        self._torch = torch
        self.actor = actor.eval()
        self.normalizer = normalizer.eval()
        self.chunk_size = actor.horizon
        if execute_steps is not None:
            self.execute_steps = int(execute_steps)
        self.meta = dict(meta or {})
        self.noise_dim = int(getattr(actor, "noise_dim", 0))
        """Noise-driven actors (flow and one-step policies, :mod:`embodia.policies.flow`) get ``z ~ N(0, I)``
        per decision from a generator seeded at :meth:`reset`."""
        self._noise = torch.Generator().manual_seed(0)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._noise.manual_seed(int(seed))

    def _forward(self, x: Any) -> Any:
        if not self.noise_dim:
            return self.actor(x)
        noise = self._torch.randn(x.shape[0], self.noise_dim, generator=self._noise)
        return self.actor(x, noise)

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        torch, keys = self._torch, self.normalizer.keys
        values = observation_values(obs, keys, self.normalizer.dim, self.normalizer.sizes)
        with torch.no_grad():
            x = self.normalizer({k: torch.from_numpy(v) for k, v in zip(keys, values)})
            actions = self._forward(x)[0].numpy().reshape(self.actor.horizon, self.actor.action_dim)
        return actions[0] if self.actor.horizon == 1 else actions

    def act_batch(self, obs_batch: Mapping[str, Any]) -> np.ndarray:
        """``act`` for a batch in one forward pass: ``(batch, action_dim)`` or ``(batch, horizon, action_dim)``."""
        torch, keys = self._torch, self.normalizer.keys
        values = observation_batch(obs_batch, keys, self.normalizer.dim, self.normalizer.sizes)
        with torch.no_grad():
            x = self.normalizer({k: torch.from_numpy(v) for k, v in zip(keys, values)})
            out = self._forward(x).numpy()
        actions = out.reshape(len(out), self.actor.horizon, self.actor.action_dim)
        return actions[:, 0] if self.actor.horizon == 1 else actions


def save_actor_policy(
    folder: str | Path,
    actor: Actor,
    normalizer: ObsNormalizer,
    *,
    hidden: tuple[int, ...],
    execute_steps: int | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write a policy folder; files are replaced atomically (weights first, then the config).

    A ``model.onnx`` exported from earlier weights is removed first (it no longer matches them).
    """
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"actor.{k}": v.detach().contiguous() for k, v in actor.state_dict().items()}
    tensors.update({"obs.mean": normalizer.mean.contiguous(), "obs.std": normalizer.std.contiguous()})
    config = {
        "type": "actor",
        "obs_keys": normalizer.keys,
        "obs_dim": normalizer.dim,
        "action_dim": actor.action_dim,
        "horizon": actor.horizon,
        "hidden": list(hidden),
        "execute_steps": execute_steps,
        **dict(meta or {}),
    }
    if getattr(actor, "noise_dim", 0):  # a flow or one-step policy (embodia.policies.flow.FlowPolicy)
        config.update(noise_dim=actor.noise_dim, flow_steps=actor.flow_steps)
    if hasattr(actor, "samples") and hasattr(actor, "critic"):  # best-of-N: flow + critic (.best_of_n)
        config.update(
            best_of_n=actor.samples, critic_bins=int(actor.centers.numel()) if actor.categorical else 1
        )
    if normalizer.sizes is not None:
        config["obs_sizes"] = dict(zip(normalizer.keys, normalizer.sizes))
    weights_tmp, config_tmp = folder / "model.safetensors.tmp", folder / "config.json.tmp"
    save_file(tensors, str(weights_tmp))
    config_tmp.write_text(json.dumps(config, indent=2, default=str))
    (folder / ONNX_FILE).unlink(missing_ok=True)
    os.replace(weights_tmp, folder / "model.safetensors")
    os.replace(config_tmp, folder / "config.json")
    return folder


def _load_torch_actor(folder: Path, config: dict[str, Any]) -> ActorPolicy:
    """The folder's safetensors weights in torch modules."""
    if not torch_available():
        raise PolicyError(
            f"runtime 'torch' needs torch, which is not installed; load {str(folder)!r} with runtime='onnx' "
            f"(after `embodia export {folder} --onnx` on a machine with torch)"
        )
    from safetensors.torch import load_file

    from embodia.policies.networks import Actor, ObsNormalizer

    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise PolicyError(f"{folder} has config.json but no model.safetensors; the export was interrupted")
    tensors = load_file(str(weights))
    sizes = config.get("obs_sizes")
    normalizer = ObsNormalizer(
        config["obs_keys"],
        tensors["obs.mean"].numpy(),
        tensors["obs.std"].numpy(),
        sizes=[sizes[k] for k in config["obs_keys"]] if isinstance(sizes, dict) else None,
    )
    if config.get("best_of_n"):
        import torch

        from embodia.policies.best_of_n import BestOfNPolicy
        from embodia.policies.flow import FlowPolicy
        from embodia.policies.networks import Critic

        obs_dim, action_dim, horizon = config["obs_dim"], config["action_dim"], config["horizon"]
        hidden, bins = tuple(config["hidden"]), int(config.get("critic_bins", 1))
        flow = FlowPolicy(obs_dim, action_dim, horizon, hidden, config["flow_steps"])
        critic = Critic(obs_dim, action_dim * horizon, hidden, bins)
        actor = BestOfNPolicy(flow, critic, config["best_of_n"], torch.zeros(bins) if bins > 1 else None)
    elif config.get("noise_dim"):
        from embodia.policies.flow import FlowPolicy

        actor = FlowPolicy(
            config["obs_dim"],
            config["action_dim"],
            config["horizon"],
            tuple(config["hidden"]),
            config["flow_steps"],
        )
    else:
        actor = Actor(config["obs_dim"], config["action_dim"], config["horizon"], tuple(config["hidden"]))
    try:
        actor.load_state_dict(
            {k.removeprefix("actor."): v for k, v in tensors.items() if k.startswith("actor.")}
        )
    except RuntimeError as error:
        raise PolicyError(f"{weights} does not match its config.json ({error})") from error
    return ActorPolicy(actor, normalizer, config.get("execute_steps"), actor_meta(config))


def auto_runtime(folder: Path, config: Mapping[str, Any]) -> str:
    """torch when it is installed and the folder has its weights, else the exported model.onnx."""
    has_torch = torch_available()
    if has_torch and (folder / "model.safetensors").is_file():
        return "torch"
    if isinstance(config.get("onnx"), dict) and (folder / ONNX_FILE).is_file():
        return "onnx"
    if has_torch:
        return "torch"  # says that the weights are missing
    raise PolicyError(
        f"{str(folder)!r} has no model.onnx and torch is not installed to run model.safetensors; export the "
        f"policy with `embodia export {folder} --onnx` on a machine with torch"
    )


def load_actor_policy(folder: Path, runtime: str = "auto") -> Any:
    """Load an ``"actor"`` folder with torch (:class:`ActorPolicy`) or ONNX Runtime (``OnnxActorPolicy``).

    ``runtime``: ``"torch"``, ``"onnx"`` or ``"auto"`` (torch when installed, else model.onnx).
    """
    config = json.loads((folder / "config.json").read_text())
    if runtime == "auto":
        runtime = auto_runtime(folder, config)
    if runtime == "onnx":
        from embodia.policies.onnx_policy import load_onnx_actor_policy

        return load_onnx_actor_policy(folder, config)
    return _load_torch_actor(folder, config)


register_policy_type("actor", load_actor_policy)
