"""Asking a language model Spatial-DISE questions: as text (option-letter log-probabilities for local
models, the letter parsed from generated text for generate-only endpoints), or as an image for a
vision-language model behind an OpenAI-compatible endpoint (the composite PNG as a base64 ``data:`` URL in an
``image_url`` content part of the chat message, beside the question's text); optionally circular."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from embodia.agents.methods.spatial_dise.core import IMAGE_SIZE, LABELS, SpatialDiseError, SpatialQuestion

_LEADING = re.compile(r"^\W*\(?([A-D])(?:[).:,]|\s*$)")
_STATED = re.compile(r"answer\s*(?:is|:)?\s*(?:option\s*)?\(?([A-D])\b", re.IGNORECASE)
_ANY = re.compile(r"\b([A-D])\b")


def letter_from_text(text: str, n_options: int = len(LABELS)) -> int | None:
    """The option a generated answer names: a leading letter, ``answer is X``, or the only letter named."""
    letters = LABELS[:n_options]
    for pattern in (_LEADING, _STATED):
        match = pattern.search(text)
        if match and match.group(1).upper() in letters:
            return letters.index(match.group(1).upper())
    named = {m for m in _ANY.findall(text) if m in letters}
    return letters.index(named.pop()) if len(named) == 1 else None


@dataclass
class LMAnswer:
    """A model's answer to one question."""

    choice: int | None
    """The option chosen (None: no readable answer)."""
    scores: list[float] | None = None
    """Per option, the log-probability of its letter (local models; with ``circular``, the mean over the
    positions it was shown at)."""
    text: str | None = None
    """The generated answer (generate-only back ends; with ``circular``, every answer)."""

    @property
    def letter(self) -> str | None:
        return None if self.choice is None else LABELS[self.choice]


def letter_logprobs(lm: Any, prompt: str, letters: Sequence[str]) -> list[float]:
    """Log-probability of each letter as the first token of the answer to the chat ``prompt``.

    One forward pass when every letter is one token (the next-token distribution is read once); otherwise
    :meth:`LocalLM.continuation_logprobs`, which gives the same numbers with one sequence per letter.
    """
    chat = lm.chat_text(prompt)
    if hasattr(lm, "model") and hasattr(lm, "encode"):
        ids = [lm.encode(letter) for letter in letters]
        if all(len(i) == 1 for i in ids):
            import torch

            prompt_ids = torch.tensor([lm.encode(chat)], device=getattr(lm, "device", "cpu"))
            with torch.no_grad():
                logits = lm.model(prompt_ids).logits[0, -1].float()
            logp = torch.log_softmax(logits, dim=-1)
            return [float(logp[i[0]]) for i in ids]
    return list(lm.continuation_logprobs(chat, list(letters)))


def png_data_url(image: Any) -> str:
    """A PIL image as a ``data:image/png;base64,...`` URL (what an OpenAI ``image_url`` part carries)."""
    import base64
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def image_messages(question: SpatialQuestion, size: int = IMAGE_SIZE) -> list[dict[str, Any]]:
    """The question as one OpenAI chat message for a vision-language model: a text part (the prompt, where
    to look, how to answer) and an ``image_url`` part holding the composite PNG (the stimulus above the
    lettered options, :meth:`SpatialQuestion.composite`). No text rendering of the stimulus is sent."""
    letters = ", ".join(question.labels[:-1]) + f" or {question.labels[-1]}"
    text = (
        f"{question.prompt}\n\nThe image shows the question's stimulus at the top and the options below "
        f"it, labelled {', '.join(question.labels)}.\n\nAnswer with the letter of the correct option "
        f"({letters})."
    )
    image = {"type": "image_url", "image_url": {"url": png_data_url(question.composite(size))}}
    return [{"role": "user", "content": [{"type": "text", "text": text}, image]}]


def _shifted(question: SpatialQuestion, shift: int) -> SpatialQuestion:
    """The question with its options rotated: new option j is old option (j + shift) mod n."""
    n = len(question.options)
    order = [(j + shift) % n for j in range(n)]
    return replace(
        question,
        options=[question.options[k] for k in order],
        option_texts=[question.option_texts[k] for k in order],
        answer=order.index(question.answer),
    )


def answer_with_lm(
    lm: Any,
    question: SpatialQuestion,
    *,
    circular: bool = False,
    max_new_tokens: int = 16,
    images: bool = False,
) -> LMAnswer:
    """Ask ``lm`` the question as text.

    A local model (one with ``chat_text`` and ``continuation_logprobs``) picks the option letter with the
    highest log-probability as the start of its answer; a generate-only back end (an HTTP endpoint) has the
    letter parsed from its text. ``circular`` asks once per cyclic rotation of the options (n times) and
    takes, per option, the mean log-probability over the positions it was shown at (generate-only: the
    option named most often, None on a tie), which cancels a preference for a letter. ``images`` sends
    :func:`image_messages` (the composite PNG) instead of the text, to a generate-only back end (an
    OpenAI-compatible endpoint serving a vision-language model); a local text model refuses it.
    """
    n = len(question.options)
    shifts = range(n) if circular else [0]
    local = hasattr(lm, "continuation_logprobs") and hasattr(lm, "chat_text")
    if images and local:
        raise SpatialDiseError(
            f"{getattr(lm, 'name', 'this model')} reads text only; images need an OpenAI-compatible "
            "endpoint serving a vision-language model (--model http://HOST:PORT/v1#MODEL)"
        )
    if local:
        totals = [0.0] * n
        for shift in shifts:
            scores = letter_logprobs(lm, _shifted(question, shift).text(), question.labels)
            for j, score in enumerate(scores):
                totals[(j + shift) % n] += score / len(shifts)
        if not all(math.isfinite(s) for s in totals):
            return LMAnswer(None, totals)
        return LMAnswer(max(range(n), key=totals.__getitem__), totals)
    votes: Counter[int] = Counter()
    texts = []
    for shift in shifts:
        shifted = _shifted(question, shift)
        prompt = image_messages(shifted) if images else shifted.text()
        text = lm.generate(prompt, max_new_tokens=max_new_tokens)
        texts.append(text)
        choice = letter_from_text(text, n)
        if choice is not None:
            votes[(choice + shift) % n] += 1
    ranked = votes.most_common()
    unique = bool(ranked) and (len(ranked) == 1 or ranked[0][1] > ranked[1][1])
    return LMAnswer(ranked[0][0] if unique else None, text="\n---\n".join(texts))


def answer_all(
    lm: Any,
    questions: Sequence[SpatialQuestion],
    progress: Callable[[int, int, str], None] | None = None,
    *,
    circular: bool = False,
    images: bool = False,
) -> list[LMAnswer]:
    """:func:`answer_with_lm` for every question, reporting ``progress(done, total, id)``."""
    answers = []
    for i, question in enumerate(questions):
        answers.append(answer_with_lm(lm, question, circular=circular, images=images))
        if progress is not None:
            progress(i + 1, len(questions), question.id)
    return answers
