"""EmotionHallucer: paired yes/no evaluation of emotion hallucinations, and PEP-MEK prompting.

Paper: B. Xing, X. Liu, G. Zhao, C. Liu, X. Fu and H. Kalviainen, "EmotionHallucer: Evaluating Emotion
Hallucinations in Multimodal Large Language Models", ICLR 2026, arXiv:2505.11405.

The benchmark asks each question twice, adversarially: a *basic* question about a true fact or a visible
emotion, and a *hallucinated* counterpart that states a plausible falsehood. With a_b, a_h in {0, 1} the
correctness of the two answers over N pairs, and yhat_q in {yes, no} the answer to question q:

    basic accuracy        = mean a_b
    hallucinated accuracy = mean a_h
    pair accuracy         = mean (a_b * a_h)        (the benchmark's score: a pair counts only if both are right)
    yes ratio             = #{q : yhat_q = yes} / 2N
    yes-percentage difference  Pct_diff = yes ratio - #{q : y_q = yes} / 2N      (``yes_bias``; 0: unbiased)
    false-positive ratio       r_fp = #{q : yhat_q = yes, y_q = no} / #{q : yhat_q != y_q}

The last two are the paper's bias measures (as in VideoHallucer): Pct_diff > 0 means the model says "yes"
more often than the labels do; r_fp is the share of the wrong answers that are a wrong "yes" (1: every
error is a false positive, 0: every error a false negative; undefined, ``None``, without wrong answers).
An unanswered question is wrong for the accuracies but is neither yes nor no, so it is left out of r_fp's
count of wrong answers (and counted in ``unanswered``). All of them are also reported per category.

PEP-MEK wraps any back end in four calls — extract knowledge, predict, explain, re-predict:

    K  = LM("what emotion knowledge / cues does answering q need?")
    y1 = LM(context, K, q -> yes/no)
    E  = LM(context, K, q, y1 -> short explanation)
    y  = LM(context, K, E, q -> final yes/no)

A yes/no answer is read from log-probabilities of "Yes" vs "No" when the back end gives them (local
models), otherwise parsed from the generated text (an unparseable answer counts as wrong).

The official EmotionHallucer data is not public; :func:`load_pairs` reads the pair form used here
(``{"pairs": [{"id", "category", "context"?, "basic": {"question", "answer"}, "hallucinated": {...}}]}``)
and a flat per-question form (``[{"pair_id", "type": "basic"|"hallucinated", "question", "answer",
"category"?, "context"?}]``, JSON list or JSON lines), the shape such yes/no benchmarks ship in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from embodia.core.errors import EmbodiaError

BUILTIN_PAIRS = "embodia-emotion-pairs"


class PairSetError(EmbodiaError, ValueError):
    """A pair file that is missing or not in a supported format."""


@dataclass(frozen=True)
class Question:
    question: str
    answer: bool
    """True for yes."""


@dataclass(frozen=True)
class QuestionPair:
    id: str
    category: str
    basic: Question
    hallucinated: Question
    context: str = ""
    """Scene description (perception pairs); empty for knowledge pairs."""


def _yes_no(value: Any, where: str) -> bool:
    text = str(value).strip().lower()
    if text in ("yes", "y", "true", "1"):
        return True
    if text in ("no", "n", "false", "0"):
        return False
    raise PairSetError(f"{where}: answer must be yes or no, got {value!r}")


def _question(record: Any, where: str) -> Question:
    if not isinstance(record, dict) or "question" not in record or "answer" not in record:
        raise PairSetError(f"{where}: needs 'question' and 'answer'")
    return Question(str(record["question"]), _yes_no(record["answer"], where))


def parse_pairs(data: Any, source: str = "pairs") -> list[QuestionPair]:
    """Pairs from the pair form or the flat per-question form (see the module docstring)."""
    if isinstance(data, dict) and "pairs" in data:
        pairs = []
        for i, record in enumerate(data["pairs"]):
            where = f"{source}: pair {i}"
            if not isinstance(record, dict) or "basic" not in record or "hallucinated" not in record:
                raise PairSetError(f"{where}: needs 'basic' and 'hallucinated' questions")
            pairs.append(
                QuestionPair(
                    id=str(record.get("id", i)),
                    category=str(record.get("category", "unknown")),
                    basic=_question(record["basic"], f"{where} basic"),
                    hallucinated=_question(record["hallucinated"], f"{where} hallucinated"),
                    context=str(record.get("context", "")),
                )
            )
        return pairs
    if isinstance(data, list):
        grouped: dict[str, dict[str, Any]] = {}
        for i, record in enumerate(data):
            where = f"{source}: item {i}"
            if not isinstance(record, dict):
                raise PairSetError(f"{where}: expected an object")
            kind = str(record.get("type", record.get("question_type", ""))).lower()
            if kind not in ("basic", "hallucinated"):
                raise PairSetError(f"{where}: 'type' must be 'basic' or 'hallucinated', got {kind!r}")
            pair_id = str(record.get("pair_id", record.get("id", "")))
            if not pair_id:
                raise PairSetError(f"{where}: needs a 'pair_id'")
            group = grouped.setdefault(
                pair_id, {"category": record.get("category", "unknown"), "context": record.get("context", "")}
            )
            group[kind] = _question(record, where)
        pairs = []
        for pair_id, group in grouped.items():
            missing = {"basic", "hallucinated"} - set(group)
            if missing:
                raise PairSetError(
                    f"{source}: pair {pair_id!r} has no {' or '.join(sorted(missing))} question"
                )
            pairs.append(
                QuestionPair(
                    pair_id,
                    str(group["category"]),
                    group["basic"],
                    group["hallucinated"],
                    str(group["context"]),
                )
            )
        return pairs
    raise PairSetError(f"{source}: expected {{'pairs': [...]}} or a list of questions")


def load_pairs(source: str | Path = BUILTIN_PAIRS) -> list[QuestionPair]:
    """Pairs from a JSON / JSON-lines file, or the set written for embodia (``embodia-emotion-pairs``)."""
    if str(source) == BUILTIN_PAIRS:
        text = resources.files("embodia.sim_assets").joinpath("agents/emotion_pairs.json").read_text()
        return parse_pairs(json.loads(text), BUILTIN_PAIRS)
    path = Path(source).expanduser()
    if not path.is_file():
        raise PairSetError(f"no pair file at {path}; pass a JSON file or {BUILTIN_PAIRS!r}")
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as error:
            raise PairSetError(f"{path} is neither JSON nor JSON lines: {error}") from None
    return parse_pairs(data, str(path))


# ---------------------------------------------------------------------------------------------- answering
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str) -> bool | None:
    """The first yes/no word in ``text``; None if there is none."""
    match = _YES_NO.search(text)
    return None if match is None else match.group(1).lower() == "yes"


def _question_prompt(pair_context: str, question: str, extra: str = "") -> str:
    parts = []
    if pair_context:
        parts.append(f"Scene: {pair_context}")
    if extra:
        parts.append(extra)
    parts.append(f"Question: {question}")
    parts.append("Answer with yes or no.")
    return "\n".join(parts)


def answer_yes_no(lm: Any, prompt: str) -> bool | None:
    """Yes/no answer to a chat prompt: log-probabilities of Yes vs No when available, else parsed text."""
    if hasattr(lm, "continuation_logprobs") and hasattr(lm, "chat_text"):
        chat = lm.chat_text(prompt)
        yes, no = lm.continuation_logprobs(chat, ["Yes", "No"])
        return yes > no
    return parse_yes_no(lm.generate(prompt, max_new_tokens=8))


@dataclass
class Answerer:
    """Answers one question, directly or with PEP-MEK."""

    lm: Any
    pep_mek: bool = False
    max_new_tokens: int = 48
    """Length of the generated knowledge and explanation (PEP-MEK)."""
    transcripts: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, pair: QuestionPair, question: Question) -> bool | None:
        if not self.pep_mek:
            answer = answer_yes_no(self.lm, _question_prompt(pair.context, question.question))
            self.transcripts.append({"question": question.question, "answer": answer})
            return answer
        scene = f" in this scene: {pair.context}" if pair.context else ""
        knowledge = self.lm.generate(
            f"Question{scene}\n{question.question}\nBefore answering, state briefly the facts about emotions "
            "(and the visible cues) that decide the answer.",
            max_new_tokens=self.max_new_tokens,
        )
        first = answer_yes_no(
            self.lm, _question_prompt(pair.context, question.question, f"Knowledge: {knowledge}")
        )
        first_word = {True: "yes", False: "no", None: "unclear"}[first]
        explanation = self.lm.generate(
            _question_prompt(pair.context, question.question, f"Knowledge: {knowledge}")
            + f"\nA first answer was: {first_word}. In one or two sentences, explain whether that answer agrees "
            "with the knowledge and the scene.",
            max_new_tokens=self.max_new_tokens,
        )
        final = answer_yes_no(
            self.lm,
            _question_prompt(
                pair.context, question.question, f"Knowledge: {knowledge}\nExplanation: {explanation}"
            ),
        )
        self.transcripts.append(
            {
                "question": question.question,
                "knowledge": knowledge,
                "first": first,
                "explanation": explanation,
                "answer": final,
            }
        )
        return final


# ---------------------------------------------------------------------------------------------- metrics
@dataclass
class PairMetrics:
    pairs: int
    basic_accuracy: float
    hallucinated_accuracy: float
    pair_accuracy: float
    yes_ratio: float
    yes_bias: float
    """The paper's yes-percentage difference Pct_diff: yes ratio - share of "yes" labels."""
    false_positive_ratio: float | None
    """The paper's r_fp: share of the wrong yes/no answers that are "yes" (None without wrong answers)."""
    unanswered: int
    by_category: dict[str, dict[str, float | None]] = field(default_factory=dict)


