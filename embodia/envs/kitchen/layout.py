"""Kitchen layouts: everything about a kitchen's model, as one dataclass, and the catalogues it is drawn from.

A layout fixes the *model* of an episode (which fixtures stand where, their sizes and colours, which
object lies on the counter, where the robot stands); the task then sets the *state* (joint angles, the
object's pose). Layouts round-trip through a flat float vector (:meth:`KitchenLayout.to_vector` /
:meth:`KitchenLayout.from_vector`), which :meth:`KitchenEnv.get_state` stores in front of the simulator
state so that a saved state rebuilds its own kitchen.

Like RoboCasa, a kitchen is named by two ids, and an episode's seed fills in the rest
(:func:`sample_kitchen`):

- the **layout id** (:data:`LAYOUTS`, one of :data:`N_LAYOUTS`: one-wall, L-shaped and U-shaped kitchens with
  3-5 plain counters in the main run) fixes the geometry, drawn once from a generator seeded by the id
  alone (:func:`layout_geometry`): ``counter_height``, ``counter_depth``, ``module_codes``,
  ``module_widths``, the basin (``basin_*``), ``drawer_travel``, the microwave (``microwave_module``,
  ``microwave_width``, ``microwave_height``), the wall cabinet (``cabinet_module``, ``cabinet_offset``,
  ``cabinet_width``, ``cabinet_height``, ``cabinet_gap``, ``hinge_sign``), the coffee machine
  (``coffee_module``, ``coffee_side``, ``coffee_width``, ``coffee_height``), the counter returns
  (``return_left``, ``return_right``, ``corner_width``) and ``layout_id``;
- the **style id** (:data:`STYLES`, one of :data:`N_STYLES`, named after RoboCasa's 12) fixes the colours:
  ``cabinet_color``, ``counter_color``, ``wall_color``, ``floor_color``, ``handle_color`` and ``style_id``;
- the **episode** (the seed) draws the rest: ``object_kind``, ``stove_burner``, ``spout_turn``, and the
  task sets ``robot_x`` / ``robot_y`` (where the robot stands, with a seeded jitter) and may fix a field
  it is about (the door tasks set ``cabinet_doors``, 1 otherwise; the coffee tasks the mug, the microwave
  tasks a microwavable ``object_kind``).

The environment's ``layout`` and ``style`` arguments choose the ids an episode may draw (an id, a list
of ids, or None for the whole catalogue); the seed draws one of them.

World frame: the counter run stands along the back wall; ``x`` points from the cabinet fronts (``x = 0``)
to the wall (``x = depth``), ``y`` runs along the counter, ``z`` is up from the floor. The robot stands
in front of the counter (``x < 0``) facing ``+x`` (its left is ``+y``). An L-shaped kitchen has a second
counter run (a *return*) along the side wall at one end of the main run, at a right angle, reaching toward
the room; a U-shaped one has a return at both ends. The tasks act on the main run.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

#: module kinds of the counter run, in the order of their codes
MODULE_KINDS = ("counter", "sink", "drawer", "stove")
MAX_MODULES = 8
"""Most modules in a main run (5 plain counters, the sink, the drawer unit, the stove): the vector's slots."""
RETURN_LENGTH = (0.6, 1.3)
"""Range of a counter return's length from the cabinet fronts toward the room (metres)."""
RETURN_MODULE_WIDTH = 0.7
"""Widest plain counter in a return (a return is split into equal counters no wider)."""
CORNER_WIDTH = (0.5, 0.6)
"""Range of the blind-corner counter's width between the main run's end and a return's front: it keeps a
robot standing before the run's last module clear of the return."""

