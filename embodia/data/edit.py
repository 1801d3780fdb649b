"""Editing trajectory stores: keep, drop, split and merge episodes, always into NEW stores.

Every operation reads one or more stores and writes new ones; the stores it reads are never opened for
writing. What it writes keeps every guarantee of the store (:mod:`embodia.data.store`): it goes through
:class:`~embodia.data.store.TrajectoryStore`'s writer (atomic episode commits, a CRC32C checksum per chunk,
the format version, the writer lock), into a hidden folder next to the destination that is renamed into
place (``rename(2)``, atomic within one file system) only once every episode is in it
(:mod:`embodia.data.edit_output`). A failure or Ctrl-C half-way leaves no destination behind.

What is copied, per episode: every data key bit for bit (images decoded and, in a store whose cameras are
video, encoded again with the source's codec), the key roles, and the episode table (``env_id``,
``env_kwargs``, ``seed``, ``success``, ``initial_state``, ``final_state``; ``length`` and ``return`` follow
from the data). The new store has the source's frame rate and video codec, the source's own root
attributes, and ``derived_from``: the operation, its criteria, and each source's absolute path with the
episode indices taken from it (``"0-4,7"``), nesting the source's own ``derived_from`` if it was edited too.

The operations, and what users of other dataset tools will recognise in them:

- :func:`filter_store` keeps episodes by success, index and seed (every criterion given must hold). A
  robomimic *filter key* (a named list of demos, ``mask/<key>`` in its HDF5 file) is such a selection;
  here it becomes a store of its own.
- :func:`drop_episodes` removes episodes by index or seed (any listed one goes): LeRobot's
  ``delete_episodes`` (``lerobot/datasets/dataset_tools.py``), which also writes a new dataset.
- :func:`split_store` writes a train and a validation store. By default the validation episodes are a
  seeded random draw (like robomimic's ``split_train_val.py``, which shuffles a validation mask), because
  recordings are ordered by seed and time and a tail is not a sample of the whole; ``shuffle=False`` takes
  the last episodes instead (LeRobot's ``split_dataset`` with fractions cuts in order). Both stores keep
  the source's episode order, and every source episode lands in exactly one of them.
- :func:`merge_stores` concatenates stores in the order given (LeRobot's ``merge_datasets``); stores of
  different schemas (keys, shapes, dtypes, roles, simulator-state width), frame rates or video codecs are
  refused with one line naming the first difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError, EpisodeIndexError, StoreSchemaError
from embodia.data.edit_output import EditResult, Output, format_index_list, write_outputs
from embodia.data.store import TrajectoryStore

IndexRanges = tuple[tuple[int, int], ...]
"""Inclusive ``(first, last)`` ranges of episode indices or seeds, as ``"0,3,5-9"`` writes them."""


# ---------------------------------------------------------------------------------------------- index lists
def parse_index_list(text: str, what: str = "episodes") -> IndexRanges:
    """``"0,3,5-9"`` -> ``((0, 0), (3, 3), (5, 9))``: non-negative integers and inclusive ranges.

    Raises:
        EmbodiaError: anything else (one line naming ``what`` and the bad part).
    """
    ranges = []
    for part in str(text).split(","):
        part = part.strip()
        first, dash, last = part.partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            low = high = -1
        if low < 0 or high < low or not part:
            raise EmbodiaError(
                f"{what}: expected non-negative integers and ranges like 0,3,5-9, got {text!r} "
                f"(bad part {part!r})"
            )
        ranges.append((low, high))
    return tuple(ranges)


def _as_ranges(value: str | Sequence[int] | IndexRanges | None, what: str) -> IndexRanges | None:
    if value is None:
        return None
    if isinstance(value, str):
        return parse_index_list(value, what)
    ranges = []
    for item in value:
        low, high = (item, item) if np.isscalar(item) else item
        if int(low) < 0 or int(high) < int(low):
            raise EmbodiaError(f"{what}: expected non-negative integers, got {item!r}")
        ranges.append((int(low), int(high)))
    return tuple(ranges)


def _in_ranges(values: np.ndarray, ranges: IndexRanges) -> np.ndarray:
    mask = np.zeros(len(values), dtype=bool)
    for low, high in ranges:
        mask |= (values >= low) & (values <= high)
    return mask


# ---------------------------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class EpisodeSelection:
    """Which episodes of a store an edit takes; criteria left at None do not select."""

    success: bool | None = None
    """True: successful episodes only; False: failed ones only (``meta/episodes/success``)"""
    episodes: IndexRanges | None = None
    """episode indices (ranges inclusive); each must exist in the store"""
    seeds: IndexRanges | None = None
    """reset seeds (ranges inclusive); each seed or range named must match at least one episode"""

    @property
    def empty(self) -> bool:
        return self.success is None and self.episodes is None and self.seeds is None

    def describe(self) -> dict[str, Any]:
        """The criteria as JSON (what ``derived_from`` records)."""
        text = {k: None if v is None else ",".join(_range_text(r) for r in v) for k, v in self._ranges()}
        return {"success": self.success, **text}

    def _ranges(self) -> list[tuple[str, IndexRanges | None]]:
        return [("episodes", self.episodes), ("seeds", self.seeds)]


def _range_text(item: tuple[int, int]) -> str:
    return str(item[0]) if item[0] == item[1] else f"{item[0]}-{item[1]}"


def matching(store: TrajectoryStore, selection: EpisodeSelection, *, any_of: bool = False) -> np.ndarray:
    """Indices (increasing) of the episodes of ``store`` that ``selection`` names.

    ``any_of=False``: episodes meeting every criterion given (what :func:`filter_store` keeps);
    ``any_of=True``: episodes meeting at least one (what :func:`drop_episodes` removes).

    Raises:
        EpisodeIndexError: an episode index past the end of the store.
        EmbodiaError: a seed (or range of seeds) that no episode of the store has.
    """
    n = store.num_episodes
    where = str(store.path)
    table = store.episodes_table()
    masks = []
    if selection.success is not None:
        masks.append(np.asarray(table["success"], dtype=bool) == selection.success)
    if selection.episodes is not None:
        past = [r for r in selection.episodes if r[1] >= n]
        if past:
            bad = past[0][1] if past[0][0] < n else past[0][0]
            raise EpisodeIndexError(
                f"episode {bad} out of range: store {where!r} has {n} episodes"
                + (f" (0..{n - 1})" if n else "")
                + "; see `embodia info STORE`"
            )
        masks.append(_in_ranges(np.arange(n), selection.episodes))
    if selection.seeds is not None:
        seeds = np.asarray(table["seed"], dtype=np.int64)
        absent = [r for r in selection.seeds if not _in_ranges(seeds, (r,)).any()]
        if absent:
            held = format_index_list(seeds[seeds >= 0]) or "none"
            raise EmbodiaError(
                f"no episode of store {where!r} has seed {', '.join(_range_text(r) for r in absent[:5])} "
                f"(its seeds: {_shorten(held)}); name seeds the store holds"
            )
        masks.append(_in_ranges(seeds, selection.seeds))
    if not masks:
        return np.arange(n) if not any_of else np.arange(0)
    combined = np.logical_or.reduce(masks) if any_of else np.logical_and.reduce(masks)
    return np.flatnonzero(combined)


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3].rsplit(",", 1)[0] + ",..."


def _open_source(path: str | Path | TrajectoryStore) -> TrajectoryStore:
    return path if isinstance(path, TrajectoryStore) else TrajectoryStore(path, mode="r")


def _nothing_selected(store: TrajectoryStore, what: str) -> EmbodiaError:
    return EmbodiaError(
        f"{what} selects no episode of store {str(store.path)!r} ({store.num_episodes} episodes); "
        "a store needs at least one: check the criteria with `embodia info STORE`"
    )


# ---------------------------------------------------------------------------------------------- operations
def filter_store(
    source: str | Path | TrajectoryStore,
    out: str | Path,
    *,
    success: bool | None = None,
    episodes: str | Sequence[int] | IndexRanges | None = None,
    seeds: str | Sequence[int] | IndexRanges | None = None,
) -> EditResult:
    """Write the episodes of ``source`` that meet every given criterion to a new store at ``out``.

    Args:
        source: the store to read (never written).
        out: the new store: a path that does not exist, or an empty folder.
        success: True keeps successful episodes, False failed ones.
        episodes: episode indices to keep (``"0,3,5-9"`` or a list of ints).
        seeds: reset seeds to keep (same forms).

    Raises:
        EmbodiaError: no criterion, nothing selected, or a seed the store does not have.
        EpisodeIndexError: an index past the end of ``source``.
        StoreError: ``out`` is not a fresh path (or a store problem of ``source``).
    """
    store = _open_source(source)
    selection = EpisodeSelection(success, _as_ranges(episodes, "episodes"), _as_ranges(seeds, "seeds"))
    if selection.empty:
        raise EmbodiaError("filter needs a criterion: success, episodes or seeds")
    kept = matching(store, selection)
    if not len(kept):
        raise _nothing_selected(store, f"filter {_criteria_text(selection)}")
    (result,) = write_outputs([Output(Path(out), [(store, kept)], "filter", selection.describe())])
    return result


def drop_episodes(
    source: str | Path | TrajectoryStore,
    out: str | Path,
    *,
    episodes: str | Sequence[int] | IndexRanges | None = None,
    seeds: str | Sequence[int] | IndexRanges | None = None,
) -> EditResult:
    """Write ``source`` without the episodes named by index or seed (either list) to a new store at ``out``.

    Raises:
        EmbodiaError: nothing to drop named, every episode dropped, or a seed the store does not have.
        EpisodeIndexError: an index past the end of ``source``.
        StoreError: ``out`` is not a fresh path.
    """
    store = _open_source(source)
    selection = EpisodeSelection(None, _as_ranges(episodes, "episodes"), _as_ranges(seeds, "seeds"))
    if selection.empty:
        raise EmbodiaError("drop needs episodes or seeds to drop")
    dropped = matching(store, selection, any_of=True)
    kept = np.setdiff1d(np.arange(store.num_episodes), dropped)
    if not len(kept):
        raise EmbodiaError(
            f"drop {_criteria_text(selection)} would remove all {store.num_episodes} episodes of store "
            f"{str(store.path)!r}; a store needs at least one"
        )
    (result,) = write_outputs([Output(Path(out), [(store, kept)], "drop", selection.describe())])
    return result


def split_sizes(episodes: int, val_fraction: float) -> tuple[int, int]:
    """(train, validation) episode counts: ``round(val_fraction * episodes)`` validation episodes (halves up),
    at least one in each part.

    Raises:
        EmbodiaError: a fraction outside (0, 1), or fewer than two episodes.
    """
    if not 0.0 < val_fraction < 1.0 or not math.isfinite(val_fraction):
        raise EmbodiaError(f"the validation fraction must lie strictly between 0 and 1, got {val_fraction}")
    if episodes < 2:
        raise EmbodiaError(f"a split needs at least 2 episodes (one per part), the store has {episodes}")
    val = min(episodes - 1, max(1, math.floor(val_fraction * episodes + 0.5)))
    return episodes - val, val


def split_store(
    source: str | Path | TrajectoryStore,
    train_out: str | Path,
    val_out: str | Path,
    *,
    val_fraction: float,
    seed: int = 0,
    shuffle: bool = True,
) -> tuple[EditResult, EditResult]:
    """Write a train and a validation store whose episodes partition ``source`` (see :func:`split_sizes`).

    Args:
        val_fraction: the share of episodes that go to validation.
        seed: seeds the draw of validation episodes (``numpy.random.default_rng(seed).permutation``).
        shuffle: False takes the last episodes for validation instead of a random draw.

    Both stores appear together: if the second cannot be written or moved into place, neither stays.
    """
    store = _open_source(source)
    n = store.num_episodes
    train_count, val_count = split_sizes(n, float(val_fraction))
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    val = np.sort(order[train_count:])
    train = np.setdiff1d(np.arange(n), val)
    criteria = {"val_fraction": float(val_fraction), "seed": int(seed), "shuffle": bool(shuffle)}
    results = write_outputs(
        [
            Output(Path(train_out), [(store, train)], "split", {**criteria, "part": "train"}),
            Output(Path(val_out), [(store, val)], "split", {**criteria, "part": "validation"}),
        ]
    )
    return results[0], results[1]


def merge_stores(sources: Sequence[str | Path | TrajectoryStore], out: str | Path) -> EditResult:
    """Write every episode of ``sources``, in the order given, to a new store at ``out``.

    Raises:
        StoreSchemaError: two sources differ in schema, simulator-state width, frame rate or video codec
            (the one line names the first difference).
        EmbodiaError: fewer than two sources, one named twice, or no episodes at all.
    """
    if len(sources) < 2:
        raise EmbodiaError(f"merge needs at least two stores, got {len(sources)}")
    stores = [_open_source(s) for s in sources]
    seen: dict[Path, str] = {}
    for store in stores:
        key = store.path.resolve()
        if key in seen:
            raise EmbodiaError(
                f"store {str(store.path)!r} is named twice in the merge (also as {seen[key]!r}); its episodes "
                "would be stored twice"
            )
        seen[key] = str(store.path)
    first = stores[0]
    for other in stores[1:]:
        difference = store_difference(first, other)
        if difference:
            raise StoreSchemaError(
                f"cannot merge {str(first.path)!r} and {str(other.path)!r}: {difference}; only stores with the "
                "same keys, shapes, dtypes, frame rate and video codec merge"
            )
    if not sum(s.num_episodes for s in stores):
        raise EmbodiaError("the stores to merge hold no episodes")
    plan = [(s, np.arange(s.num_episodes)) for s in stores]
    (result,) = write_outputs([Output(Path(out), plan, "merge", {})])
    return result


# ---------------------------------------------------------------------------------------------- differences
def state_width(store: TrajectoryStore) -> int | None:
    """Width of the initial / final simulator states in the episode table, None if it has none."""
    if not store.num_episodes:
        return None
    state = store.episode_meta(0).initial_state
    return None if state is None else int(np.asarray(state).size)


def store_difference(a: TrajectoryStore, b: TrajectoryStore) -> str | None:
    """The first way two stores' episodes could not live in one store, in words; None if they can.

    Compared: (when both hold episodes) the keys, each key's role, dtype and shape, and the width of the
    simulator states in the episode table; then the frame rate and the video codec.
    """
    names = (f"{a.path.name!r}", f"{b.path.name!r}")
    if a.path.name == b.path.name:
        names = (f"{str(a.path)!r}", f"{str(b.path)!r}")
    if a.num_episodes and b.num_episodes:
        difference = _schema_difference(a, b, names)
        if difference:
            return difference
    fps_a, fps_b = a.fps, b.fps
    if (fps_a is None) != (fps_b is None) or (
        fps_a is not None and not math.isclose(fps_a, fps_b, rel_tol=1e-9)
    ):
        return f"frame rate {_fps_text(fps_a)} in {names[0]} but {_fps_text(fps_b)} in {names[1]}"
    codec_a, codec_b = a.video_codec or "none", b.video_codec or "none"
    if codec_a != codec_b:
        return f"video codec {codec_a} in {names[0]} but {codec_b} in {names[1]}"
    return None


def _schema_difference(a: TrajectoryStore, b: TrajectoryStore, names: tuple[str, str]) -> str | None:
    schema_a, schema_b = a.schema, b.schema
    for key in schema_a:
        if key not in schema_b:
            return f"key {key!r} is in {names[0]} but not in {names[1]}"
    for key in schema_b:
        if key not in schema_a:
            return f"key {key!r} is in {names[1]} but not in {names[0]}"
    for key, spec in schema_a.items():
        other = schema_b[key]
        if spec["role"] != other["role"]:
            return f"key {key!r} has role {spec['role']} in {names[0]} but {other['role']} in {names[1]}"
        if spec["dtype"] != other["dtype"] or list(spec["shape"]) != list(other["shape"]):
            return (
                f"key {key!r} is {spec['dtype']}{tuple(spec['shape'])} in {names[0]} but "
                f"{other['dtype']}{tuple(other['shape'])} in {names[1]}"
            )
    width_a, width_b = state_width(a), state_width(b)
    if width_a != width_b:
        return f"simulator states are {_width_text(width_a)} in {names[0]} but {_width_text(width_b)} in {names[1]}"
    return None


def _fps_text(fps: float | None) -> str:
    return "unknown" if fps is None else f"{fps:g} Hz"


def _width_text(width: int | None) -> str:
    return "absent" if width is None else f"{width} numbers wide"


def _criteria_text(selection: EpisodeSelection) -> str:
    parts = []
    if selection.success is not None:
        parts.append("--success" if selection.success else "--failure")
    for name, ranges in selection._ranges():
        if ranges is not None:
            parts.append(f"--{name} {','.join(_range_text(r) for r in ranges)}")
    return " ".join(parts)
