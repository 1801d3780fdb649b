"""Stove tasks (RoboCasa's ``kitchen_stove.py`` and the stove pair of ``kitchen_pnp.py``): turn a burner on or
off with its knob; move an object from the counter onto a burner and from a burner back onto the counter.

The stove module (``embodia/sim_assets/kitchen/stove.xml``) is a glass cooktop with four burners
(``front_left``, ``front_right``, ``rear_left``, ``rear_right``; left is the robot's left, +y) and one knob
per burner on the countertop's front strip. A knob turns about the vertical (joint ``stove_knob_<burner>``,
range 0..pi like RoboCasa's stovetop knobs, 0 = off); its burner is on while the knob is at least
:data:`~embodia.envs.kitchen.task.BURNER_ON` (0.35 rad, RoboCasa's threshold) from off, and its flame ring
is drawn then. A knob carries a fin; at angle ``a`` the fin lies along ``(cos a, sin a)``. The knob
experts pinch the fin from above (fingers closing across it) and turn the wrist about the vertical.

Every kitchen has the stove, beside the drawer unit (see :func:`~embodia.envs.kitchen.layout.sample_kitchen`);
the burner a task names is the layout's ``stove_burner`` (drawn with the kitchen, so a saved state
rebuilds its instruction).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.envs.kitchen.expert import CLOSED, OPEN, Grip, MoveTo
from embodia.envs.kitchen.layout import BURNERS, OBJECT_KINDS, KitchenLayout
from embodia.envs.kitchen.task import BURNER_ON, KitchenTask, place_object, register_task

#: how close (m, in x/y) an object's centre must be to a burner's centre to stand on it (RoboCasa's 0.08)
ON_BURNER_DISTANCE = 0.08
#: an object moving faster than this (m/s) is not resting yet
RESTING_SPEED = 0.1
#: an upright object's bottom may be this far (m) above the surface under it and still stand on it
SURFACE_SLACK = 0.02


def burner_words(burner: str) -> str:
    """``"front_left"`` -> ``"front left"`` (as RoboCasa's instructions say it)."""
    return burner.replace("_", " ")


#: how far (rad) the expert turns the fingers about the vertical from the arm's own sideways direction,
#: clockwise and counter-clockwise seen from above, before it lets go of a knob and grasps it again (the
#: Panda's last wrist joint stops ~2.1 rad and ~3.6 rad from its home angle)
WRIST_RANGE = (-1.9, 2.9)
#: how far (rad) ahead of the wrist the expert's turning target leads (sets the turning speed: faster
#: turns pull the hand off the knob's axis and the fin out of the fingers)
TURN_LEAD = 0.15


def fingers_down(yaw: float) -> np.ndarray:
    """Gripper pointing down with its fingers closing along the horizontal direction at ``yaw``."""
    fingers = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    down = np.array([0.0, 0.0, -1.0])
    return np.column_stack([fingers, np.cross(down, fingers), down])


def wrap(angle: float) -> float:
    """``angle`` wrapped to [-pi, pi)."""
    return float((angle + np.pi) % (2 * np.pi) - np.pi)


class _StoveTask(KitchenTask):
    """Shared geometry: the named burner, its knob, the stove's centre and the counter beside it."""

    @staticmethod
    def burner(layout: KitchenLayout) -> str:
        return BURNERS[layout.stove_burner]

    @staticmethod
    def stove_center(layout: KitchenLayout) -> float:
        return float(layout.module_centers[layout.module_index("stove")])

    @staticmethod
    def stove_half_width(layout: KitchenLayout) -> float:
        return float(layout.module_widths[layout.module_index("stove")] / 2)

    @staticmethod
    def free_side(layout: KitchenLayout) -> float:
        """+1 if the drawer unit (whose countertop is free for objects) is on the stove's +y side, else -1."""
        drawer = layout.module_centers[layout.module_index("drawer")]
        return 1.0 if drawer > layout.module_centers[layout.module_index("stove")] else -1.0

    @staticmethod
    def burner_xy(layout: KitchenLayout, burner: str) -> np.ndarray:
        """World x/y of a burner's centre, from the layout (the simulator's site agrees)."""
        from embodia.envs.kitchen.fixtures import BURNER_POSITIONS

        bx, by = BURNER_POSITIONS[burner]
        return np.array([bx, _StoveTask.stove_center(layout) + by])

    @staticmethod
    def knob_xy(layout: KitchenLayout, burner: str) -> np.ndarray:
        from embodia.envs.kitchen.fixtures import KNOB_POSITIONS

        kx, ky = KNOB_POSITIONS[burner]
        return np.array([kx, _StoveTask.stove_center(layout) + ky])

    def knob_angle(self, scene: Any) -> float:
        return scene.joint(f"stove_knob_{self.burner(scene.layout)}")

    @staticmethod
    def switch_all_off(scene: Any) -> None:
        for burner in BURNERS:
            scene.set_joint(f"stove_knob_{burner}", 0.0)


# ====================================================================== knobs
class _KnobTask(_StoveTask):
    """Turn the named burner's knob (RoboCasa's ``ManipulateStoveKnob``). The robot stands in front of the
    knob; the other knobs start off."""

    max_episode_steps = 200
    behavior = ""

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        knob = self.knob_xy(layout, self.burner(layout))
        layout.robot_x = float(rng.uniform(-0.46, -0.4))
        layout.robot_y = float(knob[1] + rng.uniform(-0.08, 0.08))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        return np.array([0.15, self.stove_center(layout), layout.counter_height + 0.05])

    def instruction(self, layout: KitchenLayout) -> str:
        return f"{self.behavior} the {burner_words(self.burner(layout))} burner of the stove"

    def observation(self, scene: Any) -> np.ndarray:
        burner = self.burner(scene.layout)
        knob = scene.site(f"stove_knob_{burner}")
        angle = scene.joint(f"stove_knob_{burner}")
        return np.concatenate(
            [
                self.relative(scene, knob),
                self.relative(scene, scene.site(f"stove_burner_{burner}")),
                knob - scene.eef_pos,
                [angle, float(angle >= BURNER_ON)],
            ]
        )

    def _turn_plan(self, scene: Any, goal: float, done: Any) -> list[Any]:
        """Pinch the fin from above, turn the wrist toward knob angle ``goal`` until ``done``, let go.

        Angles of the wrist are the fingers' direction about the vertical measured from the arm's sideways
        direction (where the Panda's wrist is mid-range), kept in [-pi, pi) so that the wrist never winds
        through its stop. Of the finger directions across the fin within :data:`WRIST_RANGE` the grasp takes
        the one that leaves the wrist the most room to turn, turning there in steps of at most 0.6 rad; the fin is pinched at its centre, on the knob's axis,
        so the hand then only turns, :data:`TURN_LEAD` ahead of where it is. The turn stops at ``done`` or
        when the wrist reaches the end of :data:`WRIST_RANGE`; the plan is then made again (a knob far from
        ``goal`` takes two grasps)."""
        burner = self.burner(scene.layout)
        joint = f"stove_knob_{burner}"
        direction = 1.0 if goal > scene.joint(joint) else -1.0
        knob = scene.site(f"stove_knob_{burner}")
        sideways = np.arctan2(knob[1] - scene.base_pos[1], knob[0] - scene.base_pos[0]) + np.pi / 2
        across = scene.joint(joint) + np.pi / 2 - sideways  # fingers across the fin
        nearest = (across + np.pi / 2) % np.pi - np.pi / 2  # the gripper is symmetric: across mod pi
        low, high = WRIST_RANGE
        reachable = [g for g in (nearest - np.pi, nearest, nearest + np.pi) if low + 0.1 <= g <= high - 0.1]
        grasp = min(reachable) if direction > 0 else max(reachable)  # the most room to turn

        def wrist(s: Any) -> float:
            rotation = s.eef_rotation
            return wrap(np.arctan2(rotation[1, 0], rotation[0, 0]) - sideways)

        def toward_grasp(s: Any) -> np.ndarray:
            now = wrist(s)
            return fingers_down(sideways + now + np.clip(grasp - now, -0.6, 0.6))

        def turning(s: Any) -> np.ndarray:
            return fingers_down(sideways + wrist(s) + direction * TURN_LEAD)

        def finished(s: Any) -> bool:
            return bool(done(s) or not low <= wrist(s) <= high)

        def fin(s: Any) -> np.ndarray:
            return s.site(f"stove_knob_{burner}") + np.array([0.0, 0.0, -0.002])

        return [
            MoveTo(
                lambda s: fin(s) + np.array([0.0, 0.0, 0.1]),
                toward_grasp,
                OPEN,
                tolerance=0.012,
                max_steps=100,
                name="reach",
            ),
            MoveTo(fin, fingers_down(sideways + grasp), OPEN, tolerance=0.005, speed=0.5, name="descend"),
            Grip(CLOSED, 10, name="pinch"),
            MoveTo(fin, turning, CLOSED, max_steps=90, until=finished, name="turn"),
            Grip(OPEN, 8, name="let go"),
            MoveTo(
                lambda s: fin(s) + np.array([0.0, 0.0, 0.1]),
                lambda s: s.eef_rotation,
                OPEN,
                tolerance=0.02,
                max_steps=20,
                name="lift",
            ),
        ]

    def expert_should_retry(self, scene: Any, plan: list[Any]) -> bool:
        return not plan and not self.success(scene)  # the turn ended short: grasp again


class TurnOnStove(_KnobTask):
    """RoboCasa's ``TurnOnStove``: the named burner's knob starts at 0 (off); success once it is turned to
    at least :data:`BURNER_ON` (0.35 rad: the burner's flame is on). RoboCasa also stands a pan on a burner;
    embodia's single object is parked on a plain counter instead."""

    name = "TurnOnStove"
    description = "turn on a named burner of the stove with its knob"
    behavior = "turn on"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        self.switch_all_off(scene)

    def success(self, scene: Any) -> bool:
        return self.knob_angle(scene) >= BURNER_ON

    def expert_plan(self, scene: Any) -> list[Any]:
        return self._turn_plan(scene, 1.0, lambda s: self.knob_angle(s) >= BURNER_ON + 0.25)


register_task(TurnOnStove)


class TurnOffStove(_KnobTask):
    """RoboCasa's ``TurnOffStove``: the named burner's knob starts on, at an angle drawn from 0.5 rad to its
    upper limit (pi) as RoboCasa draws it; success once the knob is below :data:`BURNER_ON` (the flame is
    out). A knob turned far takes the expert two grasps."""

    name = "TurnOffStove"
    max_episode_steps = 300  # a knob turned far takes two grasps
    description = "turn off a named burner of the stove with its knob"
    behavior = "turn off"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        self.switch_all_off(scene)
        scene.set_joint(f"stove_knob_{self.burner(scene.layout)}", rng.uniform(0.5, np.pi))

    def success(self, scene: Any) -> bool:
        return self.knob_angle(scene) < BURNER_ON

    def expert_plan(self, scene: Any) -> list[Any]:
        return self._turn_plan(scene, -0.2, lambda s: self.knob_angle(s) <= BURNER_ON - 0.2)


register_task(TurnOffStove)


# ====================================================================== pick and place
class _StovePickPlace(_StoveTask):
    """Pick-and-place between the countertop beside the stove (the drawer unit's) and a burner.

    Success needs the object resting (slower than :data:`RESTING_SPEED`), its bottom within
    :data:`SURFACE_SLACK` of the surface it should stand on, and the gripper not holding it."""

    max_episode_steps = 300

    def __init__(self) -> None:
        self._counter_xy = np.zeros(2)  # drawn with the layout, used by initialize() right after

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        side = self.free_side(layout)
        edge = self.stove_center(layout) + side * self.stove_half_width(layout)
        self._counter_xy = np.array([rng.uniform(0.09, 0.17), edge + side * rng.uniform(0.08, 0.16)])
        burner = self.burner_xy(layout, self.burner(layout))
        layout.robot_x = float(rng.uniform(-0.34, -0.29))
        layout.robot_y = float((burner[1] + self._counter_xy[1]) / 2 + rng.uniform(-0.04, 0.04))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        return np.array([0.2, layout.robot_y, layout.counter_height])

    def counter_spot(self, layout: KitchenLayout) -> np.ndarray:
        """A free place (x, y) on the countertop beside the stove, 12 cm from its edge (where the expert
        puts objects down)."""
        side = self.free_side(layout)
        return np.array([0.15, self.stove_center(layout) + side * (self.stove_half_width(layout) + 0.12)])

    def observation(self, scene: Any) -> np.ndarray:
        obj = scene.object_pos
        burner = scene.site(f"stove_burner_{self.burner(scene.layout)}")
        return np.concatenate(
            [
                self.relative(scene, obj),
                scene.object_quat,
                obj - scene.eef_pos,
                self.relative(scene, burner),
                [
                    self.stove_center(scene.layout) - scene.base_pos[1],
                    self.stove_half_width(scene.layout),
                    float(scene.object_grasped()),
                ],
            ]
        )

    # ------------------------------------------------------------------ checks
    @staticmethod
    def object_speed(scene: Any) -> float:
        start, _ = scene.object_qvel
        return float(np.linalg.norm(scene.mj_data.qvel[start : start + 3]))

    @staticmethod
    def stands_on(scene: Any, surface_z: float) -> bool:
        """Whether the object rests with its bottom at ``surface_z`` (within the slack; any orientation
        whose centre is no higher than upright)."""
        height = scene.object_pos[2] - surface_z
        return bool(0.0 < height <= -scene.object.bottom_offset[2] + SURFACE_SLACK)

    def on_burner(self, scene: Any) -> bool:
        """The object's centre within :data:`ON_BURNER_DISTANCE` of the named burner, on the cooktop."""
        burner = scene.site(f"stove_burner_{self.burner(scene.layout)}")
        near = np.linalg.norm(scene.object_pos[:2] - burner[:2]) <= ON_BURNER_DISTANCE
        return bool(near and self.stands_on(scene, burner[2]))

    def on_counter(self, scene: Any) -> bool:
        """The object on the countertop (at counter height, over the counter run) and off the stove."""
        layout = scene.layout
        x, y = scene.object_pos[:2]
        over_counter = -0.015 <= x <= layout.counter_depth
        off_stove = abs(y - self.stove_center(layout)) > self.stove_half_width(layout)
        return bool(over_counter and off_stove and self.stands_on(scene, layout.counter_height))

    def resting_and_released(self, scene: Any) -> bool:
        return self.object_speed(scene) < RESTING_SPEED and not scene.object_grasped()

    # ------------------------------------------------------------------ expert
    def _grasp_target(self, scene: Any) -> np.ndarray:
        """Centre of the object, raised so that the hand stays above tall objects and the fingertips above
        the surface it stands on."""
        pos = scene.object_pos
        top = pos[2] + scene.object.top_offset[2]
        floor = pos[2] + scene.object.bottom_offset[2] + 0.015
        return np.array([pos[0], pos[1], max(pos[2], top - 0.025, floor)])

    @staticmethod
    def _heading(scene: Any, point: np.ndarray) -> float:
        """Direction (rad about the vertical) from the robot base to ``point``."""
        offset = point[:2] - scene.base_pos[:2]
        return float(np.arctan2(offset[1], offset[0]))

    def _grasp_rotation(self, scene: Any) -> np.ndarray:
        """Fingers pointing down and closing across the object's narrow side (its local y axis; any
        direction for the round can), of the two such directions the one nearer the arm's own sideways
        direction toward the object: the wrist stays near the middle of its range even when the arm
        reaches far sideways."""
        heading = self._heading(scene, scene.object_pos)
        sideways = np.array([-np.sin(heading), np.cos(heading), 0.0])
        quat = scene.object_quat
        yaw = 2 * np.arctan2(quat[3], quat[0])
        fingers = np.array([-np.sin(yaw), np.cos(yaw), 0.0])  # object's local y axis
        if OBJECT_KINDS[scene.layout.object_kind] == "can":
            fingers = sideways
        elif fingers @ sideways < 0:
            fingers = -fingers
        down = np.array([0.0, 0.0, -1.0])
        return np.column_stack([fingers, np.cross(down, fingers), down])

    def _carry_plan(self, scene: Any, goal_xy: np.ndarray, surface_z: float) -> list[Any]:
        """Grasp the object, carry it over the counter, lower it until its bottom is 1 cm above
        ``surface_z`` at ``goal_xy``, release and retreat."""
        rotation = self._grasp_rotation(scene)
        grasp_heading = self._heading(scene, scene.object_pos)
        bottom = scene.object.bottom_offset[2]
        # carried with its bottom 7 cm over the counter (clear of the knobs), the hand no higher than that
        # needs: the arm's wrist stays below a wall cabinet over the counter
        hand_over_bottom = self._grasp_target(scene)[2] - (scene.object_pos[2] + bottom)
        carry = scene.layout.counter_height + max(0.15, 0.07 + hand_over_bottom)

        def carried(s: Any) -> np.ndarray:
            """The grasp rotation turned with the arm as it swings (the wrist keeps its angle)."""
            turn = self._heading(s, s.eef_pos) - grasp_heading
            c, si = np.cos(turn), np.sin(turn)
            return np.array([[c, -si, 0.0], [si, c, 0.0], [0.0, 0.0, 1.0]]) @ rotation

        def above_object(s: Any) -> np.ndarray:
            return self._grasp_target(s) + np.array([0.0, 0.0, 0.12])

        def lift(s: Any) -> np.ndarray:
            return np.array([s.eef_pos[0], s.eef_pos[1], carry])

        def over_goal(s: Any) -> np.ndarray:
            # the hand's offset from the object's centre is kept, so the object arrives over the goal
            offset = s.eef_pos[:2] - s.object_pos[:2]
            return np.array([*(goal_xy + offset), carry])

        def lowered(s: Any) -> np.ndarray:
            gap = s.object_pos[2] + bottom - (surface_z + 0.01)
            return np.array([s.eef_pos[0], s.eef_pos[1], s.eef_pos[2] - gap])

        return [
            MoveTo(above_object, rotation, OPEN, tolerance=0.015, name="reach"),
            MoveTo(self._grasp_target, rotation, OPEN, tolerance=0.006, speed=0.5, name="descend"),
            Grip(CLOSED, 12, name="grasp"),
            MoveTo(lift, carried, CLOSED, tolerance=0.02, name="lift"),
            MoveTo(over_goal, carried, CLOSED, tolerance=0.015, max_steps=100, name="move"),
            MoveTo(lowered, carried, CLOSED, tolerance=0.006, speed=0.4, max_steps=60, name="lower"),
            Grip(OPEN, 10, name="release"),
            MoveTo(
                lambda s: s.eef_pos + np.array([0.0, 0.0, 0.1]), carried, OPEN, max_steps=15, name="retreat"
            ),
        ]

    def expert_should_retry(self, scene: Any, plan: list[Any]) -> bool:
        # carrying phases: the object should be in the hand
        if plan and plan[0].name in ("lift", "move", "lower") and getattr(plan[0], "steps", 0) > 5:
            return not scene.touching_object()
        return False


class PnPCounterToStove(_StovePickPlace):
    """RoboCasa's ``PnPCounterToStove``: the object starts on the countertop beside the stove, in its front
    half; success: the object rests on the named burner (centre within 8 cm of the burner's, bottom on the
    cooktop) and is not grasped. RoboCasa puts the food on a plate and stands a pan on the stove (its check:
    the food in the pan); embodia has neither, so the burner itself is the target."""

    name = "PnPCounterToStove"
    description = "pick the object from the counter and place it on a named burner of the stove"

    def instruction(self, layout: KitchenLayout) -> str:
        burner = burner_words(self.burner(layout))
        return f"pick the {layout.object_name} from the counter and place it on the {burner} burner"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.switch_all_off(scene)
        place_object(scene, self._counter_xy, rng.uniform(-np.pi, np.pi))

    def success(self, scene: Any) -> bool:
        return self.on_burner(scene) and self.resting_and_released(scene)

    def expert_plan(self, scene: Any) -> list[Any]:
        burner = scene.site(f"stove_burner_{self.burner(scene.layout)}")
        return self._carry_plan(scene, burner[:2], burner[2])


register_task(PnPCounterToStove)


class PnPStoveToCounter(_StovePickPlace):
    """RoboCasa's ``PnPStoveToCounter``: the object starts on the named burner (within 2 cm of its centre);
    success: the object rests on the countertop off the stove (bottom at counter height, centre over the
    counter run and outside the stove module) and is not grasped. RoboCasa's food starts in a pan and goes
    onto a plate or into a bowl on the counter; embodia has no cookware, so the burner and the countertop
    are the places."""

    name = "PnPStoveToCounter"
    description = "pick the object from a named burner of the stove and place it on the counter"

    def instruction(self, layout: KitchenLayout) -> str:
        burner = burner_words(self.burner(layout))
        return f"pick the {layout.object_name} from the {burner} burner and place it on the counter"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.switch_all_off(scene)
        xy = self.burner_xy(scene.layout, self.burner(scene.layout)) + rng.uniform(-0.02, 0.02, size=2)
        bottom = -scene.object.bottom_offset[2]
        from embodia.envs.kitchen.fixtures import COOKTOP_THICKNESS

        z = scene.layout.counter_height + COOKTOP_THICKNESS + bottom + 0.002
        yaw = rng.uniform(-np.pi, np.pi)
        scene.set_object_pose(np.array([*xy, z]), np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))

    def success(self, scene: Any) -> bool:
        return self.on_counter(scene) and self.resting_and_released(scene)

    def expert_plan(self, scene: Any) -> list[Any]:
        return self._carry_plan(scene, self.counter_spot(scene.layout), scene.layout.counter_height)


register_task(PnPStoveToCounter)
