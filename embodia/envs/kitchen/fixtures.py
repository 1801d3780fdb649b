"""Kitchen fixtures: embodia's MJCF templates (``embodia/sim_assets/kitchen/*.xml``) sized from a layout.

Each fixture is a robosuite :class:`~robosuite.models.objects.MujocoXMLObject` built from a template whose
``$name`` fields (box positions and half sizes, colours, joint ranges) are computed here from the
:class:`~embodia.envs.kitchen.layout.KitchenLayout`. Fixtures have no free joint: they stand where the
layout puts them; their articulated parts (drawer slide, door hinge, faucet lever, microwave button) are
joints inside the fixture. robosuite prefixes every name with the fixture's name (``sink_lever``,
``drawer_slide``, ``cabinet_hinge``, ``microwave_button``, ...).

Geometry of the articulated parts that tasks and experts need (e.g. the drawer handle) is read from
sites in the simulator, not recomputed here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template

import numpy as np

from embodia.envs.kitchen import _robosuite  # noqa: F401  (robosuite imported quietly, first)

# isort: split
from robosuite.models.arenas import Arena
from robosuite.models.objects import MujocoXMLObject
from robosuite.utils.mjcf_utils import array_to_string

from embodia.envs.kitchen.layout import (
    CABINET_COLORS,
    COUNTER_COLORS,
    FLOOR_COLORS,
    WALL_COLORS,
    KitchenLayout,
)

TOP_THICKNESS = 0.04
"""Countertop slab thickness."""
KICK_HEIGHT = 0.1
"""Height of the recessed toe kick under the base cabinets."""
CABINET_DEPTH = 0.32
"""Depth of the wall cabinet."""
MICROWAVE_DEPTH = 0.36
"""Depth of the microwave."""
BUTTON_TRAVEL = 0.009
"""How far the microwave button can be pressed in."""
LEVER_LENGTH = 0.1
"""Length of the faucet lever from its pivot to its tip."""

_ASSETS = resources.files("embodia") / "sim_assets" / "kitchen"


def asset_path(name: str) -> Path:
    """Path of a file in ``embodia/sim_assets/kitchen``."""
    return Path(str(_ASSETS / name))


def _f(values: Sequence[float] | np.ndarray | float) -> str:
    return " ".join(f"{float(v):.5f}" for v in np.atleast_1d(values))


def _box(prefix: str, lo: Sequence[float], hi: Sequence[float]) -> dict[str, str]:
    """Template fields ``<prefix>_pos`` / ``<prefix>_size`` of an axis-aligned box from its two corners."""
    lo_arr, hi_arr = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return {f"{prefix}_pos": _f((lo_arr + hi_arr) / 2), f"{prefix}_size": _f(np.abs(hi_arr - lo_arr) / 2)}


def _rgba(rgb: Sequence[float]) -> str:
    return _f([*rgb, 1.0])


class TemplateFixture(MujocoXMLObject):
    """A static robosuite object built from one of embodia's MJCF templates.

    Args:
        template: file name in ``embodia/sim_assets/kitchen`` (e.g. ``"sink.xml"``).
        name: instance name (prefix of every element name in the model).
        fields: values of the template's ``$name`` fields.
        pos: world position of the fixture's local origin.
    """

    def __init__(self, template: str, name: str, fields: dict[str, str], pos: Sequence[float]) -> None:
        text = Template(asset_path(template).read_text()).substitute(fields)
        # robosuite parses objects from files; the filled template lives only while it is parsed.
        with tempfile.TemporaryDirectory(prefix="embodia-kitchen-") as tmp:
            path = Path(tmp) / template
            path.write_text(text)
            super().__init__(
                str(path), name=name, joints=None, obj_type="all", duplicate_collision_geoms=True
            )
        self.template = template
        self.get_obj().set("pos", array_to_string(np.asarray(pos, dtype=float)))


def _style(layout: KitchenLayout) -> dict[str, str]:
    stone, mark = COUNTER_COLORS[layout.counter_color]
    return {
        "stone_rgb": _f(stone),
        "stone_mark": _f(mark),
        "cabinet_rgba": _rgba(CABINET_COLORS[layout.cabinet_color]),
    }


def _base_cabinet(width: float, layout: KitchenLayout, carcass_top: float) -> dict[str, str]:
    """Fields shared by the base modules: carcass (up to ``carcass_top``), toe kick, countertop."""
    w2, depth, height = width / 2, layout.counter_depth, layout.counter_height
    return {
        **_box("carcass", (0, -w2, KICK_HEIGHT), (depth, w2, carcass_top)),
        **_box("kick", (0.06, -w2, 0), (depth, w2, KICK_HEIGHT)),
        **_box("top", (-0.015, -w2, height - TOP_THICKNESS), (depth, w2, height)),
    }


def counter_module(name: str, width: float, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A plain base cabinet with countertop."""
    w2, height = width / 2, layout.counter_height
    below_top = height - TOP_THICKNESS
    pull_z = below_top - 0.07
    fields = {
        **_style(layout),
        **_base_cabinet(width, layout, below_top),
        **_box("door", (-0.012, -w2 + 0.004, KICK_HEIGHT + 0.02), (0, w2 - 0.004, below_top - 0.015)),
        "pull_fromto": _f((-0.022, -0.06, pull_z, -0.022, 0.06, pull_z)),
    }
    return TemplateFixture("counter.xml", name, fields, (0, y, 0))


