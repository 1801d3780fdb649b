"""The grounding scores as "Grounding or Guessing?" (arXiv:2510.18439) defines them, checked by hand.

- the reliability combines only the context signals; confidence and entropy enter only META;
- the counterfactual probability is max(masked, mismatched), with probability and log-probability margins;
- the sentence score pools the ceil(0.1 T) lowest token scores.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from embodia.agents.methods.grounding import (
    META_FEATURES,
    RELIABILITY_FEATURES,
    Calibration,
    GroundingCalibration,
    TokenSignals,
    counterfactual_margins,
    default_calibration,
    fit_calibrations,
    lowest_count,
    sentence_score,
    token_signals,
)
from embodia.agents.methods.grounding_task import qa_prompt


def _signals(confidence: float, entropy: float, p_masked: float = 0.2, sensitivity: float = 0.1):
    return TokenSignals(
        "t",
        confidence=confidence,
        entropy=entropy,
        sensitivity=sensitivity,
        p_masked=p_masked,
        p_mismatched=0.1,
    )


# ---------------------------------------------------------------------------------------------- reliability / META
def test_reliability_has_no_text_signal_and_meta_has():
    assert not {"log_confidence", "entropy"} & set(RELIABILITY_FEATURES)
    assert {"log_confidence", "entropy"} <= set(META_FEATURES)
    assert set(RELIABILITY_FEATURES) <= set(META_FEATURES)
    # text signals that predict the label perfectly, context signals that carry a weak signal
    rng = np.random.default_rng(0)
    signals, grounded = [], []
    for _ in range(300):
        g = bool(rng.random() < 0.5)
        signals.append(
            _signals(
                confidence=float(rng.uniform(0.6, 0.9) if g else rng.uniform(0.05, 0.3)),
                entropy=float(rng.uniform(0.1, 0.5) if g else rng.uniform(1.0, 3.0)),
                p_masked=float(rng.uniform(0.0, 0.5)),
                sensitivity=float(rng.normal(0.2 if g else 0.15, 0.1)),
            )
        )
        grounded.append(g)
    calibration = fit_calibrations(signals, grounded)
    assert calibration.reliability.features == RELIABILITY_FEATURES
    assert calibration.meta.features == META_FEATURES
    # changing only the entropy of a token moves META, never the reliability
    a = _signals(confidence=0.9, entropy=0.2)
    c = _signals(confidence=0.9, entropy=2.5)
    assert calibration.reliability.score(a) == calibration.reliability.score(c)
    assert calibration.meta.score(a) > calibration.meta.score(c) + 1e-3
    # the reliability never reads a text signal (confidence cannot change without moving the margins)
    blind = _TextBlind("t", 0.9, 0.2, 0.1, 0.2, 0.1)
    assert calibration.reliability.score(blind) == calibration.reliability.score(a)
    with pytest.raises(AssertionError, match="text signal"):
        calibration.meta.score(blind)


class _TextBlind(TokenSignals):
    """Token signals that refuse to give a text signal."""

    def feature(self, name: str) -> float:
        assert name not in ("log_confidence", "entropy"), f"text signal {name} read"
        return super().feature(name)


def test_a_reliability_calibration_with_text_signals_is_refused():
    cal = Calibration([1.0, 1.0], 0.0, [0.0, 0.0], [1.0, 1.0], ("sensitivity", "log_confidence"))
    meta = Calibration([0.0] * 5, 0.0, [0.0] * 5, [1.0] * 5, META_FEATURES)
    with pytest.raises(ValueError, match="text signals"):
        GroundingCalibration(cal, meta)


def test_default_calibration_is_two_combinations():
    calibration = default_calibration()
    assert calibration.reliability.features == RELIABILITY_FEATURES
    assert calibration.meta.features == META_FEATURES
    # fitted weights, not a neutral placeholder: the context signals move the reliability
    assert all(w != 0 for w in calibration.reliability.weights) and calibration.reliability.bias != 0
    token = _signals(confidence=0.8, entropy=0.5)
    calibration.apply([token])
    assert 0.0 < token.reliability < 1.0 and 0.0 < token.meta < 1.0


# ---------------------------------------------------------------------------------------------- counterfactual
def test_counterfactual_margins_by_hand():
    p = [0.5, 0.2, 0.9]
    p_masked = [0.1, 0.3, 0.95]
    p_mismatched = [0.25, 0.05, 0.5]
    p_cf, dp, dl = counterfactual_margins(p, p_masked, p_mismatched)
    assert p_cf.tolist() == pytest.approx([0.25, 0.3, 0.95])  # the mismatched, the masked, the masked
    assert dp.tolist() == pytest.approx([0.25, -0.1, -0.05])
    assert dl.tolist() == pytest.approx([math.log(2), math.log(2 / 3), math.log(0.9 / 0.95)])
    for i in range(3):
        s = TokenSignals("t", p[i], 1.0, 0.1, p_masked[i], p_mismatched[i])
        assert (s.p_counterfactual, s.prob_margin, s.log_margin) == pytest.approx((p_cf[i], dp[i], dl[i]))
        assert s.masked_log_margin == pytest.approx(math.log(p[i] / p_masked[i]))


def test_token_signals_take_the_larger_of_masked_and_mismatched(smol):
    question = "In which city does Mara live?"
    prompt = qa_prompt(smol, ["Mara lives in Lisbon.", "Teo works as a pilot."], question)
    masked = qa_prompt(smol, [], question)
    # another item's notes: "Lisbon" is there, for someone else
    mismatched = qa_prompt(smol, ["Teo lives in Lisbon.", "Ilka has a pet cat."], question)
    signals = token_signals(smol, prompt, masked, mismatched, smol.encode("Lisbon"))
    tokens, logp = smol.token_logprobs(prompt, "Lisbon")
    _, logp0 = smol.token_logprobs(masked, "Lisbon")
    _, logpm = smol.token_logprobs(mismatched, "Lisbon")
    assert [s.token for s in signals] == tokens
    p, p0, pm = np.exp(logp), np.exp(logp0), np.exp(logpm)
    for i, s in enumerate(signals):
        assert (s.confidence, s.p_masked, s.p_mismatched) == pytest.approx((p[i], p0[i], pm[i]), rel=1e-4)
        p_cf = max(p0[i], pm[i])
        assert s.prob_margin == pytest.approx(p[i] - p_cf, abs=1e-5)
        assert s.log_margin == pytest.approx(logp[i] - math.log(p_cf), abs=1e-4)
    # the mismatched context supports the copied city better than no context does: the max matters
    assert any(pm[i] > 2 * p0[i] for i in range(len(signals)))
    assert sum(s.log_margin for s in signals) < sum(s.masked_log_margin for s in signals) - 1.0


# ---------------------------------------------------------------------------------------------- sentence score
def test_sentence_score_pools_the_lowest_tenth():
    assert [lowest_count(t) for t in (1, 5, 10, 11, 20, 21, 30, 31, 100)] == [1, 1, 1, 2, 2, 3, 3, 4, 10]
    scores = [0.9 - 0.01 * i for i in range(30)]  # 0.90, 0.89, ..., 0.61
    # T = 30: ceil(3.0) = 3 lowest tokens (0.61, 0.62, 0.63), not 4 (0.1 * 30 is 3.0000000000000004 in floats)
    assert sentence_score(scores) == pytest.approx((0.61 + 0.62 + 0.63) / 3)
    # T = 31: ceil(3.1) = 4 lowest tokens
    assert sentence_score([*scores, 0.95]) == pytest.approx((0.61 + 0.62 + 0.63 + 0.64) / 4)
    # T = 7: one token, the least reliable one
    assert sentence_score([0.8, 0.3, 0.7, 0.9, 0.4, 0.6, 0.5]) == pytest.approx(0.3)
    # T = 15: two tokens
    assert sentence_score([0.5] * 13 + [0.1, 0.2]) == pytest.approx(0.15)
    assert sentence_score([]) == 1.0
    with pytest.raises(ValueError):
        sentence_score([0.5], fraction=0.0)
