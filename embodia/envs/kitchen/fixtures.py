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
    HANDLE_COLORS,
    RETURN_MODULE_WIDTH,
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
SPOUT_LENGTH = 0.17
"""Reach of the faucet's swivel spout from the column's axis to the nozzle."""
SPOUT_HEIGHT = 0.17
"""Height of the spout's axis above the countertop."""

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
        # the swivel spout: a body turning about the column's axis (positions below in its frame)
        "spout_pos": _f((fx, 0, height + SPOUT_HEIGHT)),
        "spout_fromto": _f((0, 0, 0, -SPOUT_LENGTH, 0, 0)),
        "nozzle_pos": _f((-SPOUT_LENGTH, 0, -0.015)),
        "water_fromto": _f(
            (-SPOUT_LENGTH, 0, -0.03, -SPOUT_LENGTH, 0, floor + 0.002 - height - SPOUT_HEIGHT)
        ),
        "spout_tip": _f((-SPOUT_LENGTH, 0, 0)),
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


#: cooktop burner centres in the stove module's frame: (x from the cabinet front, y; +y is the robot's left)
BURNER_POSITIONS = {
    "front_left": (0.2, 0.15),
    "front_right": (0.2, -0.15),
    "rear_left": (0.41, 0.15),
    "rear_right": (0.41, -0.15),
}
#: stove knob centres on the countertop's front strip, left to right as seen by the robot (x, y)
KNOB_POSITIONS = {
    "rear_left": (0.045, 0.2),
    "front_left": (0.045, 0.08),
    "front_right": (0.045, -0.08),
    "rear_right": (0.045, -0.2),
}
COOKTOP_THICKNESS = 0.006
"""How far the glass cooktop stands proud of the countertop."""
BURNER_RADIUS = 0.075
"""Radius of a burner's ring (its flame is a little smaller)."""
KNOB_FIN_HEIGHT = 0.028
"""Height of a stove knob fin's centre above the countertop (where fingers pinch it)."""


