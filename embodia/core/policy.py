"""The policy contract and how a policy is found by name or path.

A policy is anything with ``reset(seed=None)`` and ``act(obs) -> action`` (NumPy in, NumPy out).
Policies that predict action sequences set ``chunk_size`` and may return a ``(chunk, action_dim)``
array; :class:`embodia.core.chunks.ActionChunker` executes the chunk step by step (in simulation and on
the robot alike). A :class:`BatchPolicy` also has ``act_batch(obs_batch)``: one forward pass for the
observations of several environments (:mod:`embodia.runner.vector`).

A trained policy is a folder with ``config.json`` (whose ``"type"`` names a registered policy class)
and ``model.safetensors``, and optionally ``model.onnx`` (``embodia export PATH --onnx``), which runs
through ONNX Runtime without torch (``load_policy(path, runtime="onnx")``). :func:`load_policy` never
unpickles anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import gymnasium
import numpy as np

from embodia.core.errors import PolicyError


@runtime_checkable
class Policy(Protocol):
    """What the episode runner and the ROS 2 node need from a policy."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, obs: Any) -> np.ndarray: ...


@runtime_checkable
class BatchPolicy(Policy, Protocol):
    """A policy that can also act for a batch of observations in one call (one forward pass).

    ``act_batch(obs_batch)`` takes a dict of arrays with a leading batch axis (what a gymnasium vector
    environment returns) and returns, for every row, what ``act`` returns for that row alone, stacked:
    ``(batch, *action_shape)`` for single actions or ``(batch, n, *action_shape)`` for chunks. The rows
    are equal to per-sample ``act`` up to float rounding (BLAS kernels sum in a different order for
    different batch sizes). It must not depend on which rows are batched together: the vectorised runner
    (:mod:`embodia.runner.vector`) shares one such policy between environments.
    """

    def act_batch(self, obs_batch: Mapping[str, np.ndarray]) -> np.ndarray: ...


def is_stateful(policy: object) -> bool:
    """Whether ``policy`` remembers earlier steps of its episode (its class sets ``stateful = True``: ACT's
    temporal ensembling, Diffusion Policy's observation history): one object must not serve two episodes at
    once (the vectorised runner loads one per environment)."""
    return bool(getattr(policy, "stateful", False))


def supports_batch(policy: object) -> bool:
    """Whether ``policy`` implements :class:`BatchPolicy` (has a callable ``act_batch``)."""
    return callable(getattr(policy, "act_batch", None))


class RandomPolicy:
    """Uniform random actions from the action space, seeded per episode."""

    chunk_size = 1

    def __init__(self, action_space: gymnasium.spaces.Space) -> None:
        self.action_space = action_space

    def reset(self, seed: int | None = None) -> None:
        self.action_space.seed(seed)

    def act(self, obs: Any) -> np.ndarray:
        return np.asarray(self.action_space.sample())


#: modules that register policy types when imported
_POLICY_MODULES = (
    "embodia.policies.linear",
    "embodia.policies.actor_policy",
    "embodia.policies.pixel_policy",
    "embodia.policies.diffusion_folder",
    "embodia.policies.act_policy",
)

#: how a policy folder's network may run: ``"torch"`` (model.safetensors), ``"onnx"`` (model.onnx through ONNX
#: Runtime, no torch) or ``"auto"`` (torch when it is installed, else model.onnx)
RUNTIMES = ("auto", "torch", "onnx")

#: config.json "type" -> loader(folder, runtime) -> Policy
_POLICY_TYPES: dict[str, Callable[[Path, str], Policy]] = {}


def register_policy_type(name: str, loader: Callable[[Path, str], Policy]) -> None:
    """Make folders whose ``config.json`` says ``"type": name`` loadable by :func:`load_policy`.

    ``loader(folder, runtime)`` gets ``runtime`` as one of :data:`RUNTIMES`; a type with one way to run
    (e.g. NumPy only) ignores it.
    """
    _POLICY_TYPES[name] = loader


def _import_policy_modules() -> None:
    """Import the modules that register policy types (none imports torch until a folder is loaded)."""
    import importlib

    for module in _POLICY_MODULES:
        importlib.import_module(module)


def load_policy(path: str | Path, runtime: str = "auto") -> Policy:
    """Load a trained policy folder (``config.json`` + ``model.safetensors`` and / or ``model.onnx``).

    Args:
        runtime: ``"torch"`` runs model.safetensors, ``"onnx"`` model.onnx through ONNX Runtime (imports no
            torch), ``"auto"`` torch when it is installed, else model.onnx.

    Raises:
        PolicyError: the folder, its config or its weights are missing, its type is unknown, or the runtime
            asked for cannot run it.
    """
    if runtime not in RUNTIMES:
        raise PolicyError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
    folder = Path(path)
    config_path = folder / "config.json"
    if not folder.is_dir() or not config_path.is_file():
        raise PolicyError(
            f"no policy at {str(folder)!r}: expected a folder with config.json and model.safetensors "
            "(as written by `embodia train`)"
        )
    try:
        config = json.loads(config_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PolicyError(f"{config_path} is not valid JSON ({error}); re-export the policy") from None
    if not isinstance(config, dict):
        raise PolicyError(
            f'{config_path} must hold a JSON object with a "type", got a {type(config).__name__}; '
            "re-export the policy"
        )
    kind = config.get("type")
    _import_policy_modules()
    if kind not in _POLICY_TYPES:
        known = ", ".join(sorted(_POLICY_TYPES)) or "none registered"
        raise PolicyError(f"{config_path} has policy type {kind!r}, which embodia does not know ({known})")
    try:
        return _POLICY_TYPES[kind](folder, runtime)
    except PolicyError:
        raise
    except Exception as error:  # a damaged folder: truncated weights, missing tensors or config fields
        raise PolicyError(
            f"cannot load the {kind} policy at {str(folder)!r}: {type(error).__name__}: {error}; the folder is "
            "incomplete or damaged, re-export it"
        ) from None


def make_policy(spec: str | Path | Policy | Callable[[gymnasium.Env], Policy], env: gymnasium.Env) -> Policy:
    """Turn ``"random"``, ``"expert"``, a policy folder path, a policy object, or a factory ``(env) -> Policy``
    into a policy for ``env``."""
    if isinstance(spec, Path):
        return load_policy(spec)
    if not isinstance(spec, str):
        if callable(spec) and not isinstance(spec, Policy):
            return spec(env)
        return spec
    if spec == "random":
        return RandomPolicy(env.action_space)
    if spec == "expert":
        from embodia.core.env import ExpertEnv

        if not isinstance(env.unwrapped, ExpertEnv):
            raise PolicyError(f"{env.spec.id if env.spec else env.unwrapped} has no scripted expert")
        return env.unwrapped.make_expert()  # says why itself when this id has none
    return load_policy(spec)
