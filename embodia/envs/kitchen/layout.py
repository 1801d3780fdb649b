"""Kitchen layouts: everything about a kitchen's model that a seed randomises, as one dataclass.

A layout fixes the *model* of an episode (which fixtures stand where, their sizes and colours, which
object lies on the counter, where the robot stands); the task then sets the *state* (joint angles, the
object's pose). Layouts are drawn from a ``numpy.random.Generator`` and round-trip through a flat float
vector (:meth:`KitchenLayout.to_vector` / :meth:`KitchenLayout.from_vector`), which
:meth:`KitchenEnv.get_state` stores in front of the simulator state so that a saved state rebuilds its
own kitchen.

World frame: the counter run stands along the back wall; ``x`` points from the cabinet fronts (``x = 0``)
to the wall (``x = depth``), ``y`` runs along the counter, ``z`` is up from the floor. The robot stands
in front of the counter (``x < 0``) facing ``+x``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

#: module kinds of the counter run, in the order of their codes
MODULE_KINDS = ("counter", "sink", "drawer", "stove")
#: every layout has these modules, in a seeded order
_MODULE_SET = ("counter", "counter", "counter", "counter", "sink", "drawer", "stove")
N_MODULES = len(_MODULE_SET)

#: cabinet colours (RGB): white, sage, navy, walnut, light grey, oak
CABINET_COLORS = (
    (0.93, 0.93, 0.9),
    (0.55, 0.63, 0.52),
    (0.17, 0.23, 0.35),
    (0.4, 0.26, 0.16),
    (0.7, 0.71, 0.72),
    (0.72, 0.56, 0.38),
)
#: countertop base colour and speckle colour: white marble, black granite, beige stone, concrete
COUNTER_COLORS = (
    ((0.92, 0.92, 0.9), (0.7, 0.7, 0.72)),
    ((0.12, 0.12, 0.13), (0.45, 0.45, 0.45)),
    ((0.82, 0.75, 0.62), (0.55, 0.47, 0.38)),
    ((0.6, 0.6, 0.58), (0.4, 0.4, 0.4)),
)
#: wall colours
WALL_COLORS = ((0.9, 0.88, 0.82), (0.78, 0.84, 0.88), (0.85, 0.8, 0.74), (0.94, 0.94, 0.94))
#: floor tile colour pairs
FLOOR_COLORS = (
    ((0.55, 0.45, 0.35), (0.5, 0.41, 0.32)),
    ((0.3, 0.3, 0.32), (0.75, 0.75, 0.75)),
    ((0.7, 0.68, 0.64), (0.62, 0.6, 0.56)),
)
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
    the stove: hands carry objects over its rear burners)."""
    cabinet_offset: float
    """Offset of the wall cabinet's centre from its module's centre, along y."""
    cabinet_width: float
    """Wall cabinet (and door) width."""
    cabinet_height: float
    """Wall cabinet height."""
    cabinet_gap: float
    """Gap between the countertop and the bottom of the wall cabinet."""
    hinge_sign: float
    """+1: the door hinges on its -y edge; -1: on its +y edge."""
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
            values.extend(value if isinstance(value, tuple) else [value])
        return np.asarray(values, dtype=np.float64)

    @classmethod
    def from_vector(cls, vector: np.ndarray) -> KitchenLayout:
        vector = np.asarray(vector, dtype=np.float64)
        if vector.shape != (layout_size(),):
            raise ValueError(f"a kitchen layout vector has {layout_size()} entries, got shape {vector.shape}")
        kwargs, i = {}, 0
        for field in fields(cls):
            if field.name in ("module_codes", "module_widths"):
                chunk = vector[i : i + N_MODULES]
                kwargs[field.name] = tuple(
                    int(round(v)) if field.name == "module_codes" else float(v) for v in chunk
                )
                i += N_MODULES
            else:
                kwargs[field.name] = _INT_FIELDS.get(field.name, float)(vector[i])
                i += 1
        return cls(**kwargs)


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
    )
}


def layout_size() -> int:
    """Length of :meth:`KitchenLayout.to_vector`."""
    return len(fields(KitchenLayout)) - 2 + 2 * N_MODULES


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


