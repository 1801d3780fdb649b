"""The question type, the kind registry, seeded generation and the evaluator of Spatial-DISE.

A kind's generator draws one :class:`Draft` from a random generator: the prompt, the stimulus (the scene
as plain JSON data), the correct option, three near-miss distractors and the hidden parameters the answer
was derived from. :func:`question_at` seeds the generator from ``(seed, kind, index)`` alone, so question
``i`` of a set can be made (and graded) without the others, shuffles the distractors and puts the correct
option at a uniformly random position among the four.
"""

from __future__ import annotations

import itertools
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError

QUADRANTS = ("intrinsic-static", "intrinsic-dynamic", "extrinsic-static", "extrinsic-dynamic")
LABELS = ("A", "B", "C", "D")
IMAGE_SIZE = 128
"""Side of one option image in pixels (stimulus images are 2x wide where they need the room)."""


class SpatialDiseError(EmbodiaError, ValueError):
    """An unknown kind, a bad seed / index / count, or a question file that cannot be read or written."""


@dataclass
class Draft:
    """What a kind's generator returns; :func:`question_at` turns it into a :class:`SpatialQuestion`."""

    prompt: str
    stimulus: Any
    correct: Any
    distractors: list[Any]
    params: dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """A question kind: its quadrant, generator, and how its stimulus and options are written and drawn."""

    name: str
    quadrant: str
    generate: Callable[[np.random.Generator], Draft]
    describe_stimulus: Callable[[Any], str]
    """stimulus -> text a text-only model can read."""
    describe_option: Callable[[Any, Any], str]
    """(option, stimulus) -> text."""
    draw_stimulus: Callable[[Any, int], Any]
    """(stimulus, size) -> PIL image."""
    draw_option: Callable[[Any, Any, int], Any]
    """(option, stimulus, size) -> PIL image."""
    summary: str
    """One line: what is asked."""


KINDS: dict[str, Kind] = {}
"""Every kind by name (filled when the package is imported): ``KINDS[name].quadrant``, ``.generate``."""


def register(kind: Kind) -> Kind:
    if kind.quadrant not in QUADRANTS:
        raise ValueError(f"kind {kind.name!r}: unknown quadrant {kind.quadrant!r}")
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind:
    if name not in KINDS:
        raise SpatialDiseError(f"unknown Spatial-DISE kind {name!r}; known: {', '.join(KINDS)}")
    return KINDS[name]


def kind_names() -> list[str]:
    """Every kind, grouped by quadrant (in :data:`QUADRANTS` order)."""
    return sorted(KINDS, key=lambda k: QUADRANTS.index(KINDS[k].quadrant))


def kinds_for(selector: str | Iterable[str]) -> list[str]:
    """Kind names for a kind name, a quadrant name, ``"all"``, or a list of those (grouped by quadrant)."""
    selectors = [selector] if isinstance(selector, str) else list(selector)
    chosen: list[str] = []
    for item in selectors:
        if item == "all":
            names = kind_names()
        elif item in QUADRANTS:
            names = [k for k in kind_names() if KINDS[k].quadrant == item]
        else:
            names = [get_kind(item).name]
        chosen += [n for n in names if n not in chosen]
    if not chosen:
        raise SpatialDiseError("no Spatial-DISE kind selected")
    return chosen


def _plain(value: Any) -> Any:
    """Plain JSON data (tuples become lists), so a question equals itself read back from JSON."""
    return json.loads(json.dumps(value))


def grid_text(cells: Iterable[Sequence[int]], rows: int | None = None, cols: int | None = None) -> str:
    """Cells ``(row, col)`` as rows of '#' (cell) and '.' (empty), row 0 first."""
    cells = {(int(r), int(c)) for r, c in cells}
    rows = rows or 1 + max(r for r, _ in cells)
    cols = cols or 1 + max(c for _, c in cells)
    return "\n".join(" ".join("#" if (r, c) in cells else "." for c in range(cols)) for r in range(rows))


LAYERS_NOTE = (
    "Layers go from the bottom up; each is seen from above: its top row is the back, its bottom row the "
    "front, and left is left as seen from the front. '#' = cube, '.' = empty."
)


