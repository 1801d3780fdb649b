"""Window sampling: valid starts, boundaries, terminal padding, torch Dataset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.data.sampling import WindowDataset, WindowSampler, valid_window_starts
from embodia.data.store import TrajectoryStore


def arrays(lengths, terminal_last):
    """Episodes whose rows carry (episode index, step index) so windows can be checked exactly."""
    rows = []
    for e, (n, term) in enumerate(zip(lengths, terminal_last)):
        for t in range(n):
            rows.append((e, t, term and t == n - 1))
    ep = np.array([r[0] for r in rows])
    step = np.array([r[1] for r in rows])
    data = {
        "state": np.stack([ep, step], axis=1).astype(np.float32),
        "action": np.stack([ep, step], axis=1).astype(np.float32),
        "reward": (step + 1).astype(np.float32),
        "terminated": np.array([r[2] for r in rows]),
    }
    return data, np.cumsum(lengths)


def test_valid_starts_by_hand():
    # episode 0: 5 steps truncated; episode 1: 3 steps ending in a terminal; episode 2: 2 steps truncated
    _, ends = arrays([5, 3, 2], [False, True, False])
    terminated = np.zeros(10, dtype=bool)
    terminated[7] = True
    # H=2, truncated ep0 rows 0..4: t + 2 <= 4 -> t in 0..2; terminal ep1 rows 5..7: all; ep2 rows 8..9: none
    assert valid_window_starts(ends, terminated, 2).tolist() == [0, 1, 2, 5, 6, 7]
    assert valid_window_starts(ends, terminated, 1).tolist() == [0, 1, 2, 3, 5, 6, 7, 8]
    with pytest.raises(ValueError):
        valid_window_starts(ends, terminated, 0)


def test_windows_never_cross_episodes_and_pad_after_terminals():
    data, ends = arrays([6, 4, 7], [False, True, False])
    sampler = WindowSampler(data, horizon=3, episode_ends=ends, seed=0)
    batch = sampler.sample(4096)
    ep_of_action = batch["action"][..., 0]
    ep_of_obs = batch["obs"]["state"][:, 0]
    assert (ep_of_action == ep_of_obs[:, None]).all(), "a window crossed an episode boundary"
    assert (batch["next_obs"]["state"][:, 0] == ep_of_obs).all()
    steps = batch["obs"]["state"][:, 1]
    # next observation is `steps` rows later (or the last row after a terminal)
    np.testing.assert_array_equal(
        batch["next_obs"]["state"][:, 1], np.where(batch["terminal"], steps + batch["steps"] - 1, steps + 3)
    )
    # rewards are masked where invalid; valid steps are a prefix
    assert (batch["reward"][batch["valid"] == 0] == 0).all()
    assert (np.diff(batch["valid"], axis=1) <= 0).all()
    # terminal windows only in episode 1 and only when they reach its last step
    term = batch["terminal"]
    assert (ep_of_obs[term] == 1).all() and (steps[term] + batch["steps"][term] - 1 == 3).all()


def test_exact_window_contents():
    data, ends = arrays([4, 3], [False, True])
    sampler = WindowSampler(data, horizon=2, episode_ends=ends)
    w = sampler.windows(np.array([0, 6]))  # row 6 = last (terminal) step of episode 1
    np.testing.assert_array_equal(w["reward"], [[1, 2], [3, 0]])
    np.testing.assert_array_equal(w["valid"], [[1, 1], [1, 0]])
    np.testing.assert_array_equal(w["terminal"], [False, True])
    np.testing.assert_array_equal(w["steps"], [2, 1])
    np.testing.assert_array_equal(w["action"][1], [[1, 2], [1, 2]])  # padded by repeating the last row


def test_store_and_memory_agree(tmp_path):
    data, ends = arrays([6, 4, 7], [False, True, False])
    store = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    begin = 0
    for end in ends:
        store.add_episode({k: v[begin:end] for k, v in data.items()}, env_id="e")
        begin = end
    from_store = WindowSampler(store, horizon=3, seed=1).sample(64)
    from_memory = WindowSampler(data, horizon=3, episode_ends=ends, seed=1).sample(64)
    for key in ("action", "reward", "valid", "terminal", "steps"):
        np.testing.assert_array_equal(from_store[key], from_memory[key])
    np.testing.assert_array_equal(from_store["obs"]["state"], from_memory["obs"]["state"])


def test_torch_dataset():
    data, ends = arrays([5, 3], [False, True])
    sampler = WindowSampler(data, horizon=2, episode_ends=ends)
    dataset = WindowDataset(sampler)
    assert len(dataset) == len(sampler.starts) == 6
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=False)
    first = next(iter(loader))
    assert first["action"].shape == (4, 2, 2) and first["obs"]["state"].shape == (4, 2)
    assert first["action"].dtype == torch.float32
