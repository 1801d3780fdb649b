"""Behaviour cloning from camera images on the real pixel task: the path learns, saves, loads and acts."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import embodia
from embodia.core.errors import EmbodiaError
from embodia.perception.encoder_io import save_encoder
from embodia.perception.encoders import ConvEncoder
from embodia.perception.pixel_observations import random_shift
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout

ENV = "embodia/Visual-CubeSingle-v0"
FAST = {"shadow_size": 0, "multisamples": 0}


@pytest.fixture(scope="module")
def pixel_demos(tmp_path_factory):
    """Three expert episodes with 64x64 camera images and goal images (a few seconds)."""
    path = tmp_path_factory.mktemp("pixels") / "cube.zarr"
    result = rollout(ENV, "expert", episodes=3, seed=0, record=path, env_kwargs=FAST, max_steps=60)
    assert result.success_rate == 1.0
    return path


def _frames(store_path, count=48):
    store = embodia.TrajectoryStore(store_path)
    data = store.episode(0)
    n = min(count, len(data["action"]))
    obs = {"rgb": torch.as_tensor(data["rgb"][:n]), "goal_rgb": torch.as_tensor(data["goal_rgb"][:n])}
    return obs, torch.as_tensor(data["action"][:n])


def test_random_shift_moves_content_and_keeps_shape():
    frames = torch.zeros(4, 16, 16, 3, dtype=torch.uint8)
    frames[:, 8, 8] = 255
    assert torch.equal(random_shift(frames, 0), frames)
    shifted = random_shift(frames, 3, torch.Generator().manual_seed(0))
    assert shifted.shape == frames.shape and shifted.dtype == torch.uint8
    positions = {tuple(torch.nonzero(s[..., 0] == 255)[0].tolist()) for s in shifted}
    assert len(positions) > 1  # each frame got its own offset
    assert all(abs(r - 8) <= 3 and abs(c - 8) <= 3 for r, c in positions)


def test_pixel_bc_learns_saves_and_acts(pixel_demos, tmp_path):
    run = tmp_path / "run"
    result = train(
        TrainConfig(
            method="pixel_bc",
            dataset=str(pixel_demos),
            out=str(run),
            steps=150,
            batch_size=32,
            log_every=25,
            eval_episodes=0,
            method_config={"hidden": [128, 128], "shift": 2},
        )
    )
    assert result["step"] == 150
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["bc_mse"] < 0.7 * records[0]["bc_mse"], records
    config = json.loads((run / "policy" / "config.json").read_text())
    assert config["type"] == "pixel_actor" and config["image_keys"] == ["rgb", "goal_rgb"]
    assert config["encoder"]["encoder"] == "conv"

    policy = embodia.load_policy(run / "policy")
    obs, actions = _frames(pixel_demos)
    single = policy.act({k: v[0].numpy() for k, v in obs.items()})
    assert single.shape == (5,) and np.all(np.abs(single) <= 1.0)
    batch = policy.act_batch({k: v.numpy() for k, v in obs.items()})
    assert np.allclose(batch[0], single, atol=1e-5)
    learned_error = float(((torch.as_tensor(batch) - actions) ** 2).mean())
    assert learned_error < float((actions**2).mean())  # better than acting zero
    with pytest.raises(EmbodiaError, match="goal_rgb"):
        policy.act({"rgb": obs["rgb"][0].numpy()})

    episode = rollout(ENV, policy, episodes=1, seed=5, env_kwargs={**FAST, "max_episode_steps": 5})
    assert episode.episodes[0].length == 5  # it runs in the real environment


def test_frozen_saved_encoder_stays_unchanged(pixel_demos, tmp_path):
    torch.manual_seed(3)
    encoder = ConvEncoder(image_size=64, dim=16, depth=3)
    folder = save_encoder(encoder, tmp_path / "encoder")
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    run = tmp_path / "run"
    train(
        TrainConfig(
            method="pixel_bc",
            dataset=str(pixel_demos),
            out=str(run),
            steps=20,
            batch_size=16,
            eval_episodes=0,
            method_config={"hidden": [64], "encoder": str(folder), "freeze_encoder": True},
        )
    )
    policy = embodia.load_policy(run / "policy")
    after = policy.actor.observations.encoder.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert json.loads((run / "policy" / "config.json").read_text())["freeze_encoder"] is True


def test_a_store_without_images_is_refused_in_one_line(tmp_path):
    store = tmp_path / "state.zarr"
    rollout("embodia/PointMaze-Medium-SingleTask-v0", "random", episodes=1, seed=0, record=store, max_steps=5)
    with pytest.raises(EmbodiaError, match="no 'rgb', 'goal_rgb' observations") as error:
        train(
            TrainConfig(
                method="pixel_bc", dataset=str(store), out=str(tmp_path / "run"), steps=1, eval_episodes=0
            )
        )
    assert "\n" not in str(error.value)
    assert not (tmp_path / "run").exists()
