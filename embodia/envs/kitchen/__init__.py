"""RoboCasa-style kitchen environments on robosuite (MuJoCo), registered as ``embodia/Kitchen-<Task>-v0``.

RoboCasa and its assets cannot be installed here, so embodia builds its own kitchens: counters, a sink
with a single-lever faucet, a drawer unit, a wall cabinet with a hinged door and a microwave with a
start button, written as MJCF templates in ``embodia/sim_assets/kitchen`` and assembled with robosuite's
model API around a robosuite robot (Panda by default) driven by robosuite's OSC pose controller.

- :mod:`~embodia.envs.kitchen.layout`: the kitchen's model as one dataclass, the catalogues of layouts
  (geometry: one-wall, L- and U-shaped) and styles (colours) that the ``layout`` / ``style`` arguments pick
  from, and what a seed draws (the ids, the object, the robot position);
- :mod:`~embodia.envs.kitchen.fixtures`: the MJCF templates filled from a layout;
- :mod:`~embodia.envs.kitchen.scene`: the robosuite environment built from a layout;
- :mod:`~embodia.envs.kitchen.task`: the task interface; :mod:`~embodia.envs.kitchen.sink_tasks`,
  :mod:`~embodia.envs.kitchen.cabinet_tasks`, :mod:`~embodia.envs.kitchen.microwave_tasks`,
  :mod:`~embodia.envs.kitchen.stove_tasks` (a four-burner cooktop with knobs),
  :mod:`~embodia.envs.kitchen.door_tasks` (the wall cabinet's single door or pair),
  :mod:`~embodia.envs.kitchen.coffee_tasks` (a coffee machine and a mug), :mod:`~embodia.envs.kitchen.microwave_pnp_tasks`
  (objects into and out of the microwave): the atomic tasks (each registered next to its class);
- :mod:`~embodia.envs.kitchen.env`: the gymnasium environment (embodia's contract);
- :mod:`~embodia.envs.kitchen.expert`: scripted experts made of motion primitives.
"""

from __future__ import annotations

from typing import Any

# importing the task modules registers the kitchen ids (they need numpy only: robosuite and MuJoCo load
# when an environment is made)
from embodia.envs.kitchen import (  # noqa: F401
    cabinet_tasks,
    coffee_tasks,
    door_tasks,
    microwave_pnp_tasks,
    microwave_tasks,
    sink_tasks,
    stove_tasks,
)
from embodia.envs.kitchen.task import TASKS

__all__ = ["TASKS", "KitchenEnv", "decode_instruction", "encode_instruction"]

_LAZY = {"KitchenEnv", "decode_instruction", "encode_instruction"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from embodia.envs.kitchen import env

        return getattr(env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
