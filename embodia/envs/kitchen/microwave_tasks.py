"""Microwave tasks (RoboCasa's ``kitchen_microwave.py`` and its single-door tasks on the microwave): turn the
microwave on or off with its start / stop button, open or close its door.

The microwave (``fixtures.microwave``) has a door hinged on its left edge (joint ``microwave_door``,
0 = closed, positive = open toward the room), a handle bar on the door's free edge, a turntable plate in
its chamber and two spring-loaded buttons on its control panel: start (joint ``microwave_button``) and
stop (``microwave_stop_button``). Whether it is on is a latch kept by the task and saved in the
environment state (its last entry), updated after every step as RoboCasa's ``Microwave.update_state``
does: an open door turns it off; otherwise a press of stop turns it off and a press of start turns it on.
RoboCasa counts a press when the gripper touches the button; embodia's buttons are real spring-loaded
slides, so a press is the button going in by ``BUTTON_PRESSED`` (6 mm).

Door angles are compared with RoboCasa's thresholds on the door state normalised by a quarter turn:
open >= 0.90 (``MICROWAVE_DOOR_OPEN`` = 1.414 rad), closed <= 0.05 (``MICROWAVE_DOOR_CLOSED`` = 0.079 rad).

The door experts work on the door's arc: with ``a`` the hinge angle, the door runs from its hinge along
``t(a) = (-sin a, -cos a, 0)`` and its front face looks along ``n(a) = (-cos a, sin a, 0)``.

Placement: the microwave stands ``fixtures.MICROWAVE_FRONT`` (10 cm) behind the cabinet fronts, on a plain
counter, 32-36 cm tall (``layout.microwave_height``); the robot stands 0.5-0.66 m in front of its door (in
front of the control panel for the buttons, of the chamber for the door and pick-and-place, left of the
hinge to close the door). As RoboCasa puts a microwavable object in the microwave for these tasks, the
object is a lemon or a bread roll (``place_robot`` fixes ``layout.object_kind``) standing on the plate.
The pick-and-place tasks are in :mod:`~embodia.envs.kitchen.microwave_pnp_tasks`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from embodia.envs.kitchen.expert import CLOSED, OPEN, Grip, MoveTo, down_rotation
from embodia.envs.kitchen.layout import OBJECT_KINDS, KitchenLayout
from embodia.envs.kitchen.task import BUTTON_PRESSED, KitchenTask, Latch, register_task

MICROWAVE_DOOR_OPEN = 0.9 * np.pi / 2
"""Door angle (rad) from which the door counts as open (RoboCasa: 90 % of a quarter turn)."""
MICROWAVE_DOOR_CLOSED = 0.05 * np.pi / 2
"""Door angle (rad) up to which the door counts as closed (RoboCasa: 5 % of a quarter turn)."""
BUTTON_FAR = 0.15
"""RoboCasa's button tasks succeed only once the gripper is this far (m) from the pressed button."""
#: objects that may go into a microwave (RoboCasa draws "microwavable" objects): the lemon and the bread roll
MICROWAVABLE = tuple(OBJECT_KINDS.index(kind) for kind in ("lemon", "bread"))


def door_tangent(angle: float) -> np.ndarray:
    """Unit vector along the microwave door from its hinge to its free edge, at hinge ``angle``."""
    return np.array([-np.sin(angle), -np.cos(angle), 0.0])


def door_normal(angle: float) -> np.ndarray:
    """Outward normal of the microwave door's front face (toward the room when closed)."""
    return np.array([-np.cos(angle), np.sin(angle), 0.0])


def microwave_front(layout: KitchenLayout) -> float:
    """x of the microwave's door front (world)."""
    from embodia.envs.kitchen.fixtures import MICROWAVE_FRONT  # robosuite loads with the fixtures

    return MICROWAVE_FRONT


def place_on_plate(scene: Any, rng: np.random.Generator, spread: float = 0.03) -> None:
    """Stand the object upright on the microwave's turntable plate, near its centre."""
    plate = scene.site("microwave_plate")
    bottom = -scene.object.bottom_offset[2]
    xy = plate[:2] + rng.uniform(-spread, spread, size=2)
    yaw = rng.uniform(-np.pi, np.pi)
    pos = np.array([xy[0], xy[1], plate[2] + bottom + 0.002])
    scene.set_object_pose(pos, np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))