def stove_module(name: str, width: float, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A base cabinet with a four-burner glass cooktop and a rotary knob per burner on the front strip."""
    w2, depth, height = width / 2, layout.counter_depth, layout.counter_height
    below_top = height - TOP_THICKNESS
    pull_z = below_top - 0.07
    glass = height + COOKTOP_THICKNESS
    fields = {
        **_style(layout),
        **_base_cabinet(width, layout, below_top),
        **_box("door", (-0.012, -w2 + 0.004, KICK_HEIGHT + 0.02), (0, w2 - 0.004, below_top - 0.015)),
        "pull_fromto": _f((-0.022, -0.06, pull_z, -0.022, 0.06, pull_z)),
        **_box("cooktop", (0.1, -0.29, height), (depth - 0.06, 0.29, glass)),
        "ring_size": _f((BURNER_RADIUS, 0.0005)),
        "flame_size": _f((BURNER_RADIUS - 0.006, 0.0005)),
        "center_size": _f((BURNER_RADIUS - 0.028, 0.0005)),
        "knob_damping": "0.01",
        "knob_friction": "0.015",
        "knob_base_pos": _f((0, 0, 0.008)),
        "knob_base_size": _f((0.02, 0.008)),
        "knob_fin_pos": _f((0, 0, KNOB_FIN_HEIGHT)),
        "knob_fin_size": _f((0.022, 0.005, 0.012)),
        "knob_mark_pos": _f((-0.017, 0, KNOB_FIN_HEIGHT + 0.0125)),
        "knob_mark_size": _f((0.004, 0.0052, 0.0006)),
    }
    for burner, (bx, by) in BURNER_POSITIONS.items():
        fields[f"burner_{burner}_ring"] = _f((bx, by, glass + 0.0006))
        fields[f"burner_{burner}_flame"] = _f((bx, by, glass + 0.0012))
        fields[f"burner_{burner}_center"] = _f((bx, by, glass + 0.0018))
        fields[f"burner_{burner}_site"] = _f((bx, by, glass))
    for burner, (kx, ky) in KNOB_POSITIONS.items():
        fields[f"knob_{burner}_pos"] = _f((kx, ky, height))
    return TemplateFixture("stove.xml", name, fields, (0, y, 0))


def _cabinet_door(prefix: str, sign: float, width: float, hc: float, y_hinge: float) -> dict[str, str]:
    """Template fields of one wall-cabinet door: hinged at local ``y_hinge``, ``width`` wide, opening
    toward the room; ``sign`` +1 hinges it on its -y edge (the panel extends toward +y), -1 on its +y edge.
    Its handle is a horizontal bar near the free edge and low on the door (like the handles of RoboCasa's
    wall cabinets: within the arm's easy reach, and a hand pushing the door's upper half never meets it),
    standing 8 cm proud of the panel on two posts: room for fingers hooked behind it."""
    s = sign
    y0, y1 = s * (width - 0.15), s * (width - 0.03)  # the bar's ends, measured from the hinge
    handle_z = -hc / 2 + 0.09
    return {
        f"{prefix}door_body_pos": _f((-0.003, y_hinge, hc / 2)),
        f"{prefix}hinge_sign": f"{s:.0f}",
        **_box(
            f"{prefix}panel",
            (-0.02, min(s * 0.002, s * (width - 0.002)), -hc / 2 + 0.003),
            (0, max(s * 0.002, s * (width - 0.002)), hc / 2 - 0.003),
        ),
        f"{prefix}handle_fromto": _f((-0.1, y0, handle_z, -0.1, y1, handle_z)),
        f"{prefix}post_a_pos": _f((-0.056, y0 + s * 0.007, handle_z)),
        f"{prefix}post_b_pos": _f((-0.056, y1 - s * 0.007, handle_z)),
        f"{prefix}handle_site": _f((-0.1, (y0 + y1) / 2, handle_z)),
    }


def wall_cabinet(name: str, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A wall cabinet with a shelf at half height and ``layout.cabinet_doors`` doors: one hinged on the side
    given by ``layout.hinge_sign`` (``hinge_cabinet.xml``), or a pair hinged on the outer edges
    (``double_door_cabinet.xml``). Its ``interior`` site marks the middle of the cabinet floor's top."""
    w, hc, t, s = layout.cabinet_width, layout.cabinet_height, 0.018, layout.hinge_sign
    w2, dc = w / 2, CABINET_DEPTH
    fields = {
        "cabinet_rgba": _rgba(CABINET_COLORS[layout.cabinet_color]),
        **_box("top", (0, -w2, hc - t), (dc, w2, hc)),
        **_box("bottom", (0, -w2, 0), (dc, w2, t)),
        **_box("left", (0, w2 - t, t), (dc, w2, hc - t)),
        **_box("right", (0, -w2, t), (dc, -w2 + t, hc - t)),
        **_box("back", (dc - t, -w2 + t, t), (dc, w2 - t, hc - t)),
        **_box("shelf", (t, -w2 + t, hc / 2 - t / 2), (dc - t, w2 - t, hc / 2 + t / 2)),
        "post_size": _f((0.036, 0.005, 0.006)),
        "interior_site": _f((dc / 2, 0, t)),
    }
    if layout.cabinet_doors == 2:  # the right door (-y) hinges on its -y edge, the left one on its +y edge
        fields.update(_cabinet_door("right_", 1.0, w2, hc, -w2))
        fields.update(_cabinet_door("left_", -1.0, w2, hc, w2))
        template = "double_door_cabinet.xml"
    else:
        fields.update(_cabinet_door("", s, w, hc, -s * w2))
        template = "hinge_cabinet.xml"
    pos = (layout.counter_depth - dc, y, layout.counter_height + layout.cabinet_gap)
    return TemplateFixture(template, name, fields, pos)


_SHELL_COLORS = ((0.75, 0.76, 0.78), (0.14, 0.14, 0.15), (0.92, 0.92, 0.92))


MICROWAVE_FRONT = 0.1
"""Distance of the microwave's door from the cabinet fronts: forward enough for an arm to reach onto its plate."""
MICROWAVE_PANEL_WIDTH = 0.13
"""Width of the control panel (right of the door, seen from the room)."""
MICROWAVE_DOOR_THICKNESS = 0.02
"""Thickness of the microwave door (the chamber starts behind it)."""
MICROWAVE_DOOR_RANGE = 1.75
"""How far the microwave door opens (rad); RoboCasa's "open" is 90 % of a quarter turn."""


def microwave(name: str, y: float, layout: KitchenLayout) -> TemplateFixture:
    """A countertop microwave (RoboCasa's): a chamber with a turntable plate, a door hinged on its left
    edge (+y, seen from the room) with a handle bar on its free edge, and a control panel on the right with
    spring-loaded start (upper) and stop (lower) buttons. It stands ``MICROWAVE_FRONT`` behind the cabinet
    fronts."""
    wm, hm, dm = layout.microwave_width, layout.microwave_height, MICROWAVE_DEPTH
    w2, pw, front = wm / 2, MICROWAVE_PANEL_WIDTH, MICROWAVE_DOOR_THICKNESS
    wall, floor, ceiling = 0.015, 0.03, 0.02  # chamber wall, floor and ceiling thickness
    yb, z_start, z_stop = -w2 + pw / 2, 0.5 * hm, 0.25 * hm  # button centres
    hy, hz = 0.02, 0.014  # half size of the hole around each button
    door_width = wm - pw
    chamber_x = (front, dm - wall)
    chamber_y = (-w2 + pw + wall, w2 - wall)
    cx, cy = sum(chamber_x) / 2, sum(chamber_y) / 2
    plate_radius = min(0.13, min(chamber_x[1] - chamber_x[0], chamber_y[1] - chamber_y[0]) / 2 - 0.015)
    yh, xh = -door_width + 0.07, -front - 0.04  # handle bar, in the door's frame (origin at the hinge)
    fields = {
        "shell_rgba": _rgba(_SHELL_COLORS[layout.cabinet_color % len(_SHELL_COLORS)]),
        **_box("floor", (front, -w2 + pw, 0), (dm, w2, floor)),
        **_box("ceiling", (front, -w2 + pw, hm - ceiling), (dm, w2, hm)),
        **_box("side", (front, w2 - wall, floor), (dm, w2, hm - ceiling)),
        **_box("divider", (front, -w2 + pw, floor), (dm, -w2 + pw + wall, hm - ceiling)),
        **_box("back", (dm - wall, chamber_y[0], floor), (dm, chamber_y[1], hm - ceiling)),
        **_box("block", (front, -w2, 0), (dm, -w2 + pw, hm)),
        "plate_pos": _f((cx, cy, floor + 0.004)),
        "plate_size": _f((plate_radius, 0.004)),
        "plate_site": _f((cx, cy, floor + 0.008)),
        **_box("panel_top", (0, -w2, z_start + hz), (front, -w2 + pw, hm)),
        **_box("panel_middle", (0, -w2, z_stop + hz), (front, -w2 + pw, z_start - hz)),
        **_box("panel_bottom", (0, -w2, 0), (front, -w2 + pw, z_stop - hz)),
        **_box("panel_left", (0, yb + hy, z_stop - hz), (front, -w2 + pw, z_start + hz)),
        **_box("panel_right", (0, -w2, z_stop - hz), (front, yb - hy, z_start + hz)),
        **_box("display", (-0.002, yb - 0.04, 0.8 * hm - 0.02), (0.0005, yb + 0.04, 0.8 * hm + 0.02)),
        "status_pos": _f((-0.004, yb, z_start + 0.04)),
        "button_pos": _f((0, yb, z_start)),
        "stop_button_pos": _f((0, yb, z_stop)),
        "button_travel": f"{BUTTON_TRAVEL:.4f}",
        # long push buttons: 2.5 cm proud of the panel, so fingers reach them before the hand meets the panel
        "button_geom_pos": _f((-0.0115, 0, 0)),
        "button_size": _f((0.0135, hy - 0.003, hz - 0.003)),
        "button_site": _f((-0.025, 0, 0)),
        "door_body_pos": _f((front, w2, 0)),
        "door_range": f"{MICROWAVE_DOOR_RANGE:.4f}",
        **_box("door", (-front, -door_width + 0.003, 0.003), (-0.003, -0.003, hm - 0.003)),
        **_box("window", (-front - 0.001, -door_width + 0.07, 0.05), (-front + 0.0005, -0.04, hm - 0.05)),
        # the bar runs free above its top post: fingers pointing down grip it there
        "handle_fromto": _f((xh, yh, 0.05, xh, yh, hm - 0.025)),
        "post_top_pos": _f((-front - 0.02, yh, hm - 0.11)),
        "post_bottom_pos": _f((-front - 0.02, yh, 0.08)),
        "post_size": _f((0.02, 0.006, 0.006)),
        "handle_site": _f((xh, yh, hm - 0.04)),
        "hinge_site": _f((0, 0, hm / 2)),
    }
    pos = (MICROWAVE_FRONT, y, layout.counter_height)
    return TemplateFixture("microwave.xml", name, fields, pos)


def counter_returns(layout: KitchenLayout) -> list[TemplateFixture]:
    """The counter returns of an L- or U-shaped kitchen (none for a one-wall kitchen).

    At each end of the main run that has one (``layout.return_left``: +y, the robot's left;
    ``return_right``: -y): a blind-corner counter ``layout.corner_width`` wide in line with the run
    (``corner_left`` / ``corner_right``), then a second run along the side wall at a right angle: a corner
    block against the back wall (``return_left0``) and plain counters (``return_left1``, ..., each at most
    ``RETURN_MODULE_WIDTH`` wide) reaching ``return_left`` metres from the cabinet fronts toward the room.
    The return's modules are the plain counter module turned a quarter turn about z, their fronts facing
    the main run's end (the robot's side). The blind corner keeps the return clear of a robot standing
    before the run's last module; no task acts on a return.
    """
    half_run = float(np.sum(layout.module_widths)) / 2
    depth = layout.counter_depth
    fixtures = []
    for side, name, length in ((1.0, "left", layout.return_left), (-1.0, "right", layout.return_right)):
        if length <= 0:
            continue
        corner_y = side * (half_run + layout.corner_width / 2)
        fixtures.append(counter_module(f"corner_{name}", layout.corner_width, corner_y, layout))
        front = side * (half_run + layout.corner_width)  # y of the return's cabinet fronts
        count = int(np.ceil(length / RETURN_MODULE_WIDTH))
        width = length / count
        pieces = [(depth, depth / 2)] + [(width, -(k + 0.5) * width) for k in range(count)]  # (width, x)
        turn = np.array([np.cos(side * np.pi / 4), 0.0, 0.0, np.sin(side * np.pi / 4)])  # +-90 deg about z
        for k, (piece_width, x) in enumerate(pieces):
            fixture = counter_module(f"return_{name}{k}", piece_width, 0.0, layout)
            fixture.get_obj().set("pos", array_to_string(np.array([x, front, 0.0])))
            fixture.get_obj().set("quat", array_to_string(turn))
            fixtures.append(fixture)
    return fixtures


def side_wall_y(layout: KitchenLayout, side: float) -> float | None:
    """y of the side wall behind the counter return at the run's ``side`` end (+1: +y), None without one."""
    if (layout.return_left if side > 0 else layout.return_right) <= 0:
        return None
    half_run = float(np.sum(layout.module_widths)) / 2
    return side * (half_run + layout.corner_width + layout.counter_depth + 0.02)


def _finish_handles(fixture: TemplateFixture, layout: KitchenLayout) -> None:
    """Give a fixture's handles and pulls (its ``metal`` material) the style's handle finish."""
    for material in fixture.asset.iter("material"):
        if material.get("name") == f"{fixture.naming_prefix}metal":
            material.set("rgba", _rgba(HANDLE_COLORS[layout.handle_color]))


def build_fixtures(layout: KitchenLayout) -> list[TemplateFixture]:
    """Every fixture of ``layout``: the counter modules, the wall cabinet, the microwave, the coffee
    machine and the counter returns; the cabinetry's handles in the style's finish (the microwave keeps
    its own).

    Names: ``counter<i>`` for plain counters, ``sink``, ``drawer``, ``stove``, ``cabinet``, ``microwave``,
    ``coffee_machine``; ``corner_<side>`` and ``return_<side><k>`` (see :func:`counter_returns`).
    """
    centers = layout.module_centers
    fixtures: list[TemplateFixture] = []
    for i, (kind, width, y) in enumerate(zip(layout.modules, layout.module_widths, centers)):
        if kind == "sink":
            fixtures.append(sink_module("sink", width, y, layout))
        elif kind == "drawer":
            fixtures.append(drawer_module("drawer", width, y, layout))
        elif kind == "stove":
            fixtures.append(stove_module("stove", width, y, layout))
        else:
            fixtures.append(counter_module(f"counter{i}", width, y, layout))
    fixtures.append(wall_cabinet("cabinet", centers[layout.cabinet_module] + layout.cabinet_offset, layout))
    fixtures.append(microwave("microwave", centers[layout.microwave_module], layout))
    from embodia.envs.kitchen.coffee_fixtures import coffee_machine  # (it builds on this module)

    fixtures.append(coffee_machine("coffee_machine", layout))
    fixtures.extend(counter_returns(layout))
    for fixture in fixtures:
        if fixture.name != "microwave":
            _finish_handles(fixture, layout)
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
        for side, name in ((1.0, "left"), (-1.0, "right")):  # a side wall behind each counter return
            wall_y = side_wall_y(layout, side)
            if wall_y is not None:
                wall = self.worldbody.find(f"./geom[@name='wall_{name}']")
                reach = layout.counter_depth + 0.04  # from x = -3.5 to the back wall
                wall.set("pos", _f(((reach - 3.5) / 2, wall_y, 1.5)))
                wall.set("size", _f(((reach + 3.5) / 2, 0.02, 1.5)))
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
