"""Coffee machine tasks (RoboCasa's ``kitchen_coffee.py``): set a mug under the dispenser, serve it back
onto the counter, press the serve button.

The coffee machine and the mug are described in :mod:`~embodia.envs.kitchen.coffee_fixtures` (their sizes
in :mod:`~embodia.envs.kitchen.coffee_geometry`). The coffee
tasks fix the layout's object to the mug (``layout.object_kind``) when they place the robot, so every seed
of every other task still draws its object as before.

The experts hold the mug from above, the fingers closing across its body and leaning away from the robot
base by :data:`GRASP_TILT` (in the vertical plane through the base and the mug, so the arm never twists its
wrist): the wrist then stays in front of and below the machine's spout while the hand carries the mug
sideways onto the drip tray, whose sides are open, turning about the vertical only (the mug stays upright).
The mug always stands level with the station (it starts beside the machine), where the Panda reaches it
with that lean; its handle points away from the robot (within 20 degrees), away from the fingers, like
RoboCasa which draws the mug's turn from a 45 degree range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.envs.kitchen.coffee_geometry import (
    MUG_HEIGHT,
    STATION_X,
    coffee_machine_center,
    coffee_machine_front,
)
from embodia.envs.kitchen.expert import CLOSED, OPEN, Grip, MoveTo, down_rotation
from embodia.envs.kitchen.layout import OBJECT_KINDS, KitchenLayout
from embodia.envs.kitchen.task import BUTTON_PRESSED, KitchenTask, Latch, place_object, register_task

GRASP_TILT = 0.5
"""How far (rad) the experts' fingers lean from the vertical, away from the robot, when they hold the mug."""
REACH = (0.5, 0.54)
"""Range of the mug station's distance (m, along x) in front of the robot base: where the Panda holds the
mug at the drip tray's height with its fingers leaning by GRASP_TILT (its sixth joint limits the lean
closer in, its reach farther out)."""
STATION_TOLERANCE = 0.04
"""Largest distance (m, horizontal) of the mug's centre from the mug station for the mug to be under the
dispenser (RoboCasa's ``xy_thresh``)."""
UPRIGHT_COS = np.cos(np.radians(20))
"""The mug stands upright when its axis is within 20 degrees of the vertical."""
HANDLE_YAW = np.pi / 9
"""The mug's handle points away from the robot, turned by at most this much (rad) either way."""
_MUG = OBJECT_KINDS.index("mug")


def heading(scene: Any, point: np.ndarray) -> float:
    """Direction (rad, about the vertical) from the robot base to ``point``."""
    offset = point - scene.base_pos
    return float(np.arctan2(offset[1], offset[0]))


def mug_grasp_rotation(yaw: float) -> np.ndarray:
    """End-effector rotation that holds the mug: fingers down, leaning by GRASP_TILT away from the robot
    along the heading ``yaw`` (the arm stays in one vertical plane: no wrist twist), closing across it."""
    c, s = np.cos(yaw), np.sin(yaw)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return turn @ down_rotation(tilt=GRASP_TILT)


def approach_direction(yaw: float) -> np.ndarray:
    """Direction the fingers point in (see mug_grasp_rotation)."""
    return np.array([np.sin(GRASP_TILT) * np.cos(yaw), np.sin(GRASP_TILT) * np.sin(yaw), -np.cos(GRASP_TILT)])


def mug_upright(scene: Any) -> bool:
    """Whether the mug's axis is within 20 degrees of the vertical."""
    _, x, y, _ = scene.object_quat
    axis_z = 1.0 - 2.0 * (x * x + y * y)  # z component of the mug's local z axis
    return bool(axis_z >= UPRIGHT_COS)


def mug_contacts(scene: Any) -> set[str]:
    """Names of the geoms (of fixtures and robot) the mug touches."""
    data, model = scene.mj_data, scene.mj_model
    mug = set(scene.object_geoms)
    names = set()
    for contact in data.contact[: data.ncon]:
        if contact.geom1 in mug and contact.geom2 not in mug:
            names.add(model.geom(contact.geom2).name)
        elif contact.geom2 in mug and contact.geom1 not in mug:
            names.add(model.geom(contact.geom1).name)
    return names


def mug_on_station(scene: Any) -> bool:
    """Whether the mug stands under the dispenser: its centre within STATION_TOLERANCE of the mug station
    (horizontally) and its bottom on the drip tray (within 1.5 cm above it)."""
    station = scene.site("coffee_machine_station")
    bottom = scene.object_pos[2] - MUG_HEIGHT / 2
    near = np.linalg.norm(scene.object_pos[:2] - station[:2]) < STATION_TOLERANCE
    return bool(near and -0.01 <= bottom - station[2] <= 0.015)