def layers_text(voxels: Iterable[Sequence[int]], extent: Sequence[int] | None = None) -> str:
    """Unit cubes ``(x, y, z)`` (x right, y back, z up) as one '#' / '.' grid per layer (see LAYERS_NOTE)."""
    cubes = {tuple(int(v) for v in voxel) for voxel in voxels}
    nx, ny, nz = extent or [1 + max(v[i] for v in cubes) for i in range(3)]
    parts = []
    for z in range(nz):
        where = " (bottom)" if z == 0 else " (top)" if z == nz - 1 else ""
        rows = [" ".join("#" if (x, y, z) in cubes else "." for x in range(nx)) for y in reversed(range(ny))]
        parts.append(f"Layer {z + 1}{where}:\n" + "\n".join(rows))
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------- question
@dataclass
class SpatialQuestion:
    """One multiple-choice question with its stimulus and four options, as data, text and images."""

    id: str
    kind: str
    quadrant: str
    prompt: str
    """The question, with the conventions needed to read the stimulus."""
    stimulus: Any
    """The scene as JSON data (cells, voxels, coordinates, ...): what the images and texts are drawn from."""
    options: list[Any]
    """The four options as JSON data, in the order A-D."""
    answer: int
    """Index of the correct option."""
    stimulus_text: str
    """The stimulus written out for a text-only model ('#' / '.' grids, layers, coordinates)."""
    option_texts: list[str]
    params: dict[str, Any] = field(default_factory=dict)
    """The generation parameters the answer follows from (rotation, folds, moves, ...) and, as
    ``distractors``, how each distractor was made, in option order with the answer left out. Part of the
    answer key: never shown to the model under test."""
    seed: int | None = None
    index: int | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        return LABELS[: len(self.options)]

    @property
    def answer_label(self) -> str:
        return LABELS[self.answer]

    @property
    def chance(self) -> float:
        return 1.0 / len(self.options)

    def text(self) -> str:
        """The whole question as text: prompt, stimulus, options, and how to answer."""
        options = []
        for label, text in zip(self.labels, self.option_texts):
            options.append(f"{label}:\n{text}" if "\n" in text else f"{label}: {text}")
        letters = ", ".join(self.labels[:-1]) + f" or {self.labels[-1]}"
        return (
            f"{self.prompt}\n\n{self.stimulus_text}\n\nOptions:\n"
            + "\n".join(options)
            + f"\n\nAnswer with the letter of the correct option ({letters})."
        )

    def public(self) -> dict[str, Any]:
        """What the model under test may see: everything but the answer and the generation parameters."""
        return {
            "id": self.id,
            "kind": self.kind,
            "quadrant": self.quadrant,
            "seed": self.seed,
            "index": self.index,
            "prompt": self.prompt,
            "stimulus_text": self.stimulus_text,
            "options": [{"label": lab, "text": t} for lab, t in zip(self.labels, self.option_texts)],
            "text": self.text(),
        }

    def to_record(self) -> dict[str, Any]:
        """The question as one JSON object (answer key included)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "quadrant": self.quadrant,
            "seed": self.seed,
            "index": self.index,
            "prompt": self.prompt,
            "stimulus": self.stimulus,
            "options": self.options,
            "answer": self.answer,
            "answer_label": self.answer_label,
            "stimulus_text": self.stimulus_text,
            "option_texts": self.option_texts,
            "params": self.params,
        }

    @classmethod
    def from_record(cls, record: Any, where: str = "question") -> SpatialQuestion:
        """The inverse of :meth:`to_record`; :class:`SpatialDiseError` names what is missing or wrong."""
        if not isinstance(record, dict):
            raise SpatialDiseError(f"{where}: expected a JSON object")
        needed = ("id", "kind", "prompt", "options", "answer", "option_texts")
        missing = [k for k in needed if k not in record]
        if missing:
            raise SpatialDiseError(f"{where}: missing {', '.join(missing)}")
        options, texts = record["options"], record["option_texts"]
        if not isinstance(options, list) or not 2 <= len(options) <= len(LABELS):
            raise SpatialDiseError(f"{where}: 'options' must be a list of 2 to {len(LABELS)} options")
        if not isinstance(texts, list) or len(texts) != len(options):
            raise SpatialDiseError(f"{where}: 'option_texts' must have one text per option")
        answer = record["answer"]
        if isinstance(answer, str) and answer.upper() in LABELS:
            answer = LABELS.index(answer.upper())
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(options):
            raise SpatialDiseError(f"{where}: 'answer' must be an option index or letter, got {answer!r}")
        quadrant = record.get("quadrant") or (
            KINDS[record["kind"]].quadrant if record["kind"] in KINDS else ""
        )
        if quadrant not in QUADRANTS:
            raise SpatialDiseError(f"{where}: 'quadrant' must be one of {', '.join(QUADRANTS)}")
        return cls(
            id=str(record["id"]),
            kind=str(record["kind"]),
            quadrant=quadrant,
            prompt=str(record["prompt"]),
            stimulus=record.get("stimulus"),
            options=options,
            answer=answer,
            stimulus_text=str(record.get("stimulus_text", "")),
            option_texts=[str(t) for t in texts],
            params=dict(record.get("params") or {}),
            seed=record.get("seed"),
            index=record.get("index"),
        )

    # ------------------------------------------------------------------ images
    def images(self, size: int = IMAGE_SIZE) -> dict[str, Any]:
        """PIL images: ``"stimulus"`` and one per option label (``"A"`` ... ``"D"``)."""
        spec = get_kind(self.kind)
        images = {"stimulus": spec.draw_stimulus(self.stimulus, size)}
        for label, option in zip(self.labels, self.options):
            images[label] = spec.draw_option(option, self.stimulus, size)
        return images

    def composite(self, size: int = IMAGE_SIZE, images: dict[str, Any] | None = None) -> Any:
        """One PIL image: the stimulus above the lettered options."""
        from embodia.agents.methods.spatial_dise.render import compose

        images = images or self.images(size)
        return compose(images["stimulus"], [images[lab] for lab in self.labels], self.labels, size)


# ---------------------------------------------------------------------------------------------- generation
def _check_int(name: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise SpatialDiseError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def question_rng(kind: str, seed: int, index: int) -> np.random.Generator:
    """The random generator of question ``index`` of ``kind`` under ``seed`` (independent of the others)."""
    return np.random.default_rng([seed, zlib.crc32(kind.encode()), index])


def question_at(kind: str, seed: int, index: int, *, balanced: bool = True) -> SpatialQuestion:
    """Question ``index`` of ``kind`` under ``seed``: the same on every call, made without the others.

    ``balanced=False`` keeps the first three near misses of a kind's pool, each one change from the key
    (the design that leaves the key in the middle; for measuring the blind baselines against it)."""
    spec = get_kind(kind)
    seed, index = _check_int("seed", seed), _check_int("index", index)
    rng = question_rng(kind, seed, index)
    draft = spec.generate(rng)
    params = _plain(draft.params)
    pool = [_plain(o) for o in draft.distractors]
    if len(pool) > len(LABELS) - 1:  # a pool of near misses: three chosen so that the key is not the middle
        correct = _plain(draft.correct)
        if balanced:
            chosen, met = balanced_distractors(rng, correct, pool)
        else:
            chosen, met = list(range(len(LABELS) - 1)), False
        pool = [pool[k] for k in chosen]
        if len(params.get("distractors", ())) == len(draft.distractors):
            params["distractors"] = [params["distractors"][k] for k in chosen]
        params["balanced"] = met
    choices = [_plain(draft.correct), *pool]
    keys = {json.dumps(o, sort_keys=True) for o in choices}
    if len(choices) != len(LABELS) or len(keys) != len(choices):  # a generator bug, not a user error
        raise RuntimeError(f"{kind} seed {seed} index {index}: options are not {len(LABELS)} distinct ones")
    stimulus = _plain(draft.stimulus)
    order = [int(k) for k in rng.permutation(len(choices) - 1)]  # no order of the distractors may show
    options = [choices[1 + k] for k in order]
    slot = int(rng.integers(len(LABELS)))
    options.insert(slot, choices[0])
    if len(params.get("distractors", ())) == len(order):  # how each distractor was made, in option order
        params["distractors"] = [params["distractors"][k] for k in order]
    return SpatialQuestion(
        id=f"{kind}-{seed}-{index}",
        kind=kind,
        quadrant=spec.quadrant,
        prompt=draft.prompt,
        stimulus=stimulus,
        options=options,
        answer=slot,
        stimulus_text=spec.describe_stimulus(stimulus),
        option_texts=[spec.describe_option(o, stimulus) for o in options],
        params=params,
        seed=seed,
        index=index,
    )


POOL = 8
"""How many near misses a kind's generator offers :func:`balanced_distractors` to choose three from."""


