"""Splits, standard IQA baselines and correlations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.perception.encoders import ConvEncoder
from embodia.perception.iqa.database import SCORES
from embodia.perception.iqa.evaluate import (
    IQAEvaluationError,
    baseline_scores,
    correlations,
    level_correlations,
    splits,
    t_interval,
)
from tests.perception.iqa import synthetic_database

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def db():
    return synthetic_database(references=4, size=32)


def test_correlations_on_known_data():
    x = np.arange(10.0)
    assert correlations(x, 2 * x + 1) == pytest.approx({"srcc": 1.0, "plcc": 1.0, "n": 10})
    monotone = correlations(x, np.exp(x))
    assert monotone["srcc"] == pytest.approx(1.0) and monotone["plcc"] < 0.9
    assert correlations(x, -x)["srcc"] == pytest.approx(-1.0)
    with_nan = correlations(np.r_[x, np.nan], np.r_[x, 5.0])
    assert with_nan["n"] == 10 and with_nan["srcc"] == pytest.approx(1.0)
    constant = correlations(x, np.ones(10))
    assert np.isnan(constant["srcc"]) and np.isnan(constant["plcc"])
    assert np.isnan(correlations([1.0, 2.0], [1.0, 3.0])["srcc"])
    with pytest.raises(IQAEvaluationError, match="one score per image"):
        correlations(x, x[:5])


def test_vif_is_nan_below_its_minimum_size(db):
    scores = baseline_scores(db, np.arange(4), extended=True)
    assert np.isnan(scores["vif"]).all() and np.isfinite(scores["ms_ssim"]).all()


def test_baselines_have_the_damage_sign():
    db = synthetic_database(references=1, size=48)
    scores = baseline_scores(db, encoder=ConvEncoder(image_size=48, dim=16, depth=2).eval(), extended=True)
    assert set(scores) == {"psnr", "ssim", "ms_ssim", "vif", "feature_distance"}
    for name, values in scores.items():
        assert values.shape == (len(db),) and np.isfinite(values).all(), name
    for name in ("blur", "noise"):  # within one type, damage grows with the level
        rows = db.class_index == db.class_names.index(name)
        assert correlations(scores["psnr"][rows], db.level[rows])["srcc"] > 0.8, name
        for metric in ("ssim", "ms_ssim", "vif"):
            assert correlations(scores[metric][rows], db.level[rows])["srcc"] > 0.8, (name, metric)
    assert (scores["ssim"] > 0).all() and (scores["psnr"] < 0).all() and (scores["ms_ssim"] > 0).all()
    rows = np.arange(3)
    assert np.allclose(baseline_scores(db, rows)["psnr"], scores["psnr"][rows], atol=1e-4)


def test_identical_images_get_the_capped_psnr(db):
    clone = synthetic_database(references=1, size=32)
    clone.images[:3] = clone.references[0]
    psnr = baseline_scores(clone, np.arange(3))["psnr"]
    assert np.allclose(psnr, -100.0)


@pytest.mark.parametrize("kind", ["references", "classes"])
def test_splits_are_disjoint_and_hold_out_whole_groups(db, kind):
    train, test = splits(db, kind, seed=1)
    assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == len(db)
    groups = db.ref_index if kind == "references" else db.class_index
    assert not set(groups[train]) & set(groups[test])
    assert len(set(groups[test])) == (1 if kind == "references" else 2)
    again = splits(db, kind, seed=1)
    assert np.array_equal(again[1], test)


def test_split_errors(db):
    with pytest.raises(IQAEvaluationError, match="choose one of references, classes"):
        splits(db, "levels")
    with pytest.raises(IQAEvaluationError, match="cannot hold out 7 of the 7 classes"):
        splits(db, "classes", held_out=7)


def test_level_correlations(db):
    result = level_correlations(db)
    assert len(result) == len(SCORES) * (len(SCORES) - 1) // 2
    assert result["decision/execution"] == pytest.approx(1.0)
    assert 0.8 < result["perception/decision"] <= 1.0
    assert 0.8 < result["cognition/execution"] <= 1.0


def test_default_class_split_holds_out_a_quarter_of_many_types():
    db = synthetic_database(references=2, size=16)
    db.class_index = np.arange(len(db)) % 30  # pretend 30 types
    _, test = splits(db, "classes", seed=0)
    assert len(set(db.class_index[test])) == 7


def test_t_interval_by_hand():
    mean, low, high = t_interval([0.2, 0.4, 0.6])
    half = 4.302652729911275 * 0.2 / np.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n)
    assert (mean, low, high) == pytest.approx((0.4, 0.4 - half, 0.4 + half))
    assert t_interval([0.5, np.nan]) == (0.5, 0.5, 0.5)
    assert all(np.isnan(t_interval([np.nan])))
