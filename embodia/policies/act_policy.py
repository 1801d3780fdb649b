"""ACT policies as folders (``config.json`` with ``"type": "act"`` + ``model.safetensors``), temporal ensembling,
and their ONNX graph.

The folder holds the whole :class:`~embodia.policies.act.ACTModel` (state and action statistics included) and,
in config.json, the ACT config it was built with (``"act_config"``) and the image backbone's description
(``"encoder"``: ``act-resnet``, a registered encoder kind, or a transformers folder). It loads with
:func:`embodia.load_policy` and runs through the one chunk runner (:class:`embodia.core.chunks.ActionChunker`):

- without temporal ensembling (``temporal_ensemble`` null), :class:`ActPolicy` returns ``(chunk, action_dim)``
  chunks, which the runner executes for ``execute_steps`` steps before asking again;
- with it (the paper's m = 0.01), the loader wraps the policy in :class:`TemporalEnsemblingPolicy`, which
  runs the network on every call and returns *one action*, the ensemble of every chunk's prediction for the
  current step (:class:`TemporalEnsembler`). The chunk runner treats an output of an action's shape as one
  action and so asks the policy again at the next step: ensembling needs nothing from the runner, and runs
  the same in simulation, in evaluation and in the ROS 2 node. It keeps state between steps, so it is
  reset with each episode (the runner does) and the vectorised runner needs one policy per environment.

``embodia export PATH --onnx`` (:func:`embodia.policies.onnx_export.export_onnx`, through :func:`act_graph`)
writes the policy network as one graph: uint8 ``(batch, S, S, 3)`` images per camera key (``S`` the
backbone's size), float32 ``(batch, values)`` per state key, output ``action`` ``(batch, chunk, action_dim)``
in the environment's units (standardisation and ``z = 0`` inside; the CVAE encoder, used only in training,
is not in it). The inputs are those of a pixel policy's graph, so ONNX Runtime runs it with
:class:`~embodia.policies.onnx_pixel_policy.OnnxPixelPolicy`, and temporal ensembling, in NumPy, wraps that
the same way. This module imports no torch (it registers the folder type); loading with torch does.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.core.policy import register_policy_type
from embodia.policies.actor_policy import (
    ONNX_FILE,
    actor_meta,
    auto_runtime,
    observation_batch,
    torch_available,
)

FORMAT_KEYS = (
    "type", "act_config", "encoder", "image_keys", "state_keys", "state_sizes", "state_dim", "action_dim",
    "horizon", "temporal_ensemble", "onnx",
)  # fmt: skip


def ensemble_weights(count: int, m: float) -> np.ndarray:
    """``w_i = exp(-m i)`` for ``i = 0 .. count-1`` (``i = 0`` the oldest prediction), normalised to sum 1."""
    weights = np.exp(-float(m) * np.arange(count, dtype=np.float64))
    return weights / weights.sum()


class TemporalEnsembler:
    """ACT's temporal ensembling (the paper's section IV, the code's ``temporal_agg``): given the chunk
    predicted at each step, the action for that step is ``sum_i w_i A[i] / sum_i w_i`` over every chunk that
    covers it, ``A[0]`` the oldest (predicted ``len - 1`` steps ago, its entry at that offset), ``A[-1]`` this
    step's chunk's first action; ``w_i = exp(-m i)``."""

    def __init__(self, m: float, chunk: int) -> None:
        self.m, self.chunk = float(m), int(chunk)
        self._chunks: deque[np.ndarray] = deque(maxlen=self.chunk)

    def reset(self) -> None:
        """Forget every earlier prediction (a new episode)."""
        self._chunks.clear()

    def __call__(self, chunk: np.ndarray) -> np.ndarray:
        """Add this step's ``(chunk, ...)`` prediction; the ensembled action for this step."""
        chunk = np.asarray(chunk, dtype=np.float64)
        if len(chunk) != self.chunk:
            raise PolicyError(f"temporal ensembling expects chunks of {self.chunk} actions, got {len(chunk)}")
        self._chunks.append(chunk)
        n = len(self._chunks)
        predictions = np.stack([c[n - 1 - i] for i, c in enumerate(self._chunks)])  # oldest first
        weights = ensemble_weights(n, self.m).reshape(n, *([1] * (predictions.ndim - 1)))
        return (weights * predictions).sum(axis=0).astype(np.float32)


class TemporalEnsemblingPolicy:
    """A chunk policy (torch or ONNX) queried every step, returning the ensembled action (one action)."""

    chunk_size = 1
    #: its ensembler remembers the episode's earlier chunks (``embodia.core.policy.is_stateful``)
    stateful = True

    def __init__(self, policy: Any, m: float) -> None:
        self.policy = policy
        self.horizon = int(policy.chunk_size)
        self.ensembler = TemporalEnsembler(m, self.horizon)
        self.meta = dict(getattr(policy, "meta", {}))

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)
        self.ensembler.reset()

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        out = np.asarray(self.policy.act(obs))
        return self.ensembler(out.reshape(self.horizon, -1) if self.horizon == 1 else out)


