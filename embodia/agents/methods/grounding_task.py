"""The grounding-reliability experiment: hallucinations induced on purpose, detected by the grounding signals.

The task of "Grounding or Guessing? Visual Signals for Detecting Hallucinations in Sign Language Translation"
(Hamidullah et al., ICLR 2026, arXiv:2510.18439) in text: a language model answers a question from a few
short notes (the notes play the video's role); for half of the questions the note that answers them is removed
(the paper degrades the video), so the answer cannot be grounded. Every answer token gets the signals of
:mod:`embodia.agents.methods.grounding` (sensitivity, counterfactual margins against masked and mismatched
notes, confidence, entropy); the reliability and META calibrations are fitted on the first half of each seed's
questions and the detection AUCs measured on the second half.

Two labellings of the same answers are compared (:data:`LABELLINGS`):

- ``"construction"`` (the paper's notion of grounding): a sentence is hallucinated when its supporting note was
  removed (ungrounded by construction, whatever it says); a content word copied from the supplied notes is
  grounded (it depends on the context by construction, even when it is the wrong note's word), any other content
  word hallucinated;
- ``"reference"`` (embodia's earlier labels): a sentence is hallucinated when it does not contain the reference
  answer; a content word is grounded only when it is part of the reference.

In both, words copied from the question (the person's name) and filler words are not scored: the masked and
mismatched prompts keep the question, so no context signal can tell them apart.

The AUCs pool the scored answers of all seeds (each scored by its own seed's calibration); the 95 % intervals
are percentile intervals of a bootstrap over answers (resampled within each seed, all tokens of an answer
together, since they share one context).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from embodia.agents.llm import LocalLM
from embodia.agents.methods.grounding import (
    DEFAULT_MISMATCHED_NOTES,
    TokenSignals,
    answer_tokens_batch,
    auc,
    fit_calibrations,
    sentence_score,
    token_signals_batch,
)
from embodia.core.validation import validate

#: the labellings compared (see the module docstring)
LABELLINGS = ("construction", "reference")

_NAMES = [
    *("Mara", "Teo", "Ilka", "Bruno", "Sven", "Nadia", "Omar", "Lina"),
    *("Pavel", "Rosa", "Ugo", "Vera", "Kofi", "Elin", "Dario", "Freya"),
]
_ATTRIBUTES = {
    "city": (
        "{n} lives in {v}.",
        "In which city does {n} live?",
        ["Lisbon", "Oslo", "Cairo", "Lima", "Dublin", "Vienna", "Prague", "Tokyo", "Madrid", "Athens"],
    ),
    "job": (
        "{n} works as a {v}.",
        "What is {n}'s job?",
        ["baker", "pilot", "nurse", "farmer", "painter", "teacher", "plumber", "dentist", "chef", "lawyer"],
    ),
    "pet": (
        "{n} has a pet {v}.",
        "What pet does {n} have?",
        ["parrot", "rabbit", "turtle", "hamster", "goat", "cat", "dog", "snake", "horse", "goldfish"],
    ),
    "color": (
        "{n}'s favourite colour is {v}.",
        "What is {n}'s favourite colour?",
        ["green", "purple", "orange", "yellow", "blue", "red", "pink", "brown", "grey", "black"],
    ),
}


@dataclass
class GroundingItem:
    notes: list[str]
    question: str
    reference: str
    degraded: bool
    """The answering note was removed from the context."""


def make_items(n: int, seed: int = 0, degraded_fraction: float = 0.5) -> list[GroundingItem]:
    """Questions over three or four short notes; a ``degraded_fraction`` lose the note that answers them."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        names = rng.sample(_NAMES, 4)
        kinds = rng.sample(list(_ATTRIBUTES), 4)
        notes, facts = [], []
        for name, kind in zip(names, kinds):
            template, question, values = _ATTRIBUTES[kind]
            value = rng.choice(values)
            notes.append(template.format(n=name, v=value))
            facts.append((name, kind, value, question))
        target = rng.randrange(4)
        name, kind, value, question = facts[target]
        degraded = i < int(round(degraded_fraction * n))
        shown = [note for j, note in enumerate(notes) if not (degraded and j == target)]
        items.append(GroundingItem(shown, question.format(n=name), value, degraded))
    rng.shuffle(items)
    return items


def qa_prompt(lm: LocalLM, notes: Sequence[str], question: str) -> str:
    notes_text = " ".join(notes) if notes else "(no notes)"
    return lm.chat_text(f"Notes: {notes_text}\nAnswer the question in one word.\nQuestion: {question}")