def mug_on_counter(scene: Any) -> bool:
    """Whether the mug touches a plain counter's countertop and nothing of the coffee machine."""
    touched = mug_contacts(scene)
    on_top = any(name.startswith("counter") and name.endswith("_top") for name in touched)
    return on_top and not any(name.startswith("coffee_machine") for name in touched)


def serve_spot(layout: KitchenLayout) -> np.ndarray:
    """Where the serving expert sets the mug down (x, y): on the free end of the machine's counter, level
    with the mug station, 10 cm beside the machine."""
    y = coffee_machine_center(layout) - layout.coffee_side * (layout.coffee_width / 2 + 0.1)
    return np.array([coffee_machine_front(layout) + STATION_X, y])


class _CoffeeTask(KitchenTask):
    """Shared by the coffee tasks: the mug as the object, the robot in front of the machine, and the
    machine's state shown (a stream of coffee and a green light once it is on)."""

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        layout.object_kind = _MUG
        layout.robot_x = float(coffee_machine_front(layout) + STATION_X - rng.uniform(*REACH))
        layout.robot_y = float(coffee_machine_center(layout) + rng.uniform(-0.015, 0.015))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        return np.array([0.2, coffee_machine_center(layout), layout.counter_height + 0.12])

    def coffee_on(self, scene: Any) -> bool:
        return False

    def refresh_visuals(self, scene: Any) -> None:
        super().refresh_visuals(scene)
        model, on = scene.mj_model, self.coffee_on(scene)
        model.geom_rgba[model.geom("coffee_machine_coffee").id, 3] = 1.0 if on else 0.0
        model.geom_rgba[model.geom("coffee_machine_status").id] = (
            (0.2, 1.0, 0.3, 1) if on else (0.25, 0.25, 0.25, 1)
        )

    # ------------------------------------------------------------------ the mug
    @staticmethod
    def place_mug_on_station(scene: Any, rng: np.random.Generator) -> None:
        station = scene.site("coffee_machine_station")
        xy = station[:2] + rng.uniform(-0.008, 0.008, size=2)
        bottom = -scene.object.bottom_offset[2]
        pos = np.array([xy[0], xy[1], station[2] + bottom + 0.001])
        yaw = rng.uniform(-HANDLE_YAW, HANDLE_YAW)
        scene.set_object_pose(pos, np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))

    def mug_observation(self, scene: Any) -> np.ndarray:
        mug = scene.object_pos
        return np.concatenate(
            [
                self.relative(scene, mug),
                scene.object_quat,
                mug - scene.eef_pos,
                self.relative(scene, scene.site("coffee_machine_station")),
                [float(scene.object_grasped())],
            ]
        )

    @staticmethod
    def _grip_point(mug_center: np.ndarray) -> np.ndarray:
        """Grip-site position that holds a mug centred at ``mug_center``: the finger pads on the top of
        its body, the palm (3 cm behind the grip site) 5 mm clear of the rim on the robot's side."""
        return mug_center + np.array([0.0, 0.0, MUG_HEIGHT / 2 - 0.014])

    def _grasp_steps(self, scene: Any) -> list[Any]:
        """Lean the hand where it is (high up, facing the wall), turn it toward the mug while reaching above
        it, lower the open fingers around it along their direction, close. Leaning first takes the wrist
        past its straight-up position (sixth joint at pi) in one clean sweep; turning the hand about the
        vertical near that position makes the wrist drift about its own axis."""
        yaw = heading(scene, scene.object_pos)
        rotation = mug_grasp_rotation(yaw)
        back = -0.12 * approach_direction(yaw)
        start = scene.eef_pos + np.array([0.0, 0.0, 0.03])

        def grip(s: Any) -> np.ndarray:
            return self._grip_point(s.object_pos)

        return [
            MoveTo(lambda s: start, mug_grasp_rotation(0.0), OPEN, 0.02, max_steps=40, name="lean"),
            MoveTo(lambda s: grip(s) + back + np.array([0, 0, 0.03]), rotation, OPEN, 0.015, name="reach"),
            MoveTo(lambda s: grip(s) + back, rotation, OPEN, 0.006, speed=0.5, name="line up"),
            # the arm drifts sideways on the way down: stop 3.5 cm short along the fingers and line up again
            # there (the open fingers leave the mug 1 cm on either side)
            MoveTo(
                lambda s: grip(s) + 0.3 * back, rotation, OPEN, 0.004, speed=0.3, max_steps=60, name="hover"
            ),
            MoveTo(grip, rotation, OPEN, 0.006, speed=0.3, max_steps=60, name="approach"),
            Grip(CLOSED, 12, name="grasp"),
        ]

    def _carry_steps(self, scene: Any, waypoints: list[np.ndarray], final: np.ndarray) -> list[Any]:
        """Carry the held mug through ``waypoints`` (mug centres), set it down at ``final``, let go, back
        off. The hand turns about the vertical only (toward where it is from the robot base): the mug
        stays upright."""

        def following(s: Any) -> np.ndarray:  # turned toward where the hand is: small, steady turns
            return mug_grasp_rotation(heading(s, s.eef_pos))

        steps: list[Any] = []
        for i, point in enumerate(waypoints):
            target = self._grip_point(point)
            steps.append(MoveTo(lambda s, t=target: t, following, CLOSED, 0.012, speed=0.6, name=f"carry{i}"))
        yaw = heading(scene, final)
        rotation = mug_grasp_rotation(yaw)
        set_down = self._grip_point(final)
        retreat = set_down - 0.12 * approach_direction(yaw)
        return [
            *steps,
            MoveTo(lambda s: set_down, rotation, CLOSED, 0.004, speed=0.3, max_steps=50, name="lower"),
            Grip(OPEN, 10, name="release"),
            MoveTo(lambda s: retreat, rotation, OPEN, 0.015, speed=0.5, name="retreat"),
            MoveTo(lambda s: retreat + np.array([-0.05, 0, 0.06]), rotation, OPEN, 0.02, name="clear"),
        ]

    def expert_should_retry(self, scene: Any, plan: list[Any]) -> bool:
        # carrying phases: the mug should be in the hand
        if plan and plan[0].name.startswith(("carry", "lower")) and getattr(plan[0], "steps", 0) > 5:
            return not scene.touching_object() and mug_upright(scene)
        return False


