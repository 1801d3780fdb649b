"""An exported actor run through ONNX Runtime: the policy a robot runs, with NumPy and no torch.

``embodia export PATH --onnx`` (:mod:`embodia.policies.onnx_export`) writes ``model.onnx`` beside a policy
folder's ``config.json``: one float32 input per observation key, named by the key, ``(batch, values)``,
and one output ``action``, ``(batch, action_dim)`` or ``(batch, horizon, action_dim)``; the normalisation
is inside the graph. :class:`OnnxActorPolicy` behaves like :class:`~embodia.policies.actor_policy.ActorPolicy`
(the same ``act``, ``chunk_size``, ``execute_steps``, ``meta`` and errors) on one
``onnxruntime.InferenceSession`` on the CPU, with one intra-op thread by default: a policy node on a robot
wants low, steady latency for one observation at a time, not throughput. Exported pixel policies (camera
images in) run through :mod:`embodia.policies.onnx_pixel_policy`, on the same session settings.

This module imports no torch, and onnxruntime only when a session is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.policies.actor_policy import (
    ONNX_FILE,
    actor_meta,
    file_sha256,
    observation_batch,
    observation_values,
)

#: the name of the graph's output
OUTPUT_NAME = "action"


def inference_session(model: Path, threads: int = 1) -> Any:
    """One CPU InferenceSession with ``threads`` intra-op threads and no inter-op parallelism."""
    try:
        import onnxruntime as ort
    except ModuleNotFoundError:
        raise PolicyError(
            "running a policy's model.onnx needs onnxruntime: pip install onnxruntime==1.32.0"
        ) from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    try:
        return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own types: InvalidProtobuf, Fail, ...
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PolicyError(
            f"ONNX Runtime cannot load {model} ({first}); run `embodia export {model.parent} --onnx` again"
        ) from None


class OnnxActorPolicy:
    """``act(obs)``: flatten the observation keys, run the exported graph, return one action or a chunk.

    Args:
        model: the ``model.onnx`` file.
        obs_keys: the observation keys, in the graph's input order.
        obs_dim: their total number of values.
        action_dim: entries of one action.
        horizon: actions per output: ``(horizon, action_dim)``; one action when ``horizon == 1``.
        execute_steps: actions of a chunk executed before re-planning (None: the whole chunk).
        meta: what the folder's config.json says besides the format (method, env_id, ...).
        threads: intra-op threads of the session (1: lowest latency for one observation at a time).
    """

    def __init__(
        self,
        model: str | Path,
        *,
        obs_keys: list[str],
        obs_dim: int,
        action_dim: int,
        horizon: int,
        execute_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
        threads: int = 1,
    ) -> None:
        model = Path(model)
        self.session = inference_session(model, threads)
        self.obs_keys = list(obs_keys)
        self.obs_dim, self.action_dim, self.horizon = int(obs_dim), int(action_dim), int(horizon)
        self.chunk_size = self.horizon
        if execute_steps is not None:
            self.execute_steps = int(execute_steps)
        self.meta = dict(meta or {})
        inputs = {i.name: i.shape for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        sizes = [inputs[k][1] if k in inputs and len(inputs[k]) == 2 else None for k in self.obs_keys]
        if (
            set(inputs) != set(self.obs_keys)
            or not all(isinstance(n, int) for n in sizes)
            or sum(sizes) != self.obs_dim
            or outputs != [OUTPUT_NAME]
        ):
            raise PolicyError(
                f"{model} does not match its config.json (inputs {inputs}, outputs {outputs}; expected "
                f"{self.obs_keys} with {self.obs_dim} values in all); run `embodia export {model.parent} --onnx` again"
            )
        self.obs_sizes: list[int] = sizes  # type: ignore[assignment]  (all int, checked above)

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        values = observation_values(obs, self.obs_keys, self.obs_dim, self.obs_sizes)
        (out,) = self.session.run([OUTPUT_NAME], dict(zip(self.obs_keys, values)))
        actions = out[0].reshape(self.horizon, self.action_dim)
        return actions[0] if self.horizon == 1 else actions

    def act_batch(self, obs_batch: Mapping[str, Any]) -> np.ndarray:
        """``act`` for a batch in one session run: ``(batch, action_dim)`` or ``(batch, horizon, action_dim)``."""
        values = observation_batch(obs_batch, self.obs_keys, self.obs_dim, self.obs_sizes)
        (out,) = self.session.run([OUTPUT_NAME], dict(zip(self.obs_keys, values)))
        actions = out.reshape(len(out), self.horizon, self.action_dim)
        return actions[:, 0] if self.horizon == 1 else actions


def onnx_model_path(folder: Path, config: Mapping[str, Any]) -> Path:
    """The folder's exported model, checked against config.json and the weights it was exported from.

    Raises:
        PolicyError: no model.onnx (or none recorded in config.json), or one exported from other weights.
    """
    record = config.get("onnx")
    export = f"run `embodia export {folder} --onnx`"
    if not isinstance(record, dict):
        stale = " (its config.json records none: the weights were saved after the last export)"
        on_disk = (folder / ONNX_FILE).is_file()
        raise PolicyError(f"{str(folder)!r} has no model.onnx{stale if on_disk else ''}; {export}")
    name = record.get("file", ONNX_FILE)
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise PolicyError(
            f"{folder}/config.json names the ONNX model {name!r}, not a file beside it; {export}"
        )
    model = folder / name
    if not model.is_file():
        raise PolicyError(f"{str(folder)!r} has no {name}; {export}")
    weights = folder / "model.safetensors"
    expected = record.get("weights_sha256")
    if expected and weights.is_file() and file_sha256(weights) != expected:
        raise PolicyError(f"{model} was exported from other weights than {weights.name}; {export} again")
    return model


def load_onnx_actor_policy(
    folder: Path, config: Mapping[str, Any] | None = None, threads: int = 1
) -> OnnxActorPolicy:
    """An ``"actor"`` folder's ``model.onnx`` as a policy (``config``: its parsed config.json)."""
    import json

    if config is None:
        config = json.loads((folder / "config.json").read_text())
    return OnnxActorPolicy(
        onnx_model_path(folder, config),
        obs_keys=list(config["obs_keys"]),
        obs_dim=config["obs_dim"],
        action_dim=config["action_dim"],
        horizon=config["horizon"],
        execute_steps=config.get("execute_steps"),
        meta=actor_meta(config),
        threads=threads,
    )
