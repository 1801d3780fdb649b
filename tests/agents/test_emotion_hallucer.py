from __future__ import annotations

import json

import pytest

from embodia.agents.llm import load_lm
from embodia.agents.methods.emotion_hallucer import (
    Answerer,
    PairSetError,
    Question,
    QuestionPair,
    evaluate,
    load_pairs,
    pair_metrics,
    parse_yes_no,
)
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script


def _pairs(n: int) -> list[QuestionPair]:
    return [
        QuestionPair(
            str(i),
            "knowledge" if i % 2 else "perception",
            Question(f"b{i}?", True),
            Question(f"h{i}?", False),
        )
        for i in range(n)
    ]


def test_paired_metrics():
    pairs = _pairs(4)
    always_yes = pair_metrics(pairs, [(True, True)] * 4)
    assert (always_yes.basic_accuracy, always_yes.hallucinated_accuracy, always_yes.pair_accuracy) == (
        1,
        0,
        0,
    )
    assert always_yes.yes_ratio == 1 and always_yes.yes_bias == pytest.approx(0.5)
    assert always_yes.false_positive_ratio == 1.0
    mixed = pair_metrics(pairs, [(True, False), (True, True), (False, False), (None, False)])
    assert mixed.pair_accuracy == 0.25 and mixed.basic_accuracy == 0.5 and mixed.hallucinated_accuracy == 0.75
    assert mixed.unanswered == 1 and mixed.yes_ratio == pytest.approx(3 / 8)
    assert mixed.false_positive_ratio == pytest.approx(1 / 2)  # pair 1's "yes" and pair 2's "no"
    assert mixed.by_category["perception"]["pair_accuracy"] == 0.5  # pairs 0 and 2
    assert mixed.by_category["knowledge"]["pairs"] == 2


def test_false_positive_ratio_is_the_share_of_wrong_answers_that_are_yes():
    """r_fp = wrong "yes" / wrong answers, beside Pct_diff (``yes_bias``); overall and per category."""
    pairs = _pairs(4)  # basic: label yes, hallucinated: label no; categories perception 0, 2 / knowledge 1, 3
    # wrong answers: pair 0 hallucinated yes (FP), pair 1 hallucinated yes (FP), pair 2 basic no (FN) and
    # hallucinated yes (FP); pair 3 is right
    m = pair_metrics(pairs, [(True, True), (True, True), (False, True), (True, False)])
    assert m.false_positive_ratio == pytest.approx(3 / 4)
    assert m.yes_ratio == pytest.approx(6 / 8) and m.yes_bias == pytest.approx(6 / 8 - 1 / 2)
    assert m.by_category["perception"]["false_positive_ratio"] == pytest.approx(2 / 3)
    assert m.by_category["knowledge"]["false_positive_ratio"] == pytest.approx(1.0)
    assert m.by_category["knowledge"]["yes_bias"] == pytest.approx(3 / 4 - 1 / 2)
    # the always-"no" answerer errs only by false negatives; an unanswered question is not a "yes" or "no"
    always_no = pair_metrics(pairs, [(False, False), (False, False), (None, False), (True, False)])
    assert always_no.false_positive_ratio == 0.0 and always_no.unanswered == 1
    assert always_no.yes_bias == pytest.approx(1 / 8 - 1 / 2)
    # no wrong answers: undefined (None, as JSON null)
    perfect = pair_metrics(pairs, [(True, False)] * 4)
    assert perfect.false_positive_ratio is None
    assert perfect.by_category["knowledge"]["false_positive_ratio"] is None


def test_loaders(tmp_path):
    builtin = load_pairs()
    assert len(builtin) == 32 and {p.category for p in builtin} == {"knowledge", "perception"}
    assert all(p.basic.answer and not p.hallucinated.answer for p in builtin)
    assert all(p.context for p in builtin if p.category == "perception")

    flat = [
        {
            "pair_id": "x",
            "type": "basic",
            "question": "Is fear an emotion?",
            "answer": "Yes",
            "category": "k",
        },
        {
            "pair_id": "x",
            "type": "hallucinated",
            "question": "Is fear a colour?",
            "answer": "no",
            "category": "k",
        },
    ]
    (tmp_path / "flat.json").write_text(json.dumps(flat))
    (tmp_path / "flat.jsonl").write_text("\n".join(json.dumps(r) for r in flat) + "\n")
    for name in ("flat.json", "flat.jsonl"):
        (pair,) = load_pairs(tmp_path / name)
        assert pair.basic == Question("Is fear an emotion?", True) and pair.hallucinated.answer is False

    (tmp_path / "half.json").write_text(json.dumps(flat[:1]))
    with pytest.raises(PairSetError, match="pair 'x' has no hallucinated question"):
        load_pairs(tmp_path / "half.json")
    (tmp_path / "maybe.json").write_text(
        json.dumps(
            {
                "pairs": [
                    {
                        "basic": {"question": "q", "answer": "maybe"},
                        "hallucinated": {"question": "q", "answer": "no"},
                    }
                ]
            }
        )
    )
    with pytest.raises(PairSetError, match="answer must be yes or no, got 'maybe'"):
        load_pairs(tmp_path / "maybe.json")
    with pytest.raises(PairSetError, match="no pair file"):
        load_pairs(tmp_path / "missing.json")


def test_parse_yes_no():
    assert parse_yes_no("Yes, it is.") is True
    assert parse_yes_no("No. Because yes is wrong") is False
    assert parse_yes_no("I cannot tell") is None
    assert parse_yes_no("Nobody knows; yes") is True  # whole words only


def test_pep_mek_over_a_generate_only_endpoint(chat_server):
    """PEP-MEK wraps any back end: here SmolLM2 behind an OpenAI-compatible HTTP server (answers parsed)."""
    lm = load_lm(chat_server.url)
    pair = load_pairs()[-1]
    before = len(chat_server.requests)
    answerer = Answerer(lm, pep_mek=True, max_new_tokens=8)
    answer = answerer(pair, pair.basic)
    sent = chat_server.requests[before:]
    # extract knowledge, predict, explain, re-predict
    assert len(sent) == 4
    assert "facts about emotions" in sent[0]["messages"][0]["content"]
    assert "Knowledge:" in sent[1]["messages"][0]["content"]
    assert "A first answer was" in sent[2]["messages"][0]["content"]
    assert "Explanation:" in sent[3]["messages"][0]["content"]
    assert answer in (True, False, None)
    assert answerer.transcripts[-1]["answer"] is answer


def test_direct_evaluation_on_smollm2(smol):
    pairs = load_pairs()[:4]
    metrics, transcripts = evaluate(smol, pairs)
    assert metrics.pairs == 4 and len(transcripts) == 8 and metrics.unanswered == 0
    # answers come from Yes/No log-probabilities, so every question gets one
    assert 0 <= metrics.pair_accuracy <= min(metrics.basic_accuracy, metrics.hallucinated_accuracy)


def test_quick_script(tmp_path):
    out, results = tmp_path / "eh.json", tmp_path / "emotion_hallucer.json"
    assert (
        run_script(
            "emotion_hallucer_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results)
        )
        == 0
    )
    committed = read_results(RESULTS_DIR / "methods" / "emotion_hallucer.json")
    assert layout_differences(read_results(results), committed) == []
    payload = json.loads(out.read_text())
    assert payload["direct"]["metrics"]["pairs"] == 3 and payload["PEP-MEK"]["metrics"]["pairs"] == 3
    assert "false_positive_ratio" in payload["direct"]["metrics"]
    assert "knowledge" in payload["PEP-MEK"]["transcripts"][0]