# ====================================================================== set up the mug
class CoffeeSetupMug(_CoffeeTask):
    """Pick the mug from the counter beside the coffee machine and place it under the dispenser.

    RoboCasa (``CoffeeSetupMug``): a mug on the machine's counter next to it; success when the mug's
    centre is within 4 cm (horizontally) of the machine's receptacle site and within 10 cm of it
    vertically, and the gripper is 25 cm from the mug. embodia: the mug starts beside the machine on the
    same counter, its handle away from the robot; success when the mug's centre is within 4 cm of the mug
    station, its bottom on the drip tray (within 1.5 cm), it stands upright (within 20 degrees) and no
    part of the robot touches it (released, rather than RoboCasa's 25 cm).
    """

    name = "CoffeeSetupMug"
    max_episode_steps = 300
    description = "pick the mug from the counter and place it under the coffee machine's dispenser"

    def __init__(self) -> None:
        self._mug_xy = np.zeros(2)  # drawn with the layout, used by initialize() right after

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        super().place_robot(layout, rng)
        machine = coffee_machine_center(layout)
        gap = layout.coffee_width / 2 + rng.uniform(0.06, 0.09)  # 3-6 cm between mug and machine
        x = coffee_machine_front(layout) + STATION_X + rng.uniform(-0.015, 0.015)
        self._mug_xy = np.array([x, machine - layout.coffee_side * gap])
        layout.robot_y = float((machine + self._mug_xy[1]) / 2 + rng.uniform(-0.015, 0.015))

    def instruction(self, layout: KitchenLayout) -> str:
        return "pick the mug from the counter and place it under the coffee machine dispenser"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        place_object(scene, self._mug_xy, rng.uniform(-HANDLE_YAW, HANDLE_YAW))

    def observation(self, scene: Any) -> np.ndarray:
        return self.mug_observation(scene)

    def success(self, scene: Any) -> bool:
        return mug_on_station(scene) and mug_upright(scene) and not scene.touching_object()

    def expert_plan(self, scene: Any) -> list[Any]:
        station = scene.site("coffee_machine_station")
        center = station + np.array([0.0, 0.0, MUG_HEIGHT / 2 + 0.002])
        carry = center + np.array([0.0, 0.0, 0.023])  # the mug's bottom 2.5 cm above the drip tray
        start = scene.object_pos
        beside = np.array([start[0], start[1], carry[2]])
        return [*self._grasp_steps(scene), *self._carry_steps(scene, [beside, carry], center)]


