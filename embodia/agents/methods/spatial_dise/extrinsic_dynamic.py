"""Extrinsic-dynamic kinds: an object moving through the world, followed step by step.

- ``dynamic_sequence``: a robot on a grid follows forward / turn commands: where does it end and which
  way does it face? Distractors replay the commands with one turn the wrong way, one move a step off, or
  one turn forgotten, or with two such slips: a pool from which
  :func:`~embodia.agents.methods.spatial_dise.core.balanced_distractors` picks three, so that the key is not
  the option "in the middle".
- ``cube_rolling``: a die is rolled over its edges north, east, south or west: which number ends on top?
  Distractors replay the rolls with one direction reversed or one roll left out (the options are two
  pairs of opposite faces, so that opposite faces adding up to 7 gives nothing away).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.agents.methods.spatial_dise.core import Draft, Kind, grow_pool, register

GRID = 6
HEADINGS = ("north", "east", "south", "west")
STEP = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}


def run_commands(start: Any, facing: str, commands: list[str]) -> dict[str, Any] | None:
    """Where the robot ends (``{"x", "y", "facing"}``); None if it would leave the grid."""
    x, y = start
    heading = HEADINGS.index(facing)
    for command in commands:
        if command == "turn left":
            heading = (heading - 1) % 4
        elif command == "turn right":
            heading = (heading + 1) % 4
        else:
            dx, dy = STEP[HEADINGS[heading]]
            for _ in range(int(command.split()[1])):
                x, y = x + dx, y + dy
                if not (0 <= x < GRID and 0 <= y < GRID):
                    return None
    return {"x": x, "y": y, "facing": HEADINGS[heading]}


def slips(commands: list[str]) -> list[tuple[str, list[str]]]:
    """Every command list one slip away: a turn the wrong way, a turn forgotten, a move one step off."""
    out: list[tuple[str, list[str]]] = []
    for i, command in enumerate(commands):
        if command.startswith("turn"):
            flipped = "turn right" if command == "turn left" else "turn left"
            out.append(("a turn the wrong way", [*commands[:i], flipped, *commands[i + 1 :]]))
            out.append(("a turn forgotten", commands[:i] + commands[i + 1 :]))
        else:
            n = int(command.split()[1])
            for m in (n - 1, n + 1):
                if m >= 1:
                    out.append(("a move one step off", [*commands[:i], f"forward {m}", *commands[i + 1 :]]))
    return out


def _dynamic_sequence(rng: np.random.Generator) -> Draft:
    while True:
        start = (int(rng.integers(GRID)), int(rng.integers(GRID)))
        facing = HEADINGS[int(rng.integers(4))]
        commands: list[str] = []
        for i in range(int(rng.integers(3, 5))):
            if i:
                commands.append(["turn left", "turn right"][int(rng.integers(2))])
            commands.append(f"forward {int(rng.integers(1, 4))}")
        if rng.random() < 0.5:
            commands.append(["turn left", "turn right"][int(rng.integers(2))])
        answer = run_commands(start, facing, commands)
        if answer is None:
            continue

        def perturb(rng: np.random.Generator, base: Any, start: Any = start, facing: str = facing) -> Any:
            variants = slips(base["commands"])
            how, changed = variants[int(rng.integers(len(variants)))]
            end = run_commands(start, facing, changed)
            return (None, how) if end is None else ({**end, "commands": changed}, how)

        pool, made = grow_pool(
            rng,
            {**answer, "commands": commands},
            perturb,
            lambda end, answer=answer: {k: end[k] for k in answer} != answer,
        )
        distractors: list[dict[str, Any]] = []
        kept: list[str] = []
        for end, how in zip(pool, made):  # different slips may end in the same place
            place = {k: end[k] for k in answer}
            if place not in distractors:
                distractors.append(place)
                kept.append(how)
        made = kept
        if len(distractors) >= 3:
            return Draft(
                prompt=(
                    f"A robot stands on a grid of {GRID} x {GRID} cells (x from 0 to {GRID - 1} going east, "
                    f"y from 0 to {GRID - 1} going north). It carries out the commands in order: 'forward n' "
                    "moves it n cells in the direction it faces; 'turn left' and 'turn right' turn it 90 "
                    "degrees on the spot. Where does it end, and which way does it face?"
                ),
                stimulus={"start": start, "facing": facing, "commands": commands},
                correct=answer,
                distractors=distractors,
                params={"distractors": made},
            )


def _describe_robot(stimulus: Any) -> str:
    x, y = stimulus["start"]
    return (
        f"Start: cell ({x}, {y}), facing {stimulus['facing']}.\nCommands: "
        + ", ".join(stimulus["commands"])
        + "."
    )


def _robot(draw: Any, origin: tuple[float, float], cell: float, x: int, y: int, facing: str) -> None:
    from embodia.agents.methods.spatial_dise.render import FILL, INK

    cx, cy = origin[0] + (x + 0.5) * cell, origin[1] + (GRID - 1 - y + 0.5) * cell
    dx, dy = STEP[facing]
    tip = (cx + dx * cell * 0.42, cy - dy * cell * 0.42)
    left = (cx - dy * cell * 0.3 - dx * cell * 0.3, cy - dx * cell * 0.3 + dy * cell * 0.3)
    right = (cx + dy * cell * 0.3 - dx * cell * 0.3, cy + dx * cell * 0.3 + dy * cell * 0.3)
    draw.polygon([tip, left, right], fill=FILL, outline=INK)


def _grid_with_robot(x: int, y: int, facing: str, size: int) -> tuple[Any, Any]:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import blank, grid

    image = blank(size)
    draw = ImageDraw.Draw(image)
    cell = (size - 16) / GRID
    grid(draw, (8, 8), cell, GRID, GRID)
    _robot(draw, (8, 8), cell, x, y, facing)
    return image, draw


def _draw_robot_stimulus(stimulus: Any, size: int) -> Any:
    from embodia.agents.methods.spatial_dise.render import INK, blank

    cells, _ = _grid_with_robot(*stimulus["start"], stimulus["facing"], size)
    image = blank(2 * size, size)
    image.paste(cells, (0, 0))
    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    draw.text((size + 6, 6), "north is up", fill=INK)
    for i, command in enumerate(stimulus["commands"]):
        draw.text((size + 6, 22 + 13 * i), f"{i + 1}. {command}", fill=INK)
    return image


register(
    Kind(
        name="dynamic_sequence",
        quadrant="extrinsic-dynamic",
        generate=_dynamic_sequence,
        describe_stimulus=_describe_robot,
        describe_option=lambda o, s: f"cell ({o['x']}, {o['y']}), facing {o['facing']}",
        draw_stimulus=_draw_robot_stimulus,
        draw_option=lambda o, s, size: _grid_with_robot(o["x"], o["y"], o["facing"], size)[0],
        summary="where a robot ends, and facing which way, after a sequence of moves and turns",
    )
)


# ---------------------------------------------------------------------------------------------- cube rolling
ROLLS = {  # direction -> new face at each position, named by the old face that goes there
    "north": {"top": "south", "north": "top", "bottom": "north", "south": "bottom"},
    "south": {"top": "north", "south": "top", "bottom": "south", "north": "bottom"},
    "east": {"top": "west", "east": "top", "bottom": "east", "west": "bottom"},
    "west": {"top": "east", "west": "top", "bottom": "west", "east": "bottom"},
}
REVERSE = {"north": "south", "south": "north", "east": "west", "west": "east"}


def roll(faces: dict[str, int], directions: list[str]) -> dict[str, int]:
    """The die's faces (``top``, ``bottom``, ``north``, ``south``, ``east``, ``west``) after the rolls."""
    faces = dict(faces)
    for direction in directions:
        faces |= {place: faces[source] for place, source in ROLLS[direction].items()}
    return faces


