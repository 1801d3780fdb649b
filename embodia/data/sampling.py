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

Memory. A sampler over a store has a memory budget (``memory_budget`` bytes; default
``$EMBODIA_SAMPLER_MEMORY_BUDGET``, else 4 GiB). When the keys it samples fit, the store is read into
memory once (zarr chunk reads are sequential and fast) and sampling is NumPy fancy indexing on the cached
arrays: starts uniform over all valid starts, the same stream for the same seed whatever the budget.
Above the budget, the small keys stay in memory and the big ones (images) are streamed through a bounded
pool of store blocks that a background thread reads ahead (:mod:`embodia.data.window_stream`): every
window is still exactly what :meth:`WindowSampler.windows` gives, only the choice of starts differs (uniform
within the blocks pooled at the time, uniform over all valid starts to within a few percent over a pass;
the module documents the distribution). :class:`WindowDataset` exposes the same windows as a
``torch.utils.data.Dataset``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from embodia.data.store import TrajectoryStore
from embodia.data.window_stream import BlockStream, StreamPlan, plan_stream, resolve_memory_budget


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
        source: a :class:`TrajectoryStore` (its committed episodes are loaded into memory, or streamed
            above ``memory_budget``), or a mapping of key -> array (all keys with the same number of rows)
            together with ``episode_ends``.
        horizon: window length ``H`` (1 = single transitions).
        obs_keys: observation keys to return (default: all observation keys of the store, or every key
            of the mapping except action/reward/flags).
        episode_ends: cumulative episode ends, required when ``source`` is a mapping.
        seed: seed of the sampler's generator.
        memory_budget: bytes (or a string like ``"1GiB"``) a store sampler may hold: the arrays it keeps in
            memory plus its block cache. ``None``: ``$EMBODIA_SAMPLER_MEMORY_BUDGET``, else 4 GiB.
            Ignored for in-memory mappings (their arrays are already in memory).
        reuse: when streaming, how often each valid start is drawn, in expectation, while its block is
            in the pool (a larger value needs less reading and gives more local batches).

    Attributes:
        arrays: the arrays held in memory; when streaming, the streamed keys are not among them.
        streaming: whether the big keys are streamed (the store did not fit in ``memory_budget``).
        plan: the split of the budget when streaming (:class:`~embodia.data.window_stream.StreamPlan`).
        last_starts: the starts of the last :meth:`sample`.
    """

    def __init__(
        self,
        source: TrajectoryStore | Mapping[str, np.ndarray],
        horizon: int = 1,
        *,
        obs_keys: list[str] | None = None,
        episode_ends: np.ndarray | None = None,
        seed: int | None = None,
        memory_budget: int | str | None = None,
        reuse: float = 4.0,
    ) -> None:
        plan: StreamPlan | None = None
        if isinstance(source, TrajectoryStore):
            if source.num_episodes == 0:
                raise ValueError(f"store {str(source.path)!r} has no episodes to sample from")
            obs_keys = obs_keys or source.obs_keys
            wanted = [*obs_keys, "action", *(k for k in ("reward", "terminated") if k in source.keys)]
            budget = resolve_memory_budget(memory_budget)
            plan = plan_stream(source, wanted, obs_keys, int(horizon), budget)
            if plan is None:
                arrays = source.load(wanted)
            else:
                arrays = _ResidentArrays(source.load(plan.resident), plan.streamed)
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
        self.plan = plan
        self.last_starts = np.zeros(0, dtype=np.int64)
        self._stream: BlockStream | None = None
        self._streamed: dict[str, tuple[tuple[int, ...], np.dtype]] = {}  # key -> row shape, dtype
        if plan is not None:
            assert isinstance(source, TrajectoryStore)
            self._stream = BlockStream(source.path, n, plan, self.starts, reuse, seed)
            schema = source.schema
            self._streamed = {
                k: (tuple(schema[k]["shape"]), np.dtype(schema[k]["dtype"])) for k in plan.streamed
            }

    @property
    def streaming(self) -> bool:
        return self._stream is not None

    def __len__(self) -> int:
        return len(self.starts)

    def memory_nbytes(self) -> int:
        """Bytes the sampler holds now: arrays in memory, index arrays and (when streaming) the block cache."""
        held = sum(a.nbytes for a in self.arrays.values()) + self.terminated.nbytes + self.episode_last.nbytes
        held += self.starts.nbytes + (0 if "reward" in self.arrays else self.reward.nbytes)
        return held + (self._stream.nbytes if self._stream is not None else 0)

    def windows(self, starts: np.ndarray) -> dict[str, Any]:
        """The windows beginning at the given global row indices (see module docstring)."""
        starts = np.asarray(starts, dtype=np.int64)
        if self._stream is None:
            return self._windows(starts)
        # Streamed keys at arbitrary rows: read through the stream's chunk cache.
        next_index = self._layout(starts)[-1]
        streamed = {
            k: (self._stream.read(k, starts), self._stream.read(k, next_index)) for k in self._streamed
        }
        return self._windows(starts, streamed)

    def _layout(self, starts: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(index, valid, terminated, steps, next_index)`` of the windows at ``starts``."""
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
        return index, valid, terminated, steps, next_index

    def _windows(
        self, starts: np.ndarray, streamed: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
    ) -> dict[str, Any]:
        """Windows at ``starts``; ``streamed`` holds the (obs, next_obs) rows of streamed keys."""
        index, valid, terminated, steps, next_index = self._layout(starts)
        streamed = streamed or {}
        batch: dict[str, Any] = {
            "obs": {k: streamed[k][0] if k in streamed else self.arrays[k][starts] for k in self.obs_keys},
            "next_obs": {
                k: streamed[k][1] if k in streamed else self.arrays[k][next_index] for k in self.obs_keys
            },
            "action": self.arrays["action"][index],
            "reward": np.where(valid, self.reward[index], 0.0).astype(np.float32),
            "valid": valid.astype(np.float32),
            "terminal": terminated.any(axis=1),
            "steps": steps,
        }
        return batch

    def sample(self, batch_size: int) -> dict[str, Any]:
        """A batch of ``batch_size`` windows drawn with replacement: uniformly from all valid starts, or,
        when streaming, uniformly from the valid starts of the blocks pooled at each draw.

        Raises:
            StoreCorruptError: (streaming) a block needed now failed its checksum when read.
        """
        if self._stream is None:
            picks = self.starts[self.rng.integers(0, len(self.starts), size=batch_size)]
            self.last_starts = picks
            return self.windows(picks)
        stream = self._stream
        picks = np.empty(batch_size, dtype=np.int64)
        streamed = {
            k: (np.empty((batch_size, *shape), dtype), np.empty((batch_size, *shape), dtype))
            for k, (shape, dtype) in self._streamed.items()
        }
        done = 0
        while done < batch_size:  # in segments: the pool rotates after every D draws, even within a batch
            starts, slots, first = stream.draw(self.rng, batch_size - done)
            end = done + len(starts)
            next_index = self._layout(starts)[-1]
            for key, (obs, next_obs) in streamed.items():
                stream.gather(key, starts, slots, first, out=obs[done:end])
                stream.gather(key, next_index, slots, first, out=next_obs[done:end])
            picks[done:end] = starts
            stream.consumed(len(starts))  # may hand the oldest block's slot back to the reader
            done = end
        self.last_starts = picks
        return self._windows(picks, streamed)

    def close(self) -> None:
        """Stop the streaming reader thread and free its cache (it restarts if sampled again)."""
        if self._stream is not None:
            self._stream.close()


class _ResidentArrays(dict):
    """The arrays a streaming sampler keeps in memory; asking for a streamed key says so."""

    def __init__(self, arrays: Mapping[str, np.ndarray], streamed: list[str]) -> None:
        super().__init__(arrays)
        self.streamed = list(streamed)

    def __missing__(self, key: str) -> np.ndarray:
        if key in self.streamed:
            raise KeyError(
                f"{key!r} is streamed from the store (it does not fit in the sampler's memory budget), "
                "not held in memory; read it through sample() or windows(), or raise memory_budget"
            )
        raise KeyError(key)


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