def pair_metrics(
    pairs: Sequence[QuestionPair], answers: Sequence[tuple[bool | None, bool | None]]
) -> PairMetrics:
    """The paired metrics for ``answers[i] = (basic answer, hallucinated answer)`` (None: no answer)."""
    if len(pairs) != len(answers) or not pairs:
        raise ValueError("need one (basic, hallucinated) answer per pair, and at least one pair")

    def summary(
        items: list[tuple[QuestionPair, tuple[bool | None, bool | None]]],
    ) -> dict[str, float | None]:
        basic = [a == p.basic.answer for p, (a, _) in items]
        hall = [h == p.hallucinated.answer for p, (_, h) in items]
        given = [x for _, ab in items for x in ab]
        labels = [q.answer for p, _ in items for q in (p.basic, p.hallucinated)]
        yes_ratio = sum(x is True for x in given) / len(given)
        wrong = [x for x, y in zip(given, labels) if x is not None and x != y]
        return {
            "pairs": len(items),
            "basic_accuracy": sum(basic) / len(items),
            "hallucinated_accuracy": sum(hall) / len(items),
            "pair_accuracy": sum(b and h for b, h in zip(basic, hall)) / len(items),
            "yes_ratio": yes_ratio,
            "yes_bias": yes_ratio - sum(labels) / len(labels),
            "false_positive_ratio": sum(wrong) / len(wrong) if wrong else None,
        }

    items = list(zip(pairs, answers))
    overall = summary(items)
    categories = sorted({p.category for p in pairs})
    return PairMetrics(
        pairs=len(pairs),
        basic_accuracy=overall["basic_accuracy"],
        hallucinated_accuracy=overall["hallucinated_accuracy"],
        pair_accuracy=overall["pair_accuracy"],
        yes_ratio=overall["yes_ratio"],
        yes_bias=overall["yes_bias"],
        false_positive_ratio=overall["false_positive_ratio"],
        unanswered=sum(x is None for ab in answers for x in ab),
        by_category={c: summary([it for it in items if it[0].category == c]) for c in categories},
    )


def evaluate(
    lm: Any,
    pairs: Sequence[QuestionPair],
    *,
    pep_mek: bool = False,
    max_new_tokens: int = 48,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[PairMetrics, list[dict[str, Any]]]:
    """Ask every pair (both questions) and compute :func:`pair_metrics`; also returns the transcripts."""
    answerer = Answerer(lm, pep_mek=pep_mek, max_new_tokens=max_new_tokens)
    answers = []
    for i, pair in enumerate(pairs):
        answers.append((answerer(pair, pair.basic), answerer(pair, pair.hallucinated)))
        if progress is not None:
            progress(i + 1, len(pairs), f"pair {pair.id}")
    return pair_metrics(pairs, answers), answerer.transcripts
