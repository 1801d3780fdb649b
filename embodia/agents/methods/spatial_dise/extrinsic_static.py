"""Extrinsic-static kinds: where things are relative to a viewer or to each other, with nothing moving.

- ``projection``: which silhouette a stack of cubes shows from the front, back, left, right or top;
  distractors are the views from other sides (the opposite side is the mirror image) and the answer with
  one cell added or taken away, or such a view with a cell added or taken away: a pool from which
  :func:`~embodia.agents.methods.spatial_dise.core.balanced_distractors` picks three, so that the key is not
  the option "in the middle".
- ``perspective_taking``: objects on a map; imagine standing at one and facing another: where is a third
  (in front, left, behind, right), or which object is to the left / right / behind. The left-right swap
  is always among the distractors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from embodia.agents.methods.spatial_dise.core import (
    LAYERS_NOTE,
    Draft,
    Kind,
    grid_text,
    grow_pool,
    layers_text,
    register,
)

SIDE = 3
"""The object stands on SIDE x SIDE base cells and is at most SIDE cubes high."""

VIEW_WORDS = {
    "front": "from the front, looking straight at its front (left stays left, up stays up)",
    "back": "from the back, standing behind it and looking at its back (its left side then appears on the right)",
    "right": "from its right side, looking towards it (its front then appears on the left)",
    "left": "from its left side, looking towards it (its front then appears on the right)",
    "top": "from directly above (the top of the picture is the back, the bottom is the front)",
}
OPPOSITE = {"front": "back", "back": "front", "left": "right", "right": "left", "top": "top"}


def view(cubes: Any, side: str) -> list[tuple[int, int]]:
    """The silhouette of ``cubes`` from ``side``: cells ``(row, col)`` of a SIDE x SIDE picture, row 0 at
    the top (straight-on parallel projection)."""
    cells = set()
    top = SIDE - 1
    for x, y, z in cubes:
        cells.add(
            {
                "front": (top - z, x),
                "back": (top - z, top - x),
                "right": (top - z, y),
                "left": (top - z, top - y),
                "top": (top - y, x),
            }[side]
        )
    return sorted(cells)


def _projection(rng: np.random.Generator) -> Draft:
    while True:
        heights = rng.integers(0, SIDE + 1, size=(SIDE, SIDE)) * (rng.random((SIDE, SIDE)) < 0.8)
        cubes = [(x, y, z) for x in range(SIDE) for y in range(SIDE) for z in range(int(heights[x, y]))]
        spans = all(heights.max(axis=a).min() > 0 for a in (0, 1)) and heights.max() == SIDE
        if not spans or len(cubes) < 5:
            continue
        side = list(VIEW_WORDS)[int(rng.integers(len(VIEW_WORDS)))]
        answer = view(cubes, side)
        views = [(f"view from the {s}", view(cubes, s)) for s in VIEW_WORDS if s != side]

        def perturb(rng: np.random.Generator, base: Any, answer: Any = answer, views: Any = views) -> Any:
            if base == answer and rng.random() < 0.5:  # another side's view, the mirror image among them
                how, cells = views[int(rng.integers(len(views)))]
                return cells, how
            r, c = int(rng.integers(SIDE)), int(rng.integers(SIDE))
            return sorted({tuple(cell) for cell in base} ^ {(r, c)}), "one cell added or removed"

        distractors, made = grow_pool(rng, answer, perturb, lambda cells: len(cells) > 0)
        if len(distractors) >= 3:
            return Draft(
                prompt=(
                    f"The object is a stack of unit cubes on a {SIDE} x {SIDE} base. Which option shows its "
                    f"outline seen {VIEW_WORDS[side]}? Each option is a {SIDE} x {SIDE} picture, seen "
                    "straight on, without perspective."
                ),
                stimulus={"cubes": cubes, "side": side},
                correct=answer,
                distractors=distractors,
                params={"heights": heights.tolist(), "distractors": made},
            )


def _draw_cubes(stimulus: Any, size: int) -> Any:
    from embodia.agents.methods.spatial_dise.render import voxels_image

    return voxels_image(stimulus["cubes"], size, marker="front")


def _draw_view(option: Any, stimulus: Any, size: int) -> Any:
    from embodia.agents.methods.spatial_dise.render import cells_image

    return cells_image(option, size, SIDE, SIDE)


register(
    Kind(
        name="projection",
        quadrant="extrinsic-static",
        generate=_projection,
        describe_stimulus=lambda s: (
            f"Object ({LAYERS_NOTE}):\n" + layers_text(s["cubes"], (SIDE, SIDE, SIDE))
        ),
        describe_option=lambda o, s: grid_text(o, SIDE, SIDE),
        draw_stimulus=_draw_cubes,
        draw_option=_draw_view,
        summary="which silhouette the cube stack shows from a given side (views / projection)",
    )
)


# ---------------------------------------------------------------------------------------------- perspective
NAMES = ("lamp", "tree", "chair", "ball", "cup", "box", "vase", "book")
SECTORS = ("in front of you", "to your left", "behind you", "to your right")
MAP = 9
MARGIN = 12.0
"""Degrees an asked-about object keeps from the 45-degree sector boundaries."""


def bearing(at: Any, facing: Any, target: Any) -> float:
    """Angle of ``target`` seen from ``at`` while facing ``facing``, in degrees: 0 ahead, +90 left."""
    vx, vy = facing[0] - at[0], facing[1] - at[1]
    wx, wy = target[0] - at[0], target[1] - at[1]
    return math.degrees(math.atan2(vx * wy - vy * wx, vx * wx + vy * wy))


def sector(angle: float) -> str:
    return SECTORS[int(((angle + 45.0) % 360.0) // 90.0)]


def _clear(angle: float) -> bool:
    return abs(((angle + 45.0) % 90.0) - 45.0) <= 45.0 - MARGIN


def _perspective_taking(rng: np.random.Generator) -> Draft:
    ask_direction = rng.random() < 0.5  # decided once: the object form is rejected more often
    while True:
        names = [NAMES[int(i)] for i in rng.permutation(len(NAMES))[:7]]
        cells = [(int(i) % MAP, int(i) // MAP) for i in rng.permutation(MAP * MAP)]
        objects: dict[str, tuple[int, int]] = {}
        for cell in cells:
            if all(math.dist(cell, p) >= 2 for p in objects.values()):
                objects[names[len(objects)]] = cell
                if len(objects) == len(names):
                    break
        at, facing, *others = names
        if math.dist(objects[at], objects[facing]) < 3:
            continue
        angles = {n: bearing(objects[at], objects[facing], objects[n]) for n in others}
        clear = [n for n in others if _clear(angles[n])]
        if ask_direction:
            if not clear:
                continue
            target = clear[int(rng.integers(len(clear)))]
            answer = sector(angles[target])
            distractors = [s for s in SECTORS if s != answer]
            stimulus = {"objects": objects, "at": at, "facing": facing, "target": target}
            question = f"Where is the {target} from your point of view?"
            params = {"form": "direction", "bearing_degrees": angles[target], "distractors": distractors}
        else:
            relation = SECTORS[1 + int(rng.integers(3))]
            inside = [n for n in clear if sector(angles[n]) == relation]
            outside = [n for n in clear if sector(angles[n]) != relation]
            if not inside or len(outside) < 3:
                continue
            answer = inside[int(rng.integers(len(inside)))]
            # the near miss first: an object in the mirrored direction (left <-> right, behind -> in front)
            mirrored = {"to your left": "to your right", "to your right": "to your left"}.get(
                relation, SECTORS[0]
            )
            shuffled = [outside[int(k)] for k in rng.permutation(len(outside))]
            distractors = sorted(shuffled, key=lambda n: sector(angles[n]) != mirrored)[:3]
            stimulus = {"objects": objects, "at": at, "facing": facing, "relation": relation}
            question = f"Which object is {relation}?"
            params = {
                "form": "object",
                "bearings_degrees": {n: angles[n] for n in [answer, *distractors]},
                "distractors": [sector(angles[n]) for n in distractors],
            }
        return Draft(
            prompt=(
                f"Objects stand on a flat floor, shown on a map. Imagine you stand at the {at} and face the "
                f"{facing}. {question} Around you there are four 90-degree directions: in front of you "
                "(within 45 degrees of straight ahead), to your left, behind you and to your right."
            ),
            stimulus=stimulus,
            correct=answer,
            distractors=distractors,
            params=params,
        )


def _describe_map(stimulus: Any) -> str:
    lines = [f"{name} at ({x}, {y})" for name, (x, y) in stimulus["objects"].items()]
    return (
        "Map (x grows to the east, y grows to the north, in steps; on the map north is up):\n"
        + "\n".join(lines)
        + f"\nYou stand at the {stimulus['at']} and face the {stimulus['facing']}."
    )


def _draw_map(stimulus: Any, size: int) -> Any:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import COLOURS, INK, blank, centred_text, grid

    image = blank(2 * size, size)
    draw = ImageDraw.Draw(image)
    cell = (size - 16) / MAP
    grid(draw, (8, 8), cell, MAP, MAP)

    def centre(x: int, y: int) -> tuple[float, float]:
        return 8 + (x + 0.5) * cell, 8 + (MAP - 1 - y + 0.5) * cell

    at, facing = (
        centre(*stimulus["objects"][stimulus["at"]]),
        centre(*stimulus["objects"][stimulus["facing"]]),
    )
    draw.line([at, facing], fill=(200, 30, 30), width=2)
    for i, (name, (x, y)) in enumerate(stimulus["objects"].items()):
        cx, cy = centre(x, y)
        colour = COLOURS[NAMES.index(name)]
        draw.ellipse(
            [cx - cell / 2.5, cy - cell / 2.5, cx + cell / 2.5, cy + cell / 2.5], fill=colour, outline=INK
        )
        draw.ellipse([size + 8, 10 + 15 * i, size + 18, 20 + 15 * i], fill=colour, outline=INK)
        mark = "  (you)" if name == stimulus["at"] else "  (facing)" if name == stimulus["facing"] else ""
        draw.text((size + 24, 9 + 15 * i), name + mark, fill=INK)
    centred_text(draw, (2 * size - 14, size - 24), "N", 13)
    draw.line([(2 * size - 14, size - 8), (2 * size - 14, size - 17)], fill=INK, width=2)
    return image


def _draw_answer(option: Any, stimulus: Any, size: int) -> Any:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import COLOURS, INK, text_image

    if option in SECTORS:
        return text_image(option.replace(" ", "\n", 1) if option != "behind you" else option, size, px=15)
    image = text_image("\n\n" + option, size, px=15)
    draw = ImageDraw.Draw(image)
    r = size / 6
    draw.ellipse(
        [size / 2 - r, size / 2 - 1.5 * r, size / 2 + r, size / 2 + 0.5 * r],
        fill=COLOURS[NAMES.index(option)],
        outline=INK,
    )
    return image


register(
    Kind(
        name="perspective_taking",
        quadrant="extrinsic-static",
        generate=_perspective_taking,
        describe_stimulus=_describe_map,
        describe_option=lambda o, s: str(o),
        draw_stimulus=_draw_map,
        draw_option=_draw_answer,
        summary="where an object is from an imagined standpoint and facing on a map",
    )
)
