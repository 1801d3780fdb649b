"""Sink tasks: pick an object from the counter and place it in the sink; turn the faucet on or off; turn
the faucet's swivel spout to the left or right.

The faucet lever and the spout turn about the vertical axis; the direction of the lever's tip (and of the
spout's nozzle) at angle ``a`` is ``(-cos a, -sin a)`` (pointing at the room at 0; positive angles turn it
toward -y, the robot's right) and the expert pushes the tip sideways with the side of its closed fingers,
following it along its arc.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.envs.kitchen.expert import CLOSED, OPEN, Grip, MoveTo, down_rotation
from embodia.envs.kitchen.layout import KitchenLayout
from embodia.envs.kitchen.task import FAUCET_OFF, FAUCET_ON, KitchenTask, place_object, register_task


# ====================================================================== pick and place
class PickPlaceCounterToSink(KitchenTask):
    name = "PickPlaceCounterToSink"
    max_episode_steps = 300
    description = "pick the object from the counter and place it in the sink"

    def __init__(self) -> None:
        self._object_y = 0.0  # drawn with the layout, used by initialize() right after

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        sink = layout.module_index("sink")
        sides = [s for s in (-1, 1) if 0 <= sink + s < len(layout.modules)]
        side = float(sides[int(rng.integers(len(sides)))])
        center = layout.module_centers[sink]
        edge = center + side * layout.module_widths[sink] / 2
        self._object_y = edge + side * rng.uniform(0.07, 0.16)
        layout.robot_x = float(rng.uniform(-0.36, -0.3))
        layout.robot_y = float((center + self._object_y) / 2 + rng.uniform(-0.04, 0.04))

    @staticmethod
    def object_side(layout: KitchenLayout) -> float:
        """+1 if the object starts on the +y side of the sink, else -1 (the robot stands in between)."""
        return 1.0 if layout.robot_y > layout.module_centers[layout.module_index("sink")] else -1.0

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        sink = layout.module_centers[layout.module_index("sink")]
        return np.array([0.15, (sink + layout.robot_y) / 2, layout.counter_height])

    def instruction(self, layout: KitchenLayout) -> str:
        return f"pick the {layout.object_name} from the counter and place it in the sink"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        xy = np.array([rng.uniform(0.1, 0.2), self._object_y])
        place_object(scene, xy, rng.uniform(-np.pi, np.pi))

    def _basin(self, scene: Any) -> tuple[np.ndarray, np.ndarray]:
        layout = scene.layout
        return scene.site("sink_basin"), np.array([layout.basin_length / 2, layout.basin_width / 2])

    def observation(self, scene: Any) -> np.ndarray:
        center, half = self._basin(scene)
        obj = scene.object_pos
        return np.concatenate(
            [
                self.relative(scene, obj),
                scene.object_quat,
                obj - scene.eef_pos,
                self.relative(scene, center),
                half,
                [float(scene.object_grasped())],
            ]
        )

    def success(self, scene: Any) -> bool:
        center, half = self._basin(scene)
        obj = scene.object_pos
        inside = np.all(np.abs(obj[:2] - center[:2]) <= half - 0.01) and obj[2] < center[2]
        return bool(inside and not scene.object_grasped())

    def _grasp_target(self, scene: Any) -> np.ndarray:
        """Centre of the object, raised so that the hand stays above tall objects and the fingertips
        above the countertop."""
        pos = scene.object_pos
        top = pos[2] + scene.object.top_offset[2]
        return np.array([pos[0], pos[1], max(pos[2], top - 0.025, scene.layout.counter_height + 0.015)])

    def _grasp_rotation(self, scene: Any) -> np.ndarray:
        """Fingers close across the object's narrow side (its local y axis), turning the least."""
        quat = scene.object_quat
        yaw = 2 * np.arctan2(quat[3], quat[0])
        return down_rotation(np.array([-np.sin(yaw), np.cos(yaw)]))  # object's local y axis

    def expert_plan(self, scene: Any) -> list[Any]:
        height = scene.layout.counter_height
        rotation = self._grasp_rotation(scene)
        center, half = self._basin(scene)
        drop = np.array(
            [
                center[0] - 0.3 * half[0],
                center[1] + self.object_side(scene.layout) * 0.25 * half[1],
                height + 0.06,
            ]
        )
        carry = height + 0.2

        def above_object(s: Any) -> np.ndarray:
            return self._grasp_target(s) + np.array([0.0, 0.0, 0.12])

        def lift(s: Any) -> np.ndarray:
            return np.array([s.eef_pos[0], s.eef_pos[1], carry])

        return [
            MoveTo(above_object, rotation, OPEN, tolerance=0.015, name="reach"),
            MoveTo(self._grasp_target, rotation, OPEN, tolerance=0.006, speed=0.5, name="descend"),
            Grip(CLOSED, 12, name="grasp"),
            MoveTo(lift, rotation, CLOSED, tolerance=0.02, name="lift"),
            MoveTo(
                lambda s: np.array([drop[0], drop[1], carry]), rotation, CLOSED, tolerance=0.02, name="move"
            ),
            MoveTo(lambda s: drop, rotation, CLOSED, tolerance=0.015, speed=0.5, name="lower"),
            Grip(OPEN, 10, name="release"),
            MoveTo(
                lambda s: drop + np.array([0.0, 0.0, 0.15]), rotation, OPEN, tolerance=0.02, name="retreat"
            ),
        ]

    def expert_should_retry(self, scene: Any, plan: list[Any]) -> bool:
        # carrying phases: the object should be in the hand
        if plan and plan[0].name in ("lift", "move", "lower") and getattr(plan[0], "steps", 0) > 5:
            return not scene.touching_object()
        return False


