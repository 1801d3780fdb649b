"""Window sampling from stores larger than memory: a bounded pool of store blocks, read ahead by a thread.

:class:`embodia.data.sampling.WindowSampler` uses this when the keys it samples would not fit in its
memory budget. Small keys (action, reward, terminated, state vectors) stay in memory; the big ones
(images) are *streamed*: the store's rows are cut into **blocks** of ``R`` consecutive rows (a multiple
of the streamed arrays' chunk rows, so every read is whole chunks), and a ring buffer of ``S`` slots holds
``M`` blocks in a **pool** plus up to ``P = S - M`` blocks read ahead by a background thread.

Sampling distribution. Block ``k`` owns the valid window starts in its rows ``[k R, (k+1) R)``; its slot
also holds the next ``H`` rows (a halo), so every window starting in the block — its observation and its
bootstrap observation ``t + n <= t + H`` — is read from the slot, exactly the rows that
:meth:`~embodia.data.sampling.WindowSampler.windows` reads in memory. Blocks enter the pool in the order
of an endless sequence of random permutations of all blocks (one *pass* per permutation). A batch
draws its starts uniformly, with replacement, from the union of the pooled blocks' valid starts. After
every ``D = reuse * (valid starts / blocks)`` draws the oldest pooled block is evicted (between batches)
and the next block enters. While a block is pooled, each of its starts is drawn with probability
``1 / C`` per draw, ``C`` being the pool's total of valid starts (about ``M`` times the mean per block),
whatever its own block's count; a block stays ``M`` rotations, so over a pass every valid start is drawn
``reuse`` times in expectation, up to how much ``C`` varies between rotations (blocks of equal rows hold
nearly equal numbers of starts: only episode ends and terminal windows change them). The marginal
distribution over a pass is therefore uniform over all valid starts to within a few percent, and exactly
uniform in expectation over the random block order; what differs from the in-memory sampler is
locality: consecutive batches come from the same ``M`` blocks (a random ``M / blocks`` share of the
store), as with a shuffle buffer. ``reuse`` trades that locality for read bandwidth: each row read is
used ``reuse`` times on average.

The order of blocks comes from the sampler's seed and rotations happen after fixed numbers of draws,
so a seed gives the same batches however fast the disk is; a batch only waits when the reader is behind.

Reading goes through the store's own checked read path (CRC32C per chunk); a read error in the thread —
a corrupt chunk is :class:`~embodia.core.errors.StoreCorruptError` — is raised by the next ``sample()``
that needs that block, and by every later one.
"""

from __future__ import annotations

import math
import os
import queue
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from embodia.data.store import TrajectoryStore

DEFAULT_MEMORY_BUDGET = 4 << 30
"""Bytes a :class:`~embodia.data.sampling.WindowSampler` may hold when nothing else is said (4 GiB)."""
BUDGET_ENV = "EMBODIA_SAMPLER_MEMORY_BUDGET"
"""Environment variable with the default memory budget (e.g. ``512MiB``, ``8G``, ``1000000000``)."""
INDEX_BYTES_PER_ROW = 8 + 8 + 1
"""What the sampler keeps per row besides the arrays: episode_last, valid starts (at most one per row),
terminated flags."""
_TARGET_SLOTS = 32
_MAX_BLOCK_BYTES = 64 << 20
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(value: int | str) -> int:
    """A byte count: an int, or a string like ``"4GiB"``, ``"512M"``, ``"1.5g"``, ``"100000"``.

    Unit letters K, M, G, T (optionally followed by ``iB`` or ``B``) are powers of 1024.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a byte count: {value!r}")
    if isinstance(value, int | np.integer):
        number = int(value)
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d*)?(?:e\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(value), re.IGNORECASE)
        if match is None:
            raise ValueError(f"not a byte count: {value!r} (use e.g. 4GiB, 512M or 1000000000)")
        number = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if number <= 0:
        raise ValueError(f"a memory budget must be positive, got {value!r}")
    return number


def resolve_memory_budget(value: int | str | None) -> int:
    """``value`` in bytes; ``None`` means ``$EMBODIA_SAMPLER_MEMORY_BUDGET``, else 4 GiB."""
    if value is not None:
        return parse_bytes(value)
    env = os.environ.get(BUDGET_ENV)
    if env is None or not env.strip():
        return DEFAULT_MEMORY_BUDGET
    try:
        return parse_bytes(env)
    except ValueError as error:
        raise ValueError(f"${BUDGET_ENV}: {error}") from None


def row_nbytes(store: TrajectoryStore, key: str) -> int:
    """Bytes of one row of ``data/<key>``."""
    spec = store.schema[key]
    return int(np.prod(spec["shape"], dtype=np.int64)) * np.dtype(spec["dtype"]).itemsize


@dataclass(frozen=True)
class StreamPlan:
    """How a sampler over a store splits its memory budget (see :func:`plan_stream`)."""

    resident: list[str]
    """keys loaded into memory"""
    streamed: list[str]
    """keys read block by block"""
    resident_bytes: int
    """resident arrays plus the sampler's per-row index arrays"""
    block_rows: int
    """``R``: rows per block (whole chunks of every streamed array)"""
    slot_rows: int
    """``R + H``: rows a slot holds (the block and its halo)"""
    slots: int
    """``S``: blocks held at once (pool + read ahead)"""
    prefetch: int
    """``P``: slots the reader may fill ahead of the pool"""
    chunk_cache_bytes: int
    """capacity of the :class:`ChunkCache` for reads at arbitrary rows"""
    budget: int

    @property
    def pool(self) -> int:
        """``M``: blocks sampled from at once."""
        return self.slots - self.prefetch