#: cabinet colours (RGB) and their names
CABINET_COLORS = (
    (0.93, 0.93, 0.9),
    (0.55, 0.63, 0.52),
    (0.17, 0.23, 0.35),
    (0.4, 0.26, 0.16),
    (0.7, 0.71, 0.72),
    (0.72, 0.56, 0.38),
    (0.21, 0.21, 0.23),
    (0.9, 0.85, 0.74),
    (0.55, 0.66, 0.74),
    (0.2, 0.32, 0.26),
)
CABINET_COLOR_NAMES = (
    "white",
    "sage",
    "navy",
    "walnut",
    "light grey",
    "oak",
    "charcoal",
    "cream",
    "dusty blue",
    "forest green",
)
#: countertop base colour and speckle colour, and their names
COUNTER_COLORS = (
    ((0.92, 0.92, 0.9), (0.7, 0.7, 0.72)),
    ((0.12, 0.12, 0.13), (0.45, 0.45, 0.45)),
    ((0.82, 0.75, 0.62), (0.55, 0.47, 0.38)),
    ((0.6, 0.6, 0.58), (0.4, 0.4, 0.4)),
    ((0.62, 0.43, 0.26), (0.5, 0.33, 0.18)),
    ((0.88, 0.86, 0.82), (0.55, 0.45, 0.4)),
)
COUNTER_COLOR_NAMES = (
    "white marble",
    "black granite",
    "beige stone",
    "concrete",
    "butcher block",
    "terrazzo",
)
#: wall colours and their names
WALL_COLORS = (
    (0.9, 0.88, 0.82),
    (0.78, 0.84, 0.88),
    (0.85, 0.8, 0.74),
    (0.94, 0.94, 0.94),
    (0.76, 0.8, 0.72),
    (0.86, 0.7, 0.58),
    (0.58, 0.6, 0.62),
)
WALL_COLOR_NAMES = ("cream", "pale blue", "warm beige", "white", "sage", "terracotta", "slate grey")
#: floor tile colour pairs and their names
FLOOR_COLORS = (
    ((0.55, 0.45, 0.35), (0.5, 0.41, 0.32)),
    ((0.3, 0.3, 0.32), (0.75, 0.75, 0.75)),
    ((0.7, 0.68, 0.64), (0.62, 0.6, 0.56)),
    ((0.66, 0.38, 0.26), (0.6, 0.34, 0.23)),
    ((0.1, 0.1, 0.1), (0.92, 0.92, 0.92)),
    ((0.32, 0.22, 0.15), (0.28, 0.19, 0.13)),
)
FLOOR_COLOR_NAMES = ("oak tiles", "grey checker", "light stone", "terracotta", "black and white", "dark wood")
#: finishes of the cabinet handles and pulls (RGB) and their names
HANDLE_COLORS = (
    (0.78, 0.78, 0.8),
    (0.76, 0.6, 0.32),
    (0.1, 0.1, 0.1),
    (0.42, 0.3, 0.2),
    (0.9, 0.91, 0.93),
)
HANDLE_COLOR_NAMES = ("stainless steel", "brass", "matte black", "bronze", "chrome")
#: graspable objects (robosuite's object models) and their names in instructions
OBJECT_KINDS = ("can", "lemon", "bread", "milk", "mug")
OBJECT_NAMES = {"can": "can", "lemon": "lemon", "bread": "bread roll", "milk": "milk carton", "mug": "mug"}
#: how many of OBJECT_KINDS (the first ones) a layout draws; the others (the mug) only a task fixes
N_DRAWN_OBJECTS = 4
#: the stove's burners (RoboCasa's names; "left" is the robot's left, +y)
BURNERS = ("front_left", "front_right", "rear_left", "rear_right")


