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
    answer_tokens,
    answer_tokens_batch,
    auc,
    fit_calibration,
    sentence_score,
    token_signals,
    token_signals_batch,
)
from embodia.agents.methods.grounding_task import (
    Answer,
    GroundingItem,
    evaluate,
    label_tokens,
    label_tokens_by_context,
    make_items,
    qa_prompt,
    sentence_hallucinated,
    word_spans,
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


def test_sentence_score_and_reference_labels():
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
    committed = read_results(RESULTS_DIR / "methods" / "grounding_relabelled.json")
    produced = read_results(results)
    assert layout_differences(produced, committed) == []
    assert produced["seeds"] == [0, 1]
    payload = json.loads(out.read_text())
    assert payload["config"]["items"] == 4 and payload["config"]["seeds"] == [0, 1]
    labellings = payload["result"]["labellings"]
    assert set(labellings) == {"construction", "reference"}
    for r in labellings.values():
        assert set(r["sentence_auc"]) == {
            "reliability",
            "meta",
            "counterfactual log margin",
            "confidence",
            "entropy",
        }
        assert r["sentences"] <= 4  # the second halves of two seeds of four questions
        for calibration in r["calibrations"]:
            assert calibration["reliability"]["features"] == ["sensitivity", "prob_margin", "log_margin"]
            assert calibration["meta"]["features"] == list(META_FEATURES)
    # by construction, exactly the degraded questions' answers are hallucinated (half of each seed's)
    examples = payload["result"]["examples"]
    assert all(
        e["labels_construction"] == label_tokens_by_context(e["tokens"], e["notes"], e["question"])
        for e in examples
    )


# ---------------------------------------------------------------------------------------------- labels by construction
def test_context_labels_by_hand():
    tokens = [" Omar", " lives", " in", " Lis", "bon", "."]
    assert word_spans(tokens) == [0, 1, 2, 3, 3, 4]
    assert word_spans(["V", "era", "'s", " pl", "umber"]) == [0, 0, 1, 2, 2]
    question = "In which city does Omar live?"
    # Lisbon is in the supplied notes (for Teo, the wrong person): copied from the context, so grounded
    notes = ["Teo lives in Lisbon.", "Ilka has a pet cat."]
    assert label_tokens_by_context(tokens, notes, question) == [None, None, None, False, False, None]
    # the reference labels call the same copied word hallucinated, and score subword pieces one by one
    assert label_tokens(tokens, "Oslo", question) == [None, None, None, True, True, None]
    # a word in no note: hallucinated, every piece of it
    assert label_tokens_by_context([" Par", "is"], notes, question) == [True, True]
    # "Bruno" split as B / run / o: one word, copied from the question, not scored (the old labels scored "run")
    assert label_tokens_by_context(["B", "run", "o"], notes, "What is Bruno's job?") == [None, None, None]
    assert label_tokens(["B", "run", "o"], "chef", "What is Bruno's job?") == [None, True, None]


def test_sentence_labels_by_construction_ignore_the_answer():
    removed = GroundingItem(["Teo lives in Lisbon."], "In which city does Omar live?", "Oslo", degraded=True)
    kept = GroundingItem(["Omar lives in Oslo."], "In which city does Omar live?", "Oslo", degraded=False)
    # a right guess without the note is still ungrounded; a wrong answer with the note is not flagged
    assert sentence_hallucinated("construction", removed, "Oslo") is True
    assert sentence_hallucinated("construction", kept, "Paris") is False
    assert sentence_hallucinated("reference", removed, "Oslo") is False
    assert sentence_hallucinated("reference", kept, "Paris") is True
    with pytest.raises(ValueError, match="labelling"):
        sentence_hallucinated("other", kept, "Oslo")


def _synthetic_answers(seed: int, n: int = 20) -> list[Answer]:
    """Answers whose grounded words have a large counterfactual margin and whose made-up words have none."""
    rng = np.random.default_rng(seed)
    answers = []
    for i in range(n):
        degraded = i % 2 == 0
        word = "Paris" if degraded else "Lisbon"
        item = GroundingItem(["Omar lives in Lisbon."], "Where does Omar live?", "Lisbon", degraded)
        p = 0.7  # the same confidence everywhere: no text signal
        p_masked = float(rng.uniform(0.5, 0.9) if degraded else rng.uniform(0.01, 0.1))
        sens = float(rng.uniform(0.0, 0.06) if degraded else rng.uniform(0.04, 0.1))  # overlapping
        answers.append(Answer(seed, item, [TokenSignals(" " + word, p, 1.0, sens, p_masked, 0.01)]))
    return answers


def test_evaluation_separates_a_context_signal_with_intervals():
    answers = [_synthetic_answers(0), _synthetic_answers(1)]
    result = evaluate(answers, "construction", bootstrap=200)
    # second halves: 10 answers per seed, half of them degraded (one made-up word each)
    assert (result.tokens, result.hallucinated_tokens, result.sentences, result.hallucinated_sentences) == (
        20,
        10,
        20,
        10,
    )
    for name in ("reliability", "counterfactual log margin"):
        cell = result.token_auc[name]
        assert cell["value"] == 1.0 and cell["low"] == 1.0
    assert result.sentence_auc["reliability"]["value"] == 1.0
    # the overlapping sensitivity: better than chance, short of perfect, inside a real interval
    sens = result.token_auc["sensitivity"]
    assert 0.6 < sens["value"] < 1.0 and sens["low"] < sens["value"] <= sens["high"]
    # the same confidence everywhere: exactly chance
    assert (
        result.token_auc["confidence"]["value"] == 0.5 and result.sentence_auc["confidence"]["value"] == 0.5
    )
    # the paired difference reliability - confidence, from the same resamples
    assert result.difference["token"]["value"] == pytest.approx(0.5)
    assert result.difference["token"]["low"] <= 0.5 <= result.difference["token"]["high"]
    assert [row["seed"] for row in result.per_seed] == [0, 1]
    assert len(result.calibrations) == 2


# ---------------------------------------------------------------------------------------------- batching
def test_batched_passes_match_one_at_a_time(smol):
    question = "In which city does Mara live?"
    short = (qa_prompt(smol, ["Mara lives in Lisbon."], question), qa_prompt(smol, [], question))
    long = (
        qa_prompt(smol, ["Teo works as a pilot.", "Mara lives in Lisbon.", "Ilka has a pet cat."], question),
        qa_prompt(smol, [], question),
    )
    mismatched = qa_prompt(smol, DEFAULT_MISMATCHED_NOTES, question)
    answers = [smol.encode("Lisbon"), smol.encode("Mara lives in Oslo.")]
    batch = token_signals_batch(smol, [(*short, mismatched), (*long, mismatched)], answers)
    for prompts, answer, got in zip((short, long), answers, batch):
        alone = token_signals(smol, *prompts, mismatched, answer)
        assert [s.token for s in got] == [s.token for s in alone]
        for a, b in zip(got, alone):
            assert (a.confidence, a.p_masked, a.p_mismatched) == pytest.approx(
                (b.confidence, b.p_masked, b.p_mismatched), rel=1e-3, abs=1e-6
            )
            assert a.sensitivity == pytest.approx(b.sensitivity, abs=1e-4)
    assert answer_tokens_batch(smol, [short[0], long[0]]) == [
        answer_tokens(smol, short[0]),
        answer_tokens(smol, long[0]),
    ]
