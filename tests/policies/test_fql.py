"""FQL / QC-FQL: the chunked TD target on a hand-computed window, distillation toward the flow policy, the
one-step policy moving toward higher Q, and the policy folder sampling noise per decision."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.actor_policy import load_actor_policy
from embodia.policies.fql import FQL, FQLConfig
from embodia.policies.networks import ObsNormalizer
from embodia.policies.train import export_policy


def two_mode_dataset(n: int = 2048, seed: int = 0):
    """One state; actions -0.6 or +0.6; reward 0 for +0.6, -1 for -0.6; every step terminates."""
    rng = np.random.default_rng(seed)
    action = rng.choice([-0.6, 0.6], size=(n, 1)).astype(np.float32)
    arrays = {
        "state": np.ones((n, 1), np.float32),
        "action": action,
        "reward": np.where(action[:, 0] > 0, 0.0, -1.0).astype(np.float32),
        "terminated": np.ones(n, bool),
    }
    return arrays, np.arange(1, n + 1)


def test_qc_fql_target_on_a_hand_computed_window():
    """H = 3, gamma = 0.5: y = r0 + 0.5 r1 + 0.25 r2 + 0.5^3 (1 - d) agg_j Qbar_j(s_{t+3}, mu(s_{t+3}, z))."""
    config = FQLConfig(horizon=3, gamma=0.5, hidden=(8,), q_agg="min")
    normalizer = ObsNormalizer(["state"], np.zeros(1), np.ones(1))
    learner = FQL(config, normalizer, action_dim=2, seed=0)
    for net, bias in zip(learner.target_critic.nets, (4.0, 6.0)):  # constant target critics: 4 and 6
        torch.nn.init.zeros_(net[-1].weight)
        torch.nn.init.constant_(net[-1].bias, bias)
    batch = {
        "reward": torch.tensor([[-1.0, -1.0, -1.0], [-1.0, 0.0, 0.0]]),
        "valid": torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),  # row 2 terminates at its 2nd step
        "terminal": torch.tensor([0.0, 1.0]),
    }
    y = learner.td_target(batch, torch.zeros(2, 1))
    assert y.tolist() == pytest.approx([-1 - 0.5 - 0.25 + 0.125 * 4.0, -1.0])  # min of 4 and 6; no bootstrap
    learner.config.q_agg = "mean"
    assert learner.td_target(batch, torch.zeros(2, 1))[0].item() == pytest.approx(-1.75 + 0.125 * 5.0)
    assert learner.actor.noise_dim == 6 and learner.flow.noise_dim == 6  # chunks of 3 two-dimensional actions


def train(config: FQLConfig, steps: int) -> tuple[FQL, ObsNormalizer]:
    arrays, ends = two_mode_dataset()
    sampler = WindowSampler(arrays, horizon=config.horizon, episode_ends=ends, seed=0)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    learner = FQL(config, normalizer, action_dim=1, reward_range=(-1.0, 0.0), seed=0)
    torch.set_num_threads(1)
    for _ in range(steps):
        learner.update(to_torch(sampler.sample(256)))
    return learner, normalizer


def test_without_the_q_term_the_one_step_policy_reproduces_the_flow_policys_samples():
    learner, normalizer = train(FQLConfig(hidden=(64, 64), lr=3e-3, alpha=10.0, q_weight=0.0), 700)
    torch.manual_seed(2)
    obs, noise = normalizer({"state": torch.ones(500, 1)}), torch.randn(500, 1)
    one_step = learner.actor(obs, noise).detach().squeeze(-1).numpy()
    flow = learner.flow(obs, noise).detach().squeeze(-1).numpy()
    assert np.abs(one_step - flow).mean() < 0.1, np.abs(one_step - flow).mean()
    assert np.mean(one_step < 0) > 0.25 and np.mean(one_step > 0) > 0.25  # both modes, as the data


def test_with_the_q_term_the_one_step_policy_picks_the_rewarded_mode(tmp_path):
    # the Q gap between the modes is 1 over 1.2 action units: a small alpha lets it move every sample
    learner, _ = train(FQLConfig(hidden=(64, 64), lr=3e-3, alpha=0.1), 700)
    folder = tmp_path / "policy"
    policy = export_policy(learner, folder, {"method": "fql"})
    assert policy.noise_dim == 1
    policy.reset(seed=3)
    actions = np.array([policy.act({"state": np.ones(1, np.float32)})[0] for _ in range(200)])
    assert np.mean(actions > 0.3) > 0.9, np.mean(actions > 0.3)  # the data's +0.6, with reward 0
    again = load_actor_policy(folder, "torch")
    again.reset(seed=3)
    replay = np.array([again.act({"state": np.ones(1, np.float32)})[0] for _ in range(200)])
    np.testing.assert_array_equal(actions, replay)  # the noise comes from the seed: runs repeat exactly
    from embodia.core.errors import PolicyError
    from embodia.policies.onnx_export import export_onnx

    with pytest.raises(PolicyError, match="noise-driven policy"):  # not silently exported without its noise
        export_onnx(folder)


def test_deas_with_fql_extraction_picks_the_rewarded_mode(tmp_path):
    """DEAS's detached distributional critic with FQL's actor: a noise-driven one-step policy folder."""
    from embodia.policies.deas import DEAS, DEASConfig

    arrays, ends = two_mode_dataset()
    # gamma2 = 0.5: a value support of [-2, 0] (every step here terminates, so no bootstrap is used)
    config = DEASConfig(horizon=1, extraction="fql", alpha=0.1, gamma2=0.5, hidden=(64, 64), lr=3e-3, bins=21)
    sampler = WindowSampler(arrays, horizon=1, episode_ends=ends, seed=0)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    learner = DEAS(config, normalizer, action_dim=1, reward_range=(-1.0, 0.0), seed=0)
    torch.set_num_threads(1)
    for _ in range(700):
        metrics = learner.update(to_torch(sampler.sample(256)))
    assert {"critic_loss", "value_loss", "actor_loss", "bc_mse"} <= set(metrics)
    assert set(learner.modules()) == {"critic", "target_critic", "value", "actor", "flow"}
    policy = export_policy(learner, tmp_path / "deas", {"method": "deas"})
    policy.reset(seed=0)
    actions = np.array([policy.act({"state": np.ones(1, np.float32)})[0] for _ in range(200)])
    # the data is half -0.6: the Q term moved (nearly) every sample to the rewarded side; the categorical
    # critic is flat near its support's edge (HL-Gauss smoothing), so they stop short of +0.6
    assert np.mean(actions > 0) > 0.9, np.mean(actions > 0)
