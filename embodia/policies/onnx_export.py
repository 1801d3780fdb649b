"""Export a trained policy folder to ONNX (``embodia export PATH --onnx``), checked against torch.

Every trainable state policy (BC with and without chunks, IQL, GCIQL, DEAS) is an ``"actor"`` folder: an
observation normaliser and an MLP actor (:mod:`embodia.policies.actor_policy`). The exported graph holds
both:

- inputs: one per observation key, named by the key, float32, ``(batch, values)`` (the key's values
  flattened; ``batch`` dynamic);
- concatenation, ``(x - mean) / std``, the actor's MLP and tanh;
- output ``action``: ``(batch, action_dim)`` for single actions, ``(batch, horizon, action_dim)`` for chunks.

Pixel policies (``"pixel_actor"`` folders, :mod:`embodia.policies.pixel_policy`) export their whole
network, image encoder included: one uint8 ``(batch, S, S, 3)`` input per image key (``S`` the encoder's
image size) and one float32 ``(batch, values)`` input per state key (:mod:`embodia.policies.onnx_pixel_export`).

The exporter is torch's ``torch.export``-based one (``torch.onnx.export(..., dynamo=True)``, which needs
onnxscript), at opset :data:`OPSET`. ``check=True`` runs the graph in ONNX Runtime and the folder's policy
in torch on the same inputs (for actors: the normaliser's mean, values a few standard deviations around it,
and arbitrary ones; for pixel policies: random images), one batch and one single
observation, and refuses the export if any output differs by more than ``atol``. The model is written to
``model.onnx.tmp``, checked, renamed to ``model.onnx``; then config.json gains ``"onnx": {"file", "opset",
"max_abs_diff", "atol", "weights_sha256", ...}``, which readers of the other keys ignore and which ties the
model to the weights it came from.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.core.policy import load_policy
from embodia.policies.actor_policy import ONNX_FILE, ActorPolicy, file_sha256
from embodia.policies.onnx_policy import OUTPUT_NAME
from embodia.policies.pixel_policy import PixelActorPolicy

if TYPE_CHECKING:
    import torch

#: ONNX opset of exported graphs (LayerNormalization needs 17; ONNX Runtime >= 1.14 runs 18)
OPSET = 18
#: the packages the export needs besides torch
_EXPORT_PACKAGES = {
    "onnx": "onnx==1.23.2",
    "onnxscript": "onnxscript==0.7.2",
    "onnxruntime": "onnxruntime==1.32.0",
}


@dataclass
class ExportGraph:
    """One policy as the exporter sees it: a module with one tensor argument per graph input, and the inputs
    the check compares ONNX Runtime with torch on."""

    module: Any
    """``torch.nn.Module`` in eval mode; ``forward(*inputs)`` returns the ``action`` output"""
    names: list[str]
    """the graph's input names (observation keys), in ``forward``'s argument order"""
    examples: tuple[Any, ...]
    """one example tensor per input with batch 2 (the batch dimension is exported dynamic)"""
    checks: list[list[np.ndarray]]
    """inputs of the check: each item one array per input (a batch, and a single observation)"""
    inputs: dict[str, Any]
    """what config.json's ``onnx.inputs`` records about the inputs"""


def policy_folder(path: str | Path) -> Path:
    """A policy folder, or a run directory's ``policy/`` folder (as ``embodia eval`` accepts)."""
    path = Path(path)
    if (path / "policy" / "config.json").is_file():
        return path / "policy"
    return path


