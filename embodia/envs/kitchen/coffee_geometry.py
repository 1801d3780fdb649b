"""Sizes and places of the coffee machine and the mug (NumPy only: the task modules import this without
loading robosuite; :mod:`~embodia.envs.kitchen.coffee_fixtures` builds the models from it)."""

from __future__ import annotations

from embodia.envs.kitchen.layout import KitchenLayout

COFFEE_DEPTH = 0.26
"""Depth of the coffee machine (front of its drip tray to its back)."""
COFFEE_FRONT = 0.13
"""Distance of the machine's front from the counter's front (it stands forward, where the arm reaches the
mug station with its fingers pointing down and leaning toward the wall)."""
STATION_X = 0.065
"""Mug station centre (under the nozzle), from the machine's front."""
STATION_DEPTH = STATION_X + 0.07
"""Depth of the mug station (front of the drip tray to the front of the machine's body): room for the
mug and its handle."""
NOZZLE_HEIGHT = 0.27
"""Height of the dispenser nozzle's tip above the countertop. The nozzle hangs from a narrow spout that
reaches from the body over the station: a hand holding the mug from above, its fingers leaning toward the
wall, keeps its wrist in front of and below the spout."""
SPOUT_THICKNESS = 0.025
"""Height of the spout (the arm that carries the nozzle)."""
TRAY_HEIGHT = 0.02
"""Height of the drip tray's top above the countertop."""
BUTTON_HEIGHT = 0.12
"""Height of the serve button's centre above the countertop."""
COFFEE_BUTTON_TRAVEL = 0.009
"""How far the serve button can be pressed in."""
MUG_RADIUS = 0.03
"""Outer radius of the mug's body."""
MUG_HEIGHT = 0.08
"""Height of the mug."""
MUG_WALL = 0.0045
"""Thickness of the mug's wall."""
MUG_DENSITY = 1200.0
"""Density of the mug's geoms (kg/m^3): a light ceramic mug of about 0.12 kg."""
MUG_HANDLE_REACH = 0.025
"""How far the handle stands out of the mug's wall (along the mug's local +x)."""


def coffee_machine_center(layout: KitchenLayout) -> float:
    """The machine's centre along y: at the ``coffee_side`` end of its counter, 3 cm in from the edge."""
    module = layout.coffee_module
    half_free = layout.module_widths[module] / 2 - layout.coffee_width / 2 - 0.03
    return float(layout.module_centers[module] + layout.coffee_side * half_free)


def coffee_machine_front(layout: KitchenLayout) -> float:
    """World x of the machine's front face."""
    return COFFEE_FRONT