def grow_pool(
    rng: np.random.Generator,
    key: Any,
    perturb: Callable[[np.random.Generator, Any], tuple[Any, str] | None],
    wrong: Callable[[Any], bool],
    size: int = POOL,
    tries: int = 300,
    first: int = 3,
) -> tuple[list[Any], list[str]]:
    """Near misses of ``key`` and of each other (a distractor pool for :func:`balanced_distractors`).

    The first ``first`` near misses are of the key; after them each try perturbs the key or one of its near
    misses (uniformly; never a near miss of a near miss: at most two changes), ``perturb(rng, base)`` returning
    ``(candidate, how)`` or None; a candidate is kept when it is new, not the key, and ``wrong`` (checked
    by the kind's own verification). Returns the pool and how each was made ("mirror image, then one cell
    moved" for a near miss of a near miss).
    """
    pool: list[Any] = []
    made: list[str] = []
    bases = [key]  # the key and the near misses of the key (depth 1): never a third change
    for _ in range(tries):
        j = 0 if len(pool) < first else int(rng.integers(len(bases)))
        out = perturb(rng, bases[j])
        if out is None or out[0] is None:
            continue
        candidate, how = out
        if candidate == key or candidate in pool or not wrong(candidate):
            continue
        pool.append(candidate)
        made.append(how if j == 0 else f"{made[pool.index(bases[j])]}, then {how}")
        if j == 0:
            bases.append(candidate)
        if len(pool) == size:
            break
    return pool, made


