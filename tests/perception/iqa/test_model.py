"""The IQA model learns a known damage function of the distortion on a small synthetic database, and ranks
held-out images better than PSNR does."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from embodia.perception.iqa.evaluate import baseline_scores, correlations, splits
from embodia.perception.iqa.model import (
    IQAModelConfig,
    IQAModelError,
    load_iqa_model,
    predict,
    save_iqa_model,
    train_iqa,
)
from tests.perception.iqa import synthetic_database

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained():
    db = synthetic_database(references=24, size=32)
    train, test = splits(db, "references", seed=0, held_out=4)
    config = IQAModelConfig(channels=16, steps=400, batch_size=32, lr=3e-3, target="execution")
    model, history = train_iqa(db, train, config)
    return db, train, test, model, history


def test_loss_falls_and_held_out_srcc_is_clearly_positive(trained):
    db, _, test, model, history = trained
    loss = np.asarray(history["loss"])
    assert loss.shape == (400,) and np.isfinite(loss).all()
    assert loss[-25:].mean() < 0.2 * loss[:25].mean()
    pred = predict(model, db.images[test], db.reference_images(test))
    assert pred.shape == (len(test),) and pred.dtype == np.float32
    result = correlations(pred, db.execution[test])
    assert result["srcc"] > 0.5, result
    # the damage depends on the class as well as the level: pixel fidelity cannot rank it as well
    psnr = correlations(baseline_scores(db, test)["psnr"], db.execution[test])
    assert result["srcc"] > psnr["srcc"], (result, psnr)


def test_save_load_round_trip(trained, tmp_path):
    db, _, test, model, _ = trained
    save_iqa_model(model, tmp_path / "iqa")
    loaded = load_iqa_model(tmp_path / "iqa")
    assert loaded.config == model.config
    images, refs = db.images[test[:10]], db.reference_images(test[:10])
    assert np.allclose(predict(loaded, images, refs), predict(model, images, refs), atol=1e-5)


def test_no_reference_model_and_errors(trained, tmp_path):
    db, train, _, model, _ = trained
    with pytest.raises(IQAModelError, match="full-reference"):
        predict(model, db.images[:2])
    small, history = train_iqa(
        db, train[:40], IQAModelConfig(with_reference=False, channels=8, steps=3, target="decision")
    )
    assert predict(small, db.images[:5]).shape == (5,) and len(history["loss"]) == 3
    with pytest.raises(IQAModelError, match="unknown IQA target 'fun'; choose one of"):
        train_iqa(db, train, IQAModelConfig(target="fun"))
    db.execution[:] = np.nan
    with pytest.raises(IQAModelError, match="finite 'execution'"):
        train_iqa(db, train, IQAModelConfig(steps=1))
    with pytest.raises(IQAModelError, match="no config.json"):
        load_iqa_model(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"method": "vff"}))
    (tmp_path / "model.safetensors").write_bytes(b"junk")
    with pytest.raises(IQAModelError, match="is not an Embodied-IQA model"):
        load_iqa_model(tmp_path)