register_task(CoffeeSetupMug)


# ====================================================================== serve the mug
class CoffeeServeMug(_CoffeeTask):
    """Pick the mug from under the dispenser and place it on the counter.

    RoboCasa (``CoffeeServeMug``): the mug starts under the dispenser; success when it touches the counter
    and the gripper is 25 cm from it. embodia: success when the mug touches a plain counter's countertop
    and nothing of the coffee machine, stands upright (within 20 degrees) and no part of the robot
    touches it.
    """

    name = "CoffeeServeMug"
    max_episode_steps = 300
    description = "pick the mug from under the coffee machine's dispenser and place it on the counter"

    def instruction(self, layout: KitchenLayout) -> str:
        return "pick the mug from under the coffee machine dispenser and place it on the counter"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.place_mug_on_station(scene, rng)

    def observation(self, scene: Any) -> np.ndarray:
        return self.mug_observation(scene)

    def success(self, scene: Any) -> bool:
        return mug_on_counter(scene) and mug_upright(scene) and not scene.touching_object()

    def expert_plan(self, scene: Any) -> list[Any]:
        layout = scene.layout
        lifted = scene.object_pos + np.array([0.0, 0.0, 0.015])
        # out of the station's open side onto the free end of the machine's counter
        y = serve_spot(layout)[1]
        beside = np.array([lifted[0], y, lifted[2]])
        down = np.array([lifted[0], y, layout.counter_height + MUG_HEIGHT / 2 + 0.003])
        return [*self._grasp_steps(scene), *self._carry_steps(scene, [lifted, beside], down)]


register_task(CoffeeServeMug)


# ====================================================================== press the button
class CoffeePressButton(Latch, _CoffeeTask):
    """Press the coffee machine's serve button (a mug waits under the dispenser); the machine latches on.

    RoboCasa (``CoffeePressButton``): the machine turns on at the gripper's first contact with its start
    button; success when it is on and the gripper is 15 cm from the button. embodia: the button is a
    spring-loaded slide; the machine turns on (and stays on, in the saved state) once the button went in
    by >= 6 mm at some step, like the microwave's start button; success as soon as it is on.
    """

    name = "CoffeePressButton"
    max_episode_steps = 150
    description = "press the coffee machine's button to serve coffee into the mug"

    def __init__(self) -> None:
        self._on = False

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        super().place_robot(layout, rng)
        button_y = coffee_machine_center(layout) + layout.coffee_width / 2 - 0.028
        layout.robot_y = float(button_y + rng.uniform(-0.08, 0.08))

    def instruction(self, layout: KitchenLayout) -> str:
        return "press the button on the coffee machine to serve coffee"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.place_mug_on_station(scene, rng)
        self._on = False

    def update(self, scene: Any) -> None:
        self._on = self._on or scene.joint("coffee_machine_button") >= BUTTON_PRESSED

    def coffee_on(self, scene: Any) -> bool:
        return self._on

    def observation(self, scene: Any) -> np.ndarray:
        button = scene.site("coffee_machine_button")
        return np.concatenate(
            [
                self.relative(scene, button),
                button - scene.eef_pos,
                [scene.joint("coffee_machine_button"), float(self._on)],
            ]
        )

    def success(self, scene: Any) -> bool:
        return self._on

    def expert_plan(self, scene: Any) -> list[Any]:
        # fingers pointing down, leaning toward the machine: their front presses the button
        rotation = down_rotation(tilt=0.35)
        contact = np.array([-0.012, 0.0, 0.004])  # grip site when the fingers touch the button's face
        ready = scene.site("coffee_machine_button") + contact + np.array([-0.06, 0.0, 0.03])
        return [
            MoveTo(lambda sc: ready, rotation, CLOSED, tolerance=0.012, max_steps=80, name="reach"),
            MoveTo(lambda sc: ready - np.array([0.0, 0.0, 0.03]), rotation, CLOSED, 0.008, speed=0.5),
            MoveTo(
                lambda sc: sc.site("coffee_machine_button") + contact + np.array([0.03, 0.0, 0.0]),
                rotation,
                CLOSED,
                speed=0.3,
                max_steps=60,
                until=lambda sc: self._on,
                name="press",
            ),
            MoveTo(lambda sc: ready, rotation, CLOSED, max_steps=20, name="release"),
        ]


register_task(CoffeePressButton)
