"""The ONNX graph of a pixel policy folder (``"pixel_actor"``): image encoder, projection, state statistics
and head, all in one graph (:func:`embodia.policies.onnx_export.export_onnx` calls :func:`pixel_graph`).

The graph's inputs are what the torch policy's ``act`` takes, with a batch axis in front:

- one per image key, named by the key, ``uint8`` ``(batch, S, S, 3)`` RGB pixels, ``S`` the encoder's
  ``image_size`` (the camera's raw values: conversion to float, ``/ 255``, channel order and the encoder's
  normalisation are inside the graph). The torch policy resizes images of another size before its
  encoder; the exported graph takes the encoder's size only (a robot's camera topic is configured at that
  size, so no resize runs on every frame), and the ONNX policy refuses other sizes in one line;
- one per state key, named by the key, float32 ``(batch, values)`` (standardised inside the graph).

The output is ``action``, as for actors: ``(batch, action_dim)`` or ``(batch, horizon, action_dim)``. The
check runs pixel noise and blocky random images (with state values around and far from the statistics)
through both runtimes, as a batch and one at a time.

A folder with several state keys must record how many values each has (``"state_sizes"``, which
:func:`~embodia.policies.pixel_policy.save_pixel_policy` writes); one state key needs nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.policies.onnx_export import ExportGraph
from embodia.policies.pixel_policy import PixelActorPolicy


def state_sizes(folder: Path, config: dict[str, Any]) -> list[int]:
    """Values per state key of a pixel policy folder (in ``state_keys`` order).

    Raises:
        PolicyError: several state keys and no ``state_sizes`` adding up to ``state_dim`` in config.json.
    """
    keys, total = list(config.get("state_keys", [])), int(config.get("state_dim", 0))
    recorded = config.get("state_sizes")
    if isinstance(recorded, dict) and set(recorded) == set(keys):
        sizes = [int(recorded[k]) for k in keys]
        if sum(sizes) == total:
            return sizes
    if len(keys) <= 1:
        return [total] * len(keys)
    raise PolicyError(
        f"{folder}/config.json does not record how many of its {total} state values each key {keys} has; "
        'add "state_sizes": {' + ", ".join(f'"{k}": N' for k in keys) + "} to it and export again"
    )


def _graph_module(policy: PixelActorPolicy, keys: list[str]) -> Any:
    """The policy's whole actor as one module with one tensor argument per observation key."""
    import torch

    actor = policy.actor

    class PixelPolicyGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = actor

        def forward(self, *values: torch.Tensor) -> torch.Tensor:
            out = self.actor(dict(zip(keys, values)))
            if self.actor.horizon == 1:
                return out
            return out.reshape(out.shape[0], self.actor.horizon, self.actor.action_dim)

    return PixelPolicyGraph().eval()


def _check_inputs(
    policy: PixelActorPolicy, size: int, sizes: list[int], samples: int, seed: int = 0
) -> list[np.ndarray]:
    """One row per sample: pixel noise and blocky images (random colours on a coarse grid, as large uniform
    regions of a camera image); states at, around and far from the mean.

    Uniform images (all black) are left out: a conv layer's output is then nearly constant over the image, and
    a normalisation layer divides its rounding noise by ``sqrt(eps)``, so both runtimes' outputs are noise
    there (1e-5 apart) without any fault in the export.
    """
    rng = np.random.default_rng(seed)
    rows = max(2, min(samples, 16))  # images are large: a few of them cover the graph
    observations = policy.actor.observations
    images = []
    for _ in observations.image_keys:
        pixels = rng.integers(0, 256, (rows, size, size, 3), dtype=np.uint8)
        cell = max(1, size // 8)
        coarse = rng.integers(0, 256, (rows // 2, -(-size // cell), -(-size // cell), 3), dtype=np.uint8)
        pixels[: rows // 2] = coarse.repeat(cell, axis=1).repeat(cell, axis=2)[:, :size, :size]
        images.append(pixels)
    mean = observations.state_mean.numpy().astype(np.float64)
    std = observations.state_std.numpy().astype(np.float64)
    states = mean + std * rng.normal(0.0, 2.0, (rows, mean.size))
    states[0] = mean
    states[rows // 2 :] = rng.uniform(-10.0, 10.0, (rows - rows // 2, mean.size)) * np.maximum(std, 1.0)
    split = np.split(states.astype(np.float32), np.cumsum(sizes)[:-1], axis=1) if sizes else []
    return images + [np.ascontiguousarray(part) for part in split]


def pixel_graph(policy: PixelActorPolicy, folder: Path, config: dict[str, Any], samples: int) -> ExportGraph:
    """The export graph of a ``"pixel_actor"`` folder (see the module docstring).

    Raises:
        PolicyError: several state keys without their sizes in config.json.
    """
    import torch

    observations = policy.actor.observations
    image_keys, state_keys = list(observations.image_keys), list(observations.state_keys)
    size = int(observations.encoder.image_size)
    sizes = state_sizes(folder, config)
    keys = image_keys + state_keys
    parts = _check_inputs(policy, size, sizes, samples)
    examples = [
        torch.zeros(2, size, size, 3, dtype=torch.uint8) for _ in image_keys
    ]  # batch 2: not specialised
    examples += [torch.zeros(2, n) for n in sizes]
    inputs = {k: {"shape": [size, size, 3], "dtype": "uint8"} for k in image_keys}
    inputs.update({k: {"shape": [n], "dtype": "float32"} for k, n in zip(state_keys, sizes)})
    return ExportGraph(
        module=_graph_module(policy, keys),
        names=keys,
        examples=tuple(examples),
        checks=[parts, [np.ascontiguousarray(p[:1]) for p in parts]],  # a batch, and one observation
        inputs=inputs,
    )
