"""Stimulus-blind answerers: they choose an option from the four options alone, never the stimulus.

A multiple-choice benchmark whose distractors are each one minimal change from the key leaves the key "in
the middle" of the options: every distractor differs from it by one change, but from the other distractors
by two. An answerer that never reads the stimulus can exploit that. These baselines measure how far; where
one beats chance (1/4) on a kind, that kind's questions can be answered without spatial reasoning.

Each answerer maps a :class:`SpatialQuestion` to an option index using ``question.options`` (the data) or
``question.option_texts`` (what a text-only model reads), ties broken uniformly at random by ``rng`` so that
a tie scores chance in expectation:

- ``closest_to_others`` (the medoid): the option with the least summed distance to the other three;
- ``majority``: every option's atoms (cells, cubes, fields, the value itself) are voted on, an atom kept
  when at least half of the options have it; the option closest to that consensus is chosen (against
  "one change each" distractors the consensus is exactly the key);
- ``text_medoid``: the medoid of the option texts under a character-level distance (difflib's ratio).

Distances (:func:`option_distance`): options that are lists of integer cells or cubes are compared as sets
up to translation (the least symmetric difference over shifts of up to one cell per axis, so one cell moved
is distance 2); dicts field by field; numbers by their absolute difference; anything else 0 / 1.
"""

from __future__ import annotations

import difflib
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from embodia.agents.methods.spatial_dise.core import SpatialQuestion

SHIFT = 1
"""The largest translation per axis tried when comparing two cell / cube sets."""


def _cells(option: Any) -> set[tuple[int, ...]] | None:
    """The option as a set of integer tuples if it is a list of equal-length integer lists, else None."""
    if not isinstance(option, list) or not option:
        return None
    if not all(isinstance(c, list) and c and all(isinstance(v, int) for v in c) for c in option):
        return None
    if len({len(c) for c in option}) != 1:
        return None
    return {tuple(c) for c in option}


def _encoded(cells: set[tuple[int, ...]]) -> set[int]:
    """Cells as integers (base 64, offset 16 per axis), so that a shift is one integer addition."""
    return {sum((v + 16) * 64**i for i, v in enumerate(c)) for c in cells}


def _set_distance(a: set[tuple[int, ...]], b: set[tuple[int, ...]]) -> int:
    """Least |A symmetric-difference (B + d)| over shifts d in [-SHIFT, SHIFT]^dim."""
    dim = len(next(iter(a)))
    ea, eb = _encoded(a), _encoded(b)
    best = len(ea ^ eb)
    for d in itertools.product(range(-SHIFT, SHIFT + 1), repeat=dim):
        offset = sum(v * 64**i for i, v in enumerate(d))
        best = min(best, len(ea ^ {c + offset for c in eb}))
    return best


def option_distance(a: Any, b: Any) -> float:
    """How different two options are, from their data alone (module docstring)."""
    cells_a, cells_b = _cells(a), _cells(b)
    if cells_a is not None and cells_b is not None and len(next(iter(cells_a))) == len(next(iter(cells_b))):
        return float(_set_distance(cells_a, cells_b))
    if isinstance(a, dict) and isinstance(b, dict):
        return float(sum(option_distance(a.get(k), b.get(k)) for k in sorted(set(a) | set(b))))
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return float(abs(a - b))
    return 0.0 if a == b else 1.0


def distance_matrix(options: Sequence[Any]) -> np.ndarray:
    """:func:`option_distance` between every two options (symmetric, zero diagonal)."""
    n = len(options)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = option_distance(options[i], options[j])
    return out


def text_distance(a: str, b: str) -> float:
    """1 - difflib's similarity ratio of two option texts."""
    return 1.0 - difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _atoms(option: Any) -> set[Any]:
    """What the majority vote counts: cells / cubes, (field, value) pairs, or the value itself."""
    cells = _cells(option)
    if cells is not None:
        return cells
    if isinstance(option, dict):
        return {(k, repr(v)) for k, v in option.items()}
    return {repr(option)}


def _pick(scores: Sequence[float], rng: np.random.Generator) -> int:
    """The index of the lowest score, a tie broken uniformly at random."""
    low = min(scores)
    tied = [i for i, s in enumerate(scores) if s <= low + 1e-12]
    return tied[int(rng.integers(len(tied)))]


def medoid_scores(options: Sequence[Any]) -> list[float]:
    """Per option, its summed :func:`option_distance` to the others (the medoid has the least)."""
    return distance_matrix(options).sum(1).tolist()


def majority_scores(options: Sequence[Any]) -> list[int]:
    """Per option, how many atoms it differs in from the consensus (atoms held by at least half)."""
    atoms = [_atoms(o) for o in options]
    votes = Counter(a for s in atoms for a in s)
    consensus = {a for a, count in votes.items() if 2 * count >= len(atoms)}
    return [len(s ^ consensus) for s in atoms]


def closest_to_others(question: SpatialQuestion, rng: np.random.Generator) -> int:
    """The medoid of the options' data: least summed :func:`option_distance` to the others."""
    return _pick(medoid_scores(question.options), rng)


def majority(question: SpatialQuestion, rng: np.random.Generator) -> int:
    """The option nearest the per-atom majority of the options (atoms held by at least half of them)."""
    return _pick(majority_scores(question.options), rng)


def text_medoid(question: SpatialQuestion, rng: np.random.Generator) -> int:
    """The medoid of the option texts (what a text-only model reads)."""
    texts = question.option_texts
    return _pick([sum(text_distance(a, b) for b in texts) for a in texts], rng)


BLIND_ANSWERERS: dict[str, Callable[[SpatialQuestion, np.random.Generator], int]] = {
    "closest_to_others": closest_to_others,
    "majority": majority,
    "text_medoid": text_medoid,
}
"""Every stimulus-blind answerer by name."""


def blind_answers(questions: Sequence[SpatialQuestion], answerer: str, seed: int = 0) -> list[int]:
    """The choices of the blind ``answerer`` for ``questions`` (ties broken by a generator seeded ``seed``)."""
    choose = BLIND_ANSWERERS[answerer]
    rng = np.random.default_rng(seed)
    return [choose(q, rng) for q in questions]
