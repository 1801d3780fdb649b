"""Microwave pick-and-place tasks (RoboCasa's ``PnPCounterToMicrowave`` / ``PnPMicrowaveToCounter`` in
``kitchen_pnp.py``): put a microwavable object (lemon or bread roll) from the countertop onto the
microwave's turntable plate, or take it off the plate and put it on the countertop.

As in RoboCasa, the microwave door starts open by 90-100 % of a quarter turn and the object is one that
may go into a microwave. Where embodia differs: RoboCasa puts the object in a container on a counter
beside the microwave and checks contact with a plate or container; embodia has no containers, so the
object stands on the countertop in front of the microwave's chamber (the counters beside the microwave may
carry the coffee machine or the stove) and the checks touch the microwave's own turntable plate or the
countertop. RoboCasa's "gripper far from the object" (25 cm) is kept.

The experts grasp with the fingers pointing down but leaning toward the wall (``GRASP_TILT``) and work on
the front part of the plate (``PLATE_SPOT`` behind the door plane): a Panda on its robosuite mount reaches
a countertop microwave's chamber from above, and deeper in, its wrist (link 6) meets the chamber's
ceiling. So PnPMicrowaveToCounter starts the object there (RoboCasa: near the plate's centre), and the
microwave is 32-36 cm tall (``layout.microwave_height``), the top of the range of countertop microwaves.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from embodia.envs.kitchen.expert import CLOSED, OPEN, Grip, MoveTo, down_rotation
from embodia.envs.kitchen.layout import KitchenLayout
from embodia.envs.kitchen.microwave_tasks import MicrowaveTask, microwave_front
from embodia.envs.kitchen.task import place_object, register_task

OBJECT_FAR = 0.25
"""RoboCasa's ``gripper_obj_far``: success needs the gripper this far (m) from the object."""
GRASP_TILT = 0.35
"""How far (rad) the expert's fingers lean toward the wall from pointing straight down."""
#: how far in front of the microwave's door plane the object starts (or must be put) on the countertop
COUNTER_SPOT = 0.055
CARRY_HEIGHT = 0.095
"""Height of the grip site above the countertop while the expert carries the object."""
PLATE_SPOT = 0.07
"""How far behind the door plane the expert puts the object's centre on the plate (the plate's front part)."""


def object_touches(scene: Any, geoms: set[int]) -> bool:
    """Whether any of the object's geoms touches one of ``geoms``."""
    data = scene.mj_data
    mine = set(scene.object_geoms)
    for contact in data.contact[: data.ncon]:
        pair = (contact.geom1, contact.geom2)
        if (pair[0] in mine and pair[1] in geoms) or (pair[1] in mine and pair[0] in geoms):
            return True
    return False


#: collision geoms of the countertops (the sink's top is four slabs around its basin)
COUNTERTOP_GEOMS = re.compile(r"^(counter\d+|drawer|stove|sink)_top(_front|_back|_left|_right)?$")
_GEOM_CACHE: dict[tuple[int, str], set[int]] = {}


def geoms_matching(scene: Any, pattern: str) -> set[int]:
    """Ids of the geoms whose names match ``pattern`` (cached per compiled model)."""
    key = (id(scene.mj_model), pattern)
    if key not in _GEOM_CACHE:
        model = scene.mj_model
        _GEOM_CACHE.clear()  # one model at a time: a rebuilt kitchen is a new model
        _GEOM_CACHE[key] = {g for g in range(model.ngeom) if re.match(pattern, model.geom(g).name)}
    return _GEOM_CACHE[key]


