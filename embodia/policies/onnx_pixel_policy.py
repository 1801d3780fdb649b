"""An exported pixel policy run through ONNX Runtime: camera images to actions with NumPy and no torch.

``embodia export PATH --onnx`` on a ``"pixel_actor"`` folder (:mod:`embodia.policies.onnx_pixel_export`)
writes a graph with one uint8 ``(batch, S, S, 3)`` input per image key and one float32 ``(batch, values)``
input per state key. :class:`OnnxPixelPolicy` behaves like
:class:`~embodia.policies.pixel_policy.PixelActorPolicy` (``act``, ``act_batch``, ``chunk_size``,
``execute_steps``, ``meta``): images go to the session as they come, without a copy, when they are uint8
and C-contiguous (what the policy node's Image conversion gives); other integer-valued dtypes are cast.
The torch policy resizes images of another size than its encoder's; the exported graph does not, so such
an image is refused in one line naming the size the model takes.

This module imports no torch, and onnxruntime only when a session is made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.policies.actor_policy import actor_meta, observation_batch
from embodia.policies.onnx_policy import OUTPUT_NAME, inference_session, onnx_model_path
from embodia.policies.pixel_policy import FORMAT_KEYS


def _pixels(value: Any, key: str, size: tuple[int, int], batched: bool) -> np.ndarray:
    """``value`` as a C-contiguous uint8 ``(batch, H, W, 3)`` array (a view of it when it already is one).

    Raises:
        PolicyError: not ``(H, W, 3)`` images of the model's size, or values that are not whole 0..255.
    """
    array = np.asarray(value)
    images = array if batched else array[None]
    if images.ndim != 4 or images.shape[1:] != (*size, 3):
        raise PolicyError(
            f"observation {key!r} should be {(*size, 3)} images (the size model.onnx takes: the torch policy "
            f"resizes, the exported graph does not), got {array.shape}"
        )
    if images.dtype != np.uint8:
        cast = images.astype(np.uint8)
        if not np.array_equal(cast, images):
            raise PolicyError(
                f"observation {key!r} should hold uint8 pixels (whole numbers 0..255), got {images.dtype} values"
            )
        images = cast
    return np.ascontiguousarray(images)


class OnnxPixelPolicy:
    """``act(obs)``: the images (and states) of one observation through the exported graph; one action or a
    chunk.

    Args:
        model: the ``model.onnx`` file.
        image_keys: observation keys holding ``(H, W, 3)`` uint8 images, in the graph's input order.
        state_keys: flat observation keys after them.
        state_sizes: values per state key.
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
        image_keys: list[str],
        state_keys: list[str],
        state_sizes: list[int],
        action_dim: int,
        horizon: int,
        execute_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
        threads: int = 1,
    ) -> None:
        model = Path(model)
        self.session = inference_session(model, threads)
        self.image_keys, self.state_keys = list(image_keys), list(state_keys)
        self.state_sizes = [int(n) for n in state_sizes]
        self.keys = self.image_keys + self.state_keys
        self.action_dim, self.horizon = int(action_dim), int(horizon)
        self.chunk_size = self.horizon
        if execute_steps is not None:
            self.execute_steps = int(execute_steps)
        self.meta = dict(meta or {})
        inputs = {i.name: (list(i.shape), i.type) for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        images = [inputs.get(k, ([], ""))[0] for k in self.image_keys]
        expected_states = {k: ([None, n], "tensor(float)") for k, n in zip(self.state_keys, self.state_sizes)}
        states = {k: ([None, *inputs[k][0][1:]], inputs[k][1]) for k in self.state_keys if k in inputs}
        sizes = {tuple(shape[1:3]) for shape in images}
        if (
            set(inputs) != set(self.keys)
            or any(inputs[k][1] != "tensor(uint8)" for k in self.image_keys)
            or any(len(shape) != 4 or shape[3] != 3 for shape in images)
            or len(sizes) > 1
            or not all(isinstance(n, int) for size in sizes for n in size)
            or states != expected_states
            or outputs != [OUTPUT_NAME]
        ):
            raise PolicyError(
                f"{model} does not match its config.json (inputs {inputs}, outputs {outputs}; expected uint8 "
                f"images {self.image_keys} and float32 states {dict(zip(self.state_keys, self.state_sizes))}); "
                f"run `embodia export {model.parent} --onnx` again"
            )
        self.image_size: tuple[int, int] = sizes.pop() if sizes else (0, 0)
        """(H, W) of the images the graph takes (the encoder's size)."""

    def reset(self, seed: int | None = None) -> None:
        pass

    def _feed(self, obs: Mapping[str, Any], batched: bool) -> dict[str, np.ndarray]:
        missing = [k for k in self.keys if k not in obs]
        if missing:
            raise PolicyError(
                f"policy needs observation keys {self.keys}, the environment gives {sorted(obs)}"
            )
        feed = {k: _pixels(obs[k], k, self.image_size, batched) for k in self.image_keys}
        if self.state_keys:
            states = {k: obs[k] if batched else np.asarray(obs[k]).reshape(1, -1) for k in self.state_keys}
            values = observation_batch(states, self.state_keys, sum(self.state_sizes), self.state_sizes)
            feed.update(zip(self.state_keys, values))
        batches = {len(v) for v in feed.values()}
        if len(batches) > 1:
            raise PolicyError(
                f"a batch of observations needs a leading batch axis of one length for keys {self.keys}, got "
                f"shapes {[v.shape for v in feed.values()]}"
            )
        return feed

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        (out,) = self.session.run([OUTPUT_NAME], self._feed(obs, batched=False))
        actions = out[0].reshape(self.horizon, self.action_dim)
        return actions[0] if self.horizon == 1 else actions

    def act_batch(self, obs_batch: Mapping[str, Any]) -> np.ndarray:
        """``act`` for a batch in one session run: ``(batch, action_dim)`` or ``(batch, horizon, action_dim)``."""
        (out,) = self.session.run([OUTPUT_NAME], self._feed(obs_batch, batched=True))
        actions = out.reshape(len(out), self.horizon, self.action_dim)
        return actions[:, 0] if self.horizon == 1 else actions


def load_onnx_pixel_policy(
    folder: Path, config: Mapping[str, Any] | None = None, threads: int = 1
) -> OnnxPixelPolicy:
    """A ``"pixel_actor"`` folder's ``model.onnx`` as a policy (``config``: its parsed config.json)."""
    if config is None:
        config = json.loads((folder / "config.json").read_text())
    model = onnx_model_path(folder, config)
    state_keys = list(config.get("state_keys", []))
    recorded = config["onnx"].get("inputs", {})
    try:
        sizes = [int(recorded[k]["shape"][0]) for k in state_keys]
    except (KeyError, TypeError, IndexError, ValueError):
        raise PolicyError(
            f"{folder}/config.json does not describe the inputs of {model.name}; run `embodia export {folder} "
            "--onnx` again"
        ) from None
    return OnnxPixelPolicy(
        model,
        image_keys=list(config["image_keys"]),
        state_keys=state_keys,
        state_sizes=sizes,
        action_dim=config["action_dim"],
        horizon=config["horizon"],
        execute_steps=config.get("execute_steps"),
        meta=actor_meta({k: v for k, v in config.items() if k not in FORMAT_KEYS}),
        threads=threads,
    )
