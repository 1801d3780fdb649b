"""The Embodied-IQA database builder on a real pixel environment, and its zarr store."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

import embodia
from embodia.perception.encoders import ConvEncoder
from embodia.perception.iqa.database import (
    IQADatabaseConfig,
    IQADatabaseError,
    build_database,
    load_database,
    save_database,
)

torch.set_num_threads(1)


class PixelPolicy:
    """A fixed random CNN from obs["rgb"] to a tanh action: deterministic, sensitive to the image."""

    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 5, stride=4),
            nn.ReLU(),
            nn.Conv2d(8, 8, 3, stride=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.LazyLinear(5),
        )
        self.act({"rgb": np.zeros((64, 64, 3), np.uint8)})  # materialise the lazy layer

    def reset(self, seed: int | None = None) -> None:
        pass

    @torch.no_grad()
    def act(self, obs: dict) -> np.ndarray:
        x = torch.as_tensor(obs["rgb"]).float().div(255.0).permute(2, 0, 1)[None] - 0.5
        return torch.tanh(3.0 * self.net(x))[0].numpy()


CONFIG = IQADatabaseConfig(
    references=2,
    reference_episodes=1,
    reference_steps=6,
    snapshots=3,
    classes=("blur", "occlusion"),
    levels=(1, 5),
    rollouts=1,
    horizon=8,
    seed=3,
)


OBSERVED: list = []
"""What the database fixture's build showed its observer: (image, info) of every clean reference step."""


@pytest.fixture(scope="module")
def database():
    torch.manual_seed(0)
    return build_database(
        CONFIG,
        PixelPolicy(),
        ConvEncoder(image_size=64, dim=32, depth=2).eval(),
        observe=lambda image, info: OBSERVED.append((image, info)),
    )


def test_observer_sees_every_clean_reference_step_with_ground_truth(database):
    # one reference episode of at most reference_steps steps; the references are among its states
    assert 1 <= len(OBSERVED) <= CONFIG.reference_steps
    for image, info in OBSERVED:
        assert image.shape == (64, 64, 3) and image.dtype == np.uint8
        assert "privileged/block_0_pos" in info and "proprio/effector_pos" in info
    seen = [image for image, _ in OBSERVED]
    assert any(np.array_equal(ref, image) for ref in database.references[1:] for image in seen)


def test_shapes_and_finite_scores(database):
    db = database
    assert db.references.shape == (2, 64, 64, 3) and db.references.dtype == np.uint8
    assert db.images.shape == (8, 64, 64, 3) and len(db) == 8
    assert sorted(set(db.level.tolist())) == [1, 5]
    assert db.class_names == ("blur", "occlusion")
    assert np.bincount(db.ref_index).tolist() == [4, 4]
    for name in ("perception", "decision", "execution", "progress_drop", "success", "clean_success"):
        values = getattr(db, name)
        assert values.shape == (8,) and values.dtype == np.float32 and np.isfinite(values).all(), name
    assert np.isnan(db.cognition).all()  # scored after the build (cognition.add_cognition)
    assert (db.perception >= -1e-6).all() and (db.decision >= 0).all()
    assert np.allclose(db.execution, db.clean_success - db.success)
    assert db.reference_states.shape[0] == 2 and db.reference_states.dtype == np.float64
    # within one reference and class the levels share their seed: level 5 is further from the reference
    mad = np.abs(db.images.astype(float) - db.reference_images()).mean(axis=(1, 2, 3))
    for r in range(2):
        for c in range(2):
            rows = (db.ref_index == r) & (db.class_index == c)
            assert mad[rows & (db.level == 5)] > mad[rows & (db.level == 1)]
    # the images are distorted references, not copies
    assert (db.images != db.reference_images()).any(axis=(1, 2, 3)).all()


def test_level_5_hurts_perception_more_than_level_1(database):
    db = database
    assert db.perception[db.level == 5].mean() >= db.perception[db.level == 1].mean()
    assert db.decision[db.level == 5].mean() > 0


def test_build_is_deterministic(database):
    again = build_database(
        IQADatabaseConfig(**{**CONFIG.__dict__, "rollouts": 0}),
        PixelPolicy(),
        ConvEncoder(image_size=64, dim=32, depth=2).eval(),
    )
    assert np.isnan(again.execution).all()
    assert np.array_equal(again.references, database.references)
    assert np.array_equal(again.images, database.images)
    assert np.allclose(again.perception, database.perception) and np.allclose(
        again.decision, database.decision
    )


