"""Language models at the cognition level: a local text-only model on a caption, or an endpoint on the image.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) ask vision-language
models about every image and score a distortion by how the answers depart from the reference's answers.
Two ways to put a language model in that place here (:mod:`.cognition` has the questions):

- a local text-only model (SmolLM2-135M, shipped in a wheel) cannot see pixels, so it reads a caption
  written from what the visual question answerer of :mod:`.cognition` answered about the image, and answers
  each question from it: the Socratic-models composition of Zeng et al., "Socratic Models: Composing
  Zero-Shot Multimodal Reasoning with Language", arXiv:2204.00598 (a vision model's output, as language, for
  a language model). It sees a distortion only through the captioner. The answer is the choice with the
  highest log-probability as a continuation (``continuation_logprobs``; one batched forward per question and
  caption, cached per distinct caption);
- a user's OpenAI-compatible endpoint with a vision model gets the image itself: a chat message whose
  content is the question as text and the image as an ``image_url`` part holding a base64 PNG data URL, the
  format of the OpenAI chat-completions API; its free-text answer is mapped to the first choice it names.

Both give answer indices per image and question; :func:`changed_share` scores them against the reference's
answers (an answer that names no choice counts as changed). Nothing here imports a language-model back end:
any object with ``continuation_logprobs(prompt, continuations)`` (local) or ``generate(messages, ...)``
(endpoint) works, e.g. :mod:`embodia.agents.llm`'s ``LocalLM`` and ``OpenAICompatibleLM``.
"""

from __future__ import annotations

import base64
import re
from io import BytesIO
from typing import Any, Protocol

import numpy as np
from PIL import Image

from embodia.perception.iqa.cognition import QUESTIONS, CognitionError, Question

STATEMENTS: dict[str, tuple[str, str]] = {
    "lifted": ("The cube rests on the table.", "The cube is lifted off the table."),
    "closed": ("The gripper is open.", "The gripper is closed."),
    "above": ("The gripper is not above the cube.", "The gripper is right above the cube."),
    "near": ("The cube is far from the robot.", "The cube is near the robot."),
    "high": ("The gripper is low, close to the table.", "The gripper is high above the table."),
}
"""Per question key, the caption sentence for each choice (same order as the question's choices)."""


class ScoresContinuations(Protocol):
    """A local language model that scores continuations (``embodia.agents.llm.LocalLM``)."""

    def continuation_logprobs(self, prompt: str, continuations: list[str]) -> list[float]: ...


class Generates(Protocol):
    """A chat model behind an endpoint (``embodia.agents.llm.OpenAICompatibleLM``)."""

    def generate(self, prompt: Any, *, max_new_tokens: int = 64, temperature: float = 0.0) -> str: ...


def caption(answers: np.ndarray, questions: tuple[Question, ...] = QUESTIONS) -> str:
    """The sentence a captioner's answers (one index per question) make, e.g. ``"The cube rests on ..."``."""
    answers = np.asarray(answers).reshape(-1)
    if len(answers) != len(questions):
        raise CognitionError(f"{len(answers)} answers for {len(questions)} questions")
    return " ".join(STATEMENTS[q.key][int(a)] for q, a in zip(questions, answers))


def text_prompt(description: str, question: Question) -> str:
    """What the local model reads for one question: the description, the question, the choices."""
    return f"Scene: {description}\nQuestion: {question.text} Answer {' or '.join(question.choices)}.\nAnswer:"


def language_model_answers(
    lm: ScoresContinuations, descriptions: list[str], questions: tuple[Question, ...] = QUESTIONS
) -> np.ndarray:
    """The model's answer index per description and question: ``(N, Q)`` int64 (cached per description)."""
    cache: dict[str, list[int]] = {}
    out = np.zeros((len(descriptions), len(questions)), dtype=np.int64)
    for i, description in enumerate(descriptions):
        if description not in cache:
            cache[description] = [
                int(
                    np.argmax(
                        lm.continuation_logprobs(text_prompt(description, q), [f" {c}" for c in q.choices])
                    )
                )
                for q in questions
            ]
        out[i] = cache[description]
    return out


def png_data_url(image: np.ndarray) -> str:
    """A uint8 ``(H, W, 3)`` image as a ``data:image/png;base64,...`` URL."""
    buffer = BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def image_question_messages(image: np.ndarray, question: Question) -> list[dict[str, Any]]:
    """One OpenAI chat message: the question (with its choices) as text and the image as an ``image_url`` part."""
    text = (
        f"{question.text} The image is from a robot's camera above a table with a cube. "
        f"Answer with one word: {' or '.join(question.choices)}."
    )
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": png_data_url(image)}},
            ],
        }
    ]


def parse_choice(answer: str, choices: tuple[str, ...]) -> int:
    """The index of the first choice named in ``answer`` (a whole word, any case); -1 if none is named."""
    words = re.findall(r"[a-z]+", answer.lower())
    for word in words:
        if word in choices:
            return choices.index(word)
    return -1


def endpoint_answers(
    lm: Generates, images: np.ndarray, questions: tuple[Question, ...] = QUESTIONS
) -> np.ndarray:
    """The endpoint's answer index per image and question (-1: it named no choice): ``(N, Q)`` int64."""
    out = np.full((len(images), len(questions)), -1, dtype=np.int64)
    for i, image in enumerate(np.asarray(images)):
        for q, question in enumerate(questions):
            reply = lm.generate(image_question_messages(image, question), max_new_tokens=8, temperature=0.0)
            out[i, q] = parse_choice(reply, question.choices)
    return out


def changed_share(reference_answers: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Per image, the share of questions whose answer differs from its reference's (unparsed = changed)."""
    reference_answers, answers = np.asarray(reference_answers), np.asarray(answers)
    if reference_answers.shape != answers.shape:
        raise CognitionError(
            f"reference answers {reference_answers.shape} and answers {answers.shape} differ"
        )
    return ((answers != reference_answers) | (answers < 0)).mean(axis=1).astype(np.float32)
