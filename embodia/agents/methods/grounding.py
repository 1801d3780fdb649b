"""Grounding reliability: which generated tokens are grounded in the context (ICLR 2026, sign-language MT).

A model generates y from a context c (in sign-language translation c is the video; in the text analogue
here, the notes an LM answers from). A token is grounded if it depends on c; a hallucinated token comes
from the language prior. For each generated token y_t, teacher-forced on the model's own output, with
c_0 the context masked out (the notes removed):

    confidence      p_t   = p(y_t | c, y_<t)
    entropy         H_t   = H(p(. | c, y_<t))
    counterfactual  d_t   = log p(y_t | c, y_<t) - log p(y_t | c_0, y_<t)          (contrastive evidence)
    sensitivity     s_t   = 1 - cos(h_t(c), h_t(c_0))     h_t: hidden state at layer l of the decoder
                                                          (feature change when the input is masked)
    reliability     r_t   = sigmoid(w . [d_t, s_t, log p_t] + b)     w, b fitted by logistic regression
                                                                    on a calibration split
    sentence score  R     = mean of the k lowest r_t                 (the least reliable tokens decide)

The experiment (:func:`run_grounding`) induces hallucinations on purpose: for half the questions the
note that answers them is removed from the context, so whatever the model answers is not grounded.
Token labels come from the reference answer (a generated content word that is neither part of it nor
copied from the question is hallucinated); an answer is hallucinated when it does not contain the
reference. The detection AUCs of reliability are compared with confidence and entropy alone.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import torch

from embodia.agents.llm import LocalLM

FEATURES = ("counterfactual", "sensitivity", "log_confidence")


# ---------------------------------------------------------------------------------------------- signals
@dataclass
class TokenSignals:
    token: str
    confidence: float
    entropy: float
    counterfactual: float
    sensitivity: float
    reliability: float = float("nan")

    def features(self) -> list[float]:
        return [self.counterfactual, self.sensitivity, math.log(max(self.confidence, 1e-12))]


def _teacher_forced(lm: LocalLM, prompt: str, answer_ids: list[int], layer: int):
    prompt_ids = lm.encode(prompt)
    ids = torch.tensor([prompt_ids + answer_ids])
    with torch.no_grad():
        out = lm.model(ids, output_hidden_states=True)
    n = len(prompt_ids)
    logits = out.logits[0, n - 1 : n - 1 + len(answer_ids)].float()
    hidden = out.hidden_states[layer + 1][0, n - 1 : n - 1 + len(answer_ids)]
    return torch.log_softmax(logits, -1), hidden


def token_signals(
    lm: LocalLM, prompt: str, masked_prompt: str, answer_ids: Sequence[int], layer: int | None = None
) -> list[TokenSignals]:
    """Signals of every answer token given the real prompt and the prompt with its context masked.

    The hidden state compared is the one that predicts the token (position t-1), at ``layer``
    (default: two thirds of the way up).
    """
    answer_ids = list(answer_ids)
    if not answer_ids:
        return []
    layer = (2 * lm.num_layers) // 3 if layer is None else layer
    logp, hidden = _teacher_forced(lm, prompt, answer_ids, layer)
    logp0, hidden0 = _teacher_forced(lm, masked_prompt, answer_ids, layer)
    target = torch.tensor(answer_ids)
    chosen = logp.gather(1, target[:, None])[:, 0]
    chosen0 = logp0.gather(1, target[:, None])[:, 0]
    entropy = -(logp.exp() * logp).sum(-1)
    cosine = torch.nn.functional.cosine_similarity(hidden.float(), hidden0.float(), dim=-1)
    return [
        TokenSignals(
            token=lm.tokenizer.decode([tok]),
            confidence=float(chosen[i].exp()),
            entropy=float(entropy[i]),
            counterfactual=float(chosen[i] - chosen0[i]),
            sensitivity=float(1 - cosine[i]),
        )
        for i, tok in enumerate(answer_ids)
    ]


@dataclass
class Calibration:
    """Logistic-regression weights mapping :data:`FEATURES` (standardised) to P(grounded)."""

    weights: list[float]
    bias: float
    mean: list[float]
    std: list[float]
    features: tuple[str, ...] = FEATURES

    def reliability(self, signals: TokenSignals) -> float:
        x = (np.array(signals.features()) - np.array(self.mean)) / np.array(self.std)
        return float(1 / (1 + np.exp(-(x @ np.array(self.weights) + self.bias))))

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": self.weights,
            "bias": self.bias,
            "mean": self.mean,
            "std": self.std,
            "features": list(self.features),
        }


def default_calibration() -> Calibration:
    """The calibration fitted by ``scripts/grounding_experiment.py`` on SmolLM2 (shipped with embodia)."""
    data = json.loads(
        resources.files("embodia.sim_assets").joinpath("agents/grounding_calibration.json").read_text()
    )
    return Calibration(data["weights"], data["bias"], data["mean"], data["std"], tuple(data["features"]))


def fit_calibration(
    signals: Sequence[TokenSignals], grounded: Sequence[bool], l2: float = 1e-2, steps: int = 500
) -> Calibration:
    """Logistic regression of ``grounded`` on the standardised features (full-batch gradient descent)."""
    x = np.array([s.features() for s in signals], dtype=np.float64)
    y = np.array(grounded, dtype=np.float64)
    mean, std = x.mean(0), x.std(0) + 1e-8
    x = (x - mean) / std
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= 0.5 * (x.T @ (p - y) / len(y) + l2 * w)
        b -= 0.5 * float((p - y).mean())
    return Calibration(w.tolist(), b, mean.tolist(), std.tolist())


def sentence_score(reliabilities: Sequence[float], k: int = 2) -> float:
    """Mean of the ``k`` lowest token reliabilities (1.0 for an empty sentence)."""
    if not reliabilities:
        return 1.0
    lowest = sorted(reliabilities)[:k]
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
    "Mara",
    "Teo",
    "Ilka",
    "Bruno",
    "Sven",
    "Nadia",
    "Omar",
    "Lina",
    "Pavel",
    "Rosa",
    "Ugo",
    "Vera",
    "Kofi",
    "Elin",
    "Dario",
    "Freya",
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
    ids = torch.tensor([lm.encode(prompt)])
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
    "the",
    "a",
    "an",
    "is",
    "as",
    "in",
    "of",
    "to",
    "it",
    "this",
    "that",
    "answer",
    "question",
    "one",
    "word",
    "lives",
    "live",
    "works",
    "work",
    "has",
    "have",
    "pet",
    "job",
    "city",
    "favourite",
    "favorite",
    "colour",
    "color",
    "s",
    "does",
    "what",
    "which",
    "notes",
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
    calibration: dict[str, Any] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)


def run_grounding(
    lm: LocalLM,
    n_items: int = 60,
    seed: int = 0,
    layer: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> GroundingResult:
    """Generate answers (half from degraded contexts), score tokens, fit the calibration on the first half
    of the items and report detection AUCs on the second half."""
    items = make_items(n_items, seed)
    records = []
    for i, item in enumerate(items):
        prompt = qa_prompt(lm, item.notes, item.question)
        masked = qa_prompt(lm, [], item.question)
        ids = answer_tokens(lm, prompt)
        signals = token_signals(lm, prompt, masked, ids, layer)
        labels = label_tokens([s.token for s in signals], item.reference, item.question)
        records.append((item, signals, labels))
        if progress is not None:
            progress(i + 1, n_items, f"{item.question} -> {lm.decode(ids)!r}")
    half = len(records) // 2
    calib_sig = [s for _, sig, lab in records[:half] for s, y in zip(sig, lab) if y is not None]
    calib_lab = [not y for _, sig, lab in records[:half] for s, y in zip(sig, lab) if y is not None]
    calibration = fit_calibration(calib_sig, calib_lab)
    test = records[half:]
    tok_sig, tok_hal = [], []
    sent_scores: dict[str, list[float]] = {"reliability": [], "confidence": [], "entropy": []}
    sent_hal = []
    examples = []
    for item, signals, labels in test:
        for s in signals:
            s.reliability = calibration.reliability(s)
        content = [(s, y) for s, y in zip(signals, labels) if y is not None]
        tok_sig += [s for s, _ in content]
        tok_hal += [y for _, y in content]
        if content:
            # an answer is hallucinated when it does not give the reference (wrong or made up)
            sent_hal.append(item.reference.lower() not in "".join(s.token for s in signals).lower())
            sent_scores["reliability"].append(-sentence_score([s.reliability for s, _ in content]))
            sent_scores["confidence"].append(-sum(s.confidence for s, _ in content) / len(content))
            sent_scores["entropy"].append(sum(s.entropy for s, _ in content) / len(content))
        if len(examples) < 6:
            examples.append(
                {
                    "question": item.question,
                    "degraded": item.degraded,
                    "reference": item.reference,
                    "answer": "".join(s.token for s in signals),
                    "reliability": [round(s.reliability, 3) for s in signals],
                }
            )
    token_auc = {
        "reliability": auc([-s.reliability for s in tok_sig], tok_hal),
        "counterfactual": auc([-s.counterfactual for s in tok_sig], tok_hal),
        "sensitivity": auc([-s.sensitivity for s in tok_sig], tok_hal),
        "confidence": auc([-s.confidence for s in tok_sig], tok_hal),
        "entropy": auc([s.entropy for s in tok_sig], tok_hal),
    }
    return GroundingResult(
        tokens=len(tok_sig),
        hallucinated_tokens=int(sum(tok_hal)),
        sentences=len(sent_hal),
        hallucinated_sentences=int(sum(sent_hal)),
        token_auc=token_auc,
        sentence_auc={k: auc(v, sent_hal) for k, v in sent_scores.items()},
        calibration=calibration.to_json(),
        examples=examples,
    )