@dataclass
class KitchenLayout:
    """One kitchen: counter run, fixtures, style, object kind and robot base position (metres, radians)."""

    counter_height: float
    """Height of the countertop surface above the floor."""
    counter_depth: float
    """Distance from the cabinet fronts to the wall."""
    module_codes: tuple[int, ...]
    """Kind of each module of the counter run, left to right along -y..+y (indices into MODULE_KINDS)."""
    module_widths: tuple[float, ...]
    """Width of each module along y."""
    basin_width: float
    """Sink basin size along y."""
    basin_length: float
    """Sink basin size along x."""
    basin_depth: float
    """Depth of the basin below the countertop."""
    drawer_travel: float
    """How far the drawer slides out when fully open."""
    microwave_module: int
    """Index of the (plain counter) module the microwave stands on."""
    microwave_width: float
    """Microwave width along y."""
    microwave_height: float
    """Microwave height (its chamber is 5 cm less; below the wall cabinet's lowest gap)."""
    cabinet_module: int
    """Index of the module under the wall cabinet (never the sink: the faucet needs the space above; never
    the stove: hands carry objects over its rear burners; in the catalogue, never the coffee machine's
    counter: an elbow reaching into the machine meets the cabinet)."""
    cabinet_offset: float
    """Offset of the wall cabinet's centre from its module's centre, along y."""
    cabinet_width: float
    """Wall cabinet (and door) width."""
    cabinet_height: float
    """Wall cabinet height."""
    cabinet_gap: float
    """Gap between the countertop and the bottom of the wall cabinet."""
    hinge_sign: float
    """+1: the door hinges on its -y edge; -1: on its +y edge (in the catalogue, never on the edge next to the
    microwave's counter: the robot stands beside the hinge)."""
    cabinet_color: int
    """Index into CABINET_COLORS."""
    counter_color: int
    """Index into COUNTER_COLORS."""
    wall_color: int
    """Index into WALL_COLORS."""
    floor_color: int
    """Index into FLOOR_COLORS."""
    object_kind: int
    """Index into OBJECT_KINDS: the graspable object on the counter."""
    robot_x: float
    """Robot base position along x (negative: in front of the counter)."""
    robot_y: float
    """Robot base position along y."""
    # --- stove ---
    stove_burner: int
    """Index into BURNERS: the burner (and its knob) that the stove tasks name."""
    # --- coffee machine ---
    coffee_module: int
    """Index of the plain counter the coffee machine stands on (never the microwave's, never one next to
    the sink; not next to the stove where the layout allows)."""
    coffee_side: float
    """+1: the coffee machine stands at the +y end of its counter; -1: at the -y end (the other end is free
    for a mug)."""
    coffee_width: float
    """Coffee machine width along y."""
    coffee_height: float
    """Coffee machine height (below the lowest wall cabinet)."""
    # --- cabinets and sink spout ---
    cabinet_doors: int
    """Doors of the wall cabinet: 1 (one door hinged on the side ``hinge_sign`` gives) or 2 (a pair hinged
    on the cabinet's outer edges); 1 unless a task asks for the pair (the pair adds a joint, and the states
    of one environment id must keep one size)."""
    spout_turn: float
    """Which way TurnSinkSpout asks the faucet's swivel spout to turn: -1 to the robot's left (+y), +1 to
    its right (RoboCasa draws "left" or "right")."""
    # --- layouts and styles ---
    return_left: float
    """Length of the counter return at the run's +y end (the robot's left), from the cabinet fronts toward
    the room; 0: none (see ``fixtures.counter_returns``)."""
    return_right: float
    """Length of the counter return at the run's -y end (the robot's right); 0: none."""
    corner_width: float
    """Width of the blind-corner counter between the main run's end and a return's front (used only with a
    return)."""
    handle_color: int
    """Index into HANDLE_COLORS: the finish of the cabinet handles and pulls."""
    layout_id: int
    """Index into LAYOUTS: the catalogue layout this kitchen's geometry comes from."""
    style_id: int
    """Index into STYLES: the catalogue style its colours come from."""

    # ------------------------------------------------------------------ derived geometry
    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(MODULE_KINDS[c] for c in self.module_codes)

    @property
    def module_centers(self) -> np.ndarray:
        """Centre of each module along y (the run is centred on y = 0)."""
        widths = np.asarray(self.module_widths)
        edges = np.concatenate([[0.0], np.cumsum(widths)]) - widths.sum() / 2
        return (edges[:-1] + edges[1:]) / 2

    def module_index(self, kind: str) -> int:
        return self.modules.index(kind)

    @property
    def object_name(self) -> str:
        return OBJECT_NAMES[OBJECT_KINDS[self.object_kind]]

    # ------------------------------------------------------------------ vector round trip
    def to_vector(self) -> np.ndarray:
        """All fields as one flat float64 vector (fixed length :func:`layout_size`)."""
        values: list[float] = []
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name in _MODULE_FIELDS:  # MAX_MODULES slots; unused ones: code -1, width 0
                value = (
                    *value,
                    *([-1 if field.name == "module_codes" else 0.0] * (MAX_MODULES - len(value))),
                )
            values.extend(value if isinstance(value, tuple) else [value])
        return np.asarray(values, dtype=np.float64)

    @classmethod
    def from_vector(cls, vector: np.ndarray) -> KitchenLayout:
        vector = np.asarray(vector, dtype=np.float64)
        if vector.shape != (layout_size(),):
            raise ValueError(f"a kitchen layout vector has {layout_size()} entries, got shape {vector.shape}")
        kwargs, i = {}, 0
        for field in fields(cls):
            if field.name in _MODULE_FIELDS:
                chunk = vector[i : i + MAX_MODULES]
                kwargs[field.name] = tuple(
                    int(round(v)) if field.name == "module_codes" else float(v) for v in chunk
                )
                i += MAX_MODULES
            else:
                kwargs[field.name] = _INT_FIELDS.get(field.name, float)(vector[i])
                i += 1
        used = sum(code >= 0 for code in kwargs["module_codes"])  # the run's modules, then empty slots
        for name in _MODULE_FIELDS:
            kwargs[name] = kwargs[name][:used]
        return cls(**kwargs)


