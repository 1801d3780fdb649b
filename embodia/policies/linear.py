"""A linear policy ``a = W x + b`` over concatenated observation keys: the smallest trained-policy folder.

It shows the policy-folder format every learned policy uses (``config.json`` with a ``type`` +
``model.safetensors``), loads without torch, and is handy for tests and for linear probes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file

from embodia.core.errors import PolicyError
from embodia.core.policy import register_policy_type


class LinearPolicy:
    """``act(obs) = weight @ concat(obs[k] for k in obs_keys) + bias``."""

    chunk_size = 1

    def __init__(self, weight: np.ndarray, bias: np.ndarray, obs_keys: list[str]) -> None:
        self.weight = np.asarray(weight, dtype=np.float32)
        self.bias = np.asarray(bias, dtype=np.float32)
        self.obs_keys = list(obs_keys)
        if self.weight.ndim != 2 or self.bias.shape != (self.weight.shape[0],):
            raise PolicyError(
                f"linear policy needs weight (A, D) and bias (A,), got {self.weight.shape}, {self.bias.shape}"
            )

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any) -> np.ndarray:
        missing = [k for k in self.obs_keys if k not in obs]
        if missing:
            raise PolicyError(
                f"linear policy needs observation keys {self.obs_keys}, the environment gives {sorted(obs)}"
            )
        x = np.concatenate([np.ravel(obs[k]) for k in self.obs_keys]).astype(np.float32)
        if x.shape[0] != self.weight.shape[1]:
            raise PolicyError(
                f"linear policy expects {self.weight.shape[1]} inputs from keys {self.obs_keys}, got {x.shape[0]}"
            )
        return self.weight @ x + self.bias

    def act_batch(self, obs_batch: Any) -> np.ndarray:
        """``act`` for a batch (dict of arrays with a leading batch axis) in one matrix product: ``(batch, A)``."""
        missing = [k for k in self.obs_keys if k not in obs_batch]
        if missing:
            raise PolicyError(
                f"linear policy needs observation keys {self.obs_keys}, the environment gives {sorted(obs_batch)}"
            )
        arrays = [np.asarray(obs_batch[k]) for k in self.obs_keys]
        if any(a.ndim == 0 for a in arrays) or len({len(a) for a in arrays}) != 1:
            raise PolicyError(
                f"a batch of observations needs a leading batch axis of one length, got {[a.shape for a in arrays]}"
            )
        x = np.concatenate([a.reshape(len(a), -1) for a in arrays], axis=1).astype(np.float32)
        if x.shape[1] != self.weight.shape[1]:
            raise PolicyError(
                f"linear policy expects {self.weight.shape[1]} inputs from keys {self.obs_keys}, got {x.shape[1]}"
            )
        return x @ self.weight.T + self.bias

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({"weight": self.weight, "bias": self.bias}, str(folder / "model.safetensors"))
        (folder / "config.json").write_text(
            json.dumps({"type": "linear", "obs_keys": self.obs_keys}, indent=2)
        )
        return folder


def load_linear_policy(folder: Path, runtime: str = "auto") -> LinearPolicy:
    """Load a ``"linear"`` folder; NumPy only, so every ``runtime`` runs it the same way."""
    config = json.loads((folder / "config.json").read_text())
    weights_path = folder / "model.safetensors"
    if not weights_path.is_file():
        raise PolicyError(f"{folder} has no model.safetensors")
    tensors = load_file(str(weights_path))
    return LinearPolicy(tensors["weight"], tensors["bias"], config["obs_keys"])


register_policy_type("linear", load_linear_policy)