class MicrowaveTask(Latch, KitchenTask):
    """Shared by the microwave tasks: the on/off latch (saved in the state), the task observation, the
    robot standing in front of the microwave and a microwavable object (lemon or bread roll)."""

    #: whether the microwave starts on
    starts_on: ClassVar[bool] = False
    #: range of the robot base's distance in front of the microwave door
    robot_distance: ClassVar[tuple[float, float]] = (0.56, 0.64)

    def __init__(self) -> None:
        self._on = False

    # ------------------------------------------------------------------ layout
    def center(self, layout: KitchenLayout) -> float:
        return float(layout.module_centers[layout.microwave_module])

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        layout.object_kind = int(MICROWAVABLE[int(rng.integers(len(MICROWAVABLE)))])
        layout.robot_x = float(microwave_front(layout) - rng.uniform(*self.robot_distance))
        layout.robot_y = float(self.center(layout) + rng.uniform(-0.06, 0.06))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        return np.array([microwave_front(layout) + 0.1, self.center(layout), layout.counter_height + 0.12])

    # ------------------------------------------------------------------ episode
    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        place_on_plate(scene, rng)
        self._on = self.starts_on

    def update(self, scene: Any) -> None:
        door_open = scene.joint("microwave_door") >= MICROWAVE_DOOR_OPEN
        stopped = self._on and scene.joint("microwave_stop_button") >= BUTTON_PRESSED
        if door_open or stopped:
            self._on = False
        elif scene.joint("microwave_button") >= BUTTON_PRESSED:
            self._on = True

    def microwave_on(self, scene: Any) -> bool:
        return self._on

    def observation(self, scene: Any) -> np.ndarray:
        handle = scene.site("microwave_door_handle")
        return np.concatenate(
            [
                self.relative(scene, handle),
                handle - scene.eef_pos,
                self.relative(scene, scene.site("microwave_door_hinge")),
                self.relative(scene, scene.site("microwave_button")),
                self.relative(scene, scene.site("microwave_stop_button")),
                self.relative(scene, scene.site("microwave_plate")),
                self.relative(scene, scene.object_pos),
                [
                    scene.joint("microwave_door"),
                    scene.joint("microwave_button"),
                    scene.joint("microwave_stop_button"),
                    float(self._on),
                ],
            ]
        )

    # ------------------------------------------------------------------ helpers
    def press_plan(self, scene: Any, button: str, pressed: Any, retreat: bool) -> list[Any]:
        """Press the button whose site is ``button`` until ``pressed(scene)``; then let go (and, with
        ``retreat``, back away beyond ``BUTTON_FAR``)."""
        # fingers pointing down, leaning toward the microwave: their front presses the button
        rotation = down_rotation(tilt=0.35)
        contact = np.array([-0.012, 0.0, 0.004])  # grip site when the fingers touch the button's face
        ready = scene.site(button) + contact + np.array([-0.06, 0.0, 0.03])
        plan = [
            MoveTo(lambda sc: ready, rotation, CLOSED, tolerance=0.012, max_steps=80, name="reach"),
            MoveTo(
                lambda sc: ready - np.array([0.0, 0.0, 0.03]),
                rotation,
                CLOSED,
                tolerance=0.008,
                speed=0.5,
                name="line up",
            ),
            MoveTo(
                lambda sc: sc.site(button) + contact + np.array([0.03, 0.0, 0.0]),
                rotation,
                CLOSED,
                speed=0.3,
                max_steps=60,
                until=pressed,
                name="press",
            ),
            MoveTo(lambda sc: ready, rotation, CLOSED, max_steps=20, name="release"),
        ]
        if retreat:
            away = scene.site(button) + np.array([-0.2, 0.0, 0.1])
            plan.append(
                MoveTo(lambda sc: away, rotation, CLOSED, tolerance=0.02, max_steps=60, name="retreat")
            )
        return plan

    @staticmethod
    def gripper_far_from(scene: Any, site: str, distance: float) -> bool:
        return bool(np.linalg.norm(scene.eef_pos - scene.site(site)) > distance)


