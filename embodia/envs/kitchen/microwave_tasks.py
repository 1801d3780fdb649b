"""Microwave task: press the start button (the microwave turns on and stays on)."""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.envs.kitchen.expert import CLOSED, MoveTo, down_rotation
from embodia.envs.kitchen.layout import KitchenLayout
from embodia.envs.kitchen.task import BUTTON_PRESSED, KitchenTask, register_task


# ====================================================================== microwave
class PressMicrowaveButton(KitchenTask):
    name = "PressMicrowaveButton"
    max_episode_steps = 150
    description = "press the microwave's start button"

    def __init__(self) -> None:
        self._on = False

    def place_robot(self, layout: KitchenLayout, rng: np.random.Generator) -> None:
        center = layout.module_centers[layout.microwave_module]
        button_y = center - layout.microwave_width / 2 + 0.065
        layout.robot_x = float(rng.uniform(-0.42, -0.36))
        layout.robot_y = float(button_y + rng.uniform(-0.08, 0.08))

    def focus(self, layout: KitchenLayout) -> np.ndarray:
        center = layout.module_centers[layout.microwave_module]
        return np.array([0.2, center, layout.counter_height + 0.12])

    def instruction(self, layout: KitchenLayout) -> str:
        return "press the start button on the microwave"

    def initialize(self, scene: Any, rng: np.random.Generator) -> None:
        self.park_object(scene, rng)
        self._on = False

    def update(self, scene: Any) -> None:
        self._on = self._on or scene.joint("microwave_button") >= BUTTON_PRESSED

    def microwave_on(self, scene: Any) -> bool:
        return self._on

    def extra_state(self) -> np.ndarray:
        return np.array([float(self._on)])

    def set_extra_state(self, values: np.ndarray) -> None:
        self._on = bool(values[0] > 0.5)

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
        # fingers pointing down, leaning toward the microwave: their front presses the button
        rotation = down_rotation(tilt=0.35)
        contact = np.array([-0.012, 0.0, 0.004])  # grip site when the fingers touch the button's face
        ready = scene.site("microwave_button") + contact + np.array([-0.06, 0.0, 0.03])
        return [
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
                lambda sc: sc.site("microwave_button") + contact + np.array([0.03, 0.0, 0.0]),
                rotation,
                CLOSED,
                speed=0.3,
                max_steps=60,
                until=lambda sc: self._on,
                name="press",
            ),
            MoveTo(lambda sc: ready, rotation, CLOSED, max_steps=20, name="release"),
        ]


register_task(PressMicrowaveButton)
