"""Intrinsic-dynamic kinds: one object transformed in the mind (turned, fitted into place).

- ``rotation_2d``: which option is the figure turned in the plane; distractors are its mirror image and
  the turned figure with one cell moved.
- ``rotation_3d``: which option is the cube object turned in space; distractors are mirror images (in two
  orientations) and the turned object with one cube moved.
- ``assembly``: which piece fills the gap in a board when turned (not flipped); distractors are the
  mirrored piece, the piece with one cell moved, and the piece with one cell too many or too few.

Paper folding (``fold_and_punch``), the fourth kind of this quadrant, is in :mod:`.folding`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.agents.methods.spatial_dise import shapes
from embodia.agents.methods.spatial_dise.core import (
    LAYERS_NOTE,
    Draft,
    Kind,
    grid_text,
    grow_pool,
    layers_text,
    register,
)

EXTENT = 6
BOARD = 5


def _cells_image(cells: Any, size: int, extent: int = EXTENT) -> Any:
    from embodia.agents.methods.spatial_dise.render import cells_image

    return cells_image(cells, size, extent, extent)


def _fits(shape: shapes.Shape, extent: int = EXTENT) -> bool:
    return max(max(r, c) for r, c in shape) < extent


# ---------------------------------------------------------------------------------------------- 2D rotation
def _rotation_2d(rng: np.random.Generator) -> Draft:
    while True:
        shape = shapes.grow(rng, int(rng.integers(5, 8)))
        if not _fits(shape, EXTENT - 1) or not shapes.is_chiral(shape):
            continue
        turns = int(rng.integers(1, 4))
        answer = shapes.rotate(shape, turns)

        def perturb(rng: np.random.Generator, base: shapes.Shape) -> tuple[Any, str]:
            if rng.random() < 0.3:
                return shapes.mirror(base), "mirror image"
            return shapes.move_one_cell(rng, base), "one cell moved"

        distractors, made = grow_pool(
            rng,
            answer,
            perturb,
            lambda c, shape=shape: _fits(c) and not shapes.same_up_to_rotation(shape, c),
        )
        if len(distractors) >= 3:
            return Draft(
                prompt=(
                    "Which option shows the figure turned in the plane (by 90, 180 or 270 degrees), "
                    "without flipping it over?"
                ),
                stimulus={"shape": shape},
                correct=answer,
                distractors=distractors,
                params={"clockwise_degrees": 90 * turns, "distractors": made},
            )


register(
    Kind(
        name="rotation_2d",
        quadrant="intrinsic-dynamic",
        generate=_rotation_2d,
        describe_stimulus=lambda s: "Figure ('#' = cell, '.' = empty):\n" + grid_text(s["shape"]),
        describe_option=lambda o, s: grid_text(o),
        draw_stimulus=lambda s, size: _cells_image(s["shape"], size),
        draw_option=lambda o, s, size: _cells_image(o, size),
        summary="which option is the figure turned in the plane (mental rotation, 2D)",
    )
)


# ---------------------------------------------------------------------------------------------- 3D rotation
def _rotation_3d(rng: np.random.Generator) -> Draft:
    while True:
        shape = shapes.grow3(rng, int(rng.integers(5, 8)))
        if not shapes.is_chiral3(shape):
            continue
        turn = int(rng.integers(1, len(shapes.ROTATIONS3)))
        answer = shapes.rotate3(shape, shapes.ROTATIONS3[turn])
        if answer == shape:
            continue

        def perturb3(rng: np.random.Generator, base: Any) -> tuple[Any, str] | None:
            choice = rng.random()
            if choice < 0.2:
                return shapes.mirror3(base), "mirror image"
            if choice < 0.4:
                turn = shapes.ROTATIONS3[int(rng.integers(1, len(shapes.ROTATIONS3)))]
                return shapes.rotate3(shapes.mirror3(base), turn), "mirror image, turned"
            return shapes.move_one_cube(rng, base), "one cube moved"

        orientations = shapes.orientations3(shape)
        distractors, made = grow_pool(rng, answer, perturb3, lambda c, turned=orientations: c not in turned)
        if len(distractors) >= 3:
            return Draft(
                prompt=(
                    "The object is made of unit cubes glued face to face. Which option shows the same object "
                    "turned to another orientation in space (rotated, not mirrored)?"
                ),
                stimulus={"cubes": shape},
                correct=answer,
                distractors=distractors,
                params={"rotation": shapes.ROTATIONS3[turn].tolist(), "distractors": made},
            )


def _voxels_image(cubes: Any, size: int) -> Any:
    from embodia.agents.methods.spatial_dise.render import voxels_image

    return voxels_image(cubes, size)


register(
    Kind(
        name="rotation_3d",
        quadrant="intrinsic-dynamic",
        generate=_rotation_3d,
        describe_stimulus=lambda s: f"Object ({LAYERS_NOTE}):\n" + layers_text(s["cubes"]),
        describe_option=lambda o, s: layers_text(o),
        draw_stimulus=lambda s, size: _voxels_image(s["cubes"], size),
        draw_option=lambda o, s, size: _voxels_image(o, size),
        summary="which option is the cube object turned in space (mental rotation, 3D)",
    )
)


# ---------------------------------------------------------------------------------------------- assembly
def piece_fills(piece: Any, gap: Any) -> bool:
    """True if ``piece``, turned by some multiple of 90 degrees (not flipped), covers exactly ``gap``."""
    return shapes.norm(gap) in shapes.rotations(piece)


def _one_cell_more_or_less(rng: np.random.Generator, piece: shapes.Shape) -> shapes.Shape | None:
    cells = set(piece)
    if rng.random() < 0.5:
        spots = sorted({n for c in cells for n in shapes.neighbours(c)} - cells)
        return shapes.norm(cells | {spots[int(rng.integers(len(spots)))]})
    removable = [c for c in piece if shapes.connected(cells - {c})]
    return shapes.norm(cells - {removable[int(rng.integers(len(removable)))]}) if removable else None


def _assembly(rng: np.random.Generator) -> Draft:
    board = {(r, c) for r in range(BOARD) for c in range(BOARD)}
    while True:
        gap = shapes.grow(rng, int(rng.integers(4, 7)), inside=board)
        answer = shapes.rotate(gap, int(rng.integers(4)))

        def perturb(rng: np.random.Generator, base: shapes.Shape) -> tuple[Any, str] | None:
            choice = rng.random()
            if choice < 0.2:
                return shapes.rotate(shapes.mirror(base), int(rng.integers(4))), "mirror image"
            if choice < 0.6:
                return shapes.move_one_cell(rng, base), "one cell moved"
            return _one_cell_more_or_less(rng, base), "one cell more or less"

        distractors, made = grow_pool(
            rng, answer, perturb, lambda c, gap=gap: _fits(c, BOARD + 1) and not piece_fills(c, gap)
        )
        if len(distractors) >= 3:
            return Draft(
                prompt=(
                    f"A square board of {BOARD} x {BOARD} cells has a gap. Which piece fills the gap "
                    "exactly (every gap cell covered, nothing left over)? Pieces may be turned in the plane "
                    "but not flipped over."
                ),
                stimulus={"size": BOARD, "gap": gap},
                correct=answer,
                distractors=distractors,
                params={"distractors": made},
            )


def _board_cells(stimulus: Any) -> list[tuple[int, int]]:
    gap = {tuple(c) for c in stimulus["gap"]}
    n = stimulus["size"]
    return [(r, c) for r in range(n) for c in range(n) if (r, c) not in gap]


register(
    Kind(
        name="assembly",
        quadrant="intrinsic-dynamic",
        generate=_assembly,
        describe_stimulus=lambda s: (
            "Board ('#' = board, '.' = gap):\n" + grid_text(_board_cells(s), s["size"], s["size"])
        ),
        describe_option=lambda o, s: grid_text(o),
        draw_stimulus=lambda s, size: _cells_image(_board_cells(s), size, s["size"]),
        draw_option=lambda o, s, size: _cells_image(o, size, BOARD + 1),
        summary="which piece, turned, fills the gap in the board",
    )
)