# ====================================================================== buttons
class TurnOnMicrowave(MicrowaveTask):
    """RoboCasa's TurnOnMicrowave: the door is closed and the microwave off, an object on its plate.
    Success: the microwave is on (the latch) and the gripper is more than ``BUTTON_FAR`` (15 cm) from the
    start button, as RoboCasa checks."""

    name = "TurnOnMicrowave"
    max_episode_steps = 200
    description = "turn on the microwave (press its start button, then move away)"

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        """In front of the control panel."""
        super().place_robot(layout, rng)
        from embodia.envs.kitchen.fixtures import MICROWAVE_PANEL_WIDTH

        panel_y = self.center(layout) - (layout.microwave_width - MICROWAVE_PANEL_WIDTH) / 2
        layout.robot_y = float(panel_y + rng.uniform(-0.08, 0.08))

    def instruction(self, layout: KitchenLayout) -> str:
        return "press the start button on the microwave"

    def success(self, scene: Any) -> bool:
        return self._on and self.gripper_far_from(scene, "microwave_button", BUTTON_FAR)

    def expert_plan(self, scene: Any) -> list[Any]:
        return self.press_plan(scene, "microwave_button", lambda sc: self._on, retreat=True)


register_task(TurnOnMicrowave)


class PressMicrowaveButton(TurnOnMicrowave):
    """embodia's first microwave task, kept with its own id, observation and check (recorded datasets and
    measured policies use them): like TurnOnMicrowave, but it succeeds as soon as the start button went in
    by 6 mm (the microwave latches on), wherever the gripper is. TurnOnMicrowave is RoboCasa's version."""

    name = "PressMicrowaveButton"
    max_episode_steps = 150
    description = "press the microwave's start button"

    def observation(self, scene: Any) -> np.ndarray:
        button = scene.site("microwave_button")
        return np.concatenate(
            [
                self.relative(scene, button),
                button - scene.eef_pos,
                [scene.joint("microwave_button"), float(self._on)],
            ]
        )

    def success(self, scene: Any) -> bool:
        return self._on

    def expert_plan(self, scene: Any) -> list[Any]:
        return self.press_plan(scene, "microwave_button", lambda sc: self._on, retreat=False)


register_task(PressMicrowaveButton)


class TurnOffMicrowave(TurnOnMicrowave):
    """RoboCasa's TurnOffMicrowave: the door is closed and the microwave on, an object on its plate.
    Success: the microwave is off (a press of the stop button) and the gripper is more than ``BUTTON_FAR``
    from the stop button."""

    name = "TurnOffMicrowave"
    max_episode_steps = 200
    description = "turn off the microwave (press its stop button, then move away)"
    starts_on = True

    def instruction(self, layout: KitchenLayout) -> str:
        return "press the stop button on the microwave"

    def success(self, scene: Any) -> bool:
        return not self._on and self.gripper_far_from(scene, "microwave_stop_button", BUTTON_FAR)

    def expert_plan(self, scene: Any) -> list[Any]:
        return self.press_plan(scene, "microwave_stop_button", lambda sc: not self._on, retreat=True)


register_task(TurnOffMicrowave)


# ====================================================================== door
class OpenMicrowaveDoor(MicrowaveTask):
    """RoboCasa's OpenSingleDoor on the microwave: the door starts closed, an object on the plate.
    Success: door angle >= ``MICROWAVE_DOOR_OPEN`` (RoboCasa's 0.90 of a quarter turn).

    Expert: fingers pointing down grip the free top end of the handle bar (closing along the door), pull
    it along the door's arc while the wrist turns with the door, let go and lift."""

    name = "OpenMicrowaveDoor"
    max_episode_steps = 300
    description = "open the microwave door"
    robot_distance = (0.6, 0.66)

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        super().place_robot(layout, rng)
        layout.robot_y = float(self.center(layout) + rng.uniform(0.0, 0.08))

    def instruction(self, layout: KitchenLayout) -> str:
        return "open the microwave door"

    def success(self, scene: Any) -> bool:
        return scene.joint("microwave_door") >= MICROWAVE_DOOR_OPEN

    def expert_plan(self, scene: Any) -> list[Any]:
        hinge = scene.site("microwave_door_hinge")
        angle0 = scene.joint("microwave_door")
        offset = scene.site("microwave_door_handle") - hinge
        radius = float(offset[:2] @ door_tangent(angle0)[:2])
        standoff = float(offset[:2] @ door_normal(angle0)[:2])
        z = scene.site("microwave_door_handle")[2]
        goal = MICROWAVE_DOOR_OPEN + 0.08

        def handle_at(angle: float) -> np.ndarray:
            point = hinge + radius * door_tangent(angle) + standoff * door_normal(angle)
            point[2] = z
            return point

        def door(sc: Any) -> float:
            return sc.joint("microwave_door")

        def along_door(angle: float) -> np.ndarray:
            # fingers close across the bar (along the door); kept short of a quarter turn, where
            # down_rotation would flip the hand
            return down_rotation(door_tangent(min(angle, 1.5)))

        above = np.array([0.0, 0.0, 0.08])
        return [
            MoveTo(
                lambda sc: handle_at(door(sc)) + above,
                along_door(angle0),
                OPEN,
                tolerance=0.012,
                name="above",
            ),
            MoveTo(
                lambda sc: handle_at(door(sc)),
                along_door(angle0),
                OPEN,
                tolerance=0.006,
                speed=0.5,
                max_steps=30,
                name="lower",
            ),
            Grip(CLOSED, steps_needed=12, name="grasp"),
            MoveTo(
                lambda sc: handle_at(min(door(sc) + 0.3, goal + 0.1)),
                lambda sc: along_door(door(sc) + 0.15),
                CLOSED,
                speed=0.6,
                max_steps=220,
                until=lambda sc: door(sc) >= goal,
                name="pull",
            ),
            Grip(OPEN, steps_needed=8, name="let go"),
            MoveTo(lambda sc: sc.eef_pos + above, lambda sc: sc.eef_rotation, OPEN, max_steps=20, name="up"),
        ]