def test_save_load_round_trip(database, tmp_path):
    save_database(database, tmp_path / "db")
    save_database(database, tmp_path / "db")  # overwriting its own database is fine
    loaded = load_database(tmp_path / "db")
    for name in (
        "references",
        "images",
        "ref_index",
        "class_index",
        "level",
        "perception",
        "cognition",
        "decision",
        "execution",
        "progress_drop",
        "reference_states",
        "reference_seeds",
    ):
        assert np.array_equal(getattr(loaded, name), getattr(database, name), equal_nan=True), name
    assert loaded.config == database.config and loaded.class_names == database.class_names


def test_refuses_foreign_folder_and_reports_corruption(database, tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(IQADatabaseError, match="not an Embodied-IQA database"):
        save_database(database, foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"
    with pytest.raises(IQADatabaseError, match="not an Embodied-IQA database"):
        load_database(foreign)
    with pytest.raises(IQADatabaseError, match="does not exist"):
        load_database(tmp_path / "missing")
    path = save_database(database, tmp_path / "db")
    meta = json.loads((path / "perception" / "zarr.json").read_text())
    meta["shape"] = [3]
    (path / "perception" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(IQADatabaseError, match="corrupt"):
        load_database(path)


def test_bad_config_is_one_line():
    with pytest.raises(Exception, match="unknown distortion type 'smog'; choose one of blur"):
        build_database(IQADatabaseConfig(classes=("smog",)), PixelPolicy(), ConvEncoder())
    with pytest.raises(IQADatabaseError, match="rollouts"):
        build_database(IQADatabaseConfig(rollouts=-1), PixelPolicy(), ConvEncoder())


def test_execution_level_with_a_policy_that_succeeds(monkeypatch):
    """The scripted expert (privileged state, blind to the image) succeeds from the reference state with clean
    and with distorted images alike: success 1, progress in (0, 1], drops exactly 0 (paired rollouts)."""
    made = []
    real_make = embodia.make
    monkeypatch.setattr(
        embodia, "make", lambda *args, **kwargs: made.append(real_make(*args, **kwargs)) or made[-1]
    )

    class Expert:
        expert = None

        def reset(self, seed=None):
            self.expert = self.expert or made[-1].unwrapped.make_expert()
            self.expert.reset(seed=seed)

        def act(self, obs):
            return self.expert.act(obs)

    config = IQADatabaseConfig(
        references=1,
        reference_episodes=1,
        reference_steps=12,
        snapshots=1,
        classes=("noise",),
        levels=(5,),
        rollouts=1,
        horizon=70,
        seed=0,
    )
    db = build_database(config, Expert(), ConvEncoder(image_size=64, dim=32, depth=2).eval())
    assert db.reference_steps.tolist() == [0]
    assert db.clean_success.tolist() == [1.0] and db.success.tolist() == [1.0]
    assert 0.0 < db.progress[0] <= 1.0 and db.progress[0] == db.clean_progress[0]
    assert db.execution.tolist() == [0.0] and db.progress_drop.tolist() == [0.0]


def test_successful_only_refuses_a_policy_that_solves_nothing():
    config = IQADatabaseConfig(
        **{
            **CONFIG.__dict__,
            "references": 1,
            "reference_episodes": 1,
            "reference_steps": 3,
            "successful_only": True,
        }
    )
    with pytest.raises(IQADatabaseError, match="solved ones only") as error:
        build_database(config, PixelPolicy(), ConvEncoder(image_size=64, dim=16, depth=2))
    assert "\n" not in str(error.value)


def test_scoring_on_ray_gives_the_same_database(database):
    """References scored in parallel on Ray (one environment per task) equal the serial build."""
    torch.manual_seed(0)  # the fixture's policy and encoder weights
    parallel = build_database(
        CONFIG, PixelPolicy(), ConvEncoder(image_size=64, dim=32, depth=2).eval(), workers=2
    )
    for name in (
        "images",
        "ref_index",
        "class_index",
        "level",
        "perception",
        "decision",
        "execution",
        "success",
    ):
        assert np.allclose(getattr(parallel, name), getattr(database, name), equal_nan=True), name
