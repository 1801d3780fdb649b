"""Wall-cabinet door tasks after RoboCasa's ``kitchen_doors.py``: open or close the single door, or both
doors of the double-door cabinet.

RoboCasa's ``OpenSingleDoor`` / ``CloseSingleDoor`` / ``OpenDoubleDoor`` / ``CloseDoubleDoor`` act on a
wall cabinet with one or two top-hinged doors; they read each hinge angle normalised over a quarter turn
(``angle / (pi / 2)``), start closed (open tasks) or at 90-100 % open (close tasks), and succeed when every
door of the cabinet is >= 90 % open (>= 1.414 rad) or <= 5 % open (<= 0.0785 rad). Instructions are
RoboCasa's: "open the cabinet door" / "close the cabinet doors". The same here, on embodia's wall cabinet,
whose door count the task fixes in its layout (``cabinet_doors``), so every id is valid on every seed.
Where this differs: RoboCasa adds an object inside the cabinet and distractors on the counter; here the
one object stays parked on a counter.

Door geometry: a door hinged with sign ``s`` (+1: on its -y edge) at angle ``a`` runs from its hinge along
``t(a) = (-sin a, s cos a, 0)`` and its front faces ``n(a) = (-cos a, -s sin a, 0)``
(:func:`~embodia.envs.kitchen.cabinet_tasks.door_tangent` / ``door_normal``); it turns about ``s z``.

The robot stands beside the single door's hinge (nearer the handle to open it, farther out to close it:
outside the open door's swing) or in front of the double-door cabinet's middle. Door handles are
horizontal bars low on the doors (``fixtures.wall_cabinet``), so the Panda reaches them from its fixed base.

Experts: to open, the hand hooks closed fingers behind the door's handle bar (from above, leaning toward
the door so the wrist and forearm stay clear of it) and pulls the bar along the door's arc, the hand turning
with the door, then lifts out and backs off; a pull that stalls ends the attempt. To close, the hand pushes
the door's front face along its arc above the handle: from below the cabinet beside the hinge (the sweep of
``CloseCabinetDoor``), or, between the open doors of the pair, around each door's free edge at pushing
height. The double-door experts handle the right door, then the left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from embodia.envs.kitchen.cabinet_tasks import door_normal, door_tangent
from embodia.envs.kitchen.expert import CLOSED, MoveTo, down_rotation
from embodia.envs.kitchen.layout import KitchenLayout
from embodia.envs.kitchen.task import KitchenTask, register_task

#: RoboCasa's door thresholds, as fractions of a quarter turn
DOOR_OPEN_FRACTION = 0.9
DOOR_CLOSED_FRACTION = 0.05
QUARTER_TURN = np.pi / 2


@dataclass(frozen=True)
class Door:
    """One wall-cabinet door: its joint and sites (model names), hinge sign and width."""

    joint: str
    handle: str
    hinge: str
    sign: float
    width: float


def cabinet_center_y(layout: KitchenLayout) -> float:
    return float(layout.module_centers[layout.cabinet_module] + layout.cabinet_offset)


def free_wall_module(layout: KitchenLayout) -> int:
    """The module nearest the wall cabinet's with nothing standing on it and no sink or stove (the cabinet's
    own when there is none)."""
    kinds = layout.modules
    taken = {layout.microwave_module, layout.coffee_module}
    free = [i for i, kind in enumerate(kinds) if kind in ("counter", "drawer") and i not in taken]
    if not free:
        return layout.cabinet_module
    return min(free, key=lambda i: (abs(i - layout.cabinet_module), i))


def cabinet_doors(layout: KitchenLayout) -> list[Door]:
    """The wall cabinet's doors: the single door, or the pair (right door first)."""
    if layout.cabinet_doors == 2:
        half = layout.cabinet_width / 2
        return [
            Door("cabinet_right_hinge", "cabinet_right_handle", "cabinet_right_hinge", 1.0, half),
            Door("cabinet_left_hinge", "cabinet_left_handle", "cabinet_left_hinge", -1.0, half),
        ]
    return [Door("cabinet_hinge", "cabinet_handle", "cabinet_hinge", layout.hinge_sign, layout.cabinet_width)]


def door_open_fraction(scene: Any, door: Door) -> float:
    """How open ``door`` is, as RoboCasa measures it: its hinge angle over a quarter turn."""
    return scene.joint(door.joint) / QUARTER_TURN


