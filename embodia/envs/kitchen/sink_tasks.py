"""Sink tasks: pick an object from the counter and place it in the sink; turn the faucet on or off.

The faucet lever turns about the vertical axis; its tip direction at angle ``a`` is ``(-cos a, -sin a)``
(the lever points at the room at 0) and the expert pushes the tip sideways with the side of its closed
fingers, following the tip along its arc.
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

    def _push_plan(self, scene: Any, direction: float, done: Any) -> list[Any]:
        """Push the lever tip sideways so that its angle moves by ``direction`` (+1 / -1) until ``done``."""
        pivot = self._pivot(scene)
        radius, contact = 0.065, 0.02
        height = pivot[2] + 0.003

        def point(angle: float, offset: float, z: float) -> np.ndarray:
            p = pivot + radius * lever_direction(angle) - direction * offset * lever_tangent(angle)
            p[2] = z
            return p

        def along_lever(sc: Any) -> np.ndarray:  # hand across the lever: fingers' side pushes it
            return down_rotation(lever_tangent(sc.joint("sink_lever")))

        start = scene.joint("sink_lever")
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
                lambda sc: point(sc.joint("sink_lever") + direction * 0.3, contact, height),
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