_MODULE_FIELDS = ("module_codes", "module_widths")
"""Per-module fields (variable length; MAX_MODULES slots each in the vector)."""


def _round_int(value: float) -> int:
    return int(round(float(value)))


_INT_FIELDS = {
    name: _round_int
    for name in (
        "microwave_module",
        "cabinet_module",
        "cabinet_color",
        "counter_color",
        "wall_color",
        "floor_color",
        "object_kind",
        "stove_burner",
        "coffee_module",
        "cabinet_doors",
        "handle_color",
        "layout_id",
        "style_id",
    )
}


def layout_size() -> int:
    """Length of :meth:`KitchenLayout.to_vector`."""
    return len(fields(KitchenLayout)) - 2 + 2 * MAX_MODULES


def _coffee_module(order: list[int], microwave_module: int, rng: np.random.Generator) -> int:
    """A plain counter for the coffee machine: not the microwave's, not next to the sink (its neighbours
    are free for objects), and not next to the stove where another counter is left."""
    kinds = [MODULE_KINDS[code] for code in order]

    def next_to(i: int, kind: str) -> bool:
        return any(0 <= j < len(kinds) and kinds[j] == kind for j in (i - 1, i + 1))

    counters = [i for i, kind in enumerate(kinds) if kind == "counter" and i != microwave_module]
    allowed = [i for i in counters if not next_to(i, "sink")]
    preferred = [i for i in allowed if not next_to(i, "stove")]
    return int(rng.choice(preferred or allowed))


# ====================================================================== the catalogues
@dataclass(frozen=True)
class LayoutSpec:
    """One entry of the layout catalogue: what its id fixes before its generator draws the rest."""

    name: str
    """Name in tables and docs (the kind of kitchen and the plain counters in the main run)."""
    counters: int
    """Plain counters in the main run (3-5): with the sink, the drawer unit and the stove, the run's length."""
    left_return: bool
    """A counter return along the side wall at the run's +y end (the robot's left)."""
    right_return: bool
    """A counter return along the side wall at the run's -y end (the robot's right)."""


