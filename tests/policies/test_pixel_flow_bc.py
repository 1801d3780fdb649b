"""Flow BC from camera images: the flow loss trains encoder and field, the folder round-trips, noise is seeded."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import embodia
from embodia.core.errors import PolicyError
from embodia.perception.encoders import ConvEncoder
from embodia.perception.pixel_observations import PixelObservationEncoder
from embodia.policies.flow import FlowPolicy, flow_matching_loss
from embodia.policies.onnx_export import export_onnx
from embodia.policies.pixel_flow_bc import PixelFlowActor
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout

ENV = "embodia/Visual-CubeSingle-v0"
FAST = {"shadow_size": 0, "multisamples": 0}


def test_the_flow_loss_learns_an_image_to_sequence_map():
    """Two image classes (a bright square left or right), each with its own 2-step action sequence: flow
    matching through the encoder learns to sample each class's sequence from noise (a few seconds)."""
    torch.manual_seed(0)
    images = torch.zeros(64, 32, 32, 3, dtype=torch.uint8)
    right = torch.arange(64) % 2 == 1
    images[~right, 8:24, 2:12] = 255
    images[right, 8:24, 20:30] = 255
    targets = torch.where(
        right[:, None], torch.tensor([0.6, -0.4, 0.6, -0.4]), torch.tensor([-0.5, 0.5, -0.5, 0.5])
    )
    observations = PixelObservationEncoder(
        ConvEncoder(image_size=32, dim=16, depth=2), ["rgb"], torch.zeros(0), torch.ones(0), token_channels=4
    )
    actor = PixelFlowActor(observations, FlowPolicy(observations.dim, 2, 2, (64, 64), flow_steps=10))
    optimizer = torch.optim.Adam(actor.parameters(), lr=3e-3)
    mask = torch.ones_like(targets)
    losses = []
    for _ in range(300):
        loss = flow_matching_loss(actor.flow, actor.observations({"rgb": images}), targets, mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])
    with torch.no_grad():
        sampled = actor({"rgb": images}, torch.randn(64, 4))
    error = float(((sampled - targets) ** 2).mean())
    swapped = float(((sampled - targets.flip(0)) ** 2).mean())  # the other class's sequence
    assert error < 0.05 < swapped, (error, swapped)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """pixel_flow_bc trained briefly on three expert episodes with 64x64 camera and goal images."""
    root = tmp_path_factory.mktemp("pixel_flow")
    demos = root / "cube.zarr"
    assert rollout(
        ENV, "expert", episodes=3, seed=0, record=demos, env_kwargs=FAST, max_steps=60
    ).success_rate
    run = root / "run"
    result = train(
        TrainConfig(
            method="pixel_flow_bc",
            dataset=str(demos),
            out=str(run),
            steps=60,
            batch_size=16,
            log_every=20,
            eval_episodes=0,
            method_config={"hidden": [64, 64], "chunk": 2, "flow_steps": 4},
        )
    )
    assert result["step"] == 60
    return demos, run


def test_folder_round_trip_seeded_noise_and_the_episode_runner(trained):
    demos, run = trained
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["flow_loss"]) for r in records)
    config = json.loads((run / "policy" / "config.json").read_text())
    assert config["type"] == "pixel_actor" and (config["noise_dim"], config["flow_steps"]) == (10, 4)
    assert config["method"] == "pixel_flow_bc"

    policy = embodia.load_policy(run / "policy")
    assert isinstance(policy.actor, PixelFlowActor) and policy.chunk_size == 2
    data = embodia.TrajectoryStore(demos).episode(0)
    obs = {"rgb": data["rgb"][0], "goal_rgb": data["goal_rgb"][0]}
    policy.reset(seed=3)
    first = policy.act(obs)
    assert first.shape == (2, 5) and np.all(np.abs(first) <= 1.0)
    again = policy.act(obs)
    policy.reset(seed=3)
    assert np.array_equal(policy.act(obs), first)  # the noise comes from the seeded generator
    assert not np.array_equal(again, first)  # and is drawn anew per decision
    batch = policy.act_batch({k: np.stack([v, v]) for k, v in obs.items()})
    assert batch.shape == (2, 2, 5)

    episode = rollout(ENV, policy, episodes=1, seed=5, env_kwargs={**FAST, "max_episode_steps": 6})
    assert episode.episodes[0].length == 6


def test_onnx_export_is_refused_in_one_line(trained):
    _, run = trained
    with pytest.raises(PolicyError, match="noise-driven policy") as error:
        export_onnx(run)
    assert "\n" not in str(error.value) and not (run / "policy" / "model.onnx").exists()
