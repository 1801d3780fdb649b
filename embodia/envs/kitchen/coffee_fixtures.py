"""The coffee machine fixture and the mug, built from embodia's MJCF templates ``coffee_machine.xml`` and
``mug.xml`` (robosuite has neither).

The coffee machine stands at one end of a plain counter (``layout.coffee_module``, end ``coffee_side``),
toward the counter's front: a body at the back, a narrow spout reaching from the body over the mug station
with the dispenser nozzle at its tip, a raised drip tray under the nozzle (site ``coffee_machine_station``
on its top, where a mug stands to be filled) and a spring-loaded serve button on the body's front (joint
and site ``coffee_machine_button``). The station is open at the sides and the front, so a hand holding a
mug from above slides it in sideways.

The mug is a hollow cylinder (staves around a round floor) with a handle on its local +x side, small
enough for the Panda gripper to close across its body (outer diameter :data:`MUG_RADIUS` x 2 = 6 cm, the
Panda opens to 8 cm). It is a free object like robosuite's can or lemon: the kitchen's one graspable
object when a task fixes ``layout.object_kind`` to the mug.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from string import Template

import numpy as np

from embodia.envs.kitchen.coffee_geometry import (
    BUTTON_HEIGHT,
    COFFEE_BUTTON_TRAVEL,
    COFFEE_DEPTH,
    MUG_DENSITY,
    MUG_HANDLE_REACH,
    MUG_HEIGHT,
    MUG_RADIUS,
    MUG_WALL,
    NOZZLE_HEIGHT,
    SPOUT_THICKNESS,
    STATION_DEPTH,
    STATION_X,
    TRAY_HEIGHT,
    coffee_machine_center,
    coffee_machine_front,
)
from embodia.envs.kitchen.fixtures import TemplateFixture, _box, _f, _rgba, asset_path
from embodia.envs.kitchen.layout import KitchenLayout

# isort: split
from robosuite.models.objects import MujocoXMLObject

_SHELL_COLORS = ((0.12, 0.12, 0.13), (0.78, 0.79, 0.8), (0.55, 0.12, 0.1))
MUG_RGB = (0.2, 0.35, 0.6)
"""The mug's glaze colour."""


def coffee_machine(name: str, layout: KitchenLayout) -> TemplateFixture:
    """The coffee machine of ``layout`` (see the module docstring)."""
    w2, hm, dm = layout.coffee_width / 2, layout.coffee_height, COFFEE_DEPTH
    nozzle_length = 0.02
    spout_bottom = NOZZLE_HEIGHT + nozzle_length
    # serve button centre, on the body's front at its side and low: the hand pressing it stays below
    # the spout, its wrist beside it, and far below a wall cabinet hanging over the machine
    yb, zb = w2 - 0.028, BUTTON_HEIGHT
    hy, hz, plate = 0.016, 0.016, 0.016  # half size of the hole around the button; front plate thickness
    x0, x1 = STATION_DEPTH, STATION_DEPTH + plate  # the body's front plate
    fields = {
        "shell_rgba": _rgba(_SHELL_COLORS[layout.cabinet_color % len(_SHELL_COLORS)]),
        **_box("body", (x1, -w2, 0), (dm, w2, hm)),
        **_box("plate_top", (x0, -w2, zb + hz), (x1, w2, hm)),
        **_box("plate_bottom", (x0, -w2, 0), (x1, w2, zb - hz)),
        **_box("plate_left", (x0, yb + hy, zb - hz), (x1, w2, zb + hz)),
        **_box("plate_right", (x0, -w2, zb - hz), (x1, yb - hy, zb + hz)),
        **_box("spout", (STATION_X - 0.013, -0.02, spout_bottom), (x0, 0.02, spout_bottom + SPOUT_THICKNESS)),
        **_box("tray", (0, -w2 + 0.01, 0), (x0, w2 - 0.01, TRAY_HEIGHT)),
        **_box("grille", (0.01, -w2 + 0.02, TRAY_HEIGHT), (x0 - 0.01, w2 - 0.02, TRAY_HEIGHT + 0.0008)),
        "nozzle_pos": _f((STATION_X, 0, NOZZLE_HEIGHT + nozzle_length / 2)),
        "nozzle_size": _f((0.012, nozzle_length / 2)),
        "coffee_fromto": _f((STATION_X, 0, NOZZLE_HEIGHT, STATION_X, 0, TRAY_HEIGHT + 0.01)),
        **_box("display", (x0 - 0.002, -0.07, zb - 0.018), (x0 + 0.0005, -0.01, zb + 0.018)),
        "status_pos": _f((x0 - 0.004, yb, zb + 0.03)),
        "station_site": _f((STATION_X, 0, TRAY_HEIGHT)),
        "button_pos": _f((x0, yb, zb)),
        "button_travel": f"{COFFEE_BUTTON_TRAVEL:.4f}",
        # a long push button, 2.5 cm proud of the body: fingers reach it before the hand meets the body
        "button_geom_pos": _f((-0.0115, 0, 0)),
        "button_size": _f((0.0135, hy - 0.003, hz - 0.003)),
        "button_site": _f((-0.025, 0, 0)),
    }
    pos = (coffee_machine_front(layout), coffee_machine_center(layout), layout.counter_height)
    return TemplateFixture("coffee_machine.xml", name, fields, pos)


def _mug_fields() -> dict[str, str]:
    r, h, t = MUG_RADIUS, MUG_HEIGHT, MUG_WALL
    common = f'material="glaze" group="0" density="{MUG_DENSITY:g}" friction="1.2 0.3 0.1" condim="4"'
    staves, n = [], 16
    half_width = (r - t / 2) * np.tan(np.pi / n) + 0.0008  # staves overlap slightly: no gaps
    for i in range(n):
        angle = 2 * np.pi * (i + 0.5) / n
        position = (r - t / 2) * np.array([np.cos(angle), np.sin(angle)])
        staves.append(
            f'        <geom name="stave{i}" type="box" pos="{_f((*position, 0.003))}" '
            f'size="{_f((t / 2, half_width, h / 2 - 0.003))}" euler="0 0 {angle:.5f}" {common}/>'
        )
    arm = MUG_HANDLE_REACH / 2 + t / 2
    return {
        "density": f"{MUG_DENSITY:g}",
        "mug_rgba": _rgba(MUG_RGB),
        "staves": "\n".join(staves),
        "floor_pos": _f((0, 0, -h / 2 + 0.003)),
        "floor_size": _f((r - 0.001, 0.003)),
        "handle_top_pos": _f((r + arm - t, 0, 0.022)),
        "handle_bottom_pos": _f((r + arm - t, 0, -0.022)),
        "handle_arm_size": _f((arm, 0.006, 0.004)),
        "handle_grip_pos": _f((r + MUG_HANDLE_REACH - 0.004, 0, 0)),
        "handle_grip_size": _f((0.004, 0.006, 0.026)),
        "bottom_site": _f((0, 0, -h / 2)),
        "top_site": _f((0, 0, h / 2)),
        "radius_site": _f((r + 0.01, r + 0.01, 0)),
    }


class MugObject(MujocoXMLObject):
    """The graspable mug (a free object; see the module docstring)."""

    def __init__(self, name: str) -> None:
        text = Template(asset_path("mug.xml").read_text()).substitute(_mug_fields())
        with tempfile.TemporaryDirectory(prefix="embodia-kitchen-") as tmp:
            path = Path(tmp) / "mug.xml"
            path.write_text(text)
            super().__init__(
                str(path),
                name=name,
                joints=[dict(type="free", damping="0.0005")],
                obj_type="all",
                duplicate_collision_geoms=True,
            )
