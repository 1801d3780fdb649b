"""Cabinet tasks: open or close the drawer under the countertop; close the wall cabinet's door.

The drawer experts hook closed fingers behind the handle bar (open) or push the bar (close), with the
robot standing beside the drawer. The door expert pushes the door's front face along its arc: the
contact point at hinge angle ``a`` is ``hinge + r t(a) + d n(a)`` with ``t`` the direction along the
door from its hinge and ``n`` the outward normal of its front face.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from embodia.envs.kitchen.expert import CLOSED, MoveTo, down_rotation
from embodia.envs.kitchen.layout import KitchenLayout
from embodia.envs.kitchen.task import (
    DOOR_CLOSED,
    DRAWER_CLOSED,
    DRAWER_OPEN_FRACTION,
    KitchenTask,
    register_task,
)


# ====================================================================== drawer
class _DrawerTask(KitchenTask):
    """The robot stands in front of a module next to the drawer unit, far enough back for its wrist to
    stay clear of the countertop while its fingers work at the drawer handle."""

    #: range of the robot base's distance in front of the counter
    robot_distance: ClassVar[tuple[float, float]] = (0.46, 0.52)

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        drawer = layout.module_index("drawer")
        sides = [s for s in (-1, 1) if 0 <= drawer + s < len(layout.modules)]
        side = float(sides[int(rng.integers(len(sides)))])
        layout.robot_x = -float(rng.uniform(*self.robot_distance))
        layout.robot_y = float(layout.module_centers[drawer] + side * rng.uniform(0.22, 0.3))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        y = layout.module_centers[layout.module_index("drawer")]
        return np.array([0.0, (y + layout.robot_y) / 2, layout.counter_height - 0.1])

    def drawer_side(self, layout: KitchenLayout) -> str:
        return "left" if layout.module_centers[layout.module_index("drawer")] > layout.robot_y else "right"

    def observation(self, scene: Any) -> np.ndarray:
        handle = scene.site("drawer_handle")
        travel = scene.layout.drawer_travel
        return np.concatenate(
            [self.relative(scene, handle), handle - scene.eef_pos, [scene.joint("drawer_slide"), travel]]
        )

    def _hook_point(self, scene: Any) -> np.ndarray:
        """Grip-site position of closed fingers hooked behind the handle bar (between bar and front)."""
        return scene.site("drawer_handle") + np.array([0.028, 0.0, -0.004])

    def _push_point(self, scene: Any) -> np.ndarray:
        """Grip-site position of closed fingers touching the handle bar from the room side."""
        return scene.site("drawer_handle") + np.array([-0.022, 0.0, -0.004])

    def _approach(self, scene: Any, target: Any) -> list[Any]:
        """Over the countertop to above ``target``, then down in front of the counter."""
        rotation = down_rotation()
        height = scene.layout.counter_height + 0.1

        def over(s: Any) -> np.ndarray:
            point = target(s)
            return np.array([point[0], point[1], height])

        return [
            MoveTo(over, rotation, CLOSED, tolerance=0.025, name="over"),
            MoveTo(
                lambda s: target(s) + np.array([0.0, 0.0, 0.08]),
                rotation,
                CLOSED,
                tolerance=0.012,
                name="above",
            ),
            MoveTo(target, rotation, CLOSED, tolerance=0.006, speed=0.5, name="down"),
        ]


class OpenDrawer(_DrawerTask):
    name = "OpenDrawer"
    max_episode_steps = 200
    description = "open the drawer"

    def instruction(self, layout: KitchenLayout) -> str:
        return f"open the drawer on the {self.drawer_side(layout)}"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        scene.set_joint("drawer_slide", rng.uniform(0.0, 0.01))

    def success(self, scene: Any) -> bool:
        return scene.joint("drawer_slide") >= DRAWER_OPEN_FRACTION * scene.layout.drawer_travel

    def expert_plan(self, scene: Any) -> list[Any]:
        rotation = down_rotation()
        goal = 0.85 * scene.layout.drawer_travel
        return [
            *self._approach(scene, self._hook_point),
            MoveTo(
                lambda s: self._hook_point(s) + np.array([-0.08, 0.0, 0.0]),
                rotation,
                CLOSED,
                speed=0.6,
                max_steps=120,
                until=lambda s: s.joint("drawer_slide") >= goal,
                name="pull",
            ),
            MoveTo(
                lambda s: self._hook_point(s) + np.array([0.0, 0.0, 0.1]),
                rotation,
                CLOSED,
                max_steps=15,
                name="unhook",
            ),
        ]


register_task(OpenDrawer)


class CloseDrawer(_DrawerTask):
    name = "CloseDrawer"
    max_episode_steps = 200
    description = "close the open drawer"
    robot_distance = (0.58, 0.63)  # the open drawer comes toward the robot

    def instruction(self, layout: KitchenLayout) -> str:
        return f"close the drawer on the {self.drawer_side(layout)}"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        scene.set_joint("drawer_slide", rng.uniform(0.45, 0.7) * scene.layout.drawer_travel)

    def success(self, scene: Any) -> bool:
        return scene.joint("drawer_slide") <= DRAWER_CLOSED

    def expert_plan(self, scene: Any) -> list[Any]:
        rotation = down_rotation()
        return [
            *self._approach(scene, lambda s: self._push_point(s) + np.array([-0.02, 0.0, 0.0])),
            MoveTo(
                lambda s: self._push_point(s) + np.array([0.06, 0.0, 0.0]),
                rotation,
                CLOSED,
                speed=0.6,
                max_steps=120,
                until=lambda s: s.joint("drawer_slide") <= DRAWER_CLOSED / 2,
                name="push",
            ),
            MoveTo(
                lambda s: self._push_point(s) + np.array([-0.08, 0.0, 0.1]),
                rotation,
                CLOSED,
                max_steps=15,
                name="back off",
            ),
        ]


register_task(CloseDrawer)


# ====================================================================== cabinet door
def door_tangent(angle: float, sign: float) -> np.ndarray:
    """Unit vector along the door from its hinge to its free edge (horizontal), at hinge ``angle``."""
    return np.array([-np.sin(angle), sign * np.cos(angle), 0.0])


def door_normal(angle: float, sign: float) -> np.ndarray:
    """Outward normal of the door's front face (toward the room when closed)."""
    return np.array([-np.cos(angle), -sign * np.sin(angle), 0.0])


