"""Verifiable visual questions rendered here: 24x24 images of coloured squares on a 3x3 grid.

``count``: "count <colour>" -> a digit; ``colour``: "colour <cell>" -> the colour word at that cell (or
``none``); both answers are two tokens (the answer word, then [EOS]). ``total``: "count <c1> <c2>" ->
"<c1> <n1> <c2> <n2> total <n1+n2> [EOS]", a templated seven-token answer in which only the three digits
depend on the image (the colour words, ``total`` and [EOS] are fixed by the question); :func:`image_positions`
marks them. Every answer is checked by exact match.
"""

from __future__ import annotations

import numpy as np
import torch

COLOURS = {"red": (220, 40, 40), "green": (40, 190, 60), "blue": (50, 80, 230), "yellow": (230, 210, 40)}
KINDS = ("count", "colour", "mixed", "total")
GRID, CELL, SIZE = 3, 8, 24
ANSWER_LEN = 2
"""Answer length of ``count``, ``colour`` and ``mixed`` (``total``: :func:`lengths`)."""

TOKENS = (
    ["<pad>", "<bos>", "<eos>", "count", "colour"]
    + [str(d) for d in range(10)]
    + [*COLOURS, "none"]
    + [f"cell{i}" for i in range(GRID * GRID)]
    + ["total"]
)
INDEX = {t: i for i, t in enumerate(TOKENS)}
PAD, BOS, EOS = INDEX["<pad>"], INDEX["<bos>"], INDEX["<eos>"]
VOCAB_SIZE = len(TOKENS)


def lengths(kind: str) -> tuple[int, int]:
    """``(prompt tokens, answer tokens)`` of questions of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown task {kind!r}; known: {', '.join(KINDS)}")
    return (3, 7) if kind == "total" else (2, ANSWER_LEN)


def image_positions(kind: str) -> list[bool]:
    """Per answer position, whether its correct token depends on the image (rather than on the question)."""
    return [False, True, False, True, False, True, False] if kind == "total" else [True, False]


def render(cells: list[str | None]) -> np.ndarray:
    """``uint8 [24, 24, 3]``: a grey background and a 6x6 square of each non-empty cell's colour."""
    image = np.full((SIZE, SIZE, 3), 90, np.uint8)
    for i, colour in enumerate(cells):
        if colour is not None:
            r, c = divmod(i, GRID)
            image[r * CELL + 1 : r * CELL + 7, c * CELL + 1 : c * CELL + 7] = COLOURS[colour]
    return image


def question(kind: str, seed: int, index: int) -> tuple[np.ndarray, list[int], list[int]]:
    """One question: ``(image, prompt token ids, answer token ids)`` (:func:`lengths`), set by its arguments."""
    if kind not in KINDS:
        raise ValueError(f"unknown task {kind!r}; known: {', '.join(KINDS)}")
    rng = np.random.default_rng([seed, index])
    if kind == "total":
        return _total(rng)
    if kind == "mixed":
        kind = ("count", "colour")[int(rng.integers(2))]
    names = list(COLOURS)
    cells = [names[int(rng.integers(4))] if rng.random() < 0.5 else None for _ in range(GRID * GRID)]
    if kind == "count":
        colour = names[int(rng.integers(4))]
        prompt, answer = ["count", colour], str(sum(c == colour for c in cells))
    else:
        cell = int(rng.integers(GRID * GRID))
        prompt, answer = ["colour", f"cell{cell}"], cells[cell] or "none"
    return render(cells), [INDEX[t] for t in prompt], [INDEX[answer], EOS]


def _total(rng: np.random.Generator) -> tuple[np.ndarray, list[int], list[int]]:
    names = list(COLOURS)
    cells = [names[int(rng.integers(4))] if rng.random() < 0.5 else None for _ in range(GRID * GRID)]
    first, second = (names[int(i)] for i in rng.choice(4, size=2, replace=False))
    n1, n2 = (sum(c == colour for c in cells) for colour in (first, second))
    answer = [first, str(n1), second, str(n2), "total", str(n1 + n2)]
    return render(cells), [INDEX[t] for t in ("count", first, second)], [INDEX[t] for t in answer] + [EOS]


def make_batch(
    kind: str, n: int, seed: int, start: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Questions ``start .. start+n-1``: images ``float [n, 3, 24, 24]`` in [0, 1], prompts, answers."""
    items = [question(kind, seed, start + i) for i in range(n)]
    images = torch.from_numpy(np.stack([it[0] for it in items])).permute(0, 3, 1, 2).float() / 255.0
    prompts = torch.tensor([it[1] for it in items], dtype=torch.long)
    answers = torch.tensor([it[2] for it in items], dtype=torch.long)
    return images, prompts, answers


def correct(samples: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Exact-match reward ``float [n]``: 1 where every answer token matches."""
    return (samples == answers).all(dim=-1).float()


def decode(ids: list[int]) -> str:
    """Token ids as text."""
    return " ".join(TOKENS[i] for i in ids)
