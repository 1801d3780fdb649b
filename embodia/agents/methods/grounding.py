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

The experiment that induces hallucinations and measures the detection AUCs is
:mod:`embodia.agents.methods.grounding_task`; this module holds the signals, the calibrations, the sentence
score, the AUC and the greedy answers (batched: :func:`answer_tokens_batch`, :func:`token_signals_batch`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
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


def _teacher_forced_batch(
    lm: LocalLM, prompts: Sequence[str], answers: Sequence[Sequence[int]], layer: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per (prompt, answer): log-probabilities over the vocabulary and the layer's hidden states at the answer
    positions, all rows in one right-padded forward pass (causal attention: padding after a row's last
    token changes nothing before it)."""
    prompt_ids = [lm.encode(p) for p in prompts]
    ids, mask = lm.batch_ids([p + list(a) for p, a in zip(prompt_ids, answers)])
    with torch.no_grad():
        out = lm.model(ids, attention_mask=mask, output_hidden_states=True)
    rows = []
    for r, (p, a) in enumerate(zip(prompt_ids, answers)):
        n, t = len(p), len(a)
        logits = out.logits[r, n - 1 : n - 1 + t].float()
        rows.append((torch.log_softmax(logits, -1), out.hidden_states[layer + 1][r, n - 1 : n - 1 + t]))
    return rows


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
    return token_signals_batch(lm, [(prompt, masked_prompt, mismatched_prompt)], [answer_ids], layer)[0]


def token_signals_batch(
    lm: LocalLM,
    prompts: Sequence[tuple[str, str, str]],
    answers: Sequence[Sequence[int]],
    layer: int | None = None,
) -> list[list[TokenSignals]]:
    """:func:`token_signals` of many answers: ``prompts[i]`` is (real, masked, mismatched) for ``answers[i]``;
    the 3 x len(answers) teacher-forced passes run as one batch."""
    layer = (2 * lm.num_layers) // 3 if layer is None else layer
    keep = [i for i, a in enumerate(answers) if len(a)]
    result: list[list[TokenSignals]] = [[] for _ in answers]
    if not keep:
        return result
    flat = [prompts[i][j] for i in keep for j in range(3)]
    passes = _teacher_forced_batch(lm, flat, [answers[i] for i in keep for _ in range(3)], layer)
    for k, i in enumerate(keep):
        (logp, hidden), (logp0, hidden0), (logpm, _) = passes[3 * k : 3 * k + 3]
        target = torch.tensor(list(answers[i]), device=logp.device)[:, None]
        chosen, chosen0, chosenm = (lp.gather(1, target)[:, 0].exp() for lp in (logp, logp0, logpm))
        entropy = -(logp.exp() * logp).sum(-1)
        cosine = torch.nn.functional.cosine_similarity(hidden.float(), hidden0.float(), dim=-1)
        result[i] = [
            TokenSignals(
                token=lm.tokenizer.decode([tok]),
                confidence=float(chosen[t]),
                entropy=float(entropy[t]),
                sensitivity=float(1 - cosine[t]),
                p_masked=float(chosen0[t]),
                p_mismatched=float(chosenm[t]),
            )
            for t, tok in enumerate(answers[i])
        ]
    return result


def answer_tokens(lm: LocalLM, prompt: str, max_new_tokens: int = 10) -> list[int]:
    """Greedy answer ids, cut at the end of the first line / sentence."""
    return answer_tokens_batch(lm, [prompt], max_new_tokens)[0]


def answer_tokens_batch(lm: LocalLM, prompts: Sequence[str], max_new_tokens: int = 10) -> list[list[int]]:
    """:func:`answer_tokens` of many prompts in one left-padded greedy generation."""
    encoded = [lm.encode(p) for p in prompts]
    width = max(len(e) for e in encoded)
    pad = int(lm.tokenizer.pad_token_id)
    ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded], device=lm.device)
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=lm.device)
    with torch.no_grad():
        out = lm.model.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad,
            top_p=None,
            top_k=None,
        )
    answers = []
    special = set(lm.tokenizer.all_special_ids)
    for row in out[:, width:].tolist():
        kept = []
        for tok in row:
            text = lm.tokenizer.decode([tok])
            if tok == lm.tokenizer.eos_token_id or "\n" in text or tok in special:
                break
            kept.append(tok)
            if text.strip().endswith("."):
                break
        answers.append(kept)
    return answers


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
    # average ranks over ties: a tie group occupying ranks i+1 .. i+c gets i + (c + 1) / 2
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    starts = np.cumsum(counts) - counts
    ranks = (starts + (counts + 1) / 2)[inverse]
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
