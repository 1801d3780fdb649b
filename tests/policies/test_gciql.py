"""GCIQL's hindsight relabelling: goals come from the right places and rewards follow them."""

from __future__ import annotations

import numpy as np

from embodia.data.sampling import WindowSampler
from embodia.policies.gciql import GCIQL, GCIQLConfig


def test_relabelled_batches():
    # three episodes; state = (episode, step) so every state says where it comes from
    lengths = [30, 20, 25]
    episode = np.concatenate([np.full(n, e) for e, n in enumerate(lengths)])
    step = np.concatenate([np.arange(n) for n in lengths])
    arrays = {
        "state": np.stack([episode, step], 1).astype(np.float32),
        "action": np.stack([episode, step], 1).astype(np.float32),
    }
    sampler = WindowSampler(arrays, horizon=1, episode_ends=np.cumsum(lengths), seed=0)
    learner = GCIQL(GCIQLConfig(hidden=(8,)), GCIQL.fit_normalizer(sampler), action_dim=2, seed=0)
    batch = learner.sample(sampler, 4000)
    s, g = batch["obs"]["state"].numpy(), batch["obs"]["goal"].numpy()
    s_next = batch["next_obs"]["state"].numpy()
    reward, terminal = batch["reward"].numpy(), batch["terminal"].numpy()
    # transitions stay inside an episode
    assert (s_next[:, 0] == s[:, 0]).all() and (s_next[:, 1] == s[:, 1] + 1).all()
    # reward 0 and terminal exactly when the goal is the current state
    at_goal = (g == s).all(1)
    np.testing.assert_array_equal(reward[:, 0], at_goal - 1.0)  # windows of one step
    np.testing.assert_array_equal(terminal, at_goal)
    # the goal mixture: ~20 % current, ~50 % future of the same episode (never the past), rest random
    assert 0.15 < at_goal.mean() < 0.3
    same_episode_future = (g[:, 0] == s[:, 0]) & (g[:, 1] > s[:, 1])
    assert 0.4 < same_episode_future.mean() < 0.75
    actor_goal = batch["actor_obs"]["goal"].numpy()
    assert (actor_goal[:, 0] == s[:, 0]).all() and (actor_goal[:, 1] > s[:, 1]).all()
    # actor goals uniform over the rest of the episode (OGBench's actor_geom_sample=False): the offset, as a
    # fraction of what is left, is spread evenly, not piled up near the state as a geometric offset would be
    last = np.array([lengths[int(e)] - 1 for e in s[:, 0]])
    left = last - s[:, 1]
    fraction = (actor_goal[:, 1] - s[:, 1] - 1) / np.maximum(left - 1, 1)
    far = left >= 10
    assert 0.4 < np.median(fraction[far]) < 0.6 and np.mean(fraction[far] > 0.75) > 0.18
    # one update runs and returns finite losses
    assert all(np.isfinite(v) for v in learner.update(learner.sample(sampler, 64)).values())
