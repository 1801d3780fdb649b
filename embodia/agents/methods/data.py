"""Small text corpora and task sets the language-model experiments run on, all available offline.

- :func:`corpus_chunks`: English prose from Python's own reference documentation (``pydoc_data.topics``,
  ~465k characters, shipped with every CPython), split by topic into train and held-out parts and cut
  into fixed-length token chunks — for perplexity and brief fine-tuning.
- :func:`completion_tasks`: short prompts with a single checkable next word (sequences, capitals,
  opposites) — a small task accuracy for a 135M model.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from embodia.agents.llm import LocalLM


def _topics() -> list[tuple[str, str]]:
    import pydoc_data.topics

    items = []
    for key in sorted(pydoc_data.topics.topics):
        text = pydoc_data.topics.topics[key]
        text = re.sub(r"[ \t]+", " ", text)
        text = re.sub(r"\n{3,}", "\n\n", text)
        items.append((key, text))
    return items


def corpus_text(split: str) -> str:
    """Documentation prose: ``"train"`` (4 of every 5 topics) or ``"heldout"`` (the fifth)."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    parts = [text for i, (_, text) in enumerate(_topics()) if (i % 5 == 4) == (split == "heldout")]
    return "\n\n".join(parts)


def corpus_chunks(lm: LocalLM, split: str, length: int, count: int, seed: int = 0) -> list[list[int]]:
    """``count`` non-overlapping chunks of ``length`` tokens from ``split``, drawn with a seeded shuffle."""
    ids = lm.encode(corpus_text(split))
    starts = list(range(0, len(ids) - length, length))
    random.Random(seed).shuffle(starts)
    if count > len(starts):
        raise ValueError(
            f"the {split} corpus has only {len(starts)} chunks of {length} tokens, asked {count}"
        )
    return [ids[s : s + length] for s in starts[:count]]


@dataclass(frozen=True)
class CompletionTask:
    """A prompt whose next word is known."""

    prompt: str
    answer: str
    """The expected next word, with its leading space (``" Paris"``)."""
    kind: str


_SEQUENCES = {
    "days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "months": [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    "numbers": ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
    "digits": [str(i) for i in range(1, 21)],
    "letters": list("ABCDEFGHIJKLMNOP"),
}
_CAPITALS = {
    "France": "Paris",
    "Germany": "Berlin",
    "Italy": "Rome",
    "Spain": "Madrid",
    "Japan": "Tokyo",
    "England": "London",
    "Russia": "Moscow",
    "Egypt": "Cairo",
    "China": "Beijing",
    "Greece": "Athens",
    "Canada": "Ottawa",
    "Portugal": "Lisbon",
    "Austria": "Vienna",
    "Ireland": "Dublin",
    "Norway": "Oslo",
}
_OPPOSITES = {
    "hot": "cold",
    "big": "small",
    "up": "down",
    "day": "night",
    "black": "white",
    "fast": "slow",
    "happy": "sad",
    "open": "closed",
    "old": "new",
    "left": "right",
    "in": "out",
    "yes": "no",
    "early": "late",
    "rich": "poor",
    "strong": "weak",
    "light": "dark",
    "true": "false",
    "wet": "dry",
}


def completion_tasks() -> list[CompletionTask]:
    """~90 prompts with a known next word (deterministic)."""
    tasks = []
    for kind, seq in _SEQUENCES.items():
        for start in range(0, len(seq) - 4):
            shown = seq[start : start + 4]
            tasks.append(CompletionTask(", ".join(shown) + ",", " " + seq[start + 4], f"sequence-{kind}"))
    for country, city in _CAPITALS.items():
        tasks.append(CompletionTask(f"The capital of {country} is", " " + city, "capital"))
    for word, opposite in _OPPOSITES.items():
        tasks.append(CompletionTask(f"The opposite of {word} is", " " + opposite, "opposite"))
    return tasks
