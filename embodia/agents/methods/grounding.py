"""Grounding reliability: which generated tokens are grounded in the context.

Follows "Grounding or Guessing? Visual Signals for Detecting Hallucinations in Sign Language Translation"
(Hamidullah et al., ICLR 2026, arXiv:2510.18439). A model generates y from a context c (in sign-language
translation c is the video; in the text analogue here, the notes an LM answers from). A token is grounded
if it depends on c; a hallucinated token comes from the language prior. Every generated token y_t is
scored teacher-forced on the model's own output, under the real context c, the context masked out c_0
(the notes removed) and a mismatched context c~ (another item's notes, the paper's mismatched video):

    confidence      p_t     = p(y_t | c, y_<t)                          (text signal)
    entropy         H_t     = H(p(. | c, y_<t))                         (text signal)
    sensitivity     s_t     = 1 - cos(h_t(c), h_t(c_0))                 h_t: hidden state at layer l that
                                                                        predicts y_t (feature sensitivity)
    counterfactual  p^cf_t  = max(p(y_t | c_0, y_<t), p(y_t | c~, y_<t))   the best an altered context does
                    dp_t    = p_t - p^cf_t                              probability margin
                    dl_t    = log p_t - log p^cf_t                      log-probability margin
    reliability     r_t     = sigmoid(w . z([s_t, dp_t, dl_t]) + b)     context signals only
    META            m_t     = sigmoid(w' . z([s_t, dp_t, dl_t, log p_t, H_t]) + b')
                                                                        reliability's signals + text signals
    sentence score  R       = mean of the k lowest token scores,  k = ceil(0.1 T)   (T answer tokens)

z standardises each feature with the calibration split's mean and deviation; (w, b) and (w', b') are two
logistic regressions of "grounded" on their features, fitted on the calibration split (:func:`fit_calibration`).
Confidence and entropy enter only META, never the reliability. The sentence score pools the least
reliable ten percent of the tokens (at least one), so one guessed token makes a sentence unreliable.

The experiment (:func:`run_grounding`) induces hallucinations on purpose: for half the questions the note
that answers them is removed from the context, so whatever the model answers is not grounded. Token labels
come from the reference answer (a generated content word that is neither part of it nor copied from the
question is hallucinated); an answer is hallucinated when it does not contain the reference. The detection
AUCs of reliability and META are compared with the single signals, confidence and entropy.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np
import torch

from embodia.agents.llm import LocalLM

#: the context signals: the only inputs of the reliability r_t
RELIABILITY_FEATURES = ("sensitivity", "prob_margin", "log_margin")
#: META adds the text signals (log-confidence, entropy) to the context signals
META_FEATURES = (*RELIABILITY_FEATURES, "log_confidence", "entropy")
#: the sentence score pools this fraction of the lowest token scores (at least one token)
LOWEST_FRACTION = 0.1
#: the mismatched context when none is given: notes about no one the experiment asks about
DEFAULT_MISMATCHED_NOTES = ("Greta works as a tailor.", "Hugo lives in Bergen.", "Ines has a pet ferret.")
_TINY = 1e-12


# ---------------------------------------------------------------------------------------------- signals
@dataclass
class TokenSignals:
    """The per-token signals of one answer token (probabilities of the token itself, not log)."""

    token: str
    confidence: float
    """p_t = p(y_t | c, y_<t)."""
    entropy: float
    """H_t, in nats."""
    sensitivity: float
    """s_t = 1 - cos(h_t(c), h_t(c_0))."""
    p_masked: float
    """p(y_t | c_0, y_<t): the context masked."""
    p_mismatched: float
    """p(y_t | c~, y_<t): another item's context."""
    reliability: float = float("nan")
    meta: float = float("nan")

    @property
    def p_counterfactual(self) -> float:
        """p^cf_t: the larger of the masked and the mismatched probability."""
        return max(self.p_masked, self.p_mismatched)

    @property
    def prob_margin(self) -> float:
        """dp_t = p_t - p^cf_t."""
        return self.confidence - self.p_counterfactual

    @property
    def log_margin(self) -> float:
        """dl_t = log p_t - log p^cf_t."""
        return math.log(max(self.confidence, _TINY)) - math.log(max(self.p_counterfactual, _TINY))

    @property
    def masked_log_margin(self) -> float:
        """log p_t - log p(y_t | c_0): the counterfactual with the masked context only (for comparison)."""
        return math.log(max(self.confidence, _TINY)) - math.log(max(self.p_masked, _TINY))

    def feature(self, name: str) -> float:
        """One named calibration feature (see :data:`META_FEATURES`)."""
        if name == "log_confidence":
            return math.log(max(self.confidence, _TINY))
        if name in META_FEATURES:
            return float(getattr(self, name))
        raise KeyError(f"unknown grounding feature {name!r}; known: {', '.join(META_FEATURES)}")

    def features(self, names: Sequence[str]) -> list[float]:
        return [self.feature(n) for n in names]