register_task(PickPlaceCounterToSink)


# ====================================================================== faucet
def lever_direction(angle: float) -> np.ndarray:
    """Unit vector from the lever's pivot to its tip (the lever points at the room at angle 0)."""
    return np.array([-np.cos(angle), -np.sin(angle), 0.0])


def lever_tangent(angle: float) -> np.ndarray:
    """Direction the lever tip moves when its angle grows."""
    return np.array([np.sin(angle), -np.cos(angle), 0.0])


class _FaucetTask(KitchenTask):
    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        layout.robot_x = float(rng.uniform(-0.3, -0.27))
        layout.robot_y = float(layout.module_centers[layout.module_index("sink")] + rng.uniform(-0.06, 0.06))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        return np.array([0.25, layout.robot_y, layout.counter_height + 0.1])

    def _pivot(self, scene: Any) -> np.ndarray:
        from embodia.envs.kitchen.fixtures import LEVER_LENGTH

        return scene.site("sink_lever_tip") - LEVER_LENGTH * lever_direction(scene.joint("sink_lever"))

    def observation(self, scene: Any) -> np.ndarray:
        tip = scene.site("sink_lever_tip")
        return np.concatenate(
            [
                self.relative(scene, tip),
                self.relative(scene, self._pivot(scene)),
                tip - scene.eef_pos,
                [scene.joint("sink_lever")],
            ]
        )

    def _push_plan(
        self,
        scene: Any,
        direction: float,
        done: Any,
        joint: str = "sink_lever",
        pivot: np.ndarray | None = None,
        radius: float = 0.065,
        height: float | None = None,
    ) -> list[Any]:
        """Push the lever tip (or another part turning about the vertical through ``pivot``: the spout)
        sideways at ``radius`` from its axis so that its angle moves by ``direction`` (+1 / -1) until
        ``done``."""
        pivot = self._pivot(scene) if pivot is None else pivot
        contact = 0.02
        height = pivot[2] + 0.003 if height is None else height

        def point(angle: float, offset: float, z: float) -> np.ndarray:
            p = pivot + radius * lever_direction(angle) - direction * offset * lever_tangent(angle)
            p[2] = z
            return p

        def along_lever(sc: Any) -> np.ndarray:  # hand across the lever: fingers' side pushes it
            return down_rotation(lever_tangent(sc.joint(joint)))

        start = scene.joint(joint)
        return [
            MoveTo(
                lambda sc: point(start, 0.06, height + 0.08),
                along_lever,
                CLOSED,
                tolerance=0.012,
                name="reach",
            ),
            MoveTo(
                lambda sc: point(start, 0.05, height),
                along_lever,
                CLOSED,
                tolerance=0.008,
                speed=0.5,
                name="lower",
            ),
            MoveTo(
                lambda sc: point(sc.joint(joint) + direction * 0.3, contact, height),
                along_lever,
                CLOSED,
                speed=0.5,
                max_steps=100,
                until=done,
                name="push",
            ),
            MoveTo(
                lambda sc: sc.eef_pos + np.array([-0.02, 0.0, 0.1]),
                along_lever,
                CLOSED,
                max_steps=15,
                name="lift",
            ),
        ]


class TurnOnFaucet(_FaucetTask):
    name = "TurnOnFaucet"
    max_episode_steps = 200
    description = "turn on the sink faucet by pushing its lever sideways"

    def instruction(self, layout: KitchenLayout) -> str:
        return "turn on the sink faucet"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        scene.set_joint("sink_lever", rng.uniform(-0.1, 0.1))

    def success(self, scene: Any) -> bool:
        return abs(scene.joint("sink_lever")) >= FAUCET_ON

    def expert_plan(self, scene: Any) -> list[Any]:
        # push the tip away from the side the hand is on (no need to reach around the lever)
        direction = 1.0 if scene.eef_pos[1] >= self._pivot(scene)[1] else -1.0
        return self._push_plan(
            scene, direction, lambda sc: direction * sc.joint("sink_lever") >= FAUCET_ON + 0.15
        )


