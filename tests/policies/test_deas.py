"""DEAS pieces by hand (expectile loss, H-step target with a terminal inside the window) and learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.deas import DEAS, DEASConfig, sequence_target
from embodia.policies.iql import IQL, IQLConfig
from embodia.policies.networks import ObsNormalizer, expectile_loss


def test_expectile_loss_by_hand():
    u = torch.tensor([2.0, -1.0, 0.0])
    assert expectile_loss(u, 0.7).tolist() == pytest.approx([0.7 * 4, 0.3 * 1, 0.0])
    assert expectile_loss(u, 0.5).tolist() == pytest.approx([2.0, 0.5, 0.0])


def test_sequence_target_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    valid = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])  # row 2: terminal at its 2nd step
    done = torch.tensor([0.0, 1.0])
    next_value = torch.tensor([10.0, 10.0])
    y = sequence_target(rewards, valid, done, next_value, gamma1=0.5, gamma2=0.9)
    full = 1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4 + 0.9**4 * 10
    assert y.tolist() == pytest.approx([full, 1 + 0.5 * 2])


def chain_dataset(episodes: int = 30, length: int = 24):
    """A chain: state = (position / length, 1); reward -1 per step; the episode terminates at its end."""
    states, actions, rewards, terminated = [], [], [], []
    for _ in range(episodes):
        t = np.arange(length)
        states.append(np.stack([t / length, np.ones(length)], 1))
        actions.append(np.zeros((length, 1)))
        rewards.append(-np.ones(length))
        terminated.append(t == length - 1)
    arrays = {
        "state": np.concatenate(states).astype(np.float32),
        "action": np.concatenate(actions).astype(np.float32),
        "reward": np.concatenate(rewards).astype(np.float32),
        "terminated": np.concatenate(terminated),
    }
    return arrays, np.cumsum([length] * episodes), length


def mc_values(length: int, horizon: int, gamma1: float, gamma2: float) -> np.ndarray:
    """Exact SMDP values of the chain: V(t) = sum_{k<H} gamma1^k r + gamma2^H V(t+H), V(past the end) = 0."""
    values = np.zeros(length + horizon)
    for t in reversed(range(length)):
        steps = min(horizon, length - t)
        chunk = -sum(gamma1**k for k in range(steps))
        values[t] = chunk + (gamma2**horizon * values[t + horizon] if t + horizon < length else 0.0)
    return values[:length]


@pytest.mark.parametrize("distributional", [True, False, "distribution-target", "bfloat16"])
def test_deas_values_approach_monte_carlo_returns(distributional):
    arrays, ends, length = chain_dataset()
    config = DEASConfig(
        matmul_precision="bfloat16" if distributional == "bfloat16" else "float32",
        value_target="distribution" if distributional == "distribution-target" else "hl_gauss",
        v_min=-30.0 if distributional == "distribution-target" else None,  # the chain's values reach -14
        horizon=4,
        gamma1=0.9,
        gamma2=0.95,
        expectile=0.5,
        distributional=bool(distributional),
        bins=51,
        hidden=(64, 64),
        lr=3e-3,
        polyak=0.02,
    )
    sampler = WindowSampler(arrays, horizon=4, episode_ends=ends, seed=0)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    learner = DEAS(config, normalizer, action_dim=1, reward_range=(-1.0, 0.0), seed=0)
    obs = normalizer({"state": torch.as_tensor(arrays["state"][:length])})
    truth = mc_values(length, 4, 0.9, 0.95)
    first_error = float(np.abs(learner.v_values(obs).detach().numpy() - truth).mean())
    torch.set_num_threads(1)
    for _ in range(700):
        learner.update(to_torch(sampler.sample(128)))
    estimate = learner.v_values(obs).detach().numpy()
    error = float(np.abs(estimate - truth).mean())
    assert error < 0.1 * first_error and error < 0.02 * np.abs(truth).max(), (error, first_error)
    assert np.corrcoef(estimate, truth)[0, 1] > 0.98


def test_iql_nstep_values_approach_monte_carlo_returns():
    arrays, ends, length = chain_dataset()
    config = IQLConfig(n_step=3, gamma=0.9, expectile=0.5, hidden=(64, 64), lr=3e-3, polyak=0.02)
    sampler = WindowSampler(arrays, horizon=3, episode_ends=ends, seed=0)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    learner = IQL(config, normalizer, action_dim=1, seed=0)
    torch.set_num_threads(1)
    for _ in range(600):
        learner.update(to_torch(sampler.sample(128)))
    obs = normalizer({"state": torch.as_tensor(arrays["state"][:length])})
    estimate = learner.value(obs).squeeze(-1).detach().numpy()
    truth = np.array([-sum(0.9**k for k in range(length - t)) for t in range(length)])
    assert np.abs(estimate - truth).mean() < 0.02 * np.abs(truth).max()


def test_deas_on_rewards_that_are_all_zero_stays_finite():
    # a dataset without a single reward (every episode failed) once made the value support a point: NaN actions
    arrays, ends, length = chain_dataset(episodes=4, length=12)
    arrays["reward"] = np.zeros_like(arrays["reward"])
    config = DEASConfig(horizon=4, bins=21, hidden=(32, 32))
    sampler = WindowSampler(arrays, horizon=4, episode_ends=ends, seed=0)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    learner = DEAS(config, normalizer, action_dim=1, reward_range=(0.0, 0.0), seed=0)
    for _ in range(5):
        losses = learner.update(to_torch(sampler.sample(16)))
    assert all(np.isfinite(float(v)) for v in losses.values()), losses
    obs = normalizer({"state": torch.as_tensor(arrays["state"][:length])})
    assert torch.isfinite(learner.v_values(obs)).all()