def counterfactual_margins(
    p: np.ndarray, p_masked: np.ndarray, p_mismatched: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(p_cf, dp, dl)`` per token: the counterfactual probability and the two margins of the docstring."""
    p, p_masked, p_mismatched = (np.asarray(a, dtype=np.float64) for a in (p, p_masked, p_mismatched))
    p_cf = np.maximum(p_masked, p_mismatched)
    return p_cf, p - p_cf, np.log(np.maximum(p, _TINY)) - np.log(np.maximum(p_cf, _TINY))


def _teacher_forced(
    lm: LocalLM, prompt: str, answer_ids: list[int], layer: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities over the vocabulary and the layer's hidden states at the answer positions."""
    prompt_ids = lm.encode(prompt)
    ids = torch.tensor([prompt_ids + answer_ids], device=lm.device)
    with torch.no_grad():
        out = lm.model(ids, output_hidden_states=True)
    n = len(prompt_ids)
    logits = out.logits[0, n - 1 : n - 1 + len(answer_ids)].float()
    hidden = out.hidden_states[layer + 1][0, n - 1 : n - 1 + len(answer_ids)]
    return torch.log_softmax(logits, -1), hidden


def token_signals(
    lm: LocalLM,
    prompt: str,
    masked_prompt: str,
    mismatched_prompt: str,
    answer_ids: Sequence[int],
    layer: int | None = None,
) -> list[TokenSignals]:
    """Signals of every answer token given the real prompt, the prompt with its context masked and the
    prompt with a mismatched context (three teacher-forced passes).

    The hidden state compared is the one that predicts the token (position t-1), at ``layer``
    (default: two thirds of the way up).
    """
    answer_ids = list(answer_ids)
    if not answer_ids:
        return []
    layer = (2 * lm.num_layers) // 3 if layer is None else layer
    logp, hidden = _teacher_forced(lm, prompt, answer_ids, layer)
    logp0, hidden0 = _teacher_forced(lm, masked_prompt, answer_ids, layer)
    logpm, _ = _teacher_forced(lm, mismatched_prompt, answer_ids, layer)
    target = torch.tensor(answer_ids, device=logp.device)[:, None]
    chosen, chosen0, chosenm = (lp.gather(1, target)[:, 0].exp() for lp in (logp, logp0, logpm))
    entropy = -(logp.exp() * logp).sum(-1)
    cosine = torch.nn.functional.cosine_similarity(hidden.float(), hidden0.float(), dim=-1)
    return [
        TokenSignals(
            token=lm.tokenizer.decode([tok]),
            confidence=float(chosen[i]),
            entropy=float(entropy[i]),
            sensitivity=float(1 - cosine[i]),
            p_masked=float(chosen0[i]),
            p_mismatched=float(chosenm[i]),
        )
        for i, tok in enumerate(answer_ids)
    ]


# ---------------------------------------------------------------------------------------------- calibration
@dataclass
class Calibration:
    """Logistic-regression weights mapping the named ``features`` (standardised) to P(grounded)."""

    weights: list[float]
    bias: float
    mean: list[float]
    std: list[float]
    features: tuple[str, ...] = RELIABILITY_FEATURES

    def score(self, signals: TokenSignals) -> float:
        x = (np.array(signals.features(self.features)) - np.array(self.mean)) / np.array(self.std)
        return float(1 / (1 + np.exp(-(x @ np.array(self.weights) + self.bias))))

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": list(self.weights),
            "bias": self.bias,
            "mean": list(self.mean),
            "std": list(self.std),
            "features": list(self.features),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        return cls(data["weights"], data["bias"], data["mean"], data["std"], tuple(data["features"]))


@dataclass
class GroundingCalibration:
    """The two calibrated combinations: ``reliability`` (context signals) and ``meta`` (plus text signals)."""

    reliability: Calibration
    meta: Calibration

    def __post_init__(self) -> None:
        text = set(META_FEATURES) - set(RELIABILITY_FEATURES)
        if text & set(self.reliability.features):
            raise ValueError(f"the reliability must not use the text signals {sorted(text)}")

    def apply(self, signals: Sequence[TokenSignals]) -> None:
        """Set ``reliability`` and ``meta`` of every token."""
        for s in signals:
            s.reliability = self.reliability.score(s)
            s.meta = self.meta.score(s)

    def to_json(self) -> dict[str, Any]:
        return {"reliability": self.reliability.to_json(), "meta": self.meta.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GroundingCalibration:
        return cls(Calibration.from_json(data["reliability"]), Calibration.from_json(data["meta"]))


def default_calibration() -> GroundingCalibration:
    """The calibrations fitted by ``scripts/grounding_experiment.py --write-calibration`` on SmolLM2 (80 items,
    seed 0; shipped with embodia)."""
    data = json.loads(
        resources.files("embodia.sim_assets").joinpath("agents/grounding_calibration.json").read_text()
    )
    return GroundingCalibration.from_json(data)


def fit_calibration(
    signals: Sequence[TokenSignals],
    grounded: Sequence[bool],
    features: Sequence[str] = RELIABILITY_FEATURES,
    l2: float = 1e-2,
    steps: int = 500,
) -> Calibration:
    """Logistic regression of ``grounded`` on the standardised ``features`` (full-batch gradient descent)."""
    x = np.array([s.features(features) for s in signals], dtype=np.float64)
    y = np.array(grounded, dtype=np.float64)
    mean, std = x.mean(0), x.std(0) + 1e-8
    x = (x - mean) / std
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= 0.5 * (x.T @ (p - y) / len(y) + l2 * w)
        b -= 0.5 * float((p - y).mean())
    return Calibration(w.tolist(), b, mean.tolist(), std.tolist(), tuple(features))


def fit_calibrations(signals: Sequence[TokenSignals], grounded: Sequence[bool]) -> GroundingCalibration:
    """Both combinations fitted on the same tokens: reliability on the context signals, META on all."""
    return GroundingCalibration(
        fit_calibration(signals, grounded, RELIABILITY_FEATURES),
        fit_calibration(signals, grounded, META_FEATURES),
    )


def lowest_count(n_tokens: int, fraction: float = LOWEST_FRACTION) -> int:
    """k = ceil(fraction * T), at least 1 (exact for decimal fractions: ceil(0.1 * 30) = 3)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    return max(1, math.ceil(Fraction(str(fraction)) * n_tokens))


def sentence_score(scores: Sequence[float], fraction: float = LOWEST_FRACTION) -> float:
    """Mean of the ``ceil(fraction * T)`` lowest token scores (1.0 for an empty sentence)."""
    if not scores:
        return 1.0
    lowest = sorted(scores)[: lowest_count(len(scores), fraction)]
    return sum(lowest) / len(lowest)


def auc(scores: Sequence[float], positives: Sequence[bool]) -> float:
    """Area under the ROC curve of ``scores`` for detecting ``positives`` (ties count one half)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positives, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


# ---------------------------------------------------------------------------------------------- the task
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


def answer_tokens(lm: LocalLM, prompt: str, max_new_tokens: int = 10) -> list[int]:
    """Greedy answer ids, cut at the end of the first line / sentence."""
    ids = torch.tensor([lm.encode(prompt)], device=lm.device)
    with torch.no_grad():
        out = lm.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=lm.tokenizer.pad_token_id,
            top_p=None,
            top_k=None,
        )
    new = out[0, ids.shape[1] :].tolist()
    kept = []
    for tok in new:
        text = lm.tokenizer.decode([tok])
        if tok == lm.tokenizer.eos_token_id or "\n" in text or tok in lm.tokenizer.all_special_ids:
            break
        kept.append(tok)
        if text.strip().endswith("."):
            break
    return kept


def _content(token: str) -> str:
    return "".join(ch for ch in token.lower() if ch.isalnum())


_FILLER = {
    *("the", "a", "an", "is", "as", "in", "of", "to", "it", "this", "that", "answer"),
    *("question", "one", "word", "lives", "live", "works", "work", "has", "have", "pet", "job", "city"),
    *("favourite", "favorite", "colour", "color", "s", "does", "what", "which", "notes"),
}


def label_tokens(tokens: Sequence[str], reference: str, question: str = "") -> list[bool | None]:
    """True = hallucinated (content in neither the reference nor the question), False = grounded (part of the
    reference), None = not scored (punctuation, filler, words copied from the question such as the name)."""
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


@dataclass
class GroundingResult:
    tokens: int
    hallucinated_tokens: int
    sentences: int
    hallucinated_sentences: int
    token_auc: dict[str, float] = field(default_factory=dict)
    sentence_auc: dict[str, float] = field(default_factory=dict)
    """Sentence scores pooled over all T answer tokens (the paper's sentence score)."""
    sentence_auc_content: dict[str, float] = field(default_factory=dict)
    """The same pooled over the scored content tokens only."""
    calibration: dict[str, Any] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)


