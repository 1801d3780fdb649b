from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from embodia.agents.methods.grounding import (
    DEFAULT_MISMATCHED_NOTES,
    META_FEATURES,
    TokenSignals,
    auc,
    fit_calibration,
    label_tokens,
    make_items,
    qa_prompt,
    sentence_score,
    token_signals,
)
from embodia.agents.tools import call_tool
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script


def test_auc_matches_pairwise_counting():
    rng = random.Random(0)
    scores = [rng.choice([0.1, 0.2, 0.3, 0.5, 0.9]) for _ in range(40)]
    labels = [rng.random() < 0.4 for _ in range(40)]
    pairs = [
        (p, n)
        for p, n in itertools.product(
            [s for s, y in zip(scores, labels) if y], [s for s, y in zip(scores, labels) if not y]
        )
    ]
    expected = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
    assert auc(scores, labels) == pytest.approx(expected)
    assert auc([1, 2, 3], [False, False, True]) == 1.0 and np.isnan(auc([1, 2], [True, True]))


def test_calibration_learns_a_separable_signal():
    rng = np.random.default_rng(0)
    signals, grounded = [], []
    for _ in range(200):
        g = bool(rng.random() < 0.5)
        signals.append(
            TokenSignals(
                "t",
                confidence=0.5,
                entropy=1.0,
                sensitivity=float(rng.normal(0.3 if g else 0.1, 0.05)),
                p_masked=float(rng.uniform(0.01, 0.1) if g else rng.uniform(0.3, 0.6)),
                p_mismatched=0.05,
            )
        )
        grounded.append(g)
    calibration = fit_calibration(signals, grounded)
    assert calibration.features == ("sensitivity", "prob_margin", "log_margin")
    reliability = [calibration.score(s) for s in signals]
    assert auc(reliability, grounded) > 0.95
    assert all(w > 0 for w in calibration.weights)
    meta = fit_calibration(signals, grounded, META_FEATURES)
    assert meta.features == META_FEATURES and auc([meta.score(s) for s in signals], grounded) > 0.95


def test_sentence_score_and_labels():
    assert sentence_score([0.9, 0.2, 0.8, 0.4]) == pytest.approx(0.2)  # T = 4: ceil(0.4) = 1 token
    assert sentence_score([0.9, 0.2, 0.8, 0.4], fraction=0.5) == pytest.approx(0.3)
    assert sentence_score([]) == 1.0
    assert label_tokens([" Lis", "bon", ".", " Paris"], "Lisbon") == [False, False, None, True]
    question = "In which city does Mara live?"
    assert label_tokens([" Mara", " lives", " in", " Oslo"], "Lisbon", question) == [None, None, None, True]


def test_masking_the_context_moves_grounded_tokens_more(smol):
    notes = ["Mara lives in Lisbon.", "Teo works as a pilot."]
    question = "In which city does Mara live?"
    prompt, masked = qa_prompt(smol, notes, question), qa_prompt(smol, [], question)
    mismatched = qa_prompt(smol, DEFAULT_MISMATCHED_NOTES, question)
    grounded = token_signals(smol, prompt, masked, mismatched, smol.encode("Lisbon"))
    # the same answer when the note is not there: nothing in the context supports it
    degraded_prompt = qa_prompt(smol, notes[1:], question)
    ungrounded = token_signals(smol, degraded_prompt, masked, mismatched, smol.encode("Lisbon"))
    # summed over the answer's tokens ("L", "is", "bon"): the sentence-level evidence
    support = sum(t.log_margin for t in grounded)
    assert support > 3.0 and support > sum(t.log_margin for t in ungrounded) + 3.0
    assert sum(t.prob_margin for t in grounded) > sum(t.prob_margin for t in ungrounded)
    assert sum(t.sensitivity for t in grounded) > sum(t.sensitivity for t in ungrounded)


def test_items_degrade_on_purpose():
    items = make_items(10, seed=1)
    assert sum(i.degraded for i in items) == 5
    for item in items:
        assert any(item.reference in note for note in item.notes) != item.degraded


def test_tool_and_quick_script(smol, tmp_path):
    result = call_tool(
        "grounding_reliability",
        {
            "context": "Ilka has a pet parrot. Omar lives in Oslo.",
            "question": "What pet does Ilka have? Answer in one word.",
            "answer": "parrot",
        },
    )
    assert [t["token"] for t in result["tokens"]] == [
        smol.tokenizer.decode([i]) for i in smol.encode("parrot")
    ]
    tokens = result["tokens"]
    assert all(0.0 <= t["reliability"] <= 1.0 and 0.0 <= t["meta"] <= 1.0 for t in tokens)
    # T <= 10 answer tokens: ceil(0.1 T) = 1, the sentence scores are the least reliable token's
    assert result["lowest_tokens"] == 1
    assert result["sentence_reliability"] == pytest.approx(min(t["reliability"] for t in tokens))
    assert result["sentence_meta"] == pytest.approx(min(t["meta"] for t in tokens))
    for t in tokens:
        p_cf = max(t["p_masked"], t["p_mismatched"])
        assert t["prob_margin"] == pytest.approx(t["confidence"] - p_cf)

    out, results = tmp_path / "grounding.json", tmp_path / "grounding_results.json"
    assert (
        run_script("grounding_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results))
        == 0
    )
    committed = read_results(RESULTS_DIR / "methods" / "grounding.json")
    assert layout_differences(read_results(results), committed) == []
    payload = json.loads(out.read_text())
    result = payload["result"]
    assert payload["items"] == 8 and set(result["token_auc"]) >= {"reliability", "meta", "confidence"}
    assert set(result["sentence_auc"]) == {"reliability", "meta", "confidence", "entropy"}
    calibration = result["calibration"]
    assert calibration["reliability"]["features"] == ["sensitivity", "prob_margin", "log_margin"]
    assert calibration["meta"]["features"] == list(META_FEATURES)
