"""Set-of-marks observations: numbered boxes on the screenshot, one per element an agent can act on.

Set-of-marks prompting (Yang et al., "Set-of-Mark Prompting Unleashes Extraordinary Visual Grounding in GPT-4V",
arXiv:2310.11441) draws a numbered mark on every region of an image so that a model can answer with a number
instead of coordinates; OSWorld and ScienceBoard (arXiv:2505.19897) build the marks of a desktop from its
accessibility tree. Here the marks come from the AT-SPI tree :mod:`~embodia.agents.scienceboard.a11y_tree`
prints (``[role] name | text | (x,y wxh)``): every node with an on-screen box whose role a user acts on
(buttons, tabs, menus, text fields, list and table items, ...), numbered from 1 in tree order. The agent sees
the screenshot with the boxes and numbers drawn on it and the list of marks as text, and acts with
``{"type": "click_mark", "mark": N}``, which clicks the centre of mark ``N``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

#: roles of elements a user acts on (AT-SPI role names, as ``getRoleName`` gives them)
INTERACTIVE_ROLES = frozenset(
    {
        "push button",
        "toggle button",
        "radio button",
        "check box",
        "combo box",
        "page tab",
        "menu",
        "menu item",
        "check menu item",
        "radio menu item",
        "text",
        "entry",
        "password text",
        "spin button",
        "slider",
        "list item",
        "table cell",
        "tree item",
        "link",
        "icon",
        "tool bar item",
    }
)
MIN_SIDE = 4
"""Boxes narrower or lower than this many pixels are not marked (nothing to click)."""
_LINE = re.compile(
    r"^\s*\[(?P<role>[^\]]+)\](?P<rest>.*?)\s*\((?P<x>-?\d+),(?P<y>-?\d+) (?P<w>\d+)x(?P<h>\d+)\)\s*$"
)


@dataclass(frozen=True)
class Mark:
    """One numbered element of the screen."""

    number: int
    role: str
    label: str
    x: int
    y: int
    width: int
    height: int

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2

    def describe(self) -> str:
        label = f" {self.label!r}" if self.label else ""
        return f"[{self.number}] {self.role}{label} at ({self.x},{self.y} {self.width}x{self.height})"


def marks_from_tree(tree: str, screen: tuple[int, int]) -> list[Mark]:
    """The marks of an a11y tree's text: interactive elements with a box on the ``screen`` (width, height),
    numbered from 1 in tree order; a box seen twice (an element and its own child) is marked once."""
    marks: list[Mark] = []
    seen: set[tuple[int, int, int, int]] = set()
    for line in tree.splitlines():
        match = _LINE.match(line)
        if not match or match["role"] not in INTERACTIVE_ROLES:
            continue
        x, y, w, h = (int(match[k]) for k in ("x", "y", "w", "h"))
        # clip to the screen; off-screen elements (hidden pages, scrolled-away rows) are not marked
        left, top = max(x, 0), max(y, 0)
        right, bottom = min(x + w, screen[0]), min(y + h, screen[1])
        if right - left < MIN_SIDE or bottom - top < MIN_SIDE or (left, top, right, bottom) in seen:
            continue
        seen.add((left, top, right, bottom))
        label = " | ".join(part.strip() for part in match["rest"].split("|") if part.strip())
        marks.append(Mark(len(marks) + 1, match["role"], label[:80], left, top, right - left, bottom - top))
    return marks


def draw_marks(screenshot: Image.Image, marks: list[Mark]) -> Image.Image:
    """A copy of ``screenshot`` with each mark's box outlined and its number in a filled tag at its corner."""
    from PIL import ImageDraw

    image = screenshot.convert("RGB")
    draw = ImageDraw.Draw(image)
    for mark in marks:
        box = (mark.x, mark.y, mark.x + mark.width - 1, mark.y + mark.height - 1)
        draw.rectangle(box, outline=(255, 0, 64), width=2)
        tag = str(mark.number)
        left, top, right, bottom = draw.textbbox((0, 0), tag)
        tag_box = (mark.x, mark.y, mark.x + right - left + 4, mark.y + bottom - top + 4)
        draw.rectangle(tag_box, fill=(255, 0, 64))
        draw.text((mark.x + 2 - left, mark.y + 2 - top), tag, fill=(255, 255, 255))
    return image


def marks_text(marks: list[Mark]) -> str:
    """The marks as the agent reads them, one per line."""
    return (
        "\n".join(mark.describe() for mark in marks) if marks else "(no marks: nothing to act on is visible)"
    )