def plan_stream(
    store: TrajectoryStore, wanted: Sequence[str], obs_keys: Sequence[str], horizon: int, budget: int
) -> StreamPlan | None:
    """``None`` when the ``wanted`` keys fit in ``budget``; else which keys stream and the block layout.

    Non-observation keys (action, reward, terminated) always stay in memory; observation keys stay in
    memory, smallest first, while the resident part is at most half the budget; the rest stream. The
    cache then gets what is left: ``S`` slots of ``R + H`` streamed rows, plus the thread's read buffer
    (one block of the largest streamed key and the chunks zarr decodes at once) and one slot for
    :class:`ChunkCache` (direct :meth:`~embodia.data.sampling.WindowSampler.windows` reads).

    Raises:
        ValueError: the budget cannot hold the resident keys and a pool of at least two blocks.
    """
    n = store.num_steps
    sizes = {key: row_nbytes(store, key) for key in wanted}
    index_bytes = INDEX_BYTES_PER_ROW + (0 if "reward" in wanted else 4)  # zero rewards are made
    if n * (sum(sizes.values()) + index_bytes) <= budget:
        return None
    resident = [key for key in wanted if key not in obs_keys]
    resident_bytes = n * (index_bytes + sum(sizes[key] for key in resident))
    streamed = []
    for key in sorted(obs_keys, key=lambda k: sizes[k]):
        if not streamed and resident_bytes + n * sizes[key] <= budget // 2:
            resident.append(key)
            resident_bytes += n * sizes[key]
        else:
            streamed.append(key)
    streamed.sort(key=list(obs_keys).index)
    stream_row = sum(sizes[key] for key in streamed)
    largest_row = max(sizes[key] for key in streamed)
    cache = budget - resident_bytes
    # Per slot-equivalent: the S slots, the read buffer and the chunk cache (each at most one slot).
    per_slot = cache // (_TARGET_SLOTS + 2)
    rows = min(per_slot // stream_row, _MAX_BLOCK_BYTES // stream_row) - horizon
    # Blocks of whole chunks when they fit (a partial chunk is decoded whole); else of the smallest
    # chunks, else of any rows.
    chunks = [int(store.array(key).chunks[0]) for key in streamed]
    align = math.lcm(*chunks)
    if align > rows:
        align = min(chunks) if min(chunks) <= rows else 1
    block_rows = max(align, rows // align * align)
    chunk_bytes = {key: sizes[key] * int(store.array(key).chunks[0]) for key in streamed}
    concurrency = int(zarr.config.get("async.concurrency"))

    def overhead(block_rows: int) -> int:
        """Bytes besides the slots: the thread's read (the block of one key, plus the chunks zarr decodes
        at once) and the chunk cache (a slot, or the largest chunk)."""
        slot_rows = block_rows + horizon
        in_flight = max(
            min(concurrency, -(-slot_rows // (chunk_bytes[k] // sizes[k])) + 1) * chunk_bytes[k]
            for k in streamed
        )
        return slot_rows * largest_row + in_flight + max(slot_rows * stream_row, max(chunk_bytes.values()))

    slot_bytes = (block_rows + horizon) * stream_row
    slots = (cache - overhead(block_rows)) // slot_bytes
    if slots < 3 or resident_bytes >= budget:
        need = resident_bytes + 3 * (align + horizon) * stream_row + overhead(align)
        raise ValueError(
            f"memory budget of {budget} bytes is too small for store {str(store.path)!r}: keeping "
            f"{', '.join(resident)} in memory takes {resident_bytes} bytes and streaming "
            f"{', '.join(streamed)} needs room for at least 3 blocks of {align} rows; give at least {need} bytes"
        )
    chunk_cache = max(slot_bytes, max(chunk_bytes.values()))
    prefetch = 4 if slots >= 12 else 2 if slots >= 6 else 1
    return StreamPlan(
        resident=resident,
        streamed=streamed,
        resident_bytes=resident_bytes,
        block_rows=block_rows,
        slot_rows=block_rows + horizon,
        slots=int(slots),
        prefetch=prefetch,
        chunk_cache_bytes=chunk_cache,
        budget=budget,
    )


class ChunkCache:
    """Rows of streamed arrays read chunk by chunk, the decoded chunks kept in an LRU bounded in bytes.

    Used for windows at arbitrary starts (:class:`~embodia.data.sampling.WindowDataset`), which the block
    pool does not serve. Not thread-safe (it belongs to one sampler).
    """

    def __init__(self, store: TrajectoryStore, rows: int, capacity_bytes: int) -> None:
        self.store = store
        self.rows = rows
        self.capacity_bytes = capacity_bytes
        self.nbytes = 0
        self._chunks: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()

    def read(self, key: str, rows: np.ndarray) -> np.ndarray:
        """``data/<key>[rows]`` (``rows`` below the store's committed rows)."""
        chunk_rows = int(self.store.array(key).chunks[0])
        chunk_of = rows // chunk_rows
        spec = self.store.schema[key]
        out = np.empty((len(rows), *spec["shape"]), dtype=spec["dtype"])
        for chunk in np.unique(chunk_of):
            data = self._chunk(key, int(chunk), chunk_rows)
            here = chunk_of == chunk
            out[here] = data[rows[here] - chunk * chunk_rows]
        return out

    def _chunk(self, key: str, chunk: int, chunk_rows: int) -> np.ndarray:
        name = (key, chunk)
        if name in self._chunks:
            self._chunks.move_to_end(name)
            return self._chunks[name]
        begin = chunk * chunk_rows
        where = slice(begin, min(begin + chunk_rows, self.rows))
        size = (where.stop - begin) * row_nbytes(self.store, key)
        while self._chunks and self.nbytes + size > self.capacity_bytes:
            self.nbytes -= self._chunks.popitem(last=False)[1].nbytes
        data = self.store._read(self.store.array(key), where, f"data/{key}")
        self._chunks[name] = data
        self.nbytes += data.nbytes
        return data


class _Prefetcher:
    """A thread that reads blocks, in a given order, into free slots; errors are handed to the consumer."""

    def __init__(self, read_block: Callable[[int, int], None], order: Iterator[int], slots: int) -> None:
        self._read_block = read_block
        self._order = order
        self._free: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._ready: queue.SimpleQueue[tuple[int, int] | BaseException] = queue.SimpleQueue()
        for slot in range(slots):
            self._free.put(slot)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="embodia-window-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                slot = self._free.get()
                if slot is None or self._stop.is_set():
                    return
                block = next(self._order)
                self._read_block(block, slot)
                self._ready.put((slot, block))
        except BaseException as error:  # handed to the sampling thread, raised by sample()
            self._ready.put(error)

    def release(self, slot: int) -> None:
        """Give a slot back for the next block."""
        self._free.put(slot)

    def next_ready(self) -> tuple[int, int]:
        """The next ``(slot, block)`` read, in order; waits for it; raises the thread's error."""
        while True:
            try:
                item = self._ready.get(timeout=1.0)
            except queue.Empty:
                if not self._thread.is_alive():
                    raise RuntimeError("the window prefetch thread stopped") from None
                continue
            if isinstance(item, BaseException):
                raise item
            return item

    def close(self) -> None:
        """Stop the thread (after the read in progress)."""
        self._stop.set()
        self._free.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10.0)


def _read_block(
    store: TrajectoryStore,
    buffers: dict[str, np.ndarray],
    block_rows: int,
    slot_rows: int,
    rows: int,
    block: int,
    slot: int,
) -> None:
    """Rows ``[block R, block R + R + H)`` of every streamed key into ``slot`` (checked reads)."""
    begin = block * block_rows
    where = slice(begin, min(begin + slot_rows, rows))
    for key, buffer in buffers.items():
        data = store._read(store.array(key), where, f"data/{key}")
        buffer[slot, : len(data)] = data


def _block_order(rng: np.random.Generator, blocks: np.ndarray, pool: int) -> Iterator[int]:
    """Blocks in the order they enter the pool, one pass (every block once) after another.

    The stream starts with a full pool of ``pool`` blocks: the last ones of every pass. Each pass
    shuffles the other blocks afresh and ends with these same blocks in the same order, so a pass ends
    with the pool it began with, and over every pass each block spends exactly ``pool`` rotations in the
    pool (the first blocks are not short-changed by the start-up).
    """
    first = rng.permutation(blocks)
    tail = first[len(first) - pool :]
    yield from (int(b) for b in tail)
    order = first
    while True:
        yield from (int(b) for b in order)
        order = np.concatenate([rng.permutation(first[: len(first) - pool]), tail])


class BlockStream:
    """The block pool of a streaming sampler: which blocks are pooled, drawing starts, gathering rows.

    Args:
        path: the store (opened read-only here).
        rows: committed rows when the sampler was made (later appends are not sampled).
        plan: from :func:`plan_stream`.
        starts: the sampler's sorted valid window starts.
        reuse: expected draws of each valid start while its block is pooled (once per pass).
        seed: seed of the block order (the draws use the sampler's own generator).
    """

    def __init__(
        self, path: Path, rows: int, plan: StreamPlan, starts: np.ndarray, reuse: float, seed: int | None
    ) -> None:
        if not reuse > 0:
            raise ValueError(f"reuse must be > 0, got {reuse}")
        self.path = Path(path)
        self.rows = rows
        self.plan = plan
        self.starts = starts
        self.block_begin = np.arange(0, rows, plan.block_rows, dtype=np.int64)
        self.lo = np.searchsorted(starts, self.block_begin)
        self.counts = np.diff(np.append(self.lo, len(starts)))
        self.blocks = np.flatnonzero(self.counts)  # blocks with at least one valid start
        self.pool_size = min(plan.pool, len(self.blocks))
        self.reuse = float(reuse)
        self.draws_per_rotation = max(1, round(reuse * len(starts) / len(self.blocks)))
        """mean draws between rotations (each rotation: ``reuse / M`` draws per pooled start)"""
        self._order_seed = [seed, 1] if seed is not None else None
        self._reset()

    def _reset(self) -> None:
        self._store: TrajectoryStore | None = None
        self._buffers: dict[str, np.ndarray] | None = None
        self._cache: ChunkCache | None = None
        self._prefetcher: _Prefetcher | None = None
        self._pool_slots: list[int] = []
        self._pool_blocks: list[int] = []
        self._since = 0  # draws since the last rotation
        self._period = -1  # draws until the next rotation (-1: not set for this pool yet)
        self._credit = 0.0  # fraction of a draw carried to the next period
        self._error: BaseException | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its thread, buffers and store handle (a copy reopens them when used)."""
        state = dict(self.__dict__)
        for name in ("_store", "_buffers", "_cache", "_prefetcher", "_pool_slots", "_pool_blocks"):
            state.pop(name)
        for name in ("_since", "_period", "_credit", "_error"):
            state.pop(name)
        state.pop("_finalizer", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    # ------------------------------------------------------------------ memory
    @property
    def store(self) -> TrajectoryStore:
        """A read-only handle of the store."""
        if self._store is None:
            self._store = TrajectoryStore(self.path, mode="r")
        return self._store

    @property
    def chunk_cache(self) -> ChunkCache:
        if self._cache is None:
            self._cache = ChunkCache(self.store, self.rows, self.plan.chunk_cache_bytes)
        return self._cache

    @property
    def nbytes(self) -> int:
        """Bytes held now: the slots and the chunk cache."""
        slots = sum(b.nbytes for b in self._buffers.values()) if self._buffers else 0
        return slots + (self._cache.nbytes if self._cache is not None else 0)

    # ------------------------------------------------------------------ sampling
    def _start(self) -> None:
        store, plan = self.store, self.plan
        self._buffers = {
            key: np.empty(
                (plan.slots, plan.slot_rows, *store.schema[key]["shape"]), store.schema[key]["dtype"]
            )
            for key in plan.streamed
        }
        read = _bind_read(store, self._buffers, plan.block_rows, plan.slot_rows, self.rows)
        order = _block_order(np.random.default_rng(self._order_seed), self.blocks, self.pool_size)
        self._prefetcher = _Prefetcher(read, order, plan.slots)
        self._finalizer = weakref.finalize(self, self._prefetcher.close)

    def _fill(self) -> None:
        if self._error is not None:
            raise self._error
        if self._prefetcher is None:
            self._start()
        assert self._prefetcher is not None
        try:
            while len(self._pool_blocks) < self.pool_size:
                slot, block = self._prefetcher.next_ready()
                self._pool_slots.append(slot)
                self._pool_blocks.append(block)
        except BaseException as error:
            self._error = error
            raise
        if self._period < 0:
            # reuse / M draws per pooled start until the next rotation: the same rate whatever the pool
            self._credit += self.reuse * float(self.counts[self._pool_blocks].sum()) / self.pool_size
            self._period = int(self._credit)
            self._credit -= self._period

    def draw(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Up to ``size`` starts (fewer when the pool rotates sooner) drawn uniformly from the pooled
        blocks: ``(starts, slots, first rows of their blocks)``."""
        self._fill()
        size = min(size, self._period - self._since)
        blocks = np.asarray(self._pool_blocks)
        counts = self.counts[blocks]
        cumulative = np.cumsum(counts)
        u = rng.integers(0, cumulative[-1], size=size)
        j = np.searchsorted(cumulative, u, side="right")
        starts = self.starts[self.lo[blocks[j]] + u - (cumulative[j] - counts[j])]
        return starts, np.asarray(self._pool_slots)[j], self.block_begin[blocks[j]]

    def gather(
        self, key: str, rows: np.ndarray, slots: np.ndarray, first: np.ndarray, out: np.ndarray
    ) -> np.ndarray:
        """Rows of a streamed key for starts of :meth:`draw` (each within its block's slot) into ``out``."""
        assert self._buffers is not None
        flat = self._buffers[key].reshape(-1, *self._buffers[key].shape[2:])
        return np.take(flat, slots * self.plan.slot_rows + (rows - first), axis=0, out=out, mode="clip")

    def consumed(self, draws: int) -> None:
        """Count drawn windows; at the end of the period the oldest pooled block leaves and its slot goes
        back to the reader (the caller has copied what it drew from it)."""
        self._since += draws
        if self._since >= self._period:
            assert self._prefetcher is not None
            self._since, self._period = 0, -1
            self._pool_blocks.pop(0)
            self._prefetcher.release(self._pool_slots.pop(0))

    def read(self, key: str, rows: np.ndarray) -> np.ndarray:
        """Rows of a streamed key at arbitrary positions, through the chunk cache."""
        return self.chunk_cache.read(key, rows)

    def close(self) -> None:
        """Stop the reader thread and drop the buffers."""
        if self._prefetcher is not None:
            self._prefetcher.close()
        self._reset()


def _bind_read(
    store: TrajectoryStore, buffers: dict[str, np.ndarray], block_rows: int, slot_rows: int, rows: int
) -> Callable[[int, int], None]:
    """The thread's read function; it holds no reference to the stream (so the stream can be collected)."""

    def read(block: int, slot: int) -> None:
        _read_block(store, buffers, block_rows, slot_rows, rows, block, slot)

    return read
