"""The environment catalog: each registered id's spaces, episode limit, rendering and expert, shipped as
``catalog.json`` so that listing environments never builds a simulator.

``scripts/update_env_catalog.py`` writes the file by building every environment once; the registry test
(``tests/envs/test_registry.py``) builds every environment anyway and checks that its catalog entry equals
the real spaces, so a stale entry fails the tests.

Spaces are stored exactly (shapes, dtypes and bounds, infinities as ``"inf"``), so
``space_from_json(space_to_json(s)) == s`` for the space types embodia uses.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

CATALOG_FILE = "catalog.json"


@functools.cache
def _catalog() -> dict[str, Any]:
    try:
        text = resources.files("embodia.envs").joinpath(CATALOG_FILE).read_text()
    except FileNotFoundError:
        return {}
    return json.loads(text)


def entry(env_id: str) -> dict[str, Any] | None:
    """The catalog entry of ``env_id`` (None if the catalog does not know it)."""
    return _catalog().get(env_id)


def _bound(values: np.ndarray) -> Any:
    flat = values.reshape(-1)
    if len(flat) and np.all(flat == flat[0]):
        return _number(flat[0])
    return [_number(v) for v in flat]


def _number(value: Any) -> Any:
    value = float(value)
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return int(value) if value.is_integer() else value


def _unbound(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if isinstance(value, list):
        array = np.array([float(v) for v in value], dtype=np.float64).reshape(shape)
    else:
        array = np.full(shape, float(value), dtype=np.float64)
    return array.astype(dtype)


def space_to_json(space: gymnasium.Space) -> dict[str, Any]:
    """A JSON-able description of ``space`` (Box, Discrete, MultiDiscrete, MultiBinary, Dict)."""
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": _bound(space.low),
            "high": _bound(space.high),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "dtype": str(space.dtype)}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_json(v) for k, v in space.spaces.items()}}
    raise TypeError(f"the catalog cannot describe a {type(space).__name__}")


def space_from_json(data: dict[str, Any]) -> gymnasium.Space:
    """The space :func:`space_to_json` described."""
    kind = data["type"]
    if kind == "Box":
        shape, dtype = tuple(data["shape"]), np.dtype(data["dtype"])
        low = _unbound(data["low"], shape, np.float64)
        high = _unbound(data["high"], shape, np.float64)
        return spaces.Box(low=low.astype(dtype), high=high.astype(dtype), shape=shape, dtype=dtype)
    if kind == "Discrete":
        return spaces.Discrete(data["n"], start=data["start"])
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(np.array(data["nvec"]), dtype=np.dtype(data["dtype"]))
    if kind == "MultiBinary":
        return spaces.MultiBinary(data["n"])
    if kind == "Dict":
        return spaces.Dict({k: space_from_json(v) for k, v in data["spaces"].items()})
    raise ValueError(f"unknown space type {kind!r} in the environment catalog")


def space_summary(space: gymnasium.Space) -> str:
    """One line per space, as ``embodia envs`` prints it: ``{state: Box(29,) float32, ...}``."""
    if isinstance(space, spaces.Dict):
        return "{" + ", ".join(f"{k}: {space_summary(v)}" for k, v in space.spaces.items()) + "}"
    if isinstance(space, spaces.Box):
        return f"Box{tuple(space.shape)} {space.dtype}"
    return str(space)
