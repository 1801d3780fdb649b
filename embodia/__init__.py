"""embodia: simulated episodes, trajectories, policies and tools for embodied AI.

The names most users need::

    import embodia
    env = embodia.make("embodia/PointMaze-Medium-v0")     # or gymnasium.make(...): importing registers the ids
    result = embodia.rollout(env, "expert", episodes=3, seed=0)
    store = embodia.TrajectoryStore("runs/demo.zarr")

Importing embodia is cheap: it registers every environment id with gymnasium and loads nothing else until
it is used (no simulator, no torch, no zarr).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# Headless rendering by default: MuJoCo picks its GL backend at import time.
os.environ.setdefault("MUJOCO_GL", "egl")
if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

from embodia.core.errors import EmbodiaError  # noqa: E402
from embodia.core.version import __version__  # noqa: E402
from embodia.envs import list_envs, make  # noqa: E402  (registers every environment id with gymnasium)

#: names loaded on first use
_LAZY = {
    "TrajectoryStore": "embodia.data.store",
    "load_policy": "embodia.core.policy",
    "rollout": "embodia.runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embodia' has no attribute {name!r}")


__all__ = ["EmbodiaError", "TrajectoryStore", "__version__", "list_envs", "load_policy", "make", "rollout"]