register_task(OpenMicrowaveDoor)


class CloseMicrowaveDoor(MicrowaveTask):
    """RoboCasa's CloseSingleDoor on the microwave: the door starts open by 90-100 % of a quarter turn
    (RoboCasa's range), an object on the plate. Success: door angle <= ``MICROWAVE_DOOR_CLOSED``.

    Expert: the robot stands left of the door; closed fingers push the door's front face along its arc."""

    name = "CloseMicrowaveDoor"
    max_episode_steps = 250
    description = "close the open microwave door"

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        super().place_robot(layout, rng)
        hinge_y = self.center(layout) + layout.microwave_width / 2
        layout.robot_x = float(microwave_front(layout) - rng.uniform(0.5, 0.56))
        layout.robot_y = float(hinge_y + rng.uniform(0.18, 0.24))

    def instruction(self, layout: KitchenLayout) -> str:
        return "close the microwave door"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        super().initialize(scene, rng)
        scene.set_joint("microwave_door", rng.uniform(0.9, 1.0) * np.pi / 2)

    def success(self, scene: Any) -> bool:
        return scene.joint("microwave_door") <= MICROWAVE_DOOR_CLOSED

    def expert_plan(self, scene: Any) -> list[Any]:
        layout = scene.layout
        from embodia.envs.kitchen.fixtures import MICROWAVE_PANEL_WIDTH

        radius = 0.5 * (layout.microwave_width - MICROWAVE_PANEL_WIDTH)
        push_z = layout.counter_height + 0.1

        def point(angle: float, offset: float, z: float) -> np.ndarray:
            """Outside the door's front face at ``angle``, ``offset`` from it, at height ``z``."""
            p = (
                scene.site("microwave_door_hinge")
                + radius * door_tangent(angle)
                + offset * door_normal(angle)
            )
            p[2] = z
            return p

        def along_door(sc: Any) -> np.ndarray:
            return down_rotation(door_tangent(sc.joint("microwave_door")))

        start = scene.joint("microwave_door") + 0.3
        high = layout.counter_height + layout.microwave_height + 0.08
        return [
            MoveTo(lambda sc: point(start, 0.12, high), along_door, CLOSED, tolerance=0.02, name="approach"),
            MoveTo(lambda sc: point(start, 0.12, push_z), along_door, CLOSED, tolerance=0.015, name="lower"),
            MoveTo(
                lambda sc: point(sc.joint("microwave_door") - 0.25, 0.045, push_z),
                along_door,
                CLOSED,
                speed=0.7,
                max_steps=160,
                until=lambda sc: sc.joint("microwave_door") <= MICROWAVE_DOOR_CLOSED / 2,
                name="sweep",
            ),
            MoveTo(lambda sc: point(0.4, 0.15, push_z), along_door, CLOSED, max_steps=25, name="retreat"),
        ]


register_task(CloseMicrowaveDoor)