#: the layout catalogue (RoboCasa has 10 layouts: one-wall, L-shaped, galley, U-shaped, ..., some with an
#: island; embodia has no galley or island: the robot stands where their second run would be)
LAYOUTS = (
    LayoutSpec("one-wall, 3 counters", 3, False, False),
    LayoutSpec("one-wall, 4 counters", 4, False, False),
    LayoutSpec("one-wall, 5 counters", 5, False, False),
    LayoutSpec("L-shaped left, 3 counters", 3, True, False),
    LayoutSpec("L-shaped left, 4 counters", 4, True, False),
    LayoutSpec("L-shaped right, 4 counters", 4, False, True),
    LayoutSpec("L-shaped right, 5 counters", 5, False, True),
    LayoutSpec("U-shaped, 3 counters", 3, True, True),
    LayoutSpec("U-shaped, 4 counters", 4, True, True),
    LayoutSpec("U-shaped, 5 counters", 5, True, True),
)
LAYOUT_NAMES = tuple(spec.name for spec in LAYOUTS)
N_LAYOUTS = len(LAYOUTS)
LAYOUT_SEED = 45
"""Layout ``i``'s geometry is drawn from ``numpy.random.default_rng([LAYOUT_SEED, i])`` and nothing else."""


@dataclass(frozen=True)
class KitchenStyle:
    """One entry of the style catalogue: a kitchen's colours (indices into the colour tables)."""

    name: str
    """The name of RoboCasa's style this one is modelled on."""
    cabinet_color: int
    """Index into CABINET_COLORS (cabinets; the microwave's and coffee machine's shells follow it)."""
    counter_color: int
    """Index into COUNTER_COLORS."""
    wall_color: int
    """Index into WALL_COLORS."""
    floor_color: int
    """Index into FLOOR_COLORS."""
    handle_color: int
    """Index into HANDLE_COLORS."""


#: the style catalogue, named after RoboCasa's 12 styles (RoboCasa's styles also swap fixture models and
#: textures; embodia's set the colours and the handle finish)
STYLES = (
    KitchenStyle("industrial", 6, 3, 6, 1, 2),
    KitchenStyle("scandinavian", 0, 0, 3, 2, 0),
    KitchenStyle("coastal", 8, 0, 1, 2, 4),
    KitchenStyle("modern 1", 2, 0, 3, 1, 1),
    KitchenStyle("modern 2", 4, 1, 0, 5, 2),
    KitchenStyle("traditional 1", 7, 2, 2, 0, 3),
    KitchenStyle("traditional 2", 3, 1, 0, 3, 1),
    KitchenStyle("farmhouse", 1, 4, 3, 5, 2),
    KitchenStyle("rustic", 5, 4, 5, 3, 3),
    KitchenStyle("mediterranean", 7, 5, 1, 3, 1),
    KitchenStyle("transitional 1", 4, 0, 4, 0, 0),
    KitchenStyle("transitional 2", 9, 5, 0, 4, 4),
)
STYLE_NAMES = tuple(style.name for style in STYLES)
N_STYLES = len(STYLES)


def catalogue_ids(value: Any, what: str, count: int) -> tuple[int, ...]:
    """The ids an environment argument allows: None -> all of ``range(count)``; an int -> that one; a
    sequence of ints -> those. Raises ValueError naming the valid range for anything else."""
    if value is None:
        return tuple(range(count))
    values = [value] if isinstance(value, int | np.integer) else value
    ids = list(values) if isinstance(values, Sequence | np.ndarray) and not isinstance(values, str) else []
    valid = [v for v in ids if isinstance(v, int | np.integer) and not isinstance(v, bool) and 0 <= v < count]
    if not ids or len(valid) != len(ids):
        raise ValueError(
            f"{what} must be an id in 0..{count - 1} or a list of such ids (None: any), got {value!r}"
        )
    return tuple(int(v) for v in ids)


_WIDTHS = {"counter": (0.55, 0.7), "sink": (0.72, 0.8), "drawer": (0.5, 0.6), "stove": (0.74, 0.8)}
"""Range of each module kind's width along the run."""