def _key_share(scores: Sequence[float]) -> float:
    """How often a blind answerer picks option 0 (the key) by these scores, ties broken at random."""
    low = min(scores)
    best = [i for i, s in enumerate(scores) if s <= low + 1e-12]
    return (0 in best) / len(best)


def balanced_distractors(
    rng: np.random.Generator, correct: Any, pool: Sequence[Any]
) -> tuple[list[int], bool]:
    """Three distractors from ``pool`` (indices) such that a stimulus-blind answerer picks the key with
    probability 1/4, as by guessing.

    Near misses of the key alone leave the key in the middle of the options, so a kind's pool also holds
    near misses of near misses (two changes from the key). For every triple of the pool, p is how often the
    two blind answerers of :mod:`.blind` — the medoid (least summed distance to the others) and the option
    nearest the per-atom majority — pick the key (ties broken at random), averaged; only triples on which
    the two agree are used where they allow it (so neither is above chance alone). One triple with
    p >= 1/4 and one with p <= 1/4 are drawn uniformly, and the first is taken with the probability
    lambda that makes lambda p_a + (1 - lambda) p_b = 1/4: the blind answerers' expected accuracy is
    exactly chance. Where every triple leaves the key more central (or every one less), the triple nearest
    1/4 is taken; the second value says whether 1/4 was met.
    """
    from embodia.agents.methods.spatial_dise.blind import distance_matrix, majority_scores

    chance = 1.0 / len(LABELS)
    everything = [correct, *pool]
    distance = distance_matrix(everything)
    triples: list[tuple[float, list[int]]] = []
    agreeing: list[tuple[float, list[int]]] = []
    for pick in itertools.combinations(range(len(pool)), len(LABELS) - 1):
        rows = [0, *(k + 1 for k in pick)]
        medoid = _key_share(distance[np.ix_(rows, rows)].sum(1).tolist())
        vote = _key_share(majority_scores([everything[r] for r in rows]))
        triples.append(((medoid + vote) / 2, list(pick)))
        if abs(medoid - vote) < 1e-12:
            agreeing.append(triples[-1])
    if not triples:
        raise RuntimeError("a distractor pool needs at least three near misses")
    if any(t[0] >= chance - 1e-12 for t in agreeing) and any(t[0] <= chance + 1e-12 for t in agreeing):
        triples = agreeing  # both answerers at chance, not one above and one below
    high = [t for t in triples if t[0] >= chance - 1e-12]
    low = [t for t in triples if t[0] <= chance + 1e-12]
    if not high or not low:
        nearest = min(abs(t[0] - chance) for t in triples)
        closest = [t for t in triples if abs(t[0] - chance) <= nearest + 1e-12]
        return closest[int(rng.integers(len(closest)))][1], False
    (p_a, a), (p_b, b) = high[int(rng.integers(len(high)))], low[int(rng.integers(len(low)))]
    take_a = 1.0 if p_a - p_b < 1e-12 else (chance - p_b) / (p_a - p_b)
    return (a if rng.random() < take_a else b), True


