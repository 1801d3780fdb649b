"""The simulator back-end interface of the navigation environments, and automatic selection.

A back end owns one loaded scene with ``num_robots`` robots and offers what the environment needs:

- ``pathfinder``: navigation queries with habitat-sim's ``PathFinder`` semantics in embodia's frame
  (:class:`embodia.envs.habitat.pathfinder.PathFinder` or an adapter around habitat-sim's);
- ``scene``: the semantic scene (:class:`~embodia.envs.habitat.scene.Scene`: rooms, doors, objects);
- ``set_pose`` / ``get_pose``: robot poses ``(x, y, z)`` and ``yaw`` (the environment moves robots with
  ``pathfinder.try_step`` exactly as habitat-sim's navmesh-constrained agent does, then sets the pose);
- ``render(robot, width, height)``: the robot camera's RGB (uint8) and depth (metres, float32);
- ``set_door_open`` (scenes with doors), ``get_state`` / ``set_state`` (flat float64: robot poses
  ``[x, y, yaw]`` then door slide positions padded to a fixed number of slots), ``close``.

Two implementations: :class:`~embodia.envs.habitat.mujoco_backend.MuJoCoBackend` (always available,
used in CI) and :class:`~embodia.envs.habitat.habitat_sim_backend.HabitatSimBackend` (only where
``import habitat_sim`` works; written against habitat-sim's documented API and not run on this
platform). ``backend="auto"`` picks habitat-sim when it imports, MuJoCo otherwise.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Protocol

import numpy as np

from embodia.envs.habitat.errors import NavBackendError
from embodia.envs.habitat.mjcf import RobotSpec
from embodia.envs.habitat.pathfinder import NavMeshSettings
from embodia.envs.habitat.scene import Scene

BACKENDS = ("mujoco", "habitat_sim")


class NavBackend(Protocol):
    """What a navigation simulator back end provides (see module docstring)."""

    name: str
    scene: Scene
    pathfinder: Any
    num_robots: int

    def set_pose(self, robot: int, position: np.ndarray, yaw: float) -> None: ...

    def get_pose(self, robot: int) -> tuple[np.ndarray, float]: ...

    def render(
        self, robot: int, width: int, height: int, depth: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]: ...

    def set_door_open(self, door_id: str, is_open: bool) -> None: ...

    def door_open(self, door_id: str) -> bool: ...

    def get_state(self) -> np.ndarray: ...

    def set_state(self, state: np.ndarray) -> None: ...

    def close(self) -> None: ...


def habitat_sim_available() -> bool:
    """Whether ``habitat_sim`` can be imported here (checked without importing it)."""
    return importlib.util.find_spec("habitat_sim") is not None


def resolve_backend(name: str) -> str:
    """``"auto"`` -> ``"habitat_sim"`` when it is installed, else ``"mujoco"``; other names are checked."""
    if name == "auto":
        return "habitat_sim" if habitat_sim_available() else "mujoco"
    if name not in BACKENDS:
        raise NavBackendError(f"unknown navigation back end {name!r}; choose one of {('auto', *BACKENDS)}")
    if name == "habitat_sim" and not habitat_sim_available():
        raise NavBackendError(
            "back end 'habitat_sim' needs the habitat_sim package, which is not installed here "
            "(there is no Linux wheel for Python 3.11); use backend='mujoco' or 'auto'"
        )
    return name


def make_backend(
    name: str,
    scene: Scene,
    num_robots: int = 1,
    robot: RobotSpec | None = None,
    settings: NavMeshSettings | None = None,
    **kwargs: Any,
) -> NavBackend:
    """Create the back end ``name`` (``"auto"``, ``"mujoco"`` or ``"habitat_sim"``) with ``scene`` loaded."""
    resolved = resolve_backend(name)
    if resolved == "mujoco":
        from embodia.envs.habitat.mujoco_backend import MuJoCoBackend

        return MuJoCoBackend(scene, num_robots=num_robots, robot=robot, settings=settings, **kwargs)
    from embodia.envs.habitat.habitat_sim_backend import HabitatSimBackend

    return HabitatSimBackend(scene, num_robots=num_robots, robot=robot, settings=settings, **kwargs)