def _graph_module(policy: ActorPolicy) -> torch.nn.Module:
    """The policy's normaliser and actor as one module with one tensor argument per observation key."""
    import torch

    normalizer, actor = policy.normalizer, policy.actor

    class PolicyGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.normalizer, self.actor = normalizer, actor

        def forward(self, *values: torch.Tensor) -> torch.Tensor:
            x = self.normalizer(dict(zip(self.normalizer.keys, values)))
            out = self.actor(x)
            if self.actor.horizon == 1:
                return out
            return out.reshape(out.shape[0], self.actor.horizon, self.actor.action_dim)

    return PolicyGraph().eval()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the exporter's progress lines, warnings and log records (errors still raise)."""
    loggers = [
        logging.getLogger(name) for name in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _export(graph: ExportGraph, out: Path) -> None:
    import torch

    batch = torch.export.Dim("batch")
    try:
        with _quiet(), torch.no_grad():
            program = torch.onnx.export(
                graph.module,
                graph.examples,
                dynamo=True,
                opset_version=OPSET,
                input_names=graph.names,
                output_names=[OUTPUT_NAME],
                dynamic_shapes=(tuple({0: batch} for _ in graph.names),),
                optimize=True,
                verbose=False,
            )
            program.save(str(out), external_data=False)
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise PolicyError(
            f"torch could not export the policy to ONNX: {type(error).__name__}: {first}"
        ) from None


def _inputs(policy: ActorPolicy, samples: int, seed: int = 0) -> np.ndarray:
    """``(rows, obs_dim)`` float32: the mean, values around it, and arbitrary values."""
    rng = np.random.default_rng(seed)
    mean = policy.normalizer.mean.numpy().astype(np.float64)
    std = policy.normalizer.std.numpy().astype(np.float64)
    near = mean + std * rng.normal(0.0, 2.0, (max(samples // 2, 1), mean.size))
    wide = rng.uniform(-10.0, 10.0, (max(samples - len(near) - 1, 1), mean.size)) * np.maximum(std, 1.0)
    return np.concatenate([mean[None], near, wide]).astype(np.float32)


def _actor_graph(policy: ActorPolicy, folder: Path, config: dict[str, Any], samples: int) -> ExportGraph:
    """An ``"actor"`` folder's graph: normaliser + MLP, one ``(batch, values)`` float32 input per key."""
    import torch

    keys = list(policy.normalizer.keys)
    sizes = _obs_sizes(folder, config)
    split = np.split(_inputs(policy, samples), np.cumsum(sizes)[:-1], axis=1)
    checks = [[np.ascontiguousarray(p[rows]) for p in split] for rows in (slice(None), slice(0, 1))]
    return ExportGraph(
        module=_graph_module(policy),
        names=keys,
        examples=tuple(torch.zeros(2, n) for n in sizes),  # batch 2: sizes 0 and 1 would be specialised
        checks=checks,
        inputs=dict(zip(keys, sizes)),
    )


def _max_difference(graph: ExportGraph, model: Path) -> float:
    """Largest ``|onnx - torch|`` over the graph's check inputs (inf if ONNX gives non-finite values)."""
    import torch

    from embodia.policies.onnx_policy import inference_session

    session = inference_session(model, threads=1)
    worst = 0.0
    for parts in graph.checks:  # a batch, and one observation (batch dimension 1)
        (got,) = session.run([OUTPUT_NAME], dict(zip(graph.names, parts)))
        with torch.no_grad():
            want = graph.module(*(torch.from_numpy(p) for p in parts)).numpy()
        if got.shape != want.shape:
            raise PolicyError(
                f"the exported model outputs shape {got.shape}, torch {want.shape}; report this bug"
            )
        if not np.isfinite(got).all():
            return float("inf")
        worst = max(worst, float(np.abs(got.astype(np.float64) - want).max()))
    return worst


def _obs_sizes(folder: Path, config: dict[str, Any]) -> list[int]:
    keys, total = list(config["obs_keys"]), int(config["obs_dim"])
    recorded = config.get("obs_sizes")
    if isinstance(recorded, dict) and set(recorded) == set(keys):
        sizes = [int(recorded[k]) for k in keys]
        if sum(sizes) == total:
            return sizes
    if len(keys) == 1:
        return [total]
    raise PolicyError(
        f"{folder}/config.json does not record how many of its {total} observation values each key {keys} has; "
        'add "obs_sizes": {' + ", ".join(f'"{k}": N' for k in keys) + "} to it and export again"
    )


def _write_config(folder: Path, config: dict[str, Any]) -> None:
    tmp = folder / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2, default=str))
    os.replace(tmp, folder / "config.json")


def _policy_graph(policy: Any, folder: Path, config: dict[str, Any], samples: int) -> ExportGraph:
    """The export graph of an actor or a pixel policy; a one-line refusal for any other folder."""
    if getattr(policy, "noise_dim", 0):
        raise PolicyError(
            f"{str(folder)!r} is a noise-driven policy ({config.get('method', 'flow')}: it samples noise per "
            "decision), which the ONNX export does not cover yet; run it with torch"
        )
    if isinstance(policy, PixelActorPolicy):
        from embodia.policies.onnx_pixel_export import pixel_graph

        return pixel_graph(policy, folder, config, samples)
    if config.get("type") == "act":
        from embodia.policies.act_policy import act_graph

        return act_graph(policy, folder, config, samples)
    if not isinstance(policy, ActorPolicy):
        raise PolicyError(
            f"{str(folder)!r} is a {config.get('type')!r} policy; only actor and pixel policies (`embodia "
            "train` bc, iql, gciql, deas, pixel_bc) export to ONNX"
        )
    return _actor_graph(policy, folder, config, samples)


def export_onnx(policy_dir: str | Path, *, check: bool = True, atol: float = 1e-5, samples: int = 64) -> Path:
    """Write ``model.onnx`` beside the policy's ``config.json`` and record it there; returns its path.

    Args:
        policy_dir: a policy folder or a run directory (its ``policy/`` folder); an ``"actor"`` or a
            ``"pixel_actor"`` folder.
        check: compare ONNX Runtime's outputs with torch's (``samples`` inputs) before keeping the model.
        atol: the largest absolute difference of any output value that passes the check.

    Raises:
        PolicyError: not a policy folder, not an exportable type, damaged weights, a missing export package,
            a network torch cannot export, or outputs that differ by more than ``atol`` (the largest
            difference is named).
    """
    if not atol > 0 or not np.isfinite(atol):
        raise PolicyError(f"atol must be a finite number > 0, got {atol}")
    if samples < 1:
        raise PolicyError(f"samples must be >= 1, got {samples}")
    missing = [pin for name, pin in _EXPORT_PACKAGES.items() if importlib.util.find_spec(name) is None]
    if missing:
        raise PolicyError(f"ONNX export needs {', '.join(missing)}: pip install {' '.join(missing)}")
    folder = policy_folder(policy_dir)
    weights = folder / "model.safetensors"
    # hashed before loading: weights replaced meanwhile (a training checkpoint) make the model refused, not wrong
    weights_sha256 = file_sha256(weights) if weights.is_file() else None
    policy = load_policy(folder, runtime="torch")  # one-line errors for a missing / damaged / unknown folder
    config = json.loads((folder / "config.json").read_text())
    if config.get("type") == "diffusion_policy":  # two graphs and a NumPy DDIM loop: its own exporter
        from embodia.policies.diffusion_folder import export_diffusion_onnx

        return export_diffusion_onnx(folder, check=check, atol=atol)
    graph = _policy_graph(policy, folder, config, samples)
    import torch

    tmp = folder / f"{ONNX_FILE}.tmp"
    try:
        _export(graph, tmp)
        with torch.no_grad():
            diff = _max_difference(graph, tmp) if check else None
        if diff is not None and not diff <= atol:
            raise PolicyError(
                f"the ONNX model differs from torch by up to {diff:.3g} (> atol {atol:g}); model.onnx not written, "
                "pass a larger atol (--atol) if that is acceptable"
            )
        os.replace(tmp, folder / ONNX_FILE)
    finally:
        tmp.unlink(missing_ok=True)
    config["onnx"] = {
        "file": ONNX_FILE,
        "opset": OPSET,
        "max_abs_diff": diff,
        "atol": atol if check else None,
        "inputs": graph.inputs,
        "output": OUTPUT_NAME,
        "exporter": f"torch {torch.__version__} (dynamo)",
        "weights_sha256": weights_sha256,
    }
    _write_config(folder, config)
    return folder / ONNX_FILE