def _draw_run(counters: int, rng: np.random.Generator) -> tuple[list[int], int, int] | None:
    """A main run with ``counters`` plain counters, the sink, the drawer unit and the stove, and the
    microwave's and the coffee machine's counters; None when this draw leaves no place for them.

    The stove stands beside the drawer unit, on its side away from the sink (the drawer's countertop is
    free for the stove tasks' objects and the sink's neighbours stay free for the sink tasks); the
    microwave stands on a plain counter not next to the sink (the counter beside the sink is free for
    objects) and the coffee machine on another one (see ``_coffee_module``); with three or more plain
    counters one is left free (where tasks park the object)."""
    order = [MODULE_KINDS.index("counter")] * counters + [MODULE_KINDS.index(k) for k in ("sink", "drawer")]
    rng.shuffle(order)
    drawer, sink_code = order.index(MODULE_KINDS.index("drawer")), MODULE_KINDS.index("sink")
    stove_slots = [i for i in (drawer, drawer + 1) if sink_code not in order[max(i - 1, 0) : i + 1]]
    if not stove_slots:
        return None
    order.insert(int(rng.choice(stove_slots)), MODULE_KINDS.index("stove"))
    sink = order.index(sink_code)
    plain = [i for i, code in enumerate(order) if MODULE_KINDS[code] == "counter"]
    away_from_sink = [i for i in plain if abs(i - sink) > 1]
    if len(away_from_sink) < 2:  # the microwave and the coffee machine each need one
        return None
    microwave = int(rng.choice(away_from_sink))
    return order, microwave, _coffee_module(order, microwave, rng)


@functools.cache
def layout_geometry(layout_id: int) -> dict[str, Any]:
    """The fields layout ``layout_id`` fixes (see the module docstring), drawn from a generator seeded by
    the id alone (cached: do not change the dict). The wall cabinet has one door (tasks about the pair
    set ``cabinet_doors`` themselves)."""
    spec = LAYOUTS[layout_id]
    rng = np.random.default_rng([LAYOUT_SEED, layout_id])
    run = None
    while run is None:
        run = _draw_run(spec.counters, rng)
    order, microwave, coffee = run
    geometry = {
        "counter_height": float(rng.uniform(0.88, 0.93)),
        "counter_depth": float(rng.uniform(0.58, 0.63)),
        "module_codes": tuple(order),
        "module_widths": tuple(float(rng.uniform(*_WIDTHS[MODULE_KINDS[code]])) for code in order),
        "basin_width": float(rng.uniform(0.42, 0.5)),
        "basin_length": float(rng.uniform(0.27, 0.31)),
        "basin_depth": float(rng.uniform(0.15, 0.19)),
        "drawer_travel": float(rng.uniform(0.24, 0.27)),
        "microwave_module": microwave,
        "microwave_width": float(rng.uniform(0.46, 0.52)),
        "microwave_height": float(rng.uniform(0.32, 0.36)),  # tall enough for a wrist at its door
        # not over the sink, the stove or the coffee machine (an arm reaching into the machine's station
        # met the cabinet's door with its elbow, and the coffee tasks failed in the layouts that had it)
        "cabinet_module": int(
            rng.choice(
                [
                    i
                    for i, code in enumerate(order)
                    if MODULE_KINDS[code] not in ("sink", "stove") and i != coffee
                ]
            )
        ),
        "cabinet_offset": float(rng.uniform(-0.05, 0.05)),
        "cabinet_width": float(rng.uniform(0.36, 0.42)),
        "cabinet_height": float(rng.uniform(0.42, 0.5)),
        "cabinet_gap": float(rng.uniform(0.38, 0.44)),
        "hinge_sign": float(rng.choice([-1.0, 1.0])),
        "coffee_module": coffee,
        "coffee_side": float(rng.choice([-1.0, 1.0])),
        "coffee_width": float(rng.uniform(0.24, 0.27)),
        "coffee_height": float(rng.uniform(0.33, 0.36)),
        "cabinet_doors": 1,
        "return_left": float(rng.uniform(*RETURN_LENGTH)) if spec.left_return else 0.0,
        "return_right": float(rng.uniform(*RETURN_LENGTH)) if spec.right_return else 0.0,
        "corner_width": float(rng.uniform(*CORNER_WIDTH)),
        "layout_id": int(layout_id),
    }
    # the single-door tasks stand the robot beside the hinge: never in front of the microwave next door (its
    # hand started inside the microwave's panel and CloseSingleDoor failed), so the door hinges the other way
    if geometry["microwave_module"] == geometry["cabinet_module"] - geometry["hinge_sign"]:
        geometry["hinge_sign"] = -geometry["hinge_sign"]
    return geometry


