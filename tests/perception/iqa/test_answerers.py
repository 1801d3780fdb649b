"""Language models at the cognition level: captions, a local model's multiple choice, an endpoint that gets
the image (a tiny local HTTP server checks every request carries it; no real network)."""

from __future__ import annotations

import base64
import json
from http.server import BaseHTTPRequestHandler
from io import BytesIO

import numpy as np
import pytest
from PIL import Image

from embodia.agents.llm import OpenAICompatibleLM
from embodia.perception.iqa.answerers import (
    caption,
    changed_share,
    endpoint_answers,
    image_question_messages,
    language_model_answers,
    parse_choice,
)
from embodia.perception.iqa.cognition import QUESTIONS, CognitionError
from tests.conftest import chat_completion, http_server, send_json


def test_caption_by_hand():
    assert caption(np.array([1, 0, 0, 1, 1])) == (
        "The cube is lifted off the table. The gripper is open. The gripper is not above the cube. "
        "The cube is near the robot. The gripper is high above the table."
    )
    with pytest.raises(CognitionError, match="2 answers for 5 questions"):
        caption(np.array([1, 0]))


class ReadingLM:
    """A fake local model that prefers ' yes' exactly when the scene states the question's 'yes' sentence."""

    def __init__(self) -> None:
        self.calls = 0

    def continuation_logprobs(self, prompt: str, continuations: list[str]) -> list[float]:
        self.calls += 1
        from embodia.perception.iqa.answerers import STATEMENTS

        question = next(q for q in QUESTIONS if q.text in prompt)
        says_yes = STATEMENTS[question.key][1] in prompt
        return [-1.0, -3.0] if not says_yes else [-3.0, -1.0]  # continuations are " no", " yes"


def test_local_model_reads_the_caption_and_is_cached():
    answers = np.array([[1, 0, 0, 1, 1], [0, 0, 1, 1, 0], [1, 0, 0, 1, 1]])
    lm = ReadingLM()
    read = language_model_answers(lm, [caption(a) for a in answers])
    assert np.array_equal(read, answers)
    assert lm.calls == 2 * len(QUESTIONS)  # the third caption repeats the first: no new calls


def test_parse_choice_and_changed_share():
    assert parse_choice("Yes.", ("no", "yes")) == 1
    assert parse_choice("NO, it is not", ("no", "yes")) == 0
    assert parse_choice("I cannot tell", ("no", "yes")) == -1
    assert parse_choice("yesterday", ("no", "yes")) == -1  # whole words only
    reference = np.array([[1, 0, 1, 0], [1, 1, 1, 1]])
    answers = np.array([[1, 1, 1, 0], [-1, 1, 1, 1]])
    assert changed_share(reference, answers).tolist() == [0.25, 0.25]


class _VisionServer(BaseHTTPRequestHandler):
    """Answers 'Yes.' when the image it was sent is bright, 'no' when dark; records what it was sent."""

    requests: list = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parts = body["messages"][0]["content"]
        text = next(p["text"] for p in parts if p["type"] == "text")
        url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        assert url.startswith("data:image/png;base64,")
        image = np.asarray(Image.open(BytesIO(base64.b64decode(url.split(",", 1)[1]))))
        type(self).requests.append((self.path, body["model"], text, image.shape))
        send_json(self, chat_completion("Yes." if image.mean() > 128 else "no"))

    def log_message(self, *args) -> None:
        pass


def test_endpoint_gets_the_image_with_every_question():
    _VisionServer.requests = []
    with http_server(_VisionServer) as base:
        lm = OpenAICompatibleLM(f"{base}/v1", "tiny-vlm", api_key="")
        images = np.stack([np.full((16, 16, 3), 220, np.uint8), np.full((16, 16, 3), 20, np.uint8)])
        answers = endpoint_answers(lm, images)
    assert answers.tolist() == [[1] * len(QUESTIONS), [0] * len(QUESTIONS)]
    assert len(_VisionServer.requests) == 2 * len(QUESTIONS)
    for path, model, text, shape in _VisionServer.requests:
        assert path == "/v1/chat/completions" and model == "tiny-vlm" and shape == (16, 16, 3)
        assert "Answer with one word: no or yes." in text


def test_image_message_is_openai_format():
    message = image_question_messages(np.zeros((4, 4, 3), np.uint8), QUESTIONS[0])[0]
    assert message["role"] == "user"
    assert [p["type"] for p in message["content"]] == ["text", "image_url"]
    assert message["content"][0]["text"].startswith(QUESTIONS[0].text)