def across_door(angle: float, sign: float, lean: float = 0.0) -> np.ndarray:
    """End-effector rotation with the fingers pointing down and closing along the door (``sign t(a)``,
    which is world +y at angle 0, the robot's home), leaning ``lean`` rad toward the door's front (the wrist
    away from it). Unlike ``down_rotation`` it never flips the wrist by half a turn when the door passes a
    quarter turn."""
    x = sign * door_tangent(angle, sign)
    z = np.cos(lean) * np.array([0.0, 0.0, -1.0]) - np.sin(lean) * door_normal(angle, sign)
    return np.column_stack([x, np.cross(z, x), z])


def turned_about_hinge(point: np.ndarray, hinge: np.ndarray, sign: float, delta: float) -> np.ndarray:
    """``point`` carried by the door when it opens further by ``delta`` (rotation about ``sign z``)."""
    c, s = np.cos(sign * delta), np.sin(sign * delta)
    rel = point - hinge
    return hinge + np.array([c * rel[0] - s * rel[1], s * rel[0] + c * rel[1], rel[2]])


class OpenedOrStalled:
    """End condition of a pull: the door reached ``goal``, or it gained less than ``min_gain`` rad over the
    last ``window`` steps (after the first ``warmup`` steps)."""

    def __init__(self, joint: str, goal: float, window: int = 15, min_gain: float = 0.01, warmup: int = 30):
        self.joint, self.goal, self.window, self.min_gain, self.warmup = joint, goal, window, min_gain, warmup
        self.angles: list[float] = []

    def __call__(self, scene: Any) -> bool:
        angle = scene.joint(self.joint)
        self.angles.append(angle)
        if angle >= self.goal:
            return True
        if len(self.angles) < max(self.warmup, self.window + 1):
            return False
        return angle - self.angles[-1 - self.window] < self.min_gain


def open_door_plan(scene: Any, door: Door, goal: float) -> list[Any]:
    """Hook closed fingers behind the door's handle bar (from above) and pull the bar along the door's arc
    until the hinge reaches ``goal`` (rad); then lift out and back off."""

    def rotation(sc: Any) -> np.ndarray:
        """Fingers down, the hand across the door, leaning toward it: the wrist and forearm stay clear of
        the door's front, more so as the door turns toward the robot."""
        angle = sc.joint(door.joint)
        return across_door(angle, door.sign, lean=0.3 + 0.35 * min(1.0, max(angle, 0.0) / 1.4))

    def hook(sc: Any) -> np.ndarray:
        """Grip-site position of closed fingers between the handle bar and the door's front."""
        normal = door_normal(sc.joint(door.joint), door.sign)
        return sc.site(door.handle) - 0.028 * normal + np.array([0.0, 0.0, -0.004])

    def offset(out: float, up: float) -> Any:
        return lambda sc: hook(sc) + out * door_normal(sc.joint(door.joint), door.sign) + np.array([0, 0, up])

    def ahead(sc: Any) -> np.ndarray:  # where the hook will be once the door has turned on a bit
        return turned_about_hinge(hook(sc), sc.site(door.hinge), door.sign, 0.35)

    return [
        MoveTo(offset(0.12, 0.1), rotation, CLOSED, tolerance=0.02, max_steps=100, name="reach"),
        MoveTo(offset(0.0, 0.08), rotation, CLOSED, tolerance=0.01, name="above"),
        MoveTo(hook, rotation, CLOSED, tolerance=0.006, speed=0.5, name="down"),
        MoveTo(
            ahead,
            rotation,
            CLOSED,
            speed=0.6,
            max_steps=220,
            until=OpenedOrStalled(door.joint, goal),
            name="pull",
        ),
        MoveTo(offset(0.0, 0.1), rotation, CLOSED, max_steps=20, name="lift"),
        MoveTo(offset(0.1, 0.12), rotation, CLOSED, max_steps=20, name="back off"),
    ]