def sample_kitchen(rng: np.random.Generator) -> KitchenLayout:
    """Draw a kitchen (without the robot position, which the task chooses: ``robot_x = robot_y = 0``).

    The module order is a random permutation of four plain counters, a sink and a drawer unit; the
    microwave stands on a plain counter that is not next to the sink (so the counter beside the sink is
    free for objects), and the wall cabinet hangs over any module but the sink (and the stove). The stove
    stands beside the drawer unit on its side away from the sink.
    The coffee machine stands at one end of another plain counter (see ``_coffee_module``).
    """
    order = [MODULE_KINDS.index(kind) for kind in _MODULE_SET if kind != "stove"]
    rng.shuffle(order)
    # the stove stands beside the drawer unit, on its side away from the sink: the drawer's countertop is
    # free for the stove tasks' objects and the sink's neighbours stay free for the sink tasks
    drawer, sink_code = order.index(MODULE_KINDS.index("drawer")), MODULE_KINDS.index("sink")
    stove_slots = [i for i in (drawer, drawer + 1) if sink_code not in order[max(i - 1, 0) : i + 1]]
    order.insert(int(rng.choice(stove_slots)), MODULE_KINDS.index("stove"))
    widths = []
    for code in order:
        kind = MODULE_KINDS[code]
        low, high = {
            "counter": (0.55, 0.7),
            "sink": (0.72, 0.8),
            "drawer": (0.5, 0.6),
            "stove": (0.74, 0.8),
        }[kind]
        widths.append(float(rng.uniform(low, high)))
    sink = order.index(MODULE_KINDS.index("sink"))
    counters = [i for i, code in enumerate(order) if MODULE_KINDS[code] == "counter"]
    away_from_sink = [i for i in counters if abs(i - sink) > 1]
    microwave_module = int(rng.choice(away_from_sink))
    return KitchenLayout(
        counter_height=float(rng.uniform(0.88, 0.93)),
        counter_depth=float(rng.uniform(0.58, 0.63)),
        module_codes=tuple(order),
        module_widths=tuple(widths),
        basin_width=float(rng.uniform(0.42, 0.5)),
        basin_length=float(rng.uniform(0.27, 0.31)),
        basin_depth=float(rng.uniform(0.15, 0.19)),
        drawer_travel=float(rng.uniform(0.24, 0.27)),
        microwave_module=microwave_module,
        microwave_width=float(rng.uniform(0.46, 0.52)),
        microwave_height=float(rng.uniform(0.32, 0.36)),  # tall enough for a wrist at its door
        cabinet_module=int(
            rng.choice([i for i in range(N_MODULES) if MODULE_KINDS[order[i]] not in ("sink", "stove")])
        ),
        cabinet_offset=float(rng.uniform(-0.05, 0.05)),
        cabinet_width=float(rng.uniform(0.36, 0.42)),
        cabinet_height=float(rng.uniform(0.42, 0.5)),
        cabinet_gap=float(rng.uniform(0.38, 0.44)),
        hinge_sign=float(rng.choice([-1.0, 1.0])),
        cabinet_color=int(rng.integers(len(CABINET_COLORS))),
        counter_color=int(rng.integers(len(COUNTER_COLORS))),
        wall_color=int(rng.integers(len(WALL_COLORS))),
        floor_color=int(rng.integers(len(FLOOR_COLORS))),
        object_kind=int(rng.integers(N_DRAWN_OBJECTS)),
        robot_x=0.0,
        robot_y=0.0,
        stove_burner=int(rng.integers(len(BURNERS))),
        coffee_module=_coffee_module(order, microwave_module, rng),
        coffee_side=float(rng.choice([-1.0, 1.0])),
        coffee_width=float(rng.uniform(0.24, 0.27)),
        coffee_height=float(rng.uniform(0.33, 0.36)),
        # one door unless a task asks for the pair: a recorded store needs one state size per environment id
        # (the draw stays so that a seed keeps drawing the kitchen it drew before)
        cabinet_doors=1 + 0 * int(rng.integers(1, 3)),
        spout_turn=float(rng.choice([-1.0, 1.0])),
    )
