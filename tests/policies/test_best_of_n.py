"""Best-of-N extraction: the critic chooses among flow BC samples; the policy folder carries both."""

from __future__ import annotations

import json

import numpy as np
import torch

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.actor_policy import load_actor_policy
from embodia.policies.best_of_n import BestOfNPolicy
from embodia.policies.deas import DEAS, DEASConfig
from embodia.policies.flow import FlowPolicy
from embodia.policies.networks import Critic, ObsNormalizer
from embodia.policies.train import export_policy
from tests.policies.test_fql import two_mode_dataset


def test_the_highest_scored_candidate_is_returned():
    torch.manual_seed(0)
    flow = FlowPolicy(obs_dim=2, action_dim=1, horizon=2, hidden=(16,), flow_steps=3)
    critic = Critic(obs_dim=2, action_dim=2, hidden=(16,), out_dim=5)
    policy = BestOfNPolicy(flow, critic, samples=6, centers=torch.linspace(-1.0, 0.0, 5))
    obs, noise = torch.randn(3, 2), torch.randn(3, 6 * 2)
    chosen = policy(obs, noise)
    candidates = policy.candidates(obs, noise)  # (3, 6, 2)
    for b in range(3):
        heads = critic(obs[b : b + 1].expand(6, 2), candidates[b])  # (2, 6, 5)
        values = (torch.softmax(heads, -1) * torch.linspace(-1.0, 0.0, 5)).sum(-1).min(0).values
        torch.testing.assert_close(chosen[b], candidates[b, values.argmax()])
        torch.testing.assert_close(
            candidates[b, 0], flow(obs[b : b + 1], noise[b : b + 1, :2])[0]
        )  # flow's own


def train_best_of_n(candidates: int, steps: int = 600) -> DEAS:
    arrays, ends = two_mode_dataset()
    # gamma2 = 0.5: a value support of [-2, 0] (every step terminates here, so no bootstrap is used)
    config = DEASConfig(
        horizon=1,
        extraction="best_of_n",
        candidates=candidates,
        gamma2=0.5,
        hidden=(64, 64),
        lr=3e-3,
        bins=21,
    )
    sampler = WindowSampler(arrays, horizon=1, episode_ends=ends, seed=0)
    learner = DEAS(
        config, ObsNormalizer.fit(["state"], arrays), action_dim=1, reward_range=(-1.0, 0.0), seed=0
    )
    torch.set_num_threads(1)
    for _ in range(steps):
        metrics = learner.update(to_torch(sampler.sample(256)))
    assert {"critic_loss", "value_loss", "actor_loss", "bc_mse"} <= set(metrics)
    return learner


def test_best_of_n_picks_the_rewarded_mode_that_flow_bc_samples_half_the_time(tmp_path):
    learner = train_best_of_n(candidates=8)
    policy = export_policy(learner, tmp_path / "deas", {"method": "deas"})
    config = json.loads((tmp_path / "deas" / "config.json").read_text())
    assert config["best_of_n"] == 8 and config["critic_bins"] == 21 and config["noise_dim"] == 8
    policy.reset(seed=0)
    chosen = np.array([policy.act({"state": np.ones(1, np.float32)})[0] for _ in range(200)])
    # the flow policy alone (N = 1) samples both modes of the data; the critic picks +0.6 whenever one of
    # the 8 candidates is there (all 8 at -0.6: 1 in 256)
    samples = learner.flow(
        torch.ones(400, 1), torch.randn(400, 1, generator=torch.Generator().manual_seed(1))
    )
    alone = samples.detach().numpy()[:, 0]
    assert 0.3 < np.mean(alone > 0) < 0.7 and np.mean(np.abs(np.abs(alone) - 0.6) < 0.2) > 0.8
    assert np.mean(chosen > 0) > 0.95 and np.mean(np.abs(chosen - 0.6) < 0.2) > 0.9
    # every chosen action is a sample of the behaviour policy: near one of the data's two actions
    again = load_actor_policy(tmp_path / "deas")
    again.reset(seed=0)
    repeat = np.array([again.act({"state": np.ones(1, np.float32)})[0] for _ in range(200)])
    np.testing.assert_array_equal(repeat, chosen)  # the folder repeats exactly per seed