def close_door_plan(scene: Any, door: Door, low: float, around_edge: bool = False) -> list[Any]:
    """Push the door's front face along its arc, above its handle, until it is closed. The hand reaches
    the face from below the cabinet (from height ``low``; the robot stands beside the hinge, outside the
    door's swing) or, with ``around_edge`` (the robot stands in front of a double-door cabinet, between the
    open doors), around the door's free edge at pushing height, so that the forearm never crosses the door."""
    layout = scene.layout
    s, radius = door.sign, (0.6 if around_edge else 0.5) * door.width
    # above the handle; between the doors of a pair low on the doors, where the hand still reaches round the
    # second door's free edge (at 0.55 of the height it drifted into the edge and swung the door open)
    push_z = (
        layout.counter_height + layout.cabinet_gap + (0.33 if around_edge else 0.55) * layout.cabinet_height
    )
    closed = DOOR_CLOSED_FRACTION * QUARTER_TURN

    def point(angle: float, offset: float, z: float, r: float = radius) -> np.ndarray:
        p = scene.site(door.hinge) + r * door_tangent(angle, s) + offset * door_normal(angle, s)
        p[2] = z
        return p

    def along_door(sc: Any) -> np.ndarray:  # fingers down, the hand across the door
        if around_edge:  # past a quarter turn too without flipping the wrist
            return across_door(sc.joint(door.joint), s)
        return down_rotation(door_tangent(sc.joint(door.joint), s))

    angle = scene.joint(door.joint)
    start = angle + 0.3
    if around_edge:
        front_x = scene.site(door.hinge)[0] - door.width - 0.3  # in front of both doors' free edges
        reach = [
            MoveTo(  # straight back first: from the other door, the arm swings clear of this one's edge
                lambda sc: np.array([front_x, sc.eef_pos[1], push_z]),
                along_door,
                CLOSED,
                tolerance=0.04,
                max_steps=60,
                name="back",
            ),
            MoveTo(  # in front of the free edge first: the hand, wide along the door, never meets it
                lambda sc: point(angle, -0.04, push_z, door.width + 0.3),
                along_door,
                CLOSED,
                tolerance=0.04,
                max_steps=60,
                name="before edge",
            ),
            MoveTo(
                lambda sc: point(angle, 0.12, push_z, door.width + 0.2),
                along_door,
                CLOSED,
                tolerance=0.03,
                max_steps=100,
                name="beyond edge",
            ),
            MoveTo(
                lambda sc: point(angle, 0.12, push_z), along_door, CLOSED, tolerance=0.015, name="outside"
            ),
        ]
        leave = [
            MoveTo(lambda sc: point(0.3, 0.15, push_z), along_door, CLOSED, max_steps=25, name="retreat"),
        ]
    else:
        reach = [
            MoveTo(lambda sc: point(start, 0.12, low), along_door, CLOSED, tolerance=0.02, name="approach"),
            MoveTo(lambda sc: point(start, 0.12, push_z), along_door, CLOSED, tolerance=0.015, name="rise"),
        ]
        leave = [
            MoveTo(lambda sc: point(0.4, 0.15, push_z), along_door, CLOSED, max_steps=25, name="retreat"),
        ]
    sweep = MoveTo(
        lambda sc: point(sc.joint(door.joint) - 0.25, 0.045, push_z),
        along_door,
        CLOSED,
        speed=0.7,
        max_steps=160,
        until=lambda sc: sc.joint(door.joint) <= closed / 2,
        name="sweep",
    )
    return [*reach, sweep, *leave]