def _cube_rolling(rng: np.random.Generator) -> Draft:
    top = int(rng.integers(1, 7))
    south = [f for f in range(1, 7) if f not in (top, 7 - top)][int(rng.integers(4))]
    east = [f for f in range(1, 7) if f not in (top, 7 - top, south, 7 - south)][int(rng.integers(2))]
    faces = {
        "top": top,
        "bottom": 7 - top,
        "south": south,
        "north": 7 - south,
        "east": east,
        "west": 7 - east,
    }
    directions = [HEADINGS[int(rng.integers(4))] for _ in range(int(rng.integers(3, 7)))]
    answer = roll(faces, directions)["top"]
    near: dict[int, str] = {}  # face -> how a slip in the rolls puts it on top
    for i in rng.permutation(len(directions)):
        i = int(i)
        reversed_one = [*directions[:i], REVERSE[directions[i]], *directions[i + 1 :]]
        near.setdefault(roll(faces, reversed_one)["top"], "a roll the wrong way")
        near.setdefault(roll(faces, directions[:i] + directions[i + 1 :])["top"], "a roll left out")
    # Options are two pairs of opposite faces, {a, 7 - a, x, 7 - x}: every option has its opposite among
    # the others, so "the answer is one of the pair that adds up to 7" is no shortcut. 7 - a is what the
    # last roll made the wrong way gives (the bottom face); x is another slip when there is one.
    slips = [f for f in near if f not in (answer, 7 - answer)]
    x = slips[0] if slips else [f for f in range(1, 7) if f not in (answer, 7 - answer)][int(rng.integers(4))]
    distractors = [7 - answer, x, 7 - x]
    made = [
        near.get(7 - answer, "the bottom face"),
        near.get(x, "another face"),
        near.get(7 - x, "another face"),
    ]
    return Draft(
        prompt=(
            "A die lies on a table; opposite faces of the die add up to 7. It is rolled over one bottom edge at "
            "a time in the given directions (rolling north tips it over its north edge: the top face then faces "
            "north and the south face comes up on top). Which number is on top after the last roll?"
        ),
        stimulus={"faces": {"top": top, "south": south, "east": east}, "rolls": directions},
        correct=answer,
        distractors=distractors,
        params={"final_faces": roll(faces, directions), "distractors": made},
    )


