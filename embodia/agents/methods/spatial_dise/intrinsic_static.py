"""Intrinsic-static kinds: the shape of one object as it is, with nothing moved.

- ``shape_finding`` (disembedding): which small piece lies inside a large figure exactly as drawn;
  distractors are the piece with one cell moved, mirrored or turned (or two such changes), none of which fits.
- ``symmetry``: which figure has a line of mirror symmetry; distractors are the symmetric figure with one
  or two cells moved so that no mirror line is left.

Both offer a pool of near misses and near misses of near misses, from which
:func:`~embodia.agents.methods.spatial_dise.core.balanced_distractors` picks three so that the key is not
the option "in the middle".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.agents.methods.spatial_dise import shapes
from embodia.agents.methods.spatial_dise.core import Draft, Kind, grid_text, grow_pool, register

FIGURE_MAX = 6


def _cells_image(cells: Any, size: int, extent: int) -> Any:
    from embodia.agents.methods.spatial_dise.render import cells_image

    return cells_image(cells, size, extent, extent)


# ---------------------------------------------------------------------------------------------- shape finding
def _shape_finding(rng: np.random.Generator) -> Draft:
    while True:
        figure = shapes.grow(rng, int(rng.integers(11, 15)))
        if max(max(r, c) for r, c in figure) >= FIGURE_MAX:
            continue
        piece = shapes.norm(shapes.grow(rng, int(rng.integers(4, 6)), inside=set(figure)))

        def perturb(rng: np.random.Generator, base: shapes.Shape) -> tuple[Any, str] | None:
            how = ["one cell moved", "one cell moved", "mirrored", "turned"][int(rng.integers(4))]
            if how == "one cell moved":
                return shapes.move_one_cell(rng, base), how
            if how == "mirrored":
                return shapes.mirror(base), how
            return shapes.rotate(base, int(rng.integers(1, 4))), how

        distractors, made = grow_pool(
            rng, piece, perturb, lambda c, figure=figure: not shapes.fits_at(c, figure)
        )
        if len(distractors) >= 3:
            break
    rows = 1 + max(r for r, _ in figure)
    cols = 1 + max(c for _, c in figure)
    return Draft(
        prompt=(
            "The large figure is made of square cells. Which of the four small pieces can be found inside it "
            "exactly as drawn: in the same orientation (not turned, not flipped), only shifted? Every cell of "
            "the piece must lie on a cell of the figure."
        ),
        stimulus={"figure": figure, "rows": rows, "cols": cols},
        correct=piece,
        distractors=distractors,
        params={"piece": piece, "found_at": shapes.fits_at(piece, figure), "distractors": made},
    )


register(
    Kind(
        name="shape_finding",
        quadrant="intrinsic-static",
        generate=_shape_finding,
        describe_stimulus=lambda s: (
            "Figure ('#' = cell, '.' = empty):\n" + grid_text(s["figure"], s["rows"], s["cols"])
        ),
        describe_option=lambda o, s: grid_text(o),
        draw_stimulus=lambda s, size: _cells_image(s["figure"], size, FIGURE_MAX),
        draw_option=lambda o, s, size: _cells_image(o, size, FIGURE_MAX),
        summary="which small piece lies inside the large figure as drawn (disembedding)",
    )
)


# ---------------------------------------------------------------------------------------------- symmetry
REFLECTIONS = {
    "vertical": lambda r, c: (r, -c),
    "horizontal": lambda r, c: (-r, c),
    "diagonal": lambda r, c: (c, r),
    "anti-diagonal": lambda r, c: (-c, -r),
}


def mirror_lines(cells: Any) -> list[str]:
    """The mirror lines (directions) of a shape: the reflections that map it onto itself."""
    shape = shapes.norm(cells)
    return [name for name, f in REFLECTIONS.items() if shapes.norm(f(r, c) for r, c in shape) == shape]


def _symmetric(rng: np.random.Generator) -> tuple[shapes.Shape, str]:
    while True:
        half = shapes.grow(rng, int(rng.integers(3, 6)))
        axis = ["vertical", "vertical-between", "diagonal"][int(rng.integers(3))]
        if axis == "diagonal":
            r0, c0 = half[int(rng.integers(len(half)))]
            half = tuple((r - r0, c - c0) for r, c in half)
            whole = set(half) | {(c, r) for r, c in half}
        else:
            a = max(c for _, c in half)
            b = 2 * a + (1 if axis == "vertical-between" else 0)
            whole = set(half) | {(r, b - c) for r, c in half}
        shape = shapes.rotate(whole, int(rng.integers(4)))
        if 5 <= len(shape) <= 10 and max(max(r, c) for r, c in shape) < FIGURE_MAX and mirror_lines(shape):
            return shape, axis


def _symmetry(rng: np.random.Generator) -> Draft:
    while True:
        shape, axis = _symmetric(rng)
        distractors, made = grow_pool(
            rng,
            shape,
            lambda rng, base: (shapes.move_one_cell(rng, base), "one cell moved"),
            lambda c: not mirror_lines(c) and max(max(r, col) for r, col in c) < FIGURE_MAX,
        )
        if len(distractors) >= 3:
            return Draft(
                prompt=(
                    "Which of the four figures is mirror-symmetric: it has a straight line (vertical, "
                    "horizontal or diagonal) across which its two halves are exact mirror images?"
                ),
                stimulus={"cells": len(shape)},
                correct=shape,
                distractors=distractors,
                params={"mirror_lines": mirror_lines(shape), "built_with": axis, "distractors": made},
            )


def _symmetry_stimulus(stimulus: Any, size: int) -> Any:
    from embodia.agents.methods.spatial_dise.render import text_image

    return text_image("Which figure\nhas a mirror line?", size, px=14)


register(
    Kind(
        name="symmetry",
        quadrant="intrinsic-static",
        generate=_symmetry,
        describe_stimulus=lambda s: (
            f"Each option is a figure of {s['cells']} square cells ('#' = cell, '.' = empty)."
        ),
        describe_option=lambda o, s: grid_text(o),
        draw_stimulus=_symmetry_stimulus,
        draw_option=lambda o, s, size: _cells_image(o, size, FIGURE_MAX),
        summary="which figure has a line of mirror symmetry",
    )
)