# ---------------------------------------------------------------------------------------------- labels
def _content(token: str) -> str:
    return "".join(ch for ch in token.lower() if ch.isalnum())


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


_FILLER = {
    *("the", "a", "an", "is", "as", "in", "of", "to", "it", "this", "that", "answer"),
    *("question", "one", "word", "lives", "live", "works", "work", "has", "have", "pet", "job", "city"),
    *("favourite", "favorite", "colour", "color", "s", "does", "what", "which", "notes"),
}


def label_tokens(tokens: Sequence[str], reference: str, question: str = "") -> list[bool | None]:
    """The ``"reference"`` labels: True = hallucinated (content in neither the reference nor the question),
    False = grounded (part of the reference), None = not scored (punctuation, filler, words copied from the
    question such as the name)."""
    ref = reference.lower()
    asked = {_content(w) for w in question.split()}
    labels: list[bool | None] = []
    for tok in tokens:
        content = _content(tok)
        if not content or content in _FILLER or len(content) < 2:
            labels.append(None)
        elif content in ref:
            labels.append(False)
        elif content in asked:
            labels.append(None)
        else:
            labels.append(True)
    return labels


def word_spans(tokens: Sequence[str]) -> list[int]:
    """The word index of every token: a token starting with a non-alphanumeric character (a space, a
    punctuation mark) or following one that ended with one starts a new word (" Lis" "bon" -> one word)."""
    index, spans, previous = -1, [], ""
    for tok in tokens:
        if index < 0 or not tok[:1].isalnum() or not previous[-1:].isalnum():
            index += 1
        spans.append(index)
        previous = tok
    return spans


def label_tokens_by_context(
    tokens: Sequence[str], notes: Sequence[str], question: str = ""
) -> list[bool | None]:
    """The ``"construction"`` labels, per word (every token of a word gets the word's label): None = not
    scored (no content, filler, a word of the question), False = grounded (a word of the supplied notes),
    True = hallucinated (any other content word)."""
    spans = word_spans(tokens)
    words: dict[int, str] = {}
    for tok, w in zip(tokens, spans):
        words[w] = words.get(w, "") + _content(tok)
    noted, asked = _words(" ".join(notes)), _words(question)
    labels: list[bool | None] = []
    for tok, w in zip(tokens, spans):
        word = words[w]
        if not _content(tok) or len(word) < 2 or word in _FILLER or word in asked:
            labels.append(None)
        else:
            labels.append(word not in noted)
    return labels


def sentence_hallucinated(labelling: str, item: GroundingItem, answer: str) -> bool:
    """The sentence label: the note removed (``"construction"``) or the reference missing (``"reference"``)."""
    if labelling == "construction":
        return item.degraded
    if labelling == "reference":
        return item.reference.lower() not in answer.lower()
    raise ValueError(f"unknown labelling {labelling!r}; known: {', '.join(LABELLINGS)}")


def token_labels(labelling: str, item: GroundingItem, tokens: Sequence[str]) -> list[bool | None]:
    """The token labels of ``labelling`` (True = hallucinated, None = not scored)."""
    if labelling == "construction":
        return label_tokens_by_context(tokens, item.notes, item.question)
    if labelling == "reference":
        return label_tokens(tokens, item.reference, item.question)
    raise ValueError(f"unknown labelling {labelling!r}; known: {', '.join(LABELLINGS)}")


# ---------------------------------------------------------------------------------------------- scores
#: token-level detection scores (higher = more likely hallucinated); reliability and META need a calibration
TOKEN_SCORES = (
    "reliability",
    "meta",
    "counterfactual log margin",
    "counterfactual prob margin",
    "masked-only log margin",
    "sensitivity",
    "confidence",
    "entropy",
)
#: sentence-level detection scores: the lowest-10 % pooling of the reliability, META and the log margin;
#: the mean confidence and entropy over the answer
SENTENCE_SCORES = ("reliability", "meta", "counterfactual log margin", "confidence", "entropy")
_SIGNAL: dict[str, Callable[[TokenSignals], float]] = {
    "counterfactual log margin": lambda s: -s.log_margin,
    "counterfactual prob margin": lambda s: -s.prob_margin,
    "masked-only log margin": lambda s: -s.masked_log_margin,
    "sensitivity": lambda s: -s.sensitivity,
    "confidence": lambda s: -s.confidence,
    "entropy": lambda s: s.entropy,
}