def _describe_die(stimulus: Any) -> str:
    f = stimulus["faces"]
    return (
        f"Start: {f['top']} on top, {f['south']} facing south, {f['east']} facing east.\n"
        f"Rolls: {', '.join(stimulus['rolls'])}."
    )


def _pips(value: int, size: int) -> Any:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import INK, blank

    image = blank(size)
    draw = ImageDraw.Draw(image)
    m = size * 0.15
    draw.rounded_rectangle(
        [m, m, size - m, size - m], radius=size * 0.08, fill=(250, 250, 250), outline=INK, width=2
    )
    spots = {
        1: [(1, 1)],
        2: [(0, 0), (2, 2)],
        3: [(0, 0), (1, 1), (2, 2)],
        4: [(0, 0), (0, 2), (2, 0), (2, 2)],
        5: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)],
        6: [(0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)],
    }[int(value)]
    step, r = (size - 2 * m) / 4, size * 0.06
    for row, col in spots:
        cx, cy = m + step * (col + 1), m + step * (row + 1)
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=INK)
    return image


def _draw_die(stimulus: Any, size: int) -> Any:
    from PIL import ImageDraw

    from embodia.agents.methods.spatial_dise.render import INK, blank, centred_text, voxels_image

    image = blank(2 * size, size)
    image.paste(voxels_image([(0, 0, 0)], size), (0, 0))
    draw = ImageDraw.Draw(image)
    unit = (size - 20) / 1.7  # where voxels_image puts the faces of one cube
    f = stimulus["faces"]
    centred_text(draw, (10 + 0.5 * unit, size - 22 - 0.5 * unit), str(f["south"]), 18, fill=(255, 255, 255))
    centred_text(draw, (10 + 0.75 * unit, size - 22 - 1.25 * unit), str(f["top"]), 18)
    centred_text(draw, (10 + 1.25 * unit, size - 22 - 0.75 * unit), str(f["east"]), 18, fill=(255, 255, 255))
    draw.text((size + 6, 6), "front: south, right: east", fill=INK)
    for i, direction in enumerate(stimulus["rolls"]):
        draw.text((size + 6, 22 + 13 * i), f"{i + 1}. roll {direction}", fill=INK)
    return image


register(
    Kind(
        name="cube_rolling",
        quadrant="extrinsic-dynamic",
        generate=_cube_rolling,
        describe_stimulus=_describe_die,
        describe_option=lambda o, s: str(o),
        draw_stimulus=_draw_die,
        draw_option=lambda o, s, size: _pips(o, size),
        summary="which number is on top of a die after a sequence of rolls",
    )
)