def generate_spatial_questions(
    kind: str | Iterable[str], n: int, seed: int = 0, *, balanced: bool = True
) -> list[SpatialQuestion]:
    """``n`` questions of each selected kind (a kind, a quadrant, ``"all"``, or a list of those);
    ``result[i]`` of a single kind is ``question_at(kind, seed, i, balanced=balanced)``."""
    n = _check_int("n", n, low=1)
    return [question_at(k, seed, i, balanced=balanced) for k in kinds_for(kind) for i in range(n)]


# ---------------------------------------------------------------------------------------------- answers
_CHOICE = re.compile(r"\s*\(?\s*([A-Za-z])\s*\)?\s*[.:)]?\s*")


def parse_choice(answer: Any, n_options: int = len(LABELS)) -> int | None:
    """An option index from an index, or from a letter (``"B"``, ``"b"``, ``"(B)"``, ``"B."``); None if
    it is neither (an invalid answer)."""
    if answer is None or isinstance(answer, bool):
        return None
    if isinstance(answer, int | np.integer):
        return int(answer) if 0 <= answer < n_options else None
    if isinstance(answer, str):
        match = _CHOICE.fullmatch(answer)
        if match:
            index = ord(match.group(1).upper()) - ord("A")
            return index if 0 <= index < n_options else None
    return None


def _tail_above_chance(correct: int, chances: Sequence[float]) -> float:
    """P(X >= correct) for X the number right when guessing (exact: a Poisson-binomial distribution)."""
    dist = np.zeros(len(chances) + 1)
    dist[0] = 1.0
    for p in chances:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    return float(min(1.0, dist[correct:].sum()))


def _summary(items: list[tuple[SpatialQuestion, int | None]]) -> dict[str, Any]:
    from embodia.runner.evaluate import wilson_interval

    n = len(items)
    correct = sum(choice == q.answer for q, choice in items)
    chances = [q.chance for q, _ in items]
    low, high = wilson_interval(correct, n)
    chance = float(np.mean(chances))
    return {
        "n": n,
        "correct": correct,
        "invalid": sum(choice is None for _, choice in items),
        "accuracy": correct / n,
        "chance": chance,
        "interval": [low, high],
        "p_value": _tail_above_chance(correct, chances),
        "above_chance": low > chance,
    }


def evaluate_spatial_answers(questions: Sequence[SpatialQuestion], answers: Sequence[Any]) -> dict[str, Any]:
    """Accuracy overall, per quadrant and per kind, against chance.

    ``answers[i]`` is an option index, a letter, or anything else (None, "E", "maybe": invalid, counted as
    wrong and in ``invalid``). Each group has ``n``, ``correct``, ``invalid``, ``accuracy``, ``chance``
    (the mean of 1 / number of options), ``interval`` (95 % Wilson score interval of the accuracy),
    ``p_value`` (exact one-sided probability of at least this many right by guessing) and
    ``above_chance`` (the interval lies above chance). ``chosen`` counts the letters given (position bias)
    and ``key`` the letters of the correct answers.
    """
    if len(questions) != len(answers):
        raise SpatialDiseError(f"got {len(answers)} answers for {len(questions)} questions")
    if not questions:
        raise SpatialDiseError("no questions to evaluate")
    choices = [parse_choice(a, len(q.options)) for q, a in zip(questions, answers)]
    items = list(zip(questions, choices))
    report = _summary(items)
    report["by_quadrant"] = {
        quadrant: _summary([it for it in items if it[0].quadrant == quadrant])
        for quadrant in QUADRANTS
        if any(q.quadrant == quadrant for q in questions)
    }
    kinds = list(dict.fromkeys(q.kind for q in questions))
    report["by_kind"] = {
        kind: {"quadrant": next(q.quadrant for q in questions if q.kind == kind)}
        | _summary([it for it in items if it[0].kind == kind])
        for kind in kinds
    }
    chosen = Counter(LABELS[c] if c is not None else "invalid" for c in choices)
    report["chosen"] = {label: chosen.get(label, 0) for label in (*LABELS, "invalid")}
    key = Counter(q.answer_label for q in questions)
    report["key"] = {label: key.get(label, 0) for label in LABELS}
    return report
