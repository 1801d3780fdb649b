"""embodia: simulated episodes, trajectories, policies and tools for embodied AI.

The names most users need::

    import embodia
    env = embodia.make("embodia/PointMaze-Medium-v0")
    result = embodia.rollout(env, "expert", episodes=3, seed=0)
    store = embodia.TrajectoryStore("runs/demo.zarr")
"""

from __future__ import annotations

import os

# Headless rendering by default: MuJoCo picks its GL backend at import time.
os.environ.setdefault("MUJOCO_GL", "egl")
if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

__version__ = "0.1.0"

from embodia.data.store import TrajectoryStore  # noqa: E402
from embodia.envs import list_envs, make  # noqa: E402
from embodia.errors import EmbodiaError  # noqa: E402
from embodia.policies import load_policy  # noqa: E402
from embodia.rollout import rollout  # noqa: E402

__all__ = ["EmbodiaError", "TrajectoryStore", "__version__", "list_envs", "load_policy", "make", "rollout"]
