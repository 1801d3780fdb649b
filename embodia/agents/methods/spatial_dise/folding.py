"""Intrinsic-dynamic kind ``fold_and_punch`` (paper folding): fold a square sheet, punch, unfold.

A sheet of ``N x N`` cells (``N = 6``) is folded once or twice along a middle line or a diagonal, a hole is
punched through every layer at one cell, and the sheet is unfolded: which pattern of holes results? The
answer is computed forward, by stacking layers: each fold moves the cells of its moving side onto their
mirror cells, and the punch goes through every original cell stacked at the punched one. Distractors are
the same punch unfolded with one fold forgotten or made along the wrong line, and the answer with one hole
shifted to a neighbouring cell, and such near misses with a hole shifted: a pool from which
:func:`~embodia.agents.methods.spatial_dise.core.balanced_distractors` picks three, so that the key is not
the option "in the middle".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from embodia.agents.methods.spatial_dise.core import Draft, Kind, grid_text, grow_pool, register

N = 6

#: line -> reflection of a cell (row, col) across it
REFLECT: dict[str, Callable[[int, int], tuple[int, int]]] = {
    "vertical": lambda r, c: (r, N - 1 - c),
    "horizontal": lambda r, c: (N - 1 - r, c),
    "diagonal": lambda r, c: (c, r),
    "anti-diagonal": lambda r, c: (N - 1 - c, N - 1 - r),
}
#: moving side -> (its line, which cells move)
SIDES: dict[str, tuple[str, Callable[[int, int], bool]]] = {
    "left": ("vertical", lambda r, c: c < N // 2),
    "right": ("vertical", lambda r, c: c >= N // 2),
    "top": ("horizontal", lambda r, c: r < N // 2),
    "bottom": ("horizontal", lambda r, c: r >= N // 2),
    "lower-left": ("diagonal", lambda r, c: r > c),
    "upper-right": ("diagonal", lambda r, c: r < c),
    "upper-left": ("anti-diagonal", lambda r, c: r + c < N - 1),
    "lower-right": ("anti-diagonal", lambda r, c: r + c > N - 1),
}
WORDS = {
    "left": "fold the left half over onto the right half (along the vertical middle line)",
    "right": "fold the right half over onto the left half (along the vertical middle line)",
    "top": "fold the top half down onto the bottom half (along the horizontal middle line)",
    "bottom": "fold the bottom half up onto the top half (along the horizontal middle line)",
    "lower-left": "fold the lower-left triangle over onto the upper-right triangle (along the diagonal from "
    "the top-left corner to the bottom-right corner)",
    "upper-right": "fold the upper-right triangle over onto the lower-left triangle (along the diagonal from "
    "the top-left corner to the bottom-right corner)",
    "upper-left": "fold the upper-left triangle over onto the lower-right triangle (along the diagonal from "
    "the top-right corner to the bottom-left corner)",
    "lower-right": "fold the lower-right triangle over onto the upper-left triangle (along the diagonal from "
    "the top-right corner to the bottom-left corner)",
}
#: first fold's line -> the lines a second fold may take (the folded sheet must be symmetric about them)
SECOND = {
    "vertical": ("horizontal",),
    "horizontal": ("vertical",),
    "diagonal": ("anti-diagonal",),
    "anti-diagonal": ("diagonal",),
}


def on_line(cell: tuple[int, int], line: str) -> bool:
    """True if the line runs through the cell (diagonals cut their cells in half)."""
    r, c = cell
    return (line == "diagonal" and r == c) or (line == "anti-diagonal" and r + c == N - 1)


def fold_layers(sides: list[str]) -> dict[tuple[int, int], set[tuple[int, int]]]:
    """After the folds: each cell still showing -> the original cells stacked on it."""
    layers = {(r, c): {(r, c)} for r in range(N) for c in range(N)}
    for side in sides:
        line, moves = SIDES[side]
        for cell in [cell for cell in layers if moves(*cell)]:
            layers.setdefault(REFLECT[line](*cell), set()).update(layers.pop(cell))
    return layers


def unfold(punch: tuple[int, int], sides: list[str]) -> list[tuple[int, int]]:
    """Holes after unfolding (by reflecting back, last fold first): used for distractors."""
    holes = {tuple(punch)}
    for side in reversed(sides):
        line = SIDES[side][0]
        holes |= {REFLECT[line](*h) for h in holes}
    return sorted(holes)


def _sides_for(line: str, rng: np.random.Generator) -> str:
    options = [s for s, (ln, _) in SIDES.items() if ln == line]
    return options[int(rng.integers(len(options)))]


def _fold_and_punch(rng: np.random.Generator) -> Draft:
    while True:
        first = list(SIDES)[int(rng.integers(len(SIDES)))]
        sides = [first]
        if rng.random() < 0.6:
            line = SECOND[SIDES[first][0]][0]
            sides.append(_sides_for(line, rng))
        lines = [SIDES[s][0] for s in sides]
        layers = fold_layers(sides)
        spots = sorted(c for c in layers if not any(on_line(c, ln) for ln in lines))
        punch = spots[int(rng.integers(len(spots)))]
        answer = sorted(layers[punch])
        candidates: list[tuple[str, list[tuple[int, int]]]] = []
        for i, side in enumerate(sides):
            candidates.append(("a fold forgotten", unfold(punch, sides[:i] + sides[i + 1 :])))
            for other in REFLECT:
                if other != SIDES[side][0]:
                    wrong = sides[:i] + [_sides_for(other, rng)] + sides[i + 1 :]
                    candidates.append(("a fold along the wrong line", unfold(punch, wrong)))

        def perturb(
            rng: np.random.Generator, base: Any, answer: Any = answer, first: Any = candidates
        ) -> Any:
            if base == answer and rng.random() < 0.5:  # a fold forgotten or along the wrong line
                how, holes = first[int(rng.integers(len(first)))]
                return holes, how
            hole = base[int(rng.integers(len(base)))]
            dr, dc = [(0, 1), (1, 0), (0, -1), (-1, 0)][int(rng.integers(4))]
            shifted = (hole[0] + dr, hole[1] + dc)
            if not (0 <= shifted[0] < N and 0 <= shifted[1] < N) or shifted in base:
                return None
            return sorted((set(base) - {hole}) | {shifted}), "one hole shifted"

        distractors, made = grow_pool(rng, answer, perturb, lambda holes: len(holes) > 0)
        if len(distractors) < 3:
            continue
        return Draft(
            prompt=(
                f"A square sheet of paper is divided into {N} x {N} cells (rows 1-{N} from the top, columns "
                f"1-{N} from the left). It is folded as described, then a hole is punched through all layers "
                "at the marked cell, and the sheet is unfolded again. Which option shows the holes in the "
                "unfolded sheet?"
            ),
            stimulus={"n": N, "folds": sides, "punch": punch},
            correct=answer,
            distractors=distractors,
            params={"lines": lines, "distractors": made},
        )


def _describe(stimulus: Any) -> str:
    steps = [f"Fold {i + 1}: {WORDS[side]}." for i, side in enumerate(stimulus["folds"])]
    r, c = stimulus["punch"]
    return "\n".join(
        steps
        + [f"Punch: one hole through all layers at row {r + 1}, column {c + 1}."]
        + ["Each option is the unfolded sheet: '#' = hole, '.' = no hole."]
    )


def _draw_stimulus(stimulus: Any, size: int) -> Any:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import INK, PAPER, SHADE, blank, centred_text, grid

    image = blank(2 * size, size)
    draw = ImageDraw.Draw(image)
    cell = (size - 16) / N
    x0, y0 = 8.0, 8.0
    layers = fold_layers(stimulus["folds"])
    grid(
        draw,
        (x0, y0),
        cell,
        N,
        N,
        [c for c in np.ndindex(N, N) if c not in layers],
        fill=SHADE,
        background=PAPER,
    )
    for step, side in enumerate(stimulus["folds"], start=1):
        line = SIDES[side][0]
        a, b = {
            "vertical": ((0, N / 2), (N, N / 2)),
            "horizontal": ((N / 2, 0), (N / 2, N)),
            "diagonal": ((0, 0), (N, N)),
            "anti-diagonal": ((0, N), (N, 0)),
        }[line]
        for t in np.linspace(0, 1, 13)[::2]:  # dashes
            u = min(1.0, t + 1 / 12)
            p = (x0 + (a[1] + (b[1] - a[1]) * t) * cell, y0 + (a[0] + (b[0] - a[0]) * t) * cell)
            q = (x0 + (a[1] + (b[1] - a[1]) * u) * cell, y0 + (a[0] + (b[0] - a[0]) * u) * cell)
            draw.line([p, q], fill=(200, 30, 30), width=2)
        moving = [c for c in np.ndindex(N, N) if SIDES[side][1](*c) and not on_line(c, line)]
        fr, fc = np.mean(moving, axis=0)
        tr, tc = np.mean([REFLECT[line](*c) for c in moving], axis=0)
        start = (x0 + (fc + 0.5) * cell, y0 + (fr + 0.5) * cell)
        end = (x0 + (0.35 * fc + 0.65 * tc + 0.5) * cell, y0 + (0.35 * fr + 0.65 * tr + 0.5) * cell)
        draw.line([start, end], fill=(200, 30, 30), width=2)
        draw.ellipse([end[0] - 3, end[1] - 3, end[0] + 3, end[1] + 3], fill=(200, 30, 30))
        centred_text(draw, (start[0], start[1] - 8), str(step), 13, fill=(200, 30, 30))
    r, c = stimulus["punch"]
    cx, cy = x0 + (c + 0.5) * cell, y0 + (r + 0.5) * cell
    draw.ellipse([cx - cell / 4, cy - cell / 4, cx + cell / 4, cy + cell / 4], fill=INK)
    lines = [f"{i + 1}: fold {side}" for i, side in enumerate(stimulus["folds"])]
    lines += ["grey: folded away", "dot: punch"]
    for i, text in enumerate(lines):
        draw.text((size + 8, 14 + 18 * i), text, fill=INK)
    return image


def _draw_option(option: Any, stimulus: Any, size: int) -> Any:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import INK, PAPER, blank, grid

    image = blank(size)
    draw = ImageDraw.Draw(image)
    n = stimulus["n"]
    cell = (size - 12) / n
    grid(draw, (6, 6), cell, n, n, background=PAPER)
    for r, c in option:
        cx, cy = 6 + (c + 0.5) * cell, 6 + (r + 0.5) * cell
        draw.ellipse([cx - cell / 4, cy - cell / 4, cx + cell / 4, cy + cell / 4], fill=INK)
    return image


register(
    Kind(
        name="fold_and_punch",
        quadrant="intrinsic-dynamic",
        generate=_fold_and_punch,
        describe_stimulus=_describe,
        describe_option=lambda o, s: grid_text(o, s["n"], s["n"]),
        draw_stimulus=_draw_stimulus,
        draw_option=_draw_option,
        summary="which hole pattern a folded, punched and unfolded sheet shows (paper folding)",
    )
)