def sink_module(name: str, width: float, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A base cabinet with a basin in the countertop and a single-lever faucet behind it."""
    w2, depth, height = width / 2, layout.counter_depth, layout.counter_height
    below_top = height - TOP_THICKNESS
    bx0 = 0.075
    bx1 = bx0 + layout.basin_length
    bw2, bd = layout.basin_width / 2, layout.basin_depth
    floor = height - bd
    fx = bx1 + 0.05  # faucet column position
    pull_z = below_top - 0.07
    wall = 0.01
    fields = {
        **_style(layout),
        **_base_cabinet(width, layout, floor - 0.03),
        **_box("front", (0, -w2, floor - 0.03), (0.02, w2, below_top)),
        **_box("door", (-0.012, -w2 + 0.004, KICK_HEIGHT + 0.02), (0, w2 - 0.004, below_top - 0.015)),
        "pull_l_fromto": _f((-0.022, -0.12, pull_z, -0.022, -0.04, pull_z)),
        "pull_r_fromto": _f((-0.022, 0.04, pull_z, -0.022, 0.12, pull_z)),
        **_box("top_front", (-0.015, -w2, below_top), (bx0, w2, height)),
        **_box("top_back", (bx1, -w2, below_top), (depth, w2, height)),
        **_box("top_left", (bx0, bw2, below_top), (bx1, w2, height)),
        **_box("top_right", (bx0, -w2, below_top), (bx1, -bw2, height)),
        **_box("basin_bottom", (bx0, -bw2, floor - wall), (bx1, bw2, floor)),
        **_box("basin_front", (bx0, -bw2, floor), (bx0 + wall, bw2, height - 0.001)),
        **_box("basin_back", (bx1 - wall, -bw2, floor), (bx1, bw2, height - 0.001)),
        **_box("basin_left", (bx0, bw2 - wall, floor), (bx1, bw2, height - 0.001)),
        **_box("basin_right", (bx0, -bw2, floor), (bx1, -bw2 + wall, height - 0.001)),
        "drain_pos": _f(((bx0 + bx1) / 2, 0, floor + 0.001)),
        "basin_site": _f(((bx0 + bx1) / 2, 0, height)),
        "column_pos": _f((fx, 0, height + 0.115)),
        "column_size": _f((0.018, 0.115)),
        "spout_fromto": _f((fx, 0, height + 0.17, fx - 0.17, 0, height + 0.17)),
        "nozzle_pos": _f((fx - 0.17, 0, height + 0.155)),
        "water_fromto": _f((fx - 0.17, 0, height + 0.14, fx - 0.17, 0, floor + 0.002)),
        "lever_pos": _f((fx, 0, height + 0.245)),
        "arm_pos": _f((-LEVER_LENGTH / 2 - 0.005, 0, 0)),
        "arm_size": _f((LEVER_LENGTH / 2, 0.008, 0.007)),
        "tip_pos": _f((-LEVER_LENGTH, 0, 0)),
    }
    return TemplateFixture("sink.xml", name, fields, (0, y, 0))


def drawer_module(name: str, width: float, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A base cabinet with a drawer under the countertop."""
    w2, depth, height = width / 2, layout.counter_depth, layout.counter_height
    below_top = height - TOP_THICKNESS
    side = 0.018
    z1 = below_top - 0.12  # top of the drawer opening (low enough for a wrist above the handle)
    z0 = z1 - 0.17
    hh = (z1 - z0) / 2
    inner = w2 - 0.024  # outer half width of the drawer box
    box_depth = depth - 0.06
    fields = {
        **_style(layout),
        **_base_cabinet(width, layout, z0),
        **_box("side_left", (0, w2 - side, z0), (depth, w2, below_top)),
        **_box("side_right", (0, -w2, z0), (depth, -w2 + side, below_top)),
        **_box("rail", (0, -w2 + side, z1), (side, w2 - side, below_top)),
        **_box("back", (depth - side, -w2 + side, z0), (depth, w2 - side, below_top)),
        **_box("door", (-0.012, -w2 + 0.004, KICK_HEIGHT + 0.02), (0, w2 - 0.004, z0 - 0.01)),
        "pull_fromto": _f((-0.022, -0.06, z0 - 0.06, -0.022, 0.06, z0 - 0.06)),
        "drawer_pos": _f((0, 0, (z0 + z1) / 2)),
        "travel": f"{layout.drawer_travel:.5f}",
        **_box("front", (-0.02, -(w2 - 0.02), -hh + 0.003), (0, w2 - 0.02, hh - 0.003)),
        **_box("bottom", (0, -inner, -hh + 0.01), (box_depth, inner, -hh + 0.022)),
        **_box("wall_left", (0, inner - 0.012, -hh + 0.022), (box_depth, inner, hh - 0.03)),
        **_box("wall_right", (0, -inner, -hh + 0.022), (box_depth, -inner + 0.012, hh - 0.03)),
        **_box("wall_back", (box_depth - 0.012, -inner, -hh + 0.022), (box_depth, inner, hh - 0.03)),
        # the bar stands 6 cm off the front: room for fingers behind it
        "handle_fromto": _f((-0.085, -0.075, 0, -0.085, 0.075, 0)),
        "post_left_pos": _f((-0.0485, 0.068, 0)),
        "post_right_pos": _f((-0.0485, -0.068, 0)),
        "post_size": _f((0.0285, 0.005, 0.006)),
        "handle_site": _f((-0.085, 0, 0)),
    }
    return TemplateFixture("drawer.xml", name, fields, (0, y, 0))


def wall_cabinet(name: str, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A wall cabinet with one door hinged on the side given by ``layout.hinge_sign``."""
    w, hc, t, s = layout.cabinet_width, layout.cabinet_height, 0.018, layout.hinge_sign
    w2, dc = w / 2, CABINET_DEPTH
    handle_y = s * (w - 0.05)
    handle_z = hc / 4  # upper half: a hand pushing low on the door never meets it
    fields = {
        "cabinet_rgba": _rgba(CABINET_COLORS[layout.cabinet_color]),
        **_box("top", (0, -w2, hc - t), (dc, w2, hc)),
        **_box("bottom", (0, -w2, 0), (dc, w2, t)),
        **_box("left", (0, w2 - t, t), (dc, w2, hc - t)),
        **_box("right", (0, -w2, t), (dc, -w2 + t, hc - t)),
        **_box("back", (dc - t, -w2 + t, t), (dc, w2 - t, hc - t)),
        **_box("shelf", (t, -w2 + t, hc / 2 - t / 2), (dc - t, w2 - t, hc / 2 + t / 2)),
        "door_body_pos": _f((-0.003, -s * w2, hc / 2)),
        "hinge_sign": f"{s:.0f}",
        **_box(
            "panel",
            (-0.02, min(s * 0.002, s * (w - 0.002)), -hc / 2 + 0.003),
            (0, max(s * 0.002, s * (w - 0.002)), hc / 2 - 0.003),
        ),
        "handle_fromto": _f((-0.055, handle_y, handle_z - 0.06, -0.055, handle_y, handle_z + 0.06)),
        "post_top_pos": _f((-0.0335, handle_y, handle_z + 0.045)),
        "post_bottom_pos": _f((-0.0335, handle_y, handle_z - 0.045)),
        "post_size": _f((0.0135, 0.005, 0.005)),
        "handle_site": _f((-0.055, handle_y, handle_z)),
    }
    pos = (layout.counter_depth - dc, y, layout.counter_height + layout.cabinet_gap)
    return TemplateFixture("hinge_cabinet.xml", name, fields, pos)


_SHELL_COLORS = ((0.75, 0.76, 0.78), (0.14, 0.14, 0.15), (0.92, 0.92, 0.92))


def microwave(name: str, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A countertop microwave with a spring-loaded start button on its control panel."""
    wm, hm, dm = layout.microwave_width, layout.microwave_height, MICROWAVE_DEPTH
    w2, pw, front = wm / 2, 0.13, 0.012
    yb, zb = -w2 + pw / 2, 0.3 * hm  # button centre
    hy, hz = 0.02, 0.014  # half size of the hole around the button
    fields = {
        "shell_rgba": _rgba(_SHELL_COLORS[layout.cabinet_color % len(_SHELL_COLORS)]),
        **_box("shell", (front, -w2, 0), (dm, w2, hm)),
        **_box("door", (0, -w2 + pw, 0), (front, w2, hm)),
        **_box("window", (-0.002, -w2 + pw + 0.05, 0.05), (0.0005, w2 - 0.04, hm - 0.05)),
        "door_handle_fromto": _f((-0.02, -w2 + pw + 0.025, 0.06, -0.02, -w2 + pw + 0.025, hm - 0.06)),
        **_box("panel_top", (0, -w2, zb + hz), (front, -w2 + pw, hm)),
        **_box("panel_bottom", (0, -w2, 0), (front, -w2 + pw, zb - hz)),
        **_box("panel_left", (0, yb + hy, zb - hz), (front, -w2 + pw, zb + hz)),
        **_box("panel_right", (0, -w2, zb - hz), (front, yb - hy, zb + hz)),
        **_box("display", (-0.002, yb - 0.04, 0.7 * hm - 0.025), (0.0005, yb + 0.04, 0.7 * hm + 0.025)),
        "status_pos": _f((-0.004, yb, zb + 0.045)),
        "button_pos": _f((0, yb, zb)),
        "button_travel": f"{BUTTON_TRAVEL:.4f}",
        # a long push button: 2.5 cm proud of the panel, so fingers reach it before the hand meets the panel
        "button_geom_pos": _f((-0.0115, 0, 0)),
        "button_size": _f((0.0135, hy - 0.003, hz - 0.003)),
        "button_site": _f((-0.025, 0, 0)),
    }
    pos = (layout.counter_depth - dm - 0.02, y, layout.counter_height)
    return TemplateFixture("microwave.xml", name, fields, pos)


def build_fixtures(layout: KitchenLayout) -> list[TemplateFixture]:
    """Every fixture of ``layout``: the counter modules, the wall cabinet and the microwave.

    Names: ``counter<i>`` for plain counters, ``sink``, ``drawer``, ``cabinet``, ``microwave``.
    """
    centers = layout.module_centers
    fixtures: list[TemplateFixture] = []
    for i, (kind, width, y) in enumerate(zip(layout.modules, layout.module_widths, centers)):
        if kind == "sink":
            fixtures.append(sink_module("sink", width, y, layout))
        elif kind == "drawer":
            fixtures.append(drawer_module("drawer", width, y, layout))
        else:
            fixtures.append(counter_module(f"counter{i}", width, y, layout))
    fixtures.append(wall_cabinet("cabinet", centers[layout.cabinet_module] + layout.cabinet_offset, layout))
    fixtures.append(microwave("microwave", centers[layout.microwave_module], layout))
    return fixtures


def look_at(position: Sequence[float], target: Sequence[float]) -> str:
    """MuJoCo ``xyaxes`` of a camera at ``position`` looking at ``target`` with the world z axis up."""
    forward = np.asarray(target, dtype=float) - np.asarray(position, dtype=float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return _f([*right, *up])


class KitchenArena(Arena):
    """The room: floor and walls coloured from the layout, back wall at the counter depth, and the
    ``agentview`` / ``overview`` cameras aimed at the robot's work area."""

    def __init__(self, layout: KitchenLayout, focus: Sequence[float]) -> None:
        super().__init__(str(asset_path("kitchen_arena.xml")))
        rgb1, rgb2 = FLOOR_COLORS[layout.floor_color]
        self.asset.find("./texture[@name='tiles']").set("rgb1", _f(rgb1))
        self.asset.find("./texture[@name='tiles']").set("rgb2", _f(rgb2))
        self.asset.find("./material[@name='wall']").set("rgba", _rgba(WALL_COLORS[layout.wall_color]))
        self.worldbody.find("./geom[@name='wall_back']").set("pos", _f((layout.counter_depth + 0.02, 0, 1.5)))
        rx, ry = layout.robot_x, layout.robot_y
        # agentview: fixed to the robot base, over its left shoulder; overview: from the side of the
        # robot where the task's fixture is, so that the arm does not hide it
        side = 1.0 if focus[1] >= ry else -1.0
        cameras = {
            "agentview": ((rx - 0.4, ry + 0.35, 1.9), (rx + 0.8, ry - 0.05, 0.8)),
            "overview": ((rx - 0.85, ry + side * 0.75, 1.95), focus),
        }
        for name, (position, target) in cameras.items():
            camera = self.worldbody.find(f"./camera[@name='{name}']")
            camera.set("pos", _f(position))
            camera.set("xyaxes", look_at(position, target))
