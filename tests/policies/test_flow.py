"""Flow matching: the loss and Euler sampling on cases with a known answer, and flow BC learning two modes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.flow import FlowBC, FlowBCConfig, FlowPolicy, euler_sample, flow_matching_loss
from embodia.policies.networks import ObsNormalizer


class ExactField(FlowPolicy):
    """The exact velocity of the linear path to a point target ``a*``: ``v(x, t) = (a* - x) / (1 - t)``."""

    def __init__(self, target: float) -> None:
        nn.Module.__init__(self)
        self.action_dim, self.horizon, self.flow_steps, self.noise_dim = 1, 1, 4, 1
        self.target = target

    def velocity(self, obs, x, t):
        return (self.target - x) / (1.0 - t)


def test_euler_steps_land_on_a_point_target_and_its_exact_field_has_zero_loss():
    field = ExactField(0.3)
    noise = torch.tensor([[-2.0], [0.0], [1.5]])
    obs = torch.zeros(3, 1)
    # x_{k+1} = x_k + (a* - x_k) / (K - k): the last step (k = K-1) lands exactly on a*
    assert euler_sample(field, obs, noise, steps=4).squeeze(-1).tolist() == pytest.approx([0.3, 0.3, 0.3])
    # along x_t = (1 - t) x_0 + t a*, (a* - x_t) / (1 - t) = a* - x_0: the regression target, exactly
    torch.manual_seed(0)
    loss = flow_matching_loss(field, torch.zeros(256, 1), torch.full((256, 1), 0.3))
    assert float(loss) < 1e-9


def test_sampling_clips_into_the_action_range():
    field = ExactField(3.0)  # a target outside [-1, 1]
    out = euler_sample(field, torch.zeros(2, 1), torch.zeros(2, 1), steps=2)
    assert out.squeeze(-1).tolist() == [1.0, 1.0]


def test_flow_bc_learns_both_modes_where_regression_learns_their_mean():
    """Actions are -0.6 or +0.6 at random for the same state: flow BC samples both; the mean (0) is rare."""
    rng = np.random.default_rng(0)
    n = 2048
    arrays = {
        "state": np.ones((n, 1), np.float32),
        "action": rng.choice([-0.6, 0.6], size=(n, 1)).astype(np.float32),
    }
    sampler = WindowSampler(arrays, horizon=1, episode_ends=np.array([n]), seed=0)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    learner = FlowBC(FlowBCConfig(hidden=(64, 64), lr=3e-3, flow_steps=10), normalizer, action_dim=1, seed=0)
    torch.set_num_threads(1)
    for _ in range(600):
        learner.update(to_torch(sampler.sample(256)))
    torch.manual_seed(1)
    obs = normalizer({"state": torch.ones(1000, 1)})
    samples = learner.actor(obs, torch.randn(1000, 1)).detach().squeeze(-1).numpy()
    near = lambda value: float(np.mean(np.abs(samples - value) < 0.2))  # noqa: E731
    assert near(-0.6) > 0.35 and near(0.6) > 0.35 and near(0.0) < 0.1, (near(-0.6), near(0.6), near(0.0))


def test_fql_actor_loss_terms_and_the_normalised_q_term():
    from embodia.policies.flow import fql_actor_loss

    torch.manual_seed(0)
    flow, actor = FlowPolicy(1, 2, 1, (8,), flow_steps=3), FlowPolicy(1, 2, 1, (8,), flow_steps=0)
    obs, actions, mask = torch.zeros(16, 1), torch.full((16, 2), 0.5), torch.ones(16, 2)

    def constant(value):
        return lambda o, a: a.sum(-1) * 0.0 + value  # a Q that ignores the action

    results = {}
    for normalize in (False, True):
        torch.manual_seed(1)  # the same noises in both calls
        loss, metrics = fql_actor_loss(
            flow, actor, obs, actions, mask, constant(5.0), alpha=2.0, normalize_q=normalize
        )
        results[normalize] = (float(loss.detach()), metrics)
    (plain, m), (normalised, _) = results[False], results[True]
    assert plain == pytest.approx(m["flow_loss"] + 2.0 * m["distill_loss"] - 5.0, rel=1e-5)
    assert normalised == pytest.approx(
        m["flow_loss"] + 2.0 * m["distill_loss"] - 1.0, rel=1e-5
    )  # -Q / mean|Q|


def test_a_one_step_output_pushed_past_the_bound_is_distilled_back():
    """FQL distils the unclipped one-step output: an output beyond +-1 still gets the gradient that brings
    it back (a clip before the distillation term gave it none, and it stayed saturated)."""
    from embodia.policies.flow import fql_actor_loss

    torch.manual_seed(0)
    flow, actor = FlowPolicy(1, 2, 1, (8,), flow_steps=3), FlowPolicy(1, 2, 1, (8,), flow_steps=0)
    with torch.no_grad():
        actor.net[-1].bias.fill_(5.0)  # every output far past +1
    obs, actions, mask = torch.zeros(64, 1), torch.zeros(64, 2), torch.ones(64, 2)
    optimizer = torch.optim.SGD(actor.parameters(), lr=0.05)
    before = float(actor.one_step(obs, torch.zeros(64, 2)).mean())
    for _ in range(50):
        loss, _ = fql_actor_loss(flow, actor, obs, actions, mask, lambda o, a: a.sum(-1) * 0.0, alpha=1.0)
        optimizer.zero_grad()
        loss.backward()
        assert actor.net[-1].bias.grad.abs().min() > 0  # the saturated outputs receive a gradient
        optimizer.step()
    after = float(actor.one_step(obs, torch.zeros(64, 2)).mean())
    assert before > 4.0 and after < 1.0
    # what the policy executes stays clipped
    assert float(actor(obs, torch.zeros(64, 2)).abs().max()) <= 1.0
