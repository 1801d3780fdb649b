"""Pixel policies as folders: ``config.json`` (``"type": "pixel_actor"``) + ``model.safetensors``.

The folder holds the whole :class:`~embodia.policies.pixel_bc.PixelActor`: the image encoder (described in
config.json under ``"encoder"`` so it can be rebuilt: a registered kind of
:mod:`embodia.perception.encoder_io`, or a user's transformers folder), the token projection, the state
statistics and the head. It loads with :func:`embodia.load_policy` like every other folder, and runs
through the same episode runner.

``embodia export PATH --onnx`` exports the whole network, encoder included, to ``model.onnx``
(:mod:`embodia.policies.onnx_pixel_export`: uint8 ``(batch, S, S, 3)`` images at the encoder's size, float32
state values), checked against torch; :class:`~embodia.policies.onnx_pixel_policy.OnnxPixelPolicy` runs it
through ONNX Runtime without torch (``runtime="onnx"``, or ``"auto"`` where torch is not installed), as on a
robot. Importing this module imports no torch (it registers the folder type); loading a folder with
runtime ``"torch"`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.core.policy import register_policy_type
from embodia.policies.actor_policy import ONNX_FILE, actor_meta, auto_runtime, torch_available

FORMAT_KEYS = (
    "type",
    "image_keys",
    "state_keys",
    "encoder",
    "freeze_encoder",
    "token_channels",
    "action_dim",
    "horizon",
    "hidden",
    "state_sizes",
    "noise_dim",
    "flow_steps",
)


def save_pixel_policy(
    folder: str | Path,
    actor: Any,
    config: Any,
    meta: Mapping[str, Any] | None = None,
    state_sizes: Sequence[int] | None = None,
) -> Path:
    """Write a pixel policy folder; the weights first, then config.json, each replaced atomically.

    ``state_sizes``: values per state key (the ONNX export gives each key its own input; with one state
    key it is not needed). A ``model.onnx`` exported from earlier weights is removed (it no longer matches).
    """
    from safetensors.torch import save_file

    from embodia.perception.pixel_observations import encoder_description

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    observations = actor.observations
    description = {
        "type": "pixel_actor",
        "image_keys": observations.image_keys,
        "state_keys": observations.state_keys,
        "encoder": encoder_description(observations.encoder),
        "freeze_encoder": observations.freeze_encoder,
        "token_channels": observations.token_channels,
        "state_dim": int(observations.state_mean.numel()),
        "action_dim": actor.action_dim,
        "horizon": actor.horizon,
        "hidden": list(config.hidden),
        "execute_steps": getattr(config, "execute_steps", None),
        **dict(meta or {}),
    }
    if getattr(actor, "noise_dim", 0):  # a flow policy (embodia.policies.pixel_flow_bc.PixelFlowActor)
        description.update(noise_dim=actor.noise_dim, flow_steps=actor.flow_steps)
    if state_sizes is not None:
        description["state_sizes"] = dict(zip(observations.state_keys, (int(n) for n in state_sizes)))
    tensors = {k: v.detach().contiguous() for k, v in actor.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors.tmp"))
    (folder / "config.json.tmp").write_text(json.dumps(description, indent=2, default=str))
    (folder / ONNX_FILE).unlink(missing_ok=True)
    os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
    os.replace(folder / "config.json.tmp", folder / "config.json")
    return folder


class PixelActorPolicy:
    """``act(obs)``: the images (and states) of one observation through the actor; one action or a chunk.

    A flow actor (``noise_dim > 0``) gets ``z ~ N(0, I)`` per decision from a generator seeded at :meth:`reset`.
    """

    def __init__(self, actor: Any, execute_steps: int | None = None, meta: Mapping[str, Any] | None = None):
        import torch

        self.actor = actor.eval()
        self.noise_dim = int(getattr(actor, "noise_dim", 0))
        self._noise = torch.Generator().manual_seed(0)
        self.keys = [*actor.observations.image_keys, *actor.observations.state_keys]
        self.chunk_size = actor.horizon
        if execute_steps is not None:
            self.execute_steps = int(execute_steps)
        self.meta = dict(meta or {})

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._noise.manual_seed(int(seed))

    def _forward(self, obs: dict[str, Any]) -> Any:
        if not self.noise_dim:
            return self.actor(obs)
        import torch

        rows = len(next(iter(obs.values())))
        return self.actor(obs, torch.randn(rows, self.noise_dim, generator=self._noise))

    def _tensors(self, obs: Mapping[str, Any], batched: bool) -> dict[str, Any]:
        import torch

        missing = [k for k in self.keys if k not in obs]
        if missing:
            raise PolicyError(
                f"policy needs observation keys {self.keys}, the environment gives {sorted(obs)}"
            )
        out = {}
        for key in self.keys:
            array = np.asarray(obs[key])
            # a read-only array (a decoded CompressedImage) is copied: torch warns about sharing it
            value = torch.as_tensor(array) if array.flags.writeable else torch.tensor(array)
            out[key] = value if batched else value.unsqueeze(0)
        for key in self.actor.observations.image_keys:
            if out[key].ndim != 4 or out[key].shape[-1] != 3:
                raise PolicyError(
                    f"observation {key!r} should be (H, W, 3) images, got {tuple(out[key].shape)}"
                )
        return out

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self._forward(self._tensors(obs, batched=False))[0].numpy()
        actions = out.reshape(self.actor.horizon, self.actor.action_dim)
        return actions[0] if self.actor.horizon == 1 else actions

    def act_batch(self, obs_batch: Mapping[str, Any]) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self._forward(self._tensors(obs_batch, batched=True)).numpy()
        actions = out.reshape(len(out), self.actor.horizon, self.actor.action_dim)
        return actions[:, 0] if self.actor.horizon == 1 else actions


def load_pixel_policy(folder: Path, runtime: str = "auto") -> Any:
    """Load a ``"pixel_actor"`` folder with torch (:class:`PixelActorPolicy`) or ONNX Runtime
    (``OnnxPixelPolicy``); ``runtime``: ``"torch"``, ``"onnx"`` or ``"auto"`` (torch when installed, else
    model.onnx)."""
    config = json.loads((folder / "config.json").read_text())
    if runtime == "auto":
        runtime = auto_runtime(folder, config)
    if runtime == "onnx":
        from embodia.policies.onnx_pixel_policy import load_onnx_pixel_policy

        return load_onnx_pixel_policy(folder, config)
    return _load_torch_pixel_policy(folder, config)


def _load_torch_pixel_policy(folder: Path, config: dict[str, Any]) -> PixelActorPolicy:
    if not torch_available():
        raise PolicyError(
            f"runtime 'torch' needs torch, which is not installed; load {str(folder)!r} with runtime='onnx' "
            f"(after `embodia export {folder} --onnx` on a machine with torch)"
        )
    import torch
    from safetensors.torch import load_file

    from embodia.perception.pixel_observations import PixelObservationEncoder, encoder_from_description
    from embodia.policies.flow import FlowPolicy
    from embodia.policies.networks import Actor
    from embodia.policies.pixel_bc import PixelActor
    from embodia.policies.pixel_flow_bc import PixelFlowActor

    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise PolicyError(f"{folder} has config.json but no model.safetensors; the export was interrupted")
    state_dim = int(config.get("state_dim", 0))
    try:
        observations = PixelObservationEncoder(
            encoder_from_description(config["encoder"]),
            config["image_keys"],
            torch.zeros(state_dim),
            torch.ones(state_dim),
            state_keys=config["state_keys"],
            token_channels=config["token_channels"],
            freeze_encoder=config["freeze_encoder"],
        )
        shape = (observations.dim, config["action_dim"], config["horizon"], tuple(config["hidden"]))
        if config.get("flow_steps"):
            actor = PixelFlowActor(observations, FlowPolicy(*shape, flow_steps=config["flow_steps"]))
        else:
            actor = PixelActor(observations, Actor(*shape))
        actor.load_state_dict(load_file(str(weights)))
    except (KeyError, RuntimeError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PolicyError(f"{folder} is not a loadable pixel policy: {first}") from None
    meta = actor_meta({k: v for k, v in config.items() if k not in FORMAT_KEYS})
    return PixelActorPolicy(actor, config.get("execute_steps"), meta)


register_policy_type("pixel_actor", load_pixel_policy)