def _token_scores(s: TokenSignals, reliability: float, meta: float) -> dict[str, float]:
    return {"reliability": -reliability, "meta": -meta, **{k: f(s) for k, f in _SIGNAL.items()}}


def _sentence_scores(
    signals: Sequence[TokenSignals], rel: list[float], meta: list[float]
) -> dict[str, float]:
    return {
        "reliability": -sentence_score(rel),
        "meta": -sentence_score(meta),
        "counterfactual log margin": -sentence_score([s.log_margin for s in signals]),
        "confidence": -float(np.mean([s.confidence for s in signals])),
        "entropy": float(np.mean([s.entropy for s in signals])),
    }


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class GroundingConfig:
    """Settings of :func:`run_grounding`."""

    items: Annotated[int, Field(ge=4)] = 24
    """Questions per seed: the first half fits the calibrations, the second half is scored."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """One question set (and mismatched pairing) per seed."""
    degraded_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.5
    """Fraction of the questions whose answering note is removed."""
    batch: Annotated[int, Field(ge=1)] = 16
    """Answers generated and scored per forward batch."""
    max_new_tokens: Annotated[int, Field(ge=1)] = 10
    """Greedy answer length limit (an answer also ends at its first line or sentence)."""
    layer: Annotated[int, Field(ge=0)] | None = None
    """Hidden-state layer of the sensitivity (None: two thirds of the way up)."""
    bootstrap: Annotated[int, Field(ge=10)] = 1000
    """Bootstrap resamples of the scored answers for the 95 % intervals."""


@dataclass
class Answer:
    """One generated answer with its token signals."""

    seed: int
    item: GroundingItem
    signals: list[TokenSignals]

    @property
    def text(self) -> str:
        return "".join(s.token for s in self.signals)


def collect_answers(
    lm: LocalLM, config: GroundingConfig, progress: Callable[[int, int, str], None] | None = None
) -> list[list[Answer]]:
    """Per seed: the items, their greedy answers and the answers' token signals. The mismatched context of
    item i is the notes of item i+1 (cyclically), as the paper pairs a translation with another sample's video."""
    per_seed, done, total = [], 0, config.items * len(config.seeds)
    for seed in config.seeds:
        items = make_items(config.items, seed, config.degraded_fraction)
        answers: list[Answer] = []
        for start in range(0, len(items), config.batch):
            chunk = range(start, min(start + config.batch, len(items)))
            prompts = []
            for i in chunk:
                other = (
                    items[(i + 1) % len(items)].notes if len(items) > 1 else list(DEFAULT_MISMATCHED_NOTES)
                )
                question = items[i].question
                prompts.append(
                    (
                        qa_prompt(lm, items[i].notes, question),
                        qa_prompt(lm, [], question),
                        qa_prompt(lm, other, question),
                    )
                )
            ids = answer_tokens_batch(lm, [p[0] for p in prompts], config.max_new_tokens)
            signals = token_signals_batch(lm, prompts, ids, config.layer)
            answers += [Answer(seed, items[i], s) for i, s in zip(chunk, signals)]
            done += len(chunk)
            if progress is not None:
                progress(done, total, f"seed {seed}: {answers[-1].item.question} -> {answers[-1].text!r}")
        per_seed.append(answers)
    return per_seed


@dataclass
class LabellingResult:
    """The detection AUCs of one labelling (intervals as ``{"value", "low", "high"}``)."""

    token_auc: dict[str, dict[str, float]]
    sentence_auc: dict[str, dict[str, float]]
    per_seed: list[dict[str, Any]]
    tokens: int
    hallucinated_tokens: int
    sentences: int
    hallucinated_sentences: int
    calibrations: list[dict[str, Any]] = field(default_factory=list)
    difference: dict[str, dict[str, float]] = field(default_factory=dict)
    """Paired AUC(reliability) - AUC(confidence), at the ``"token"`` and ``"sentence"`` level, with its interval
    from the same bootstrap resamples."""


