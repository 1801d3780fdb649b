"""The kitchen task interface: where the robot stands, the initial state, the instruction, the task
observation, the success check and the scripted expert's plan. Tasks live in ``sink_tasks``,
``cabinet_tasks`` and ``microwave_tasks``; each registers itself as ``embodia/Kitchen-<Name>-v0`` right
after its class (:func:`register_task`).

Success checks are geometric or read joint angles:

- PickPlaceCounterToSink: the object's centre lies inside the basin (in x/y, 1 cm in from its walls)
  and below the countertop, and the gripper does not hold it;
- OpenDrawer / CloseDrawer: drawer slide >= 60 % of its travel / <= 2 cm;
- CloseCabinetDoor: hinge angle <= 0.08 rad;
- TurnOnFaucet / TurnOffFaucet: |lever angle| >= 0.45 rad / <= 0.12 rad;
- PressMicrowaveButton: the start button went in by >= 6 mm at some step (the microwave latches on).
- TurnOn/TurnOffMicrowave, Open/CloseMicrowaveDoor, PnPCounterToMicrowave / PnPMicrowaveToCounter:
  RoboCasa's checks (see ``microwave_tasks`` and ``microwave_pnp_tasks``).
- TurnOnStove / TurnOffStove: the named burner's knob >= / < 0.35 rad (RoboCasa's threshold);
- PnPCounterToStove / PnPStoveToCounter: the object rests (centre within 8 cm of the named burner's, on
  the cooktop) / (on the countertop outside the stove module) and the gripper does not hold it
  (``stove_tasks``).

Positions in task observations are relative to the robot base (the base moves between layouts).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from embodia.envs.kitchen.layout import BURNERS, KitchenLayout
from embodia.envs.registration import register_env

#: task name -> class
TASKS: dict[str, type[KitchenTask]] = {}

DRAWER_OPEN_FRACTION = 0.6
DRAWER_CLOSED = 0.02
DOOR_CLOSED = 0.08
FAUCET_ON = 0.45
FAUCET_OFF = 0.12
BUTTON_PRESSED = 0.006
BURNER_ON = 0.35
"""A stove knob at least this far from 0 (rad) turns its burner on (RoboCasa's threshold)."""


class KitchenTask:
    """Base class: one atomic task in the kitchen. Subclasses override the hooks they need."""

    name: ClassVar[str] = ""
    max_episode_steps: ClassVar[int] = 200
    description: ClassVar[str] = ""

    # ------------------------------------------------------------------ layout
    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        """Set ``layout.robot_x`` / ``robot_y`` in front of the task's fixture."""
        raise NotImplementedError

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        """World point the ``overview`` camera looks at."""
        return np.array([0.15, layout.robot_y, layout.counter_height + 0.15])

    def instruction(self, layout: KitchenLayout) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------------ episode
    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        """Set the task's initial joint states and object pose (the simulator is forwarded after)."""
        self.park_object(scene, rng)

    def update(self, scene: Any) -> None:
        """Called after every step and reset: latch task events (e.g. a button press)."""

    def refresh_visuals(self, scene: Any) -> None:
        """Show the fixtures' state (running water, microwave light); visual only."""
        model = scene.mj_model
        water = model.geom("sink_water").id
        model.geom_rgba[water, 3] = 0.6 if abs(scene.joint("sink_lever")) >= FAUCET_ON else 0.0
        on = self.microwave_on(scene)
        model.geom_rgba[model.geom("microwave_status").id] = (
            (0.2, 1.0, 0.3, 1) if on else (0.25, 0.25, 0.25, 1)
        )
        model.geom_rgba[model.geom("microwave_window").id] = (
            (0.55, 0.45, 0.15, 1) if on else (0.05, 0.06, 0.07, 1)
        )
        for burner in BURNERS:  # the stove: a flame ring on each burner whose knob is on
            lit = scene.joint(f"stove_knob_{burner}") >= BURNER_ON
            model.geom_rgba[model.geom(f"stove_flame_{burner}").id, 3] = 0.9 if lit else 0.0

    def microwave_on(self, scene: Any) -> bool:
        return False

    def observation(self, scene: Any) -> np.ndarray:
        raise NotImplementedError

    def success(self, scene: Any) -> bool:
        raise NotImplementedError

    def extra_state(self) -> np.ndarray:
        """Task variables kept in Python (saved by ``get_state`` after the simulator state)."""
        return np.zeros(0)

    def set_extra_state(self, values: np.ndarray) -> None:
        pass

    # ------------------------------------------------------------------ expert
    def expert_plan(self, scene: Any) -> list[Any]:
        raise NotImplementedError

    def expert_should_retry(self, scene: Any, plan: list[Any]) -> bool:
        """Whether the expert should start its plan again (e.g. the object slipped out of the gripper)."""
        return False

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def park_object(scene: Any, rng: np.random.Generator) -> None:
        """Put the object at the back of a plain counter without the microwave or the coffee machine (out
        of the way)."""
        layout = scene.layout
        busy = (layout.microwave_module, layout.coffee_module)
        free = [i for i, kind in enumerate(layout.modules) if kind == "counter" and i not in busy]
        i = free[int(rng.integers(len(free)))]
        y = layout.module_centers[i] + rng.uniform(-0.12, 0.12)
        place_object(scene, np.array([layout.counter_depth - 0.1, y]), rng.uniform(-np.pi, np.pi))

    @staticmethod
    def relative(scene: Any, point: np.ndarray) -> np.ndarray:
        return point - scene.base_pos


class Latch:
    """Mixin for a task with a switch the robot turns on or off that stays so (the microwave, the coffee
    machine): ``_on`` is a task variable, saved in the state as one number after the simulator state."""

    _on: bool = False

    def extra_state(self) -> np.ndarray:
        return np.array([float(self._on)])

    def set_extra_state(self, values: np.ndarray) -> None:
        self._on = bool(values[0] > 0.5)


def place_object(scene: Any, xy: np.ndarray, yaw: float) -> None:
    """Stand the object upright on the countertop at ``xy``, turned by ``yaw`` about the vertical."""
    bottom = -scene.object.bottom_offset[2]
    pos = np.array([xy[0], xy[1], scene.layout.counter_height + bottom + 0.002])
    scene.set_object_pose(pos, np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))


def register_task(task: type[KitchenTask]) -> type[KitchenTask]:
    """Register ``task`` as ``embodia/Kitchen-<name>-v0``."""
    TASKS[task.name] = task
    register_env(
        f"embodia/Kitchen-{task.name}-v0",
        "embodia.envs.kitchen.env:KitchenEnv",
        kwargs={"task": task.name},
        max_episode_steps=task.max_episode_steps,
        description=f"robosuite kitchen (Panda, OSC pose): {task.description}",
    )
    return task