def sample_kitchen(
    rng: np.random.Generator, layouts: Sequence[int] | None = None, styles: Sequence[int] | None = None
) -> KitchenLayout:
    """Draw an episode's kitchen (without the robot position, which the task chooses: ``robot_x = robot_y
    = 0``).

    The seed's generator draws a layout id from ``layouts`` and a style id from ``styles`` (None: the whole
    catalogue), then the episode's own fields (the object kind, the stove's burner, the spout direction);
    the geometry and the colours come from the catalogues (:func:`layout_geometry`, :data:`STYLES`).
    """
    layouts = tuple(range(N_LAYOUTS)) if layouts is None else tuple(layouts)
    styles = tuple(range(N_STYLES)) if styles is None else tuple(styles)
    layout_id = int(layouts[int(rng.integers(len(layouts)))])
    style_id = int(styles[int(rng.integers(len(styles)))])
    style = STYLES[style_id]
    return KitchenLayout(
        **layout_geometry(layout_id),
        cabinet_color=style.cabinet_color,
        counter_color=style.counter_color,
        wall_color=style.wall_color,
        floor_color=style.floor_color,
        handle_color=style.handle_color,
        style_id=style_id,
        object_kind=int(rng.integers(N_DRAWN_OBJECTS)),
        robot_x=0.0,
        robot_y=0.0,
        stove_burner=int(rng.integers(len(BURNERS))),
        spout_turn=float(rng.choice([-1.0, 1.0])),
    )


# ====================================================================== tables for the docs
def layout_table() -> str:
    """The layout catalogue as a Markdown table (``docs/guides/kitchens.md`` shows it)."""
    lines = [
        "| id | layout | main run, from the robot's left to its right | run length | counter height "
        "| returns (left, right) |",
        "|---|---|---|---|---|---|",
    ]
    for layout_id, spec in enumerate(LAYOUTS):
        geometry = layout_geometry(layout_id)
        modules = []
        for i, code in enumerate(geometry["module_codes"]):
            extras = [
                what
                for what, key in (
                    ("microwave", "microwave_module"),
                    ("coffee machine", "coffee_module"),
                    ("wall cabinet", "cabinet_module"),
                )
                if geometry[key] == i
            ]
            modules.append(MODULE_KINDS[code] + (f" ({', '.join(extras)})" if extras else ""))
        returns = ", ".join(
            f"{geometry[key]:.2f} m" if geometry[key] else "-" for key in ("return_left", "return_right")
        )
        lines.append(
            f"| {layout_id} | {spec.name} | {' · '.join(reversed(modules))} "
            f"| {sum(geometry['module_widths']):.2f} m | {geometry['counter_height']:.2f} m | {returns} |"
        )
    return "\n".join(lines)


def style_table() -> str:
    """The style catalogue as a Markdown table (``docs/guides/kitchens.md`` shows it)."""
    lines = [
        "| id | style | cabinets | countertop | walls | floor | handles |",
        "|---|---|---|---|---|---|---|",
    ]
    for style_id, style in enumerate(STYLES):
        lines.append(
            f"| {style_id} | {style.name} | {CABINET_COLOR_NAMES[style.cabinet_color]} "
            f"| {COUNTER_COLOR_NAMES[style.counter_color]} | {WALL_COLOR_NAMES[style.wall_color]} "
            f"| {FLOOR_COLOR_NAMES[style.floor_color]} | {HANDLE_COLOR_NAMES[style.handle_color]} |"
        )
    return "\n".join(lines)
