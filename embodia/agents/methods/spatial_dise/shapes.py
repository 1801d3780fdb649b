"""Cell and voxel geometry for the Spatial-DISE generators: polyominoes, polycubes and their symmetries.

A 2D shape is a set of ``(row, col)`` cells (rows grow downwards, as drawn); a 3D shape a set of
``(x, y, z)`` unit cubes (x to the right, y to the back, z up). :func:`norm` / :func:`norm3` translate a
shape so that its smallest coordinates are 0 and sort it: two shapes are the same figure up to translation
iff their normal forms are equal. Everything here is exact integer arithmetic.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np

Cell = tuple[int, int]
Shape = tuple[Cell, ...]
Voxel = tuple[int, int, int]
Shape3 = tuple[Voxel, ...]

STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))
STEPS3 = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))


# ---------------------------------------------------------------------------------------------- 2D
def norm(cells: Iterable[Cell]) -> Shape:
    """``cells`` translated so that the smallest row and column are 0, sorted."""
    cells = [(int(r), int(c)) for r, c in cells]
    r0 = min(r for r, _ in cells)
    c0 = min(c for _, c in cells)
    return tuple(sorted((r - r0, c - c0) for r, c in cells))


def rotate(cells: Iterable[Cell], quarter_turns: int = 1) -> Shape:
    """Rotated clockwise (as drawn) by ``quarter_turns`` * 90 degrees, normalised."""
    shape = norm(cells)
    for _ in range(quarter_turns % 4):
        shape = norm((c, -r) for r, c in shape)
    return shape


def mirror(cells: Iterable[Cell]) -> Shape:
    """Mirror image across a vertical line (left and right swapped), normalised."""
    return norm((r, -c) for r, c in cells)


def rotations(cells: Iterable[Cell]) -> list[Shape]:
    """The four rotations (0, 90, 180, 270 degrees clockwise)."""
    shape = norm(cells)
    return [rotate(shape, k) for k in range(4)]


def same_up_to_rotation(a: Iterable[Cell], b: Iterable[Cell]) -> bool:
    return norm(b) in rotations(a)


def is_chiral(cells: Iterable[Cell]) -> bool:
    """True if the mirror image cannot be reached by rotating (a flip is needed)."""
    shape = norm(cells)
    return not same_up_to_rotation(shape, mirror(shape))


def neighbours(cell: Cell) -> list[Cell]:
    return [(cell[0] + dr, cell[1] + dc) for dr, dc in STEPS]


def connected(cells: Iterable[Cell]) -> bool:
    """True if the cells form one edge-connected piece."""
    cells = set(cells)
    if not cells:
        return False
    seen, todo = set(), [next(iter(cells))]
    while todo:
        cell = todo.pop()
        if cell in seen:
            continue
        seen.add(cell)
        todo.extend(n for n in neighbours(cell) if n in cells and n not in seen)
    return seen == cells


def grow(
    rng: np.random.Generator, size: int, inside: set[Cell] | None = None, start: Cell | None = None
) -> Shape:
    """A random connected shape of ``size`` cells, grown one neighbour at a time (within ``inside``).

    Not normalised when ``inside`` is given (the cells keep their positions there).
    """
    if start is None:
        start = sorted(inside)[int(rng.integers(len(inside)))] if inside else (0, 0)
    cells = {start}
    while len(cells) < size:
        frontier = sorted({n for c in cells for n in neighbours(c)} - cells)
        if inside is not None:
            frontier = [n for n in frontier if n in inside]
        if not frontier:
            break
        cells.add(frontier[int(rng.integers(len(frontier)))])
    return tuple(sorted(cells)) if inside is not None else norm(cells)


def move_one_cell(rng: np.random.Generator, cells: Iterable[Cell], tries: int = 50) -> Shape | None:
    """The shape with one cell taken away and put back at another place along its edge (still connected,
    same size), normalised; None if no such move was found."""
    shape = tuple(cells)
    for _ in range(tries):
        removed = shape[int(rng.integers(len(shape)))]
        rest = set(shape) - {removed}
        if not connected(rest):
            continue
        spots = sorted({n for c in rest for n in neighbours(c)} - rest - {removed})
        if not spots:
            continue
        moved = norm(rest | {spots[int(rng.integers(len(spots)))]})
        if moved != norm(shape):
            return moved
    return None


def fits_at(piece: Iterable[Cell], figure: Iterable[Cell]) -> list[Cell]:
    """The offsets at which ``piece`` (normalised) lies entirely inside ``figure``, translation only."""
    piece, figure = norm(piece), set(figure)
    offsets = []
    for r, c in sorted(figure):
        dr, dc = r - piece[0][0], c - piece[0][1]
        if all((pr + dr, pc + dc) in figure for pr, pc in piece):
            offsets.append((dr, dc))
    return offsets


# ---------------------------------------------------------------------------------------------- 3D
def norm3(voxels: Iterable[Voxel]) -> Shape3:
    """``voxels`` translated so that the smallest x, y and z are 0, sorted."""
    voxels = [tuple(int(v) for v in voxel) for voxel in voxels]
    low = [min(v[i] for v in voxels) for i in range(3)]
    return tuple(sorted(tuple(v[i] - low[i] for i in range(3)) for v in voxels))


def _proper_rotations() -> list[np.ndarray]:
    """The 24 rotations of a cube: signed permutation matrices with determinant +1."""
    matrices = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3), dtype=int)
            for row, (col, sign) in enumerate(zip(perm, signs)):
                m[row, col] = sign
            if round(np.linalg.det(m)) == 1:
                matrices.append(m)
    return matrices


ROTATIONS3 = _proper_rotations()
"""The 24 proper rotations; ``ROTATIONS3[0]`` is the identity."""


def rotate3(voxels: Iterable[Voxel], matrix: np.ndarray) -> Shape3:
    return norm3(tuple(int(x) for x in matrix @ np.array(v)) for v in voxels)


def mirror3(voxels: Iterable[Voxel]) -> Shape3:
    """Mirror image across a plane (x negated), normalised."""
    return norm3((-x, y, z) for x, y, z in voxels)


def orientations3(voxels: Iterable[Voxel]) -> set[Shape3]:
    shape = norm3(voxels)
    return {rotate3(shape, m) for m in ROTATIONS3}


def is_chiral3(voxels: Iterable[Voxel]) -> bool:
    return mirror3(voxels) not in orientations3(voxels)


def neighbours3(voxel: Voxel) -> list[Voxel]:
    return [(voxel[0] + a, voxel[1] + b, voxel[2] + c) for a, b, c in STEPS3]


def connected3(voxels: Iterable[Voxel]) -> bool:
    voxels = set(voxels)
    seen, todo = set(), [next(iter(voxels))]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        todo.extend(n for n in neighbours3(v) if n in voxels and n not in seen)
    return seen == voxels


def grow3(rng: np.random.Generator, size: int, box: int = 3) -> Shape3:
    """A random face-connected polycube of ``size`` cubes inside a ``box``^3 cube, normalised."""
    cells = {(0, 0, 0)}
    while len(cells) < size:
        frontier = sorted(
            n for c in cells for n in neighbours3(c) if n not in cells and all(0 <= k < box for k in n)
        )
        cells.add(frontier[int(rng.integers(len(frontier)))])
    return norm3(cells)


def move_one_cube(rng: np.random.Generator, voxels: Iterable[Voxel], tries: int = 50) -> Shape3 | None:
    """Like :func:`move_one_cell` for cubes."""
    shape = tuple(voxels)
    for _ in range(tries):
        removed = shape[int(rng.integers(len(shape)))]
        rest = set(shape) - {removed}
        if not connected3(rest):
            continue
        spots = sorted({n for c in rest for n in neighbours3(c)} - rest - {removed})
        moved = norm3(rest | {spots[int(rng.integers(len(spots)))]})
        if moved != norm3(shape):
            return moved
    return None