register_task(TurnOnFaucet)


class TurnOffFaucet(_FaucetTask):
    name = "TurnOffFaucet"
    max_episode_steps = 200
    description = "turn off the running sink faucet (lever back to the middle)"

    def instruction(self, layout: KitchenLayout) -> str:
        return "turn off the sink faucet"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        scene.set_joint("sink_lever", rng.choice([-1.0, 1.0]) * rng.uniform(0.7, 1.0))

    def success(self, scene: Any) -> bool:
        return abs(scene.joint("sink_lever")) <= FAUCET_OFF

    def expert_plan(self, scene: Any) -> list[Any]:
        direction = -float(np.sign(scene.joint("sink_lever")))
        return self._push_plan(scene, direction, lambda sc: abs(sc.joint("sink_lever")) <= FAUCET_OFF / 3)


register_task(TurnOffFaucet)


# ====================================================================== spout
#: RoboCasa's spout sectors: turned at least this far (rad) from the middle, the spout points left or right
SPOUT_TURNED = np.pi / 6


class TurnSinkSpout(_FaucetTask):
    """Turn the faucet's swivel spout to the left or to the right (RoboCasa's ``TurnSinkSpout``).

    RoboCasa draws the direction ("left" / "right") and whether the water runs, asks "turn the sink spout
    to the left", and succeeds when the spout's angle lies in that side's sector: at least pi/6 from the
    middle (its ``spout_ori``). The same here: the layout's ``spout_turn`` is the direction (-1: left, the
    robot's +y; +1: right), the faucet starts on or off by the seed, and the check is
    ``spout_turn * angle >= pi / 6``. Where this differs: RoboCasa's spout turns a full circle and puts a
    distractor object in the basin; embodia's turns a quarter turn each way and its object stays parked.
    The expert pushes the spout's side near the nozzle (beyond the lever's reach) along its arc.
    """

    name = "TurnSinkSpout"
    max_episode_steps = 200
    description = "turn the sink faucet's swivel spout to the left or right"

    def instruction(self, layout: KitchenLayout) -> str:
        return f"turn the sink spout to the {'left' if layout.spout_turn < 0 else 'right'}"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        scene.set_joint("sink_spout", rng.uniform(-0.1, 0.1))
        water_on = rng.random() < 0.5  # RoboCasa starts the faucet on or off
        scene.set_joint("sink_lever", rng.choice([-1.0, 1.0]) * rng.uniform(0.6, 0.8) if water_on else 0.0)

    def _spout_pivot(self, scene: Any) -> np.ndarray:
        from embodia.envs.kitchen.fixtures import SPOUT_LENGTH

        return scene.site("sink_spout_tip") - SPOUT_LENGTH * lever_direction(scene.joint("sink_spout"))

    def observation(self, scene: Any) -> np.ndarray:
        tip = scene.site("sink_spout_tip")
        return np.concatenate(
            [
                self.relative(scene, tip),
                self.relative(scene, self._spout_pivot(scene)),
                tip - scene.eef_pos,
                [scene.joint("sink_spout"), scene.layout.spout_turn, scene.joint("sink_lever")],
            ]
        )

    def success(self, scene: Any) -> bool:
        return scene.layout.spout_turn * scene.joint("sink_spout") >= SPOUT_TURNED

    def expert_plan(self, scene: Any) -> list[Any]:
        turn = scene.layout.spout_turn
        pivot = self._spout_pivot(scene)
        return self._push_plan(
            scene,
            turn,
            lambda sc: turn * sc.joint("sink_spout") >= SPOUT_TURNED + 0.15,
            joint="sink_spout",
            pivot=pivot,
            radius=0.155,
            height=pivot[2] - 0.004,
        )


register_task(TurnSinkSpout)


# ====================================================================== pick from the sink
#: RoboCasa's "gripper far from the object" distance (m) for a released object
GRIPPER_FAR = 0.25


def on_countertop(scene: Any) -> bool:
    """Whether the object touches a countertop outside the basin: a plain counter's or the drawer unit's
    top, or the sink module's countertop around the basin."""
    model, data = scene.mj_model, scene.mj_data
    objects = set(scene.object_geoms)
    for contact in data.contact[: data.ncon]:
        for mine, other in ((contact.geom1, contact.geom2), (contact.geom2, contact.geom1)):
            if mine in objects:
                name = model.geom(other).name
                if name.startswith("sink_top_") or (
                    name.startswith(("counter", "drawer")) and name.endswith("_top")
                ):
                    return True
    return False