#: token-level detection scores (higher = more likely hallucinated)
_TOKEN_SCORES: dict[str, Callable[[TokenSignals], float]] = {
    "reliability": lambda s: -s.reliability,
    "meta": lambda s: -s.meta,
    "counterfactual log margin": lambda s: -s.log_margin,
    "counterfactual prob margin": lambda s: -s.prob_margin,
    "masked-only log margin": lambda s: -s.masked_log_margin,
    "sensitivity": lambda s: -s.sensitivity,
    "confidence": lambda s: -s.confidence,
    "entropy": lambda s: s.entropy,
}


def _sentence_scores(signals: Sequence[TokenSignals]) -> dict[str, float]:
    """Sentence-level detection scores (higher = more likely hallucinated) over the given tokens."""
    return {
        "reliability": -sentence_score([s.reliability for s in signals]),
        "meta": -sentence_score([s.meta for s in signals]),
        "confidence": -sum(s.confidence for s in signals) / len(signals),
        "entropy": sum(s.entropy for s in signals) / len(signals),
    }


def run_grounding(
    lm: LocalLM,
    n_items: int = 60,
    seed: int = 0,
    layer: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> GroundingResult:
    """Generate answers (half from degraded contexts), score tokens, fit both calibrations on the first half
    of the items and report detection AUCs on the second half.

    The mismatched context of item i is the notes of item i+1 (cyclically): another item's context, as the
    paper pairs a translation with another sample's video.
    """
    items = make_items(n_items, seed)
    records = []
    for i, item in enumerate(items):
        other = items[(i + 1) % len(items)].notes if len(items) > 1 else list(DEFAULT_MISMATCHED_NOTES)
        prompt = qa_prompt(lm, item.notes, item.question)
        masked = qa_prompt(lm, [], item.question)
        mismatched = qa_prompt(lm, other, item.question)
        ids = answer_tokens(lm, prompt)
        signals = token_signals(lm, prompt, masked, mismatched, ids, layer)
        labels = label_tokens([s.token for s in signals], item.reference, item.question)
        records.append((item, signals, labels))
        if progress is not None:
            progress(i + 1, n_items, f"{item.question} -> {lm.decode(ids)!r}")
    half = len(records) // 2
    calib = [(s, not y) for _, sig, lab in records[:half] for s, y in zip(sig, lab) if y is not None]
    calibration = fit_calibrations([s for s, _ in calib], [g for _, g in calib])
    tok_sig, tok_hal = [], []
    sent_all: dict[str, list[float]] = {}
    sent_content: dict[str, list[float]] = {}
    sent_hal = []
    examples = []
    for item, signals, labels in records[half:]:
        calibration.apply(signals)
        content = [(s, y) for s, y in zip(signals, labels) if y is not None]
        tok_sig += [s for s, _ in content]
        tok_hal += [y for _, y in content]
        if content:
            # an answer is hallucinated when it does not give the reference (wrong or made up)
            sent_hal.append(item.reference.lower() not in "".join(s.token for s in signals).lower())
            for pooled, scores in ((signals, sent_all), ([s for s, _ in content], sent_content)):
                for name, value in _sentence_scores(pooled).items():
                    scores.setdefault(name, []).append(value)
        if len(examples) < 6:
            examples.append(
                {
                    "question": item.question,
                    "degraded": item.degraded,
                    "reference": item.reference,
                    "answer": "".join(s.token for s in signals),
                    "reliability": [round(s.reliability, 3) for s in signals],
                    "meta": [round(s.meta, 3) for s in signals],
                }
            )
    return GroundingResult(
        tokens=len(tok_sig),
        hallucinated_tokens=int(sum(tok_hal)),
        sentences=len(sent_hal),
        hallucinated_sentences=int(sum(sent_hal)),
        token_auc={name: auc([f(s) for s in tok_sig], tok_hal) for name, f in _TOKEN_SCORES.items()},
        sentence_auc={k: auc(v, sent_hal) for k, v in sent_all.items()},
        sentence_auc_content={k: auc(v, sent_hal) for k, v in sent_content.items()},
        calibration=calibration.to_json(),
        examples=examples,
    )