class CloseCabinetDoor(KitchenTask):
    name = "CloseCabinetDoor"
    max_episode_steps = 250
    description = "close the open wall-cabinet door"

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        layout.cabinet_doors = 1  # the single-door wall cabinet
        s = layout.hinge_sign
        center = layout.module_centers[layout.cabinet_module] + layout.cabinet_offset
        hinge_y = center - s * layout.cabinet_width / 2
        layout.robot_x = float(rng.uniform(-0.34, -0.28))
        layout.robot_y = float(hinge_y - s * rng.uniform(0.1, 0.18))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        center = layout.module_centers[layout.cabinet_module] + layout.cabinet_offset
        return np.array([0.1, center, layout.counter_height + layout.cabinet_gap * 0.8])

    def instruction(self, layout: KitchenLayout) -> str:
        return "close the cabinet door"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        scene.set_joint("cabinet_hinge", rng.uniform(0.9, 1.45))

    def observation(self, scene: Any) -> np.ndarray:
        handle, hinge = scene.site("cabinet_handle"), scene.site("cabinet_hinge")
        return np.concatenate(
            [
                self.relative(scene, handle),
                self.relative(scene, hinge),
                handle - scene.eef_pos,
                [scene.joint("cabinet_hinge"), scene.layout.hinge_sign],
            ]
        )

    def success(self, scene: Any) -> bool:
        return scene.joint("cabinet_hinge") <= DOOR_CLOSED

    def expert_plan(self, scene: Any) -> list[Any]:
        layout = scene.layout
        s = layout.hinge_sign
        radius = 0.5 * layout.cabinet_width
        push_z = layout.counter_height + layout.cabinet_gap + 0.55 * layout.cabinet_height  # above the handle

        def point(angle: float, offset: float, z: float) -> np.ndarray:
            """On the outer side of the door at ``angle``, ``offset`` from its hinge plane."""
            hinge = scene.site("cabinet_hinge")
            p = hinge + radius * door_tangent(angle, s) + offset * door_normal(angle, s)
            p[2] = z
            return p

        def along_door(sc: Any) -> np.ndarray:
            return down_rotation(door_tangent(sc.joint("cabinet_hinge"), s))

        start = scene.joint("cabinet_hinge") + 0.3
        low = scene.eef_pos[2]
        return [
            MoveTo(lambda sc: point(start, 0.12, low), along_door, CLOSED, tolerance=0.02, name="approach"),
            MoveTo(lambda sc: point(start, 0.12, push_z), along_door, CLOSED, tolerance=0.015, name="rise"),
            MoveTo(
                lambda sc: point(sc.joint("cabinet_hinge") - 0.25, 0.045, push_z),
                along_door,
                CLOSED,
                speed=0.7,
                max_steps=160,
                until=lambda sc: sc.joint("cabinet_hinge") <= DOOR_CLOSED / 2,
                name="sweep",
            ),
            MoveTo(lambda sc: point(0.4, 0.15, push_z), along_door, CLOSED, max_steps=25, name="retreat"),
        ]


register_task(CloseCabinetDoor)