class _MicrowavePnP(MicrowaveTask):
    """Door open (RoboCasa's 90-100 % of a quarter turn); the robot in front of the chamber, its base 43-49 cm
    from the door plane: from farther its forearm met the chamber's ceiling on the way to the plate; this close
    its hand can start in the chamber's mouth, which the expert leaves first."""

    max_episode_steps = 450

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        super().place_robot(layout, rng)
        layout.robot_x = float(microwave_front(layout) - rng.uniform(0.43, 0.49))
        layout.robot_y = float(self.chamber_y(layout) - rng.uniform(0.0, 0.06))

    @staticmethod
    def chamber_y(layout: KitchenLayout) -> float:
        """y of the chamber's (and plate's) centre."""
        from embodia.envs.kitchen.fixtures import MICROWAVE_PANEL_WIDTH

        center = layout.module_centers[layout.microwave_module]
        return float(center + MICROWAVE_PANEL_WIDTH / 2)

    def counter_spot(self, scene: Any) -> np.ndarray:
        """Countertop point in front of the chamber (x, y)."""
        return np.array([microwave_front(scene.layout) - COUNTER_SPOT, self.chamber_y(scene.layout)])

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        super().initialize(scene, rng)
        scene.set_joint("microwave_door", rng.uniform(0.9, 1.0) * np.pi / 2)

    def observation(self, scene: Any) -> np.ndarray:
        return np.concatenate(
            [
                super().observation(scene),
                scene.object_quat,
                [float(scene.object_grasped())],
            ]
        )

    def released(self, scene: Any) -> bool:
        far = np.linalg.norm(scene.eef_pos - scene.object_pos) > OBJECT_FAR
        return bool(far and not scene.object_grasped())

    # ------------------------------------------------------------------ expert
    def _grip_point(self, scene: Any) -> np.ndarray:
        """Grip-site target on the object: its centre, lower than its top by at least 2.5 cm."""
        pos = scene.object_pos
        top = pos[2] + scene.object.top_offset[2]
        return np.array([pos[0], pos[1], max(pos[2], top - 0.025)])

    def _grasp_rotation(self, scene: Any, tilt: float) -> np.ndarray:
        """Fingers leaning toward the wall by ``tilt``, closing across the object's local y axis."""
        quat = scene.object_quat
        yaw = 2 * np.arctan2(quat[3], quat[0])
        return down_rotation(np.array([-np.sin(yaw), np.cos(yaw)]), tilt=tilt)

    def carry_plan(self, scene: Any, goal: Any, outside_first: bool) -> list[Any]:
        """Grasp the object, carry it to ``goal(scene)`` (the object's centre when it is put down),
        release it and back away beyond ``OBJECT_FAR``. ``outside_first``: the object is in the chamber,
        so it is slid out at its height before it moves sideways."""
        # on the countertop the fingers grasp straight down (leaning, a hand this close to the robot drifts
        # toward the wall); they lean once the object is up, and inside the chamber from the start
        grasp_rotation = self._grasp_rotation(scene, GRASP_TILT if outside_first else 0.0)
        rotation = self._grasp_rotation(scene, GRASP_TILT)
        carry_z = scene.layout.counter_height + CARRY_HEIGHT
        front = microwave_front(scene.layout)
        in_hand = {"offset": np.zeros(3)}  # grip site minus object centre, measured once grasped

        def lifted_and_measured(sc: Any) -> bool:
            in_hand["offset"] = sc.eef_pos - sc.object_pos
            return abs(sc.eef_pos[2] - carry_z) < 0.015

        def lifted(sc: Any) -> np.ndarray:
            return np.array([sc.eef_pos[0], sc.eef_pos[1], carry_z])

        def over_goal(sc: Any) -> np.ndarray:
            point = goal(sc) + in_hand["offset"]
            point[2] = carry_z
            return point

        def at_goal(sc: Any) -> np.ndarray:
            return goal(sc) + in_hand["offset"]

        plan: list[Any] = []
        if outside_first and scene.eef_pos[0] > front - 0.04:
            # a robot standing close starts with its hand in the chamber's mouth: out of it first
            out = np.array([front - 0.06, scene.eef_pos[1], scene.eef_pos[2]])
            plan.append(
                MoveTo(lambda sc: out, grasp_rotation, OPEN, tolerance=0.02, max_steps=30, name="withdraw")
            )
        plan += [
            MoveTo(
                lambda sc: self._grip_point(sc) + np.array([0.0, 0.0, 0.1]),
                grasp_rotation,
                OPEN,
                tolerance=0.015,
                name="approach",
            ),
            MoveTo(
                self._grip_point,
                grasp_rotation,
                OPEN,
                tolerance=0.006,
                speed=0.5,
                max_steps=50,
                name="reach",
            ),
            Grip(CLOSED, steps_needed=12, name="grasp"),
            MoveTo(
                lifted,
                rotation,
                CLOSED,
                max_steps=40,
                until=lifted_and_measured,
                name="lift",
            ),
        ]
        if outside_first:
            plan.append(
                MoveTo(
                    lambda sc: np.array([front - 0.08, sc.eef_pos[1], carry_z]),
                    rotation,
                    CLOSED,
                    tolerance=0.02,
                    max_steps=60,
                    name="out",
                )
            )
        plan += [
            MoveTo(
                over_goal,
                rotation,
                CLOSED,
                tolerance=0.012,
                max_steps=100,
                name="carry",
            ),
            MoveTo(
                at_goal,
                rotation,
                CLOSED,
                tolerance=0.008,
                speed=0.4,
                max_steps=40,
                name="lower",
            ),
            Grip(OPEN, steps_needed=10, name="release"),
            MoveTo(
                lambda sc: sc.eef_pos + np.array([0.0, 0.0, 0.02]) if sc.eef_pos[0] > front else sc.eef_pos,
                rotation,
                OPEN,
                tolerance=0.005,
                max_steps=5,
                name="clear",
            ),
            MoveTo(
                lambda sc: sc.object_pos + np.array([-OBJECT_FAR - 0.05, 0.0, 0.08]),
                rotation,
                OPEN,
                tolerance=0.02,
                max_steps=80,
                name="back away",
            ),
        ]
        return plan

    def on_goal(self, scene: Any) -> bool:
        """Whether the object rests where the task wants it (the check without "released")."""
        raise NotImplementedError

    def success(self, scene: Any) -> bool:
        return self.on_goal(scene) and self.released(scene)

    def expert_should_retry(self, scene: Any, plan: list[Any]) -> bool:
        # carrying phases: the object should be in the hand, unless it already slipped onto its goal
        if plan and plan[0].name in ("lift", "out", "carry") and getattr(plan[0], "steps", 0) > 5:
            return not scene.touching_object() and not self.on_goal(scene)
        return False