class _DoorTask(KitchenTask):
    """A wall-cabinet door task: ``doors`` fixes the cabinet's door count, ``opening`` the direction."""

    doors: ClassVar[int] = 1
    opening: ClassVar[bool] = True
    max_episode_steps = 300

    #: the robot's distance in front of the counter, and how far beside the single door's hinge it stands
    #: (positive: outside the door's swing)
    robot_distance: ClassVar[tuple[float, float]] = (0.36, 0.42)
    beside_hinge: ClassVar[tuple[float, float]] = (0.02, 0.1)

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        layout.cabinet_doors = self.doors
        center = cabinet_center_y(layout)
        if self.doors == 2:  # in front of the middle
            if layout.cabinet_module == layout.microwave_module:
                # standing in front of the microwave the arm started inside its door (the double-door
                # experts failed there): the cabinet hangs over the nearest counter without an appliance
                layout.cabinet_module = free_wall_module(layout)
                center = cabinet_center_y(layout)
            layout.robot_x = float(rng.uniform(-0.42, -0.36))
            layout.robot_y = float(center + rng.uniform(-0.04, 0.04))
            return
        s = layout.hinge_sign  # beside the hinge: outside the door's swing
        hinge_y = center - s * layout.cabinet_width / 2
        layout.robot_x = -float(rng.uniform(*self.robot_distance))
        layout.robot_y = float(hinge_y - s * rng.uniform(*self.beside_hinge))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        return np.array([0.1, cabinet_center_y(layout), layout.counter_height + layout.cabinet_gap * 0.8])

    def instruction(self, layout: KitchenLayout) -> str:
        verb = "open" if self.opening else "close"
        return f"{verb} the cabinet {'doors' if self.doors == 2 else 'door'}"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        for door in cabinet_doors(scene.layout):
            fraction = 0.0 if self.opening else rng.uniform(0.9, 1.0)  # RoboCasa's starting states
            scene.set_joint(door.joint, fraction * QUARTER_TURN)

    def observation(self, scene: Any) -> np.ndarray:
        """Per door slot (two; a single door fills the first, the second repeats it): handle and hinge
        relative to the base, handle relative to the hand, hinge angle; then the door count."""
        doors = cabinet_doors(scene.layout)
        parts = []
        for door in (doors * 2)[:2]:
            handle, hinge = scene.site(door.handle), scene.site(door.hinge)
            parts += [
                self.relative(scene, handle),
                self.relative(scene, hinge),
                handle - scene.eef_pos,
                [scene.joint(door.joint), door.sign],
            ]
        return np.concatenate([*parts, [float(len(doors))]])

    def success(self, scene: Any) -> bool:
        """Every door >= 90 % of a quarter turn open (open tasks) or <= 5 % (close tasks)."""
        fractions = [door_open_fraction(scene, door) for door in cabinet_doors(scene.layout)]
        if self.opening:
            return all(f >= DOOR_OPEN_FRACTION for f in fractions)
        return all(f <= DOOR_CLOSED_FRACTION for f in fractions)

    def expert_plan(self, scene: Any) -> list[Any]:
        plan: list[Any] = []
        low = scene.eef_pos[2]
        doors = cabinet_doors(scene.layout)
        for i, door in enumerate(doors):
            if self.opening:
                plan += open_door_plan(scene, door, 1.05 * DOOR_OPEN_FRACTION * QUARTER_TURN)
                if i + 1 < len(doors):  # round the open door's free edge on the way to the next door
                    plan.append(self._clear_of(door))
            else:
                plan += close_door_plan(scene, door, low, around_edge=self.doors == 2)
        return plan

    @staticmethod
    def _clear_of(door: Door) -> MoveTo:
        """In front of the open ``door``'s free edge and outside it (at the hand's height)."""

        def target(sc: Any) -> np.ndarray:
            angle = sc.joint(door.joint)
            p = sc.site(door.hinge) + (door.width + 0.15) * door_tangent(angle, door.sign)
            p += 0.1 * door_normal(angle, door.sign)
            p[2] = sc.eef_pos[2]
            return p

        return MoveTo(
            target, lambda sc: across_door(0.0, 1.0), CLOSED, tolerance=0.03, max_steps=40, name="clear"
        )


class OpenSingleDoor(_DoorTask):
    name = "OpenSingleDoor"
    max_episode_steps = 400
    beside_hinge = (-0.06, 0.02)  # nearer the handle: the pull starts within easy reach
    description = "open the single-door wall cabinet (door >= 90 % of a quarter turn)"
    doors, opening = 1, True


register_task(OpenSingleDoor)


class CloseSingleDoor(_DoorTask):
    name = "CloseSingleDoor"
    description = "close the open single-door wall cabinet (door <= 5 % of a quarter turn)"
    doors, opening = 1, False
    robot_distance, beside_hinge = (0.28, 0.34), (0.1, 0.18)  # CloseCabinetDoor's: clear of the open door


register_task(CloseSingleDoor)


class OpenDoubleDoor(_DoorTask):
    name = "OpenDoubleDoor"
    max_episode_steps = 500
    description = "open both doors of the double-door wall cabinet (each >= 90 % of a quarter turn)"
    doors, opening = 2, True


register_task(OpenDoubleDoor)


class CloseDoubleDoor(_DoorTask):
    name = "CloseDoubleDoor"
    max_episode_steps = 500
    description = "close both open doors of the double-door wall cabinet (each <= 5 % of a quarter turn)"
    doors, opening = 2, False


register_task(CloseDoubleDoor)