def _image_keys_check(out: Mapping[str, Any], keys: Sequence[str]) -> None:
    for key in keys:
        if out[key].ndim != 4 or out[key].shape[-1] != 3:
            raise PolicyError(f"observation {key!r} should be (H, W, 3) images, got {tuple(out[key].shape)}")


class ActPolicy:
    """``act(obs)``: the ACT network (``z = 0``) on one observation; a ``(chunk, action_dim)`` chunk."""

    def __init__(
        self,
        model: Any,
        state_sizes: Sequence[int],
        execute_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model.eval()
        self.image_keys, self.state_keys = list(model.image_keys), list(model.state_keys)
        self.state_sizes = [int(n) for n in state_sizes]
        self.chunk_size = int(model.horizon)
        if execute_steps is not None:
            self.execute_steps = int(execute_steps)
        self.meta = dict(meta or {})

    def reset(self, seed: int | None = None) -> None:
        pass

    def _tensors(self, obs: Mapping[str, Any], batched: bool) -> dict[str, Any]:
        import torch

        keys = self.image_keys + self.state_keys
        missing = [k for k in keys if k not in obs]
        if missing:
            raise PolicyError(f"policy needs observation keys {keys}, the environment gives {sorted(obs)}")
        out = {}
        for key in self.image_keys:
            array = np.asarray(obs[key])
            value = torch.as_tensor(array) if array.flags.writeable else torch.tensor(array)
            out[key] = value if batched else value.unsqueeze(0)
        _image_keys_check(out, self.image_keys)
        if self.state_keys:
            states = {k: obs[k] if batched else np.asarray(obs[k]).reshape(1, -1) for k in self.state_keys}
            values = observation_batch(states, self.state_keys, sum(self.state_sizes), self.state_sizes)
            out.update({k: torch.from_numpy(v) for k, v in zip(self.state_keys, values)})
        return out

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.model(self._tensors(obs, batched=False))[0].numpy()
        return out[0] if self.chunk_size == 1 else out

    def act_batch(self, obs_batch: Mapping[str, Any]) -> np.ndarray:
        """``act`` for a batch in one forward pass: ``(batch, chunk, action_dim)`` (``(batch, action_dim)`` for 1)."""
        import torch

        with torch.no_grad():
            out = self.model(self._tensors(obs_batch, batched=True)).numpy()
        return out[:, 0] if self.chunk_size == 1 else out


def save_act_policy(
    folder: str | Path,
    model: Any,
    config: Any,
    meta: Mapping[str, Any] | None = None,
    state_sizes: Sequence[int] | None = None,
) -> Path:
    """Write an ``"act"`` folder: the weights, then config.json, each replaced atomically; an older model.onnx
    is removed (it no longer matches). ``state_sizes``: values per state key (needed with several keys)."""
    from safetensors.torch import save_file

    from embodia.perception.pixel_observations import encoder_description

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings = dataclasses.asdict(config)
    if state_sizes is None:
        if len(model.state_keys) > 1:
            raise PolicyError(f"save_act_policy needs state_sizes for the state keys {model.state_keys}")
        state_sizes = [model.state_dim] * len(model.state_keys)
    description = {
        "type": "act",
        "act_config": settings,
        "encoder": encoder_description(model.encoder) if model.encoder is not None else None,
        "image_keys": model.image_keys,
        "state_keys": model.state_keys,
        "state_sizes": dict(zip(model.state_keys, (int(n) for n in state_sizes))),
        "state_dim": model.state_dim,
        "action_dim": model.action_dim,
        "horizon": model.horizon,
        "temporal_ensemble": config.temporal_ensemble,
        "execute_steps": config.execute_steps,
        **dict(meta or {}),
    }
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors.tmp"))
    (folder / "config.json.tmp").write_text(json.dumps(description, indent=2, default=str))
    (folder / ONNX_FILE).unlink(missing_ok=True)
    os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
    os.replace(folder / "config.json.tmp", folder / "config.json")
    return folder


def _state_sizes(config: Mapping[str, Any]) -> list[int]:
    keys, recorded = list(config["state_keys"]), config.get("state_sizes") or {}
    try:
        return [int(recorded[k]) for k in keys]
    except (KeyError, TypeError, ValueError):
        raise PolicyError(
            f"config.json does not record the sizes of the state keys {keys}; save again"
        ) from None


def _load_torch_act(folder: Path, config: dict[str, Any]) -> ActPolicy:
    if not torch_available():
        raise PolicyError(
            f"runtime 'torch' needs torch, which is not installed; load {str(folder)!r} with runtime='onnx' "
            f"(after `embodia export {folder} --onnx` on a machine with torch)"
        )
    import torch
    from safetensors.torch import load_file

    from embodia.core.validation import validate
    from embodia.perception.pixel_observations import encoder_from_description
    from embodia.policies.act import ACTConfig, ACTModel

    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise PolicyError(f"{folder} has config.json but no model.safetensors; the export was interrupted")
    try:
        settings = validate(ACTConfig, config["act_config"], where="act config")
        encoder = encoder_from_description(config["encoder"]) if config.get("encoder") else None
        state_dim = int(config.get("state_dim", 0))
        model = ACTModel(
            settings,
            int(config["action_dim"]),
            torch.zeros(state_dim),
            torch.ones(state_dim),
            encoder=encoder,
        )
        model.load_state_dict(load_file(str(weights)))
    except (KeyError, RuntimeError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PolicyError(f"{folder} is not a loadable ACT policy: {first}") from None
    return ActPolicy(model, _state_sizes(config), config.get("execute_steps"), act_meta(config))


def act_meta(config: Mapping[str, Any]) -> dict[str, Any]:
    """What ``policy.meta`` holds: config.json less the format keys."""
    return actor_meta({k: v for k, v in config.items() if k not in FORMAT_KEYS})


def _load_onnx_act(folder: Path, config: dict[str, Any]) -> Any:
    from embodia.policies.onnx_pixel_policy import OnnxPixelPolicy
    from embodia.policies.onnx_policy import onnx_model_path

    model = onnx_model_path(folder, config)
    return OnnxPixelPolicy(
        model,
        image_keys=list(config["image_keys"]),
        state_keys=list(config["state_keys"]),
        state_sizes=_state_sizes(config),
        action_dim=config["action_dim"],
        horizon=config["horizon"],
        execute_steps=config.get("execute_steps"),
        meta=act_meta(config),
    )


def load_act_policy(folder: Path, runtime: str = "auto") -> Any:
    """Load an ``"act"`` folder with torch (:class:`ActPolicy`) or ONNX Runtime (``OnnxPixelPolicy``), wrapped
    in :class:`TemporalEnsemblingPolicy` when the folder's ``temporal_ensemble`` is set."""
    config = json.loads((folder / "config.json").read_text())
    if runtime == "auto":
        runtime = auto_runtime(folder, config)
    policy = _load_onnx_act(folder, config) if runtime == "onnx" else _load_torch_act(folder, config)
    m = config.get("temporal_ensemble")
    return policy if m is None else TemporalEnsemblingPolicy(policy, float(m))


def _check_inputs(model: Any, size: int, sizes: list[int], samples: int, seed: int = 0) -> list[np.ndarray]:
    """Images (pixel noise and blocky colour regions) per camera and states at, around and far from the mean."""
    rng = np.random.default_rng(seed)
    rows = max(2, min(samples, 8))
    parts = []
    for _ in model.image_keys:
        pixels = rng.integers(0, 256, (rows, size, size, 3), dtype=np.uint8)
        cell = max(1, size // 8)
        coarse = rng.integers(0, 256, (rows // 2, -(-size // cell), -(-size // cell), 3), dtype=np.uint8)
        pixels[: rows // 2] = coarse.repeat(cell, axis=1).repeat(cell, axis=2)[:, :size, :size]
        parts.append(pixels)
    mean, std = model.state_mean.numpy().astype(np.float64), model.state_std.numpy().astype(np.float64)
    states = mean + std * rng.normal(0.0, 2.0, (rows, mean.size))
    states[0] = mean
    states[rows // 2 :] = rng.uniform(-10.0, 10.0, (rows - rows // 2, mean.size)) * np.maximum(std, 1.0)
    if sizes:
        parts += [
            np.ascontiguousarray(p)
            for p in np.split(states.astype(np.float32), np.cumsum(sizes)[:-1], axis=1)
        ]
    return parts


def act_graph(policy: Any, folder: Path, config: dict[str, Any], samples: int) -> Any:
    """The export graph of an ``"act"`` folder (:func:`embodia.policies.onnx_export.export_onnx` calls it)."""
    import torch

    from embodia.policies.onnx_export import ExportGraph

    inner = policy.policy if isinstance(policy, TemporalEnsemblingPolicy) else policy
    model = inner.model.eval()
    keys = list(model.image_keys) + list(model.state_keys)
    sizes = _state_sizes(config)
    size = int(model.encoder.image_size) if model.encoder is not None else 0

    class ActGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *values: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(keys, values)))

    parts = _check_inputs(model, size, sizes, samples)
    examples = [
        torch.zeros(2, size, size, 3, dtype=torch.uint8) for _ in model.image_keys
    ]  # batch 2: dynamic
    examples += [torch.zeros(2, n) for n in sizes]
    inputs = {k: {"shape": [size, size, 3], "dtype": "uint8"} for k in model.image_keys}
    inputs.update({k: {"shape": [n], "dtype": "float32"} for k, n in zip(model.state_keys, sizes)})
    return ExportGraph(
        module=ActGraph().eval(),
        names=keys,
        examples=tuple(examples),
        checks=[parts, [np.ascontiguousarray(p[:1]) for p in parts]],  # a batch, and one observation
        inputs=inputs,
    )


register_policy_type("act", load_act_policy)