class PnPCounterToMicrowave(_MicrowavePnP):
    """RoboCasa's PnPCounterToMicrowave: the object starts on the countertop in front of the microwave's
    open chamber. Success: the object touches the microwave's turntable plate, is not grasped, and the
    gripper is more than 25 cm from it."""

    name = "PnPCounterToMicrowave"
    description = "pick the object from the counter and place it in the microwave"

    def instruction(self, layout: KitchenLayout) -> str:
        return f"pick the {layout.object_name} from the counter and place it in the microwave"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        super().initialize(scene, rng)
        spot = self.counter_spot(scene) + np.array([0.0, rng.uniform(-0.04, 0.04)])
        place_object(scene, spot, rng.uniform(-np.pi, np.pi))

    def on_goal(self, scene: Any) -> bool:
        return object_touches(scene, geoms_matching(scene, r"^microwave_plate$"))

    def expert_plan(self, scene: Any) -> list[Any]:
        def goal(sc: Any) -> np.ndarray:
            # on the front part of the plate: the wrist stays outside the chamber, under its ceiling
            plate = sc.site("microwave_plate")
            x = microwave_front(sc.layout) + PLATE_SPOT
            return np.array([x, plate[1], plate[2] - sc.object.bottom_offset[2] + 0.01])

        return self.carry_plan(scene, goal, outside_first=False)


register_task(PnPCounterToMicrowave)


class PnPMicrowaveToCounter(_MicrowavePnP):
    """RoboCasa's PnPMicrowaveToCounter: the object starts on the microwave's plate. Success: the object
    touches a countertop (outside the microwave), is not grasped, and the gripper is more than 25 cm from
    it."""

    name = "PnPMicrowaveToCounter"
    description = "pick the object from the microwave and place it on the counter"

    def instruction(self, layout: KitchenLayout) -> str:
        return f"pick the {layout.object_name} from the microwave and place it on the counter"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        super().initialize(scene, rng)
        # on the front part of the plate (RoboCasa: near its centre): the wrist reaches no deeper
        plate = scene.site("microwave_plate")
        x = microwave_front(scene.layout) + PLATE_SPOT + rng.uniform(-0.01, 0.01)
        y = plate[1] + rng.uniform(-0.03, 0.03)
        yaw = rng.uniform(-np.pi, np.pi)
        z = plate[2] - scene.object.bottom_offset[2] + 0.002
        scene.set_object_pose(np.array([x, y, z]), np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))

    def on_goal(self, scene: Any) -> bool:
        return object_touches(scene, geoms_matching(scene, COUNTERTOP_GEOMS.pattern))

    def expert_plan(self, scene: Any) -> list[Any]:
        def goal(sc: Any) -> np.ndarray:
            spot = self.counter_spot(sc)
            return np.array(
                [
                    spot[0],
                    spot[1],
                    sc.layout.counter_height - sc.object.bottom_offset[2] + 0.01,
                ]
            )

        return self.carry_plan(scene, goal, outside_first=True)


register_task(PnPMicrowaveToCounter)


__all__ = ["OBJECT_FAR", "PnPCounterToMicrowave", "PnPMicrowaveToCounter"]