def _scored(answers: list[list[Answer]], labelling: str) -> tuple[list[list[dict]], list[dict[str, Any]]]:
    """Per seed, per scored (second-half, non-empty) answer: its token rows and sentence row; calibrations."""
    out, calibrations = [], []
    for seed_answers in answers:
        half = len(seed_answers) // 2
        calib = [
            (s, not y)
            for a in seed_answers[:half]
            for s, y in zip(a.signals, token_labels(labelling, a.item, [t.token for t in a.signals]))
            if y is not None
        ]
        cal = fit_calibrations([s for s, _ in calib], [g for _, g in calib])
        calibrations.append(cal.to_json())
        rows = []
        for a in seed_answers[half:]:
            if not a.signals:
                continue
            rel = [cal.reliability.score(s) for s in a.signals]
            meta = [cal.meta.score(s) for s in a.signals]
            labels = token_labels(labelling, a.item, [t.token for t in a.signals])
            tokens = [
                (_token_scores(s, r, m), y)
                for s, r, m, y in zip(a.signals, rel, meta, labels)
                if y is not None
            ]
            sentence = (
                _sentence_scores(a.signals, rel, meta),
                sentence_hallucinated(labelling, a.item, a.text),
            )
            rows.append({"tokens": tokens, "sentence": sentence})
        out.append(rows)
    return out, calibrations


def _aucs(rows: Sequence[dict]) -> tuple[dict[str, float], dict[str, float]]:
    tokens = [t for r in rows for t in r["tokens"]]
    tok = {k: auc([s[k] for s, _ in tokens], [y for _, y in tokens]) for k in TOKEN_SCORES}
    sen = {
        k: auc([r["sentence"][0][k] for r in rows], [r["sentence"][1] for r in rows]) for k in SENTENCE_SCORES
    }
    return tok, sen


def evaluate(answers: list[list[Answer]], labelling: str, bootstrap: int, seed: int = 0) -> LabellingResult:
    """Pooled AUCs with 95 % bootstrap intervals (answers resampled within each seed) and per-seed AUCs."""
    scored, calibrations = _scored(answers, labelling)
    pooled = [r for rows in scored for r in rows]
    tok, sen = _aucs(pooled)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for _ in range(bootstrap):
        sample = [rows[j] for rows in scored if rows for j in rng.integers(0, len(rows), len(rows))]
        t, s = _aucs(sample)
        t["difference"] = t["reliability"] - t["confidence"]
        s["difference"] = s["reliability"] - s["confidence"]
        for k, v in [*((f"t:{k}", v) for k, v in t.items()), *((f"s:{k}", v) for k, v in s.items())]:
            draws.setdefault(k, []).append(v)

    def with_interval(prefix: str, values: dict[str, float]) -> dict[str, dict[str, float]]:
        result = {}
        for k, v in values.items():
            d = np.array(draws[f"{prefix}:{k}"])
            d = d[np.isfinite(d)]
            low, high = np.percentile(d, [2.5, 97.5]) if len(d) else (float("nan"),) * 2
            result[k] = {"value": v, "low": float(low), "high": float(high)}
        return result

    per_seed = []
    for seed_value, rows in zip((a[0].seed if a else None for a in answers), scored):
        t, s = _aucs(rows)
        per_seed.append({"seed": seed_value, "token_auc": t, "sentence_auc": s})
    tokens = [y for r in pooled for _, y in r["tokens"]]
    difference = {
        "token": with_interval("t", {"difference": tok["reliability"] - tok["confidence"]})["difference"],
        "sentence": with_interval("s", {"difference": sen["reliability"] - sen["confidence"]})["difference"],
    }
    return LabellingResult(
        difference=difference,
        token_auc=with_interval("t", tok),
        sentence_auc=with_interval("s", sen),
        per_seed=per_seed,
        tokens=len(tokens),
        hallucinated_tokens=int(sum(tokens)),
        sentences=len(pooled),
        hallucinated_sentences=int(sum(r["sentence"][1] for r in pooled)),
        calibrations=calibrations,
    )


@dataclass
class GroundingResult:
    labellings: dict[str, LabellingResult]
    examples: list[dict[str, Any]] = field(default_factory=list)


def run_grounding(
    lm: LocalLM,
    config: GroundingConfig | dict[str, Any] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> GroundingResult:
    """Generate and score the answers of every seed once, then evaluate them under both labellings."""
    config = validate(GroundingConfig, config or {}, where="grounding config")
    answers = collect_answers(lm, config, progress)
    examples = [
        {
            "seed": a.seed,
            "question": a.item.question,
            "notes": a.item.notes,
            "degraded": a.item.degraded,
            "reference": a.item.reference,
            "answer": a.text,
            "tokens": [s.token for s in a.signals],
            **{f"labels_{k}": token_labels(k, a.item, [s.token for s in a.signals]) for k in LABELLINGS},
        }
        for a in answers[0][len(answers[0]) // 2 :][:8]
    ]
    return GroundingResult({k: evaluate(answers, k, config.bootstrap) for k in LABELLINGS}, examples)
