"""Sample training windows from trajectories without crossing episode boundaries.

A window of horizon ``H`` starting at step ``t`` of an episode holds

- ``obs[key]``         the observation at ``t``                                  (B, ...)
- ``action``           actions ``a_t .. a_{t+H-1}``                              (B, H, A)
- ``reward``           rewards ``r_t .. r_{t+H-1}``                              (B, H)
- ``valid``            1 for steps inside the episode, 0 for padding after its end (B, H)
- ``terminal``         whether the episode *terminated* inside the window          (B,)
- ``steps``            number of valid steps ``n`` (<= H)                          (B,)
- ``next_obs[key]``    the observation at ``t + n`` (the bootstrap state)           (B, ...)

A start ``t`` is sampled when the whole window and its next observation lie inside the episode
(``t + H <= end - 1``), or when the episode terminated and ``t`` is any step of it: after a terminal
there is nothing to bootstrap, so such windows are padded (last row repeated, ``valid`` = 0) and
the learner masks them. Windows of truncated episodes never run past the last recorded step.
``H = 1`` gives ordinary transitions ``(s, a, r, s')``.

The store is read into memory once (zarr chunk reads are sequential and fast); sampling is NumPy
fancy indexing on the cached arrays. :class:`WindowDataset` exposes the same windows as a
``torch.utils.data.Dataset``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from embodia.data.store import TrajectoryStore


def valid_window_starts(episode_ends: np.ndarray, terminated: np.ndarray | None, horizon: int) -> np.ndarray:
    """Indices ``t`` (global row numbers) where a window of ``horizon`` steps may start."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    starts = []
    begin = 0
    for end in np.asarray(episode_ends, dtype=np.int64):
        ended_by_terminal = terminated is not None and end > begin and bool(terminated[end - 1])
        last_start = end - 1 if ended_by_terminal else end - 1 - horizon
        if last_start >= begin:
            starts.append(np.arange(begin, last_start + 1, dtype=np.int64))
        begin = end
    return np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)


class WindowSampler:
    """Random batches of fixed-length windows from a store or from in-memory arrays.

    Args:
        source: a :class:`TrajectoryStore` (its committed episodes are loaded into memory), or a mapping
            of key -> array (all keys with the same number of rows) together with ``episode_ends``.
        horizon: window length ``H`` (1 = single transitions).
        obs_keys: observation keys to return (default: all observation keys of the store, or every key
            of the mapping except action/reward/flags).
        episode_ends: cumulative episode ends, required when ``source`` is a mapping.
        seed: seed of the sampler's generator.
    """

    def __init__(
        self,
        source: TrajectoryStore | Mapping[str, np.ndarray],
        horizon: int = 1,
        *,
        obs_keys: list[str] | None = None,
        episode_ends: np.ndarray | None = None,
        seed: int | None = None,
    ) -> None:
        if isinstance(source, TrajectoryStore):
            if source.num_episodes == 0:
                raise ValueError(f"store {str(source.path)!r} has no episodes to sample from")
            obs_keys = obs_keys or source.obs_keys
            wanted = [*obs_keys, "action", *(k for k in ("reward", "terminated") if k in source.keys)]
            arrays = source.load(wanted)
            episode_ends = source.episode_ends
        else:
            if episode_ends is None:
                raise ValueError("episode_ends is required when sampling from in-memory arrays")
            arrays = dict(source)
            flags = {"action", "reward", "terminated", "truncated", "success", "sim_state"}
            obs_keys = obs_keys or [k for k in arrays if k not in flags]
        self.horizon = int(horizon)
        self.obs_keys = list(obs_keys)
        self.arrays = arrays
        n = len(arrays["action"])
        self.reward = arrays.get("reward", np.zeros(n, dtype=np.float32))
        self.terminated = arrays.get("terminated", np.zeros(n, dtype=bool)).astype(bool)
        self.episode_ends = np.asarray(episode_ends, dtype=np.int64)
        # For every row: the last row of its episode.
        lengths = np.diff(np.concatenate([[0], self.episode_ends]))
        self.episode_last = np.repeat(self.episode_ends - 1, lengths)
        self.starts = valid_window_starts(self.episode_ends, self.terminated, self.horizon)
        if len(self.starts) == 0:
            raise ValueError(f"no window of horizon {horizon} fits in any episode (episodes too short)")
        self._offsets = np.arange(self.horizon, dtype=np.int64)
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.starts)

    def windows(self, starts: np.ndarray) -> dict[str, Any]:
        """The windows beginning at the given global row indices (see module docstring)."""
        starts = np.asarray(starts, dtype=np.int64)
        last = self.episode_last[starts]
        raw_index = starts[:, None] + self._offsets[None, :]
        inside = raw_index <= last[:, None]
        index = np.minimum(raw_index, last[:, None])
        terminated = self.terminated[index] & inside
        # Steps after a terminal are padding too.
        after_terminal = np.cumsum(terminated, axis=1) - terminated > 0
        valid = inside & ~after_terminal
        steps = valid.sum(axis=1)
        next_index = np.minimum(starts + steps, last)
        batch: dict[str, Any] = {
            "obs": {k: self.arrays[k][starts] for k in self.obs_keys},
            "next_obs": {k: self.arrays[k][next_index] for k in self.obs_keys},
            "action": self.arrays["action"][index],
            "reward": np.where(valid, self.reward[index], 0.0).astype(np.float32),
            "valid": valid.astype(np.float32),
            "terminal": terminated.any(axis=1),
            "steps": steps,
        }
        return batch

    def sample(self, batch_size: int) -> dict[str, Any]:
        """A batch of ``batch_size`` windows drawn uniformly (with replacement) from valid starts."""
        picks = self.starts[self.rng.integers(0, len(self.starts), size=batch_size)]
        return self.windows(picks)


def to_torch(batch: Mapping[str, Any], device: str = "cpu") -> dict[str, Any]:
    """Convert a sampled batch (nested dicts of arrays) to torch tensors."""

    def convert(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: convert(v) for k, v in value.items()}
        return torch.as_tensor(np.ascontiguousarray(value), device=device)

    return {k: convert(v) for k, v in batch.items()}


class WindowDataset(torch.utils.data.Dataset):
    """Every valid window of a :class:`WindowSampler` as a torch Dataset (item ``i`` = window ``i``)."""

    def __init__(self, sampler: WindowSampler) -> None:
        self.sampler = sampler

    def __len__(self) -> int:
        return len(self.sampler)

    def __getitem__(self, i: int) -> dict[str, Any]:
        batch = self.sampler.windows(self.sampler.starts[[i]])
        return to_torch(_squeeze(batch))


def _squeeze(batch: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_squeeze(v) if isinstance(v, Mapping) else v[0]) for k, v in batch.items()}