class PnPSinkToCounter(PickPlaceCounterToSink):
    """Pick the object from the sink's basin and place it on the counter beside the sink (RoboCasa's
    ``PnPSinkToCounter``).

    RoboCasa puts a food item in the sink and a container on the counter beside it, asks "pick the {obj}
    from the sink and place it on the {container} located on the counter", and succeeds when the object is
    in the container, the container touches the counter and the gripper is more than 25 cm from the object.
    embodia has one object and no containers, so the object goes onto the countertop itself: success when it
    touches a countertop outside the basin, is not grasped, and the gripper's grip site is more than 25 cm
    from it (RoboCasa's ``gripper_obj_far``); the instruction says "place it on the counter". The object
    starts upright in the basin's front half (the spout's nozzle hangs over the middle), turned so that the
    hand reaches it across the basin's long side.
    """

    name = "PnPSinkToCounter"
    max_episode_steps = 300
    description = "pick the object from the sink and place it on the counter beside the sink"

    def instruction(self, layout: KitchenLayout) -> str:
        return f"pick the {layout.object_name} from the sink and place it on the counter"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        layout = scene.layout
        center, half = self._basin(scene)
        side = self.object_side(layout)
        x = center[0] - rng.uniform(0.04, 0.07)
        y = center[1] + side * rng.uniform(0.0, 0.3) * half[1]  # toward the robot's side of the basin
        yaw = rng.uniform(-0.4, 0.4) + (np.pi if rng.random() < 0.5 else 0.0)
        bottom = -scene.object.bottom_offset[2]
        pos = np.array([x, y, layout.counter_height - layout.basin_depth + bottom + 0.002])
        scene.set_object_pose(pos, np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]))

    def success(self, scene: Any) -> bool:
        far = np.linalg.norm(scene.eef_pos - scene.object_pos) > GRIPPER_FAR
        return bool(far and on_countertop(scene) and not scene.object_grasped())

    def _grasp_target(self, scene: Any) -> np.ndarray:
        """Centre of the object, raised so that the hand stays above tall objects and the fingertips above
        the basin's floor."""
        pos = scene.object_pos
        top = pos[2] + scene.object.top_offset[2]
        floor = scene.layout.counter_height - scene.layout.basin_depth
        return np.array([pos[0], pos[1], max(pos[2], top - 0.025, floor + 0.015)])

    def expert_plan(self, scene: Any) -> list[Any]:
        layout = scene.layout
        height = layout.counter_height
        rotation = self._grasp_rotation(scene)
        grasp = self._grasp_target(scene)
        above_bottom = grasp[2] - (scene.object_pos[2] + scene.object.bottom_offset[2])
        spot = np.array([0.15, self.counter_spot_y(layout)])
        drop = np.array([spot[0], spot[1], height + above_bottom + 0.012])
        carry = height + above_bottom + 0.12

        def above_object(s: Any) -> np.ndarray:
            return self._grasp_target(s) + np.array([0.0, 0.0, 0.14])

        def lift(s: Any) -> np.ndarray:
            return np.array([s.eef_pos[0], s.eef_pos[1], carry])

        return [
            MoveTo(above_object, rotation, OPEN, tolerance=0.015, name="reach"),
            MoveTo(self._grasp_target, rotation, OPEN, tolerance=0.006, speed=0.5, name="descend"),
            Grip(CLOSED, 12, name="grasp"),
            MoveTo(lift, rotation, CLOSED, tolerance=0.02, name="lift"),
            MoveTo(lambda s: np.array([*spot, carry]), rotation, CLOSED, tolerance=0.02, name="move"),
            MoveTo(lambda s: drop, rotation, CLOSED, tolerance=0.012, speed=0.5, name="lower"),
            Grip(OPEN, 10, name="release"),
            MoveTo(lambda s: drop + np.array([0.0, 0.0, 0.1]), rotation, OPEN, tolerance=0.02, name="up"),
            # then back toward the robot (a wall cabinet may hang above): beyond GRIPPER_FAR of the object
            MoveTo(
                lambda s: drop + np.array([-0.26, 0.0, 0.14]), rotation, OPEN, tolerance=0.02, name="retreat"
            ),
        ]

    @staticmethod
    def counter_spot_y(layout: KitchenLayout) -> float:
        """y of the counter spot beside the sink on the robot's side (10 cm beyond the sink module)."""
        sink = layout.module_index("sink")
        side = PickPlaceCounterToSink.object_side(layout)
        return float(layout.module_centers[sink] + side * (layout.module_widths[sink] / 2 + 0.1))


register_task(PnPSinkToCounter)
