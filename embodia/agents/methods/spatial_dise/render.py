"""Drawing the Spatial-DISE stimuli and options with Pillow: cell grids, cube stacks, maps, compositions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from PIL import Image, ImageDraw, ImageFont

WHITE = (255, 255, 255)
INK = (25, 25, 25)
GRID = (205, 205, 205)
FILL = (66, 110, 196)
PAPER = (245, 238, 214)
SHADE = (190, 190, 190)
COLOURS = [
    (214, 69, 65),
    (52, 152, 219),
    (39, 174, 96),
    (243, 156, 18),
    (142, 68, 173),
    (140, 90, 50),
    (127, 140, 141),
    (211, 84, 0),
]


def font(px: int) -> Any:
    try:
        return ImageFont.load_default(size=px)
    except TypeError:  # Pillow without FreeType sizes
        return ImageFont.load_default()


def blank(width: int, height: int | None = None, colour: tuple[int, int, int] = WHITE) -> Image.Image:
    return Image.new("RGB", (width, height or width), colour)


def centred_text(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, px: int, fill=INK) -> None:
    draw.text(xy, text, fill=fill, font=font(px), anchor="mm")


def grid(
    draw: ImageDraw.ImageDraw,
    origin: tuple[float, float],
    cell: float,
    rows: int,
    cols: int,
    filled: Iterable[tuple[int, int]] = (),
    *,
    fill: tuple[int, int, int] = FILL,
    background: tuple[int, int, int] | None = None,
    lines: bool = True,
) -> None:
    """A rows x cols grid at ``origin`` (top-left) with ``filled`` cells ``(row, col)`` coloured."""
    x0, y0 = origin
    if background is not None:
        draw.rectangle([x0, y0, x0 + cols * cell, y0 + rows * cell], fill=background)
    for r, c in filled:
        draw.rectangle(
            [x0 + c * cell, y0 + r * cell, x0 + (c + 1) * cell, y0 + (r + 1) * cell], fill=fill, outline=INK
        )
    if lines:
        for r in range(rows + 1):
            draw.line(
                [x0, y0 + r * cell, x0 + cols * cell, y0 + r * cell], fill=GRID if 0 < r < rows else INK
            )
        for c in range(cols + 1):
            draw.line(
                [x0 + c * cell, y0, x0 + c * cell, y0 + rows * cell], fill=GRID if 0 < c < cols else INK
            )
        for r, c in filled:  # cell edges over the grid lines
            draw.rectangle(
                [x0 + c * cell, y0 + r * cell, x0 + (c + 1) * cell, y0 + (r + 1) * cell], outline=INK
            )


def cells_image(
    cells: Iterable[Sequence[int]],
    size: int,
    rows: int | None = None,
    cols: int | None = None,
    *,
    fill: tuple[int, int, int] = FILL,
    lines: bool = True,
) -> Image.Image:
    """``cells`` on a rows x cols grid (default: their bounding box, at least 3 x 3), centred in a square."""
    cells = [(int(r), int(c)) for r, c in cells]
    rows = rows or max(3, 1 + max((r for r, _ in cells), default=0))
    cols = cols or max(3, 1 + max((c for _, c in cells), default=0))
    image = blank(size)
    cell = (size - 12) / max(rows, cols)
    origin = ((size - cols * cell) / 2, (size - rows * cell) / 2)
    grid(ImageDraw.Draw(image), origin, cell, rows, cols, cells, fill=fill, lines=lines)
    return image


def _shade(colour: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    return tuple(max(0, min(255, int(c * factor))) for c in colour)


def voxels_image(voxels: Iterable[Sequence[int]], size: int, *, marker: str | None = None) -> Image.Image:
    """Unit cubes ``(x, y, z)`` (x right, y back, z up) seen from the front, a little from the right and
    above (a cabinet projection); ``marker`` is written in front of the object (e.g. "front")."""
    cubes = {tuple(int(v) for v in voxel) for voxel in voxels}
    extent = max(max(v) for v in cubes) + 1
    unit = (size - 20) / (extent * 1.5 + 0.2)
    depth = 0.5 * unit  # receding axis: +y goes up and to the right

    def point(x: float, y: float, z: float) -> tuple[float, float]:
        return (10 + x * unit + y * depth, size - 22 - z * unit - y * depth)

    image = blank(size)
    draw = ImageDraw.Draw(image)
    for x, y, z in sorted(cubes, key=lambda v: (-v[1], v[2], v[0])):  # far (back, low, left) first
        if (x, y - 1, z) not in cubes:  # front face
            draw.polygon(
                [point(x, y, z), point(x + 1, y, z), point(x + 1, y, z + 1), point(x, y, z + 1)],
                fill=FILL,
                outline=INK,
            )
        if (x, y, z + 1) not in cubes:  # top face
            draw.polygon(
                [
                    point(x, y, z + 1),
                    point(x + 1, y, z + 1),
                    point(x + 1, y + 1, z + 1),
                    point(x, y + 1, z + 1),
                ],
                fill=(160, 190, 240),
                outline=INK,
            )
        if (x + 1, y, z) not in cubes:  # right face
            draw.polygon(
                [
                    point(x + 1, y, z),
                    point(x + 1, y + 1, z),
                    point(x + 1, y + 1, z + 1),
                    point(x + 1, y, z + 1),
                ],
                fill=_shade(FILL, 0.7),
                outline=INK,
            )
    if marker:
        centred_text(draw, (size / 2, size - 9), marker, 11)
    return image


def text_image(text: str, size: int, px: int = 16) -> Image.Image:
    image = blank(size)
    draw = ImageDraw.Draw(image)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        centred_text(draw, (size / 2, size / 2 + (i - (len(lines) - 1) / 2) * (px + 4)), line, px)
    return image


def compose(
    stimulus: Image.Image, options: Sequence[Image.Image], labels: Sequence[str], size: int
) -> Image.Image:
    """The stimulus centred above a row of lettered options."""
    gap, caption = 8, 18
    width = max(len(options) * (size + gap) + gap, stimulus.width + 2 * gap)
    height = gap + stimulus.height + gap + caption + size + gap
    image = blank(width, height, (235, 235, 235))
    image.paste(stimulus, ((width - stimulus.width) // 2, gap))
    draw = ImageDraw.Draw(image)
    left = (width - (len(options) * (size + gap) - gap)) // 2
    top = gap + stimulus.height + gap
    for i, (option, label) in enumerate(zip(options, labels)):
        x = left + i * (size + gap)
        centred_text(draw, (x + size / 2, top + caption / 2), label, 14)
        image.paste(option, (x, top + caption))
    return image
