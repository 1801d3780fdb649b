"""Simulator environments, each a ``gymnasium.Env`` registered as ``embodia/<Name>-v<N>``.

Importing this package registers every id (cheaply: see :mod:`embodia.envs.registration`); the families
are subpackages that register their ids next to their classes:

- :mod:`embodia.envs.ogbench`: OGBench (mazes, manipulation, pixels, play data collection);
- :mod:`embodia.envs.kitchen`: RoboCasa-style kitchens on robosuite;
- :mod:`embodia.envs.habitat`: Habitat-style indoor navigation on MuJoCo.
- :mod:`embodia.envs.aloha`: ACT's ALOHA bimanual tasks (transfer cube, insertion) through gym-aloha.
"""

from __future__ import annotations

from embodia.envs import aloha, habitat, kitchen, ogbench  # noqa: F401  (each registers its ids)
from embodia.envs.registration import (
    NAMESPACE,
    EnvInfo,
    describe,
    env_ids,
    inspect_env,
    make,
    register_env,
    resolve_id,
)


def list_envs() -> list[str]:
    """Registered embodia environment ids (cheap: nothing is instantiated)."""
    return env_ids()


__all__ = [
    "NAMESPACE",
    "EnvInfo",
    "describe",
    "env_ids",
    "inspect_env",
    "list_envs",
    "make",
    "register_env",
    "resolve_id",
]
