"""The cognition level: ground-truth answers, the question answerer learning a tiny problem, the score."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.perception.iqa.cognition import (
    QUESTIONS,
    AnswererConfig,
    CognitionError,
    Question,
    accuracy,
    add_cognition,
    cognition_scores,
    ground_truth,
    train_answerer,
)
from tests.perception.iqa import synthetic_database

torch.set_num_threads(1)

INFO = {
    "proprio/effector_pos": np.array([0.31, 0.02, 0.20]),
    "privileged/block_0_pos": np.array([0.30, 0.00, 0.05]),
    "proprio/gripper_opening": np.array([0.56]),
}


def test_ground_truth_by_hand():
    # lifted (0.05 > 0.035), closed (0.56 > 0.2), above (hypot(0.01, 0.02) = 0.022 < 0.03),
    # near (0.30 < 0.4), high (0.20 > 0.12)
    assert ground_truth(INFO).tolist() == [1, 1, 1, 1, 1]
    resting = {
        **INFO,
        "privileged/block_0_pos": np.array([0.45, 0.1, 0.02]),
        "proprio/gripper_opening": [0.0],
    }
    assert ground_truth({**resting, "proprio/effector_pos": np.array([0.3, 0.0, 0.05])}).tolist() == [
        0,
        0,
        0,
        0,
        0,
    ]
    with pytest.raises(CognitionError, match="no 'privileged/block_0_pos'"):
        ground_truth({"proprio/effector_pos": [0, 0, 0]})


def test_cognition_score_by_hand():
    reference = [np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([[0.6, 0.4], [0.5, 0.5]])]
    distorted = [np.array([[0.3, 0.7], [0.1, 0.9]]), np.array([[0.6, 0.4], [0.7, 0.3]])]
    soft, changed = cognition_scores(reference, distorted)
    # image 0: question 0 loses 0.9 - 0.3, question 1 keeps its answer (0.6 - 0.6); image 1: answer 1 gains
    # 0.8 -> 0.9 (-0.1), answer 0 (argmax of the tie) goes 0.5 -> 0.7 (-0.2)
    assert soft == pytest.approx([(0.6 + 0.0) / 2, (-0.1 - 0.2) / 2])
    assert changed.tolist() == [0.5, 0.0]
    same, none = cognition_scores(reference, reference)
    assert np.allclose(same, 0.0) and (none == 0).all()
    with pytest.raises(CognitionError, match="differ"):
        cognition_scores(reference, [distorted[0], distorted[1][:1]])


def _squares(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """16x16 grey images with a bright square on the left or the right half: the answer to 'right?'."""
    images = np.full((n, 16, 16, 3), 60, np.uint8)
    answers = rng.integers(0, 2, n)
    for i, right in enumerate(answers):
        top, left = rng.integers(0, 12), rng.integers(0, 4) + 8 * right
        images[i, top : top + 4, left : left + 4] = 230
    return images, answers[:, None]


def test_answerer_learns_a_tiny_question():
    question = (Question("right", "Is the square on the right?", ("no", "yes")),)
    images, answers = _squares(160, np.random.default_rng(0))
    model, losses = train_answerer(
        images, answers, AnswererConfig(channels=8, steps=25, batch_size=16, lr=4e-3), question
    )
    assert np.mean(losses[-5:]) < 0.3 * np.mean(losses[:5])
    test_images, test_answers = _squares(60, np.random.default_rng(1))
    assert accuracy(model, test_images, test_answers)["right"] > 0.9
    # a database whose images are its references copied has cognition 0; covering the square moves it
    db = synthetic_database(references=1, size=16)
    db.references = test_images[:1]
    db.images = np.repeat(test_images[:1], len(db), axis=0)
    db.images[1] = 60
    changed = add_cognition(db, model)
    assert db.cognition.shape == (len(db),) and db.cognition.dtype == np.float32
    assert db.cognition[0] == pytest.approx(0.0, abs=1e-6) and db.cognition[1] > 0.2
    assert changed[0] == 0.0


def test_answerer_refuses_answers_that_do_not_fit():
    images = np.zeros((4, 16, 16, 3), np.uint8)
    with pytest.raises(CognitionError, match="one per question"):
        train_answerer(images, np.zeros((4, 2), np.int64), AnswererConfig(steps=1))
    with pytest.raises(CognitionError, match="must index its 2 choices"):
        train_answerer(images, np.full((4, len(QUESTIONS)), 2), AnswererConfig(steps=1))
