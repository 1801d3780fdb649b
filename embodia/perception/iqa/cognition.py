"""The cognition level of Embodied-IQA: do answers about the image survive the distortion?

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) annotate the cognition
level with the answers of vision-language models to questions about each image: a distorted image is scored
by how its answers depart from those about the undistorted reference. Here the question answerer must see
the pixels, and the only language model shipped with embodia (SmolLM2-135M) reads text only: a description
made from the simulator's ground truth is the same for the reference and every distortion of it, so a
text-only model given it can never see a distortion. The answerer is therefore a small visual question
answerer trained here on the simulator's ground truth: closed-vocabulary questions answered by a classifier
per question on a shared CNN, as in the classifier baselines of CLEVR (Johnson et al., "CLEVR: A Diagnostic
Dataset for Compositional Language and Elementary Visual Reasoning", arXiv:1612.06890). It is trained on
clean frames only (a VLM is trained on clean images too); distortions are what it is tested under.

The questions (:data:`QUESTIONS`) are about what a pick-and-place policy must know, each answer read from the
step's ``info`` (ground truth): is the cube lifted, is the gripper closed, is the gripper right above the
cube, is the cube near the robot, is the gripper high. For an image ``x'`` with reference ``x`` and the
answerer's answer distributions ``p_q``:

    a_q = argmax p_q(x)                                  (the reference's answer to question q)
    s_C = 1/Q sum_q (p_q(x)[a_q] - p_q(x')[a_q])        (cognition: the probability the reference's answer loses)

(0 for the reference itself; negative where the distortion makes the answerer surer of the same answer)
and ``changed = 1/Q sum_q [argmax p_q(x') != a_q]``, the share of answers that flip (what a model that only
answers, a language model or an endpoint, gives; :mod:`.answerers`).

The model: ``u = x / 255 - 0.5``; four 3x3 conv blocks (GroupNorm, GELU; three of stride 2), global
average and max pooling, one linear layer per question; trained with the summed cross-entropy and AdamW.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from embodia.core.errors import EmbodiaError
from embodia.perception.iqa.database import IQADatabase


class CognitionError(EmbodiaError, ValueError):
    """Frames without ground truth, or answers that do not fit the questions (one line)."""


@dataclass(frozen=True)
class Question:
    """One closed-vocabulary question about a frame of the cube task."""

    key: str
    """Short name (a column of the answer arrays)."""
    text: str
    """The question as asked (to a language model or an endpoint)."""
    choices: tuple[str, ...]
    """The possible answers; the ground truth is an index into them."""


LIFT_HEIGHT = 0.035
"""Cube centre height (m) above which it counts as lifted (it rests at 0.02)."""
CLOSED_OPENING = 0.2
"""Gripper opening reading above which the gripper counts as closed (open ~0, closed on the cube ~0.56)."""
ABOVE_DISTANCE = 0.03
"""Horizontal gripper-to-cube distance (m) under which the gripper is right above the cube."""
NEAR_X = 0.4
"""Cube x (m, away from the robot's base) under which the cube is near the robot."""
HIGH_Z = 0.12
"""Gripper height (m) above which the gripper is high."""

QUESTIONS: tuple[Question, ...] = (
    Question("lifted", "Is the cube lifted off the table?", ("no", "yes")),
    Question("closed", "Is the gripper closed?", ("no", "yes")),
    Question("above", "Is the gripper right above the cube?", ("no", "yes")),
    Question("near", "Is the cube near the robot?", ("no", "yes")),
    Question("high", "Is the gripper high above the table?", ("no", "yes")),
)
"""The questions asked about every frame (ground truth from the cube environments' ``info``)."""


def ground_truth(info: dict[str, Any]) -> np.ndarray:
    """The index of the true answer to every question of :data:`QUESTIONS`, from a step's ``info``: (Q,) int64."""
    try:
        effector = np.asarray(info["proprio/effector_pos"], dtype=np.float64)
        cube = np.asarray(info["privileged/block_0_pos"], dtype=np.float64)
        opening = float(np.asarray(info["proprio/gripper_opening"]).reshape(-1)[0])
    except KeyError as missing:
        raise CognitionError(
            f"the step's info has no {missing}; the cognition questions need a cube environment "
            "(embodia/Visual-CubeSingle-v0 and its kin)"
        ) from None
    answers = (
        cube[2] > LIFT_HEIGHT,
        opening > CLOSED_OPENING,
        np.hypot(*(effector[:2] - cube[:2])) < ABOVE_DISTANCE,
        cube[0] < NEAR_X,
        effector[2] > HIGH_Z,
    )
    return np.asarray(answers, dtype=np.int64)


@dataclass
class AnswererConfig:
    """The visual question answerer's shape and training."""

    channels: int = 32
    """Width of the first conv block (the later blocks have twice as many)."""
    steps: int = 400
    """Optimiser steps."""
    batch_size: int = 64
    """Frames per step."""
    lr: float = 2e-3
    """AdamW learning rate (cosine decay to 5 % over ``steps``)."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    seed: int = 0
    """Seeds the initial weights and the batches."""


class QuestionAnswerer(nn.Module):
    """A shared CNN with one classifier per question; ``forward`` returns one logit tensor per question."""

    def __init__(self, config: AnswererConfig, questions: tuple[Question, ...] = QUESTIONS) -> None:
        super().__init__()
        self.config, self.questions = config, questions
        c = int(config.channels)
        widths = [3, c, 2 * c, 2 * c, 2 * c]
        layers: list[nn.Module] = []
        for i, stride in enumerate((2, 2, 2, 1)):
            layers += [
                nn.Conv2d(widths[i], widths[i + 1], 3, stride=stride, padding=1),
                nn.GroupNorm(8, widths[i + 1]),
                nn.GELU(),
            ]
        self.net = nn.Sequential(*layers)
        self.heads = nn.ModuleList(nn.Linear(4 * c, len(q.choices)) for q in questions)

    @staticmethod
    def inputs(images: np.ndarray) -> torch.Tensor:
        """uint8 ``(B, H, W, 3)`` -> float ``(B, 3, H, W)`` in [-0.5, 0.5]."""
        return torch.as_tensor(np.asarray(images)).float().div(255.0).sub(0.5).permute(0, 3, 1, 2)

    def forward(self, inputs: torch.Tensor) -> list[torch.Tensor]:
        f = self.net(inputs)
        pooled = torch.cat([f.mean(dim=(2, 3)), f.amax(dim=(2, 3))], dim=1)
        return [head(pooled) for head in self.heads]


def _check_frames(images: np.ndarray, answers: np.ndarray, questions: tuple[Question, ...]) -> None:
    images, answers = np.asarray(images), np.asarray(answers)
    if images.ndim != 4 or images.dtype != np.uint8 or images.shape[-1] != 3:
        raise CognitionError(f"frames must be uint8 (N, H, W, 3), got {images.dtype} {images.shape}")
    if answers.shape != (len(images), len(questions)):
        raise CognitionError(
            f"answers have shape {answers.shape}, expected ({len(images)}, {len(questions)}): one per question"
        )
    for q, question in enumerate(questions):
        if answers[:, q].min() < 0 or answers[:, q].max() >= len(question.choices):
            raise CognitionError(
                f"answers to {question.key!r} must index its {len(question.choices)} choices"
            )


def train_answerer(
    images: np.ndarray,
    answers: np.ndarray,
    config: AnswererConfig,
    questions: tuple[Question, ...] = QUESTIONS,
) -> tuple[QuestionAnswerer, list[float]]:
    """Train a :class:`QuestionAnswerer` on clean frames and their true answers; returns it (eval mode) and
    the per-step loss (summed cross-entropy over the questions)."""
    _check_frames(images, answers, questions)
    torch.manual_seed(config.seed)
    model = QuestionAnswerer(config, questions)
    x = model.inputs(images)
    y = torch.as_tensor(np.asarray(answers), dtype=torch.long)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, config.steps, eta_min=0.05 * config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    model.train()
    for _ in range(config.steps):
        batch = torch.randint(len(x), (min(config.batch_size, len(x)),), generator=generator)
        logits = model(x[batch])
        loss = sum(nn.functional.cross_entropy(lg, y[batch, q]) for q, lg in enumerate(logits))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        losses.append(float(loss.detach()))
    return model.eval(), losses


@torch.no_grad()
def answer_probabilities(
    model: QuestionAnswerer, images: np.ndarray, batch_size: int = 256
) -> list[np.ndarray]:
    """The answer distribution of every question for uint8 ``(N, H, W, 3)`` images: one ``(N, C_q)`` array each."""
    model.eval()
    chunks: list[list[torch.Tensor]] = [[] for _ in model.questions]
    for i in range(0, len(images), batch_size):
        for q, logits in enumerate(model(model.inputs(images[i : i + batch_size]))):
            chunks[q].append(torch.softmax(logits, dim=-1))
    return [
        torch.cat(c).numpy() if c else np.zeros((0, len(model.questions[q].choices)), np.float32)
        for q, c in enumerate(chunks)
    ]


def accuracy(model: QuestionAnswerer, images: np.ndarray, answers: np.ndarray) -> dict[str, float]:
    """The share of frames whose most probable answer is the true one, per question key."""
    _check_frames(images, answers, model.questions)
    probabilities = answer_probabilities(model, images)
    return {
        question.key: float((p.argmax(axis=1) == np.asarray(answers)[:, q]).mean())
        for q, (question, p) in enumerate(zip(model.questions, probabilities))
    }


def cognition_scores(
    reference: list[np.ndarray], distorted: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``(s_C, changed)`` (module docstring) for rows of answer distributions, one ``(N, C_q)`` per question,
    of the references and of their distorted images (row ``i`` of ``reference`` is image ``i``'s reference)."""
    if len(reference) != len(distorted) or not reference:
        raise CognitionError(
            "pass one answer-distribution array per question for references and distorted images"
        )
    soft, changed = [], []
    for ref, dist in zip(reference, distorted):
        if ref.shape != dist.shape:
            raise CognitionError(f"reference answers {ref.shape} and distorted answers {dist.shape} differ")
        answer, rows = ref.argmax(axis=1), np.arange(len(ref))
        soft.append(ref[rows, answer] - dist[rows, answer])
        changed.append(dist.argmax(axis=1) != answer)
    return np.mean(soft, axis=0).astype(np.float32), np.mean(changed, axis=0).astype(np.float32)


def add_cognition(db: IQADatabase, model: QuestionAnswerer) -> np.ndarray:
    """Score every image of ``db`` at the cognition level (sets ``db.cognition``); returns the ``changed``
    share per image (the hard version, module docstring)."""
    on_references = answer_probabilities(model, db.references)
    on_images = answer_probabilities(model, db.images)
    soft, changed = cognition_scores([p[db.ref_index] for p in on_references], on_images)
    db.cognition = soft
    return changed
