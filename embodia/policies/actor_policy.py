"""Trained actors as policy folders: ``config.json`` (``"type": "actor"``) + ``model.safetensors``.

Every offline-RL method here (BC, IQL, GCIQL, DEAS) ends in the same kind of network: an
observation normalizer and an MLP actor that outputs ``horizon`` actions. This module writes that
pair to a folder and loads it back as an embodia policy; sequences (``horizon > 1``) are returned as
``(horizon, action_dim)`` chunks that :func:`embodia.runner.rollout` executes step by step.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from embodia.core.errors import PolicyError
from embodia.core.policy import register_policy_type
from embodia.policies.networks import Actor, ObsNormalizer


class ActorPolicy:
    """``act(obs)``: normalize the observation keys, run the actor, return one action or a chunk."""

    def __init__(
        self,
        actor: Actor,
        normalizer: ObsNormalizer,
        execute_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ):
        self.actor = actor.eval()
        self.normalizer = normalizer.eval()
        self.chunk_size = actor.horizon
        if execute_steps is not None:
            self.execute_steps = int(execute_steps)
        self.meta = dict(meta or {})

    def reset(self, seed: int | None = None) -> None:
        pass

    @torch.no_grad()
    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        missing = [k for k in self.normalizer.keys if k not in obs]
        if missing:
            raise PolicyError(
                f"policy needs observation keys {self.normalizer.keys}, the environment gives {sorted(obs)}"
            )
        batch = {k: torch.as_tensor(np.asarray(obs[k], dtype=np.float32))[None] for k in self.normalizer.keys}
        x = self.normalizer(batch)
        if x.shape[1] != self.normalizer.dim:
            raise PolicyError(f"policy expects {self.normalizer.dim} observation values, got {x.shape[1]}")
        actions = self.actor(x)[0].numpy().reshape(self.actor.horizon, self.actor.action_dim)
        return actions[0] if self.actor.horizon == 1 else actions


def save_actor_policy(
    folder: str | Path,
    actor: Actor,
    normalizer: ObsNormalizer,
    *,
    hidden: tuple[int, ...],
    execute_steps: int | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write a policy folder; files are replaced atomically (weights first, then the config)."""
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
    weights_tmp, config_tmp = folder / "model.safetensors.tmp", folder / "config.json.tmp"
    save_file(tensors, str(weights_tmp))
    config_tmp.write_text(json.dumps(config, indent=2, default=str))
    os.replace(weights_tmp, folder / "model.safetensors")
    os.replace(config_tmp, folder / "config.json")
    return folder


def load_actor_policy(folder: Path) -> ActorPolicy:
    config = json.loads((folder / "config.json").read_text())
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise PolicyError(f"{folder} has config.json but no model.safetensors; the export was interrupted")
    tensors = load_file(str(weights))
    normalizer = ObsNormalizer(config["obs_keys"], tensors["obs.mean"].numpy(), tensors["obs.std"].numpy())
    actor = Actor(config["obs_dim"], config["action_dim"], config["horizon"], tuple(config["hidden"]))
    try:
        actor.load_state_dict(
            {k.removeprefix("actor."): v for k, v in tensors.items() if k.startswith("actor.")}
        )
    except RuntimeError as error:
        raise PolicyError(f"{weights} does not match its config.json ({error})") from error
    meta = {
        k: v
        for k, v in config.items()
        if k not in ("type", "obs_keys", "obs_dim", "action_dim", "horizon", "hidden")
    }
    return ActorPolicy(actor, normalizer, config.get("execute_steps"), meta)


register_policy_type("actor", load_actor_policy)
