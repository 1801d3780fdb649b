"""Dataset editing (filter, drop, split, merge): new stores that copy episodes bit for bit with their metadata,
appear whole or not at all, and never touch their sources. Real stores and files throughout; the one fault
injected (a file written into a destination mid-edit) stands for another process."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embodia.core.errors import (
    EmbodiaError,
    EpisodeIndexError,
    StoreCorruptError,
    StoreError,
    StoreSchemaError,
)
from embodia.data import edit_output
from embodia.data.edit import (
    drop_episodes,
    filter_store,
    format_index_list,
    merge_stores,
    parse_index_list,
    split_sizes,
    split_store,
    store_difference,
)
from embodia.data.store import FORMAT_VERSION, TrajectoryStore

ENV = "embodia/PointMaze-Medium-v0"
LENGTHS = (7, 12, 5, 9, 11, 6)
SEEDS = (10, 11, 12, 13, 14, 15)
SUCCESS = (True, False, True, True, False, False)


def episode(length: int, rng: np.random.Generator, image: int = 64) -> dict[str, np.ndarray]:
    """One episode of every kind of key a store holds: an image, vectors, flags, simulator states."""
    return {
        "pixels": rng.integers(0, 256, (length, image, image, 3), dtype=np.uint8),
        "state": rng.standard_normal((length, 4)).astype(np.float32),
        "contact": rng.random((length, 2)) < 0.5,
        "action": rng.standard_normal((length, 2)).astype(np.float32),
        "reward": rng.standard_normal(length).astype(np.float32),
        "terminated": np.zeros(length, dtype=bool),
        "truncated": np.eye(1, length, length - 1, dtype=bool)[0],
        "success": np.zeros(length, dtype=bool),
        "sim_state": rng.standard_normal((length, 5)),
    }


def build(path, lengths=LENGTHS, seeds=SEEDS, success=SUCCESS, *, image=64, fps=None, rng_seed=0, codec=None):
    rng = np.random.default_rng(rng_seed)
    with TrajectoryStore(path, mode="a", fps=fps, video_codec=codec) as store:
        for length, seed, ok in zip(lengths, seeds, success):
            store.add_episode(
                episode(length, rng, image),
                env_id=ENV,
                env_kwargs={"task_id": seed % 3, "note": f"ep{seed}"},
                seed=seed,
                success=ok,
                initial_state=rng.standard_normal(5),
                final_state=rng.standard_normal(5),
                roles={"contact": "flag"},
            )
    return path


@pytest.fixture
def source(tmp_path):
    return build(tmp_path / "src.zarr", fps=20.0)


def assert_same_episode(a: TrajectoryStore, i: int, b: TrajectoryStore, j: int) -> None:
    left, right = a.episode(i), b.episode(j)
    assert list(left) == list(right)
    for key in left:
        assert left[key].dtype == right[key].dtype and left[key].shape == right[key].shape, key
        assert left[key].tobytes() == right[key].tobytes(), key  # bit for bit
    ma, mb = a.episode_meta(i), b.episode_meta(j)
    for name in ("env_id", "env_kwargs", "seed", "success", "length", "return_"):
        assert getattr(ma, name) == getattr(mb, name), name
    assert ma.initial_state.tobytes() == mb.initial_state.tobytes()
    assert ma.final_state.tobytes() == mb.final_state.tobytes()


def no_temporaries(folder) -> bool:
    return not list(folder.glob(f".*{edit_output.TEMP_MARK}*"))


# ------------------------------------------------------------------------------------------------ index lists
def test_index_lists_parse_and_print():
    assert parse_index_list("0,3,5-9") == ((0, 0), (3, 3), (5, 9))
    assert parse_index_list(" 4 , 2 ") == ((4, 4), (2, 2))
    assert format_index_list([9, 0, 1, 2, 5, 6, 2]) == "0-2,5-6,9"
    assert format_index_list([]) == ""
    for bad in ("", "a", "3-1", "-2", "1,,2", "1-2-3", "1.5"):
        with pytest.raises(EmbodiaError, match="ranges like 0,3,5-9"):
            parse_index_list(bad)


# ------------------------------------------------------------------------------------------------ filter / drop
def test_filter_by_success_copies_every_key_bit_for_bit_with_metadata(source, tmp_path):
    result = filter_store(source, tmp_path / "ok.zarr", success=True)
    src, new = TrajectoryStore(source), TrajectoryStore(tmp_path / "ok.zarr")
    kept = [i for i, ok in enumerate(SUCCESS) if ok]
    assert result.episodes == len(kept) == new.num_episodes
    assert result.steps == sum(LENGTHS[i] for i in kept) == new.num_steps
    assert new.schema == src.schema  # keys, shapes, dtypes and roles ('contact' stays a flag)
    assert new.fps == 20.0 and new.video_codec == src.video_codec
    for j, i in enumerate(kept):
        assert_same_episode(src, i, new, j)
    assert new.verify()["ok"]  # checksums of every chunk written


def test_filter_records_where_its_episodes_came_from(source, tmp_path):
    filter_store(source, tmp_path / "a.zarr", episodes="0-3", seeds=[11, 12, 13])
    derived = TrajectoryStore(tmp_path / "a.zarr").attrs["derived_from"]
    assert derived["operation"] == "filter"
    assert derived["criteria"] == {"success": None, "episodes": "0-3", "seeds": "11,12,13"}
    assert derived["sources"] == [{"path": str(source.absolute()), "episodes": "1-3"}]
    # an edit of an edit nests the earlier provenance
    drop_episodes(tmp_path / "a.zarr", tmp_path / "b.zarr", episodes="0")
    nested = TrajectoryStore(tmp_path / "b.zarr").attrs["derived_from"]
    assert nested["operation"] == "drop" and nested["sources"][0]["episodes"] == "1-2"
    assert nested["sources"][0]["derived_from"] == derived


def test_filter_criteria_combine_and_failure_keeps_failed_episodes(source, tmp_path):
    filter_store(source, tmp_path / "f.zarr", success=False)
    assert [m.seed for m in map(TrajectoryStore(tmp_path / "f.zarr").episode_meta, range(3))] == [11, 14, 15]
    filter_store(source, tmp_path / "g.zarr", success=False, seeds="10-14")  # both must hold
    assert TrajectoryStore(tmp_path / "g.zarr").episodes_table()["seed"].tolist() == [11, 14]
    filter_store(source, tmp_path / "h.zarr", episodes="4,0")  # source order, whatever the list's
    assert TrajectoryStore(tmp_path / "h.zarr").episodes_table()["seed"].tolist() == [10, 14]


def test_drop_removes_episodes_named_by_index_or_seed(source, tmp_path):
    drop_episodes(source, tmp_path / "d.zarr", episodes="0,5", seeds=[12])
    new, src = TrajectoryStore(tmp_path / "d.zarr"), TrajectoryStore(source)
    assert new.episodes_table()["seed"].tolist() == [11, 13, 14]
    for j, i in enumerate((1, 3, 4)):
        assert_same_episode(src, i, new, j)


def test_bad_selections_are_one_line_and_write_nothing(source, tmp_path):
    out = tmp_path / "x.zarr"
    with pytest.raises(
        EpisodeIndexError, match=r"episode 6 out of range: store .* has 6 episodes \(0\.\.5\)"
    ):
        filter_store(source, out, episodes="2,4-6")
    with pytest.raises(EmbodiaError, match=r"no episode of store .* has seed 7, 20-30 \(its seeds: 10-15\)"):
        filter_store(source, out, seeds="7,10,20-30")
    with pytest.raises(EmbodiaError, match="selects no episode"):
        filter_store(source, out, success=True, episodes="1")
    with pytest.raises(EmbodiaError, match="would remove all 6 episodes"):
        drop_episodes(source, out, episodes="0-5")
    with pytest.raises(EmbodiaError, match="needs a criterion"):
        filter_store(source, out)
    assert not out.exists() and no_temporaries(tmp_path)


# ------------------------------------------------------------------------------------------------ split
@pytest.mark.parametrize(
    ("episodes", "fraction", "sizes"),
    [(10, 0.1, (9, 1)), (10, 0.25, (7, 3)), (10, 0.35, (6, 4)), (2, 0.1, (1, 1)), (3, 0.99, (1, 2))],
)
def test_split_sizes_round_halves_up_and_leave_one_in_each_part(episodes, fraction, sizes):
    assert split_sizes(episodes, fraction) == sizes


def test_split_partitions_the_store_seeded_and_in_order(tmp_path):
    n = 12
    source = build(tmp_path / "s.zarr", [3] * n, list(range(100, 100 + n)), [True] * n, image=8)
    train, val = split_store(source, tmp_path / "t.zarr", tmp_path / "v.zarr", val_fraction=0.25, seed=3)
    assert (train.episodes, val.episodes) == (9, 3)
    seeds_t = TrajectoryStore(train.path).episodes_table()["seed"].tolist()
    seeds_v = TrajectoryStore(val.path).episodes_table()["seed"].tolist()
    assert sorted(seeds_t + seeds_v) == list(range(100, 100 + n)) and not set(seeds_t) & set(seeds_v)
    assert seeds_t == sorted(seeds_t) and seeds_v == sorted(seeds_v)  # source order kept
    assert seeds_v != [109, 110, 111]  # a draw, not the tail
    src = TrajectoryStore(source)
    for j, seed in enumerate(seeds_v):
        assert_same_episode(src, seed - 100, TrajectoryStore(val.path), j)
    # the same seed draws the same episodes; another seed (almost surely) others
    _, again = split_store(source, tmp_path / "t2.zarr", tmp_path / "v2.zarr", val_fraction=0.25, seed=3)
    assert TrajectoryStore(again.path).episodes_table()["seed"].tolist() == seeds_v
    _, other = split_store(source, tmp_path / "t3.zarr", tmp_path / "v3.zarr", val_fraction=0.25, seed=4)
    assert TrajectoryStore(other.path).episodes_table()["seed"].tolist() != seeds_v
    _, tail = split_store(
        source, tmp_path / "t4.zarr", tmp_path / "v4.zarr", val_fraction=0.25, shuffle=False
    )
    assert TrajectoryStore(tail.path).episodes_table()["seed"].tolist() == [109, 110, 111]
    assert TrajectoryStore(val.path).attrs["derived_from"]["criteria"] == {
        "val_fraction": 0.25,
        "seed": 3,
        "shuffle": True,
        "part": "validation",
    }


def test_split_refuses_one_episode_and_one_path_for_both_parts(tmp_path):
    one = build(tmp_path / "one.zarr", [4], [0], [True], image=8)
    with pytest.raises(EmbodiaError, match="at least 2 episodes"):
        split_store(one, tmp_path / "a.zarr", tmp_path / "b.zarr", val_fraction=0.5)
    two = build(tmp_path / "two.zarr", [4, 4], [0, 1], [True, True], image=8)
    with pytest.raises(StoreError, match="need different paths"):
        split_store(two, tmp_path / "a.zarr", tmp_path / "a.zarr", val_fraction=0.5)
    assert not (tmp_path / "a.zarr").exists() and no_temporaries(tmp_path)


# ------------------------------------------------------------------------------------------------ merge
def test_merge_concatenates_in_the_order_given(source, tmp_path):
    other = build(tmp_path / "other.zarr", [4, 8], [50, 51], [True, False], fps=20.0, rng_seed=1)
    result = merge_stores([other, source], tmp_path / "m.zarr")
    new = TrajectoryStore(tmp_path / "m.zarr")
    assert result.episodes == 8 and new.num_steps == 12 + sum(LENGTHS)
    assert_same_episode(TrajectoryStore(other), 1, new, 1)
    for i in range(len(LENGTHS)):
        assert_same_episode(TrajectoryStore(source), i, new, 2 + i)
    sources = new.attrs["derived_from"]["sources"]
    assert [(s["path"], s["episodes"]) for s in sources] == [
        (str(other.absolute()), "0-1"),
        (str(source.absolute()), "0-5"),
    ]


def test_merge_refuses_different_stores_naming_the_first_difference(source, tmp_path):
    cases = {
        "image.zarr": (
            dict(image=32, fps=20.0),
            r"key 'pixels' is uint8\(64, 64, 3\) in 'src.zarr' but "
            r"uint8\(32, 32, 3\) in 'image.zarr'",
        ),
        "fps.zarr": (dict(fps=10.0), "frame rate 20 Hz in 'src.zarr' but 10 Hz in 'fps.zarr'"),
        "nofps.zarr": (dict(), "frame rate 20 Hz in 'src.zarr' but unknown in 'nofps.zarr'"),
        "h264.zarr": (dict(fps=20.0, codec="h264"), "video codec none in 'src.zarr' but h264 in 'h264.zarr'"),
    }
    for name, (options, message) in cases.items():
        other = build(tmp_path / name, [3], [0], [True], **options)
        with pytest.raises(StoreSchemaError, match=f"cannot merge .*: {message}; only stores with the same"):
            merge_stores([source, other], tmp_path / "m.zarr")
    with TrajectoryStore(tmp_path / "keys.zarr", mode="a", fps=20.0) as store:
        data = episode(3, np.random.default_rng(0))
        data["goal"] = data.pop("contact").astype(np.float32)
        store.add_episode(data, env_id=ENV, initial_state=np.zeros(5))
    assert store_difference(TrajectoryStore(source), TrajectoryStore(tmp_path / "keys.zarr")) == (
        "key 'contact' is in 'src.zarr' but not in 'keys.zarr'"
    )
    with TrajectoryStore(tmp_path / "nostate.zarr", mode="a", fps=20.0) as store:
        store.add_episode(episode(3, np.random.default_rng(0)), env_id=ENV, roles={"contact": "flag"})
    assert store_difference(TrajectoryStore(source), TrajectoryStore(tmp_path / "nostate.zarr")) == (
        "simulator states are 5 numbers wide in 'src.zarr' but absent in 'nostate.zarr'"
    )
    with TrajectoryStore(tmp_path / "role.zarr", mode="a", fps=20.0) as store:
        store.add_episode(episode(3, np.random.default_rng(0)), env_id=ENV, initial_state=np.zeros(5))
    assert store_difference(TrajectoryStore(source), TrajectoryStore(tmp_path / "role.zarr")) == (
        "key 'contact' has role flag in 'src.zarr' but obs in 'role.zarr'"
    )
    with pytest.raises(EmbodiaError, match="named twice"):
        merge_stores([source, tmp_path / "." / "src.zarr"], tmp_path / "m.zarr")
    assert not (tmp_path / "m.zarr").exists() and no_temporaries(tmp_path)


# ------------------------------------------------------------------------------------------------ destinations
def test_destinations_must_be_fresh_paths_outside_stores(source, tmp_path):
    with pytest.raises(StoreError, match="already holds a trajectory store; an edit writes a new store"):
        filter_store(source, source, success=True)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(StoreError, match="holds files but no trajectory store"):
        filter_store(source, mine, success=True)
    assert (mine / "notes.txt").read_text() == "keep me"
    with pytest.raises(StoreError, match="lies inside trajectory store"):
        filter_store(source, source / "sub.zarr", success=True)
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert filter_store(source, empty, success=True).episodes == 3  # an empty folder is replaced
    deep = tmp_path / "new" / "folders" / "d.zarr"
    assert filter_store(source, deep, episodes="1").episodes == 1  # missing parents are made
    assert sorted(p.relative_to(source) for p in source.rglob("*")) == before  # the source is untouched
    assert no_temporaries(tmp_path) and no_temporaries(deep.parent)


def test_a_failure_half_way_leaves_no_destination(source, tmp_path, monkeypatch):
    monkeypatch.setattr(
        edit_output, "COPY_BATCH_BYTES", 1
    )  # commit every episode: the failure comes after commits
    # damage the last chunk of the images (64x64x3 images: 16 rows a chunk; rows 48..49 are episode 5)
    chunk = source / "data" / "pixels" / "c" / "3" / "0" / "0" / "0"
    assert chunk.is_file()
    chunk.write_bytes(chunk.read_bytes()[:-9] + b"corrupted")
    out = tmp_path / "new" / "out.zarr"
    with pytest.raises(StoreCorruptError, match="data/pixels"):
        filter_store(source, out, episodes="0-5")
    assert not out.exists() and not (tmp_path / "new").exists() and no_temporaries(tmp_path)
    filter_store(source, out, episodes="0-3")  # the undamaged episodes still copy


def test_split_moves_both_stores_into_place_or_neither(source, tmp_path, monkeypatch):
    train, val = tmp_path / "train.zarr", tmp_path / "val"
    val.mkdir()  # an empty folder: accepted, replaced by the rename
    record = edit_output._record_provenance

    def another_process_writes_into_val(path, store, output):
        record(path, store, output)
        if output.destination == val:
            (val / "theirs.txt").write_text("written meanwhile")

    monkeypatch.setattr(edit_output, "_record_provenance", another_process_writes_into_val)
    with pytest.raises(
        StoreError, match="cannot move the new store into place at .*val.*written there meanwhile"
    ):
        split_store(source, train, val, val_fraction=0.5)
    assert not train.exists()  # moved back and removed
    assert [p.name for p in val.iterdir()] == ["theirs.txt"] and no_temporaries(tmp_path)


def test_ctrl_c_half_way_leaves_nothing(source, tmp_path, monkeypatch):
    def interrupted(path, store, output):
        raise KeyboardInterrupt

    monkeypatch.setattr(edit_output, "_record_provenance", interrupted)
    with pytest.raises(KeyboardInterrupt):
        merge_stores([source, build(tmp_path / "b.zarr", [3], [0], [True], fps=20.0)], tmp_path / "m.zarr")
    assert not (tmp_path / "m.zarr").exists() and no_temporaries(tmp_path)


def test_folders_of_killed_edits_are_removed_only_when_dead_and_ours(source, tmp_path):
    dead = tmp_path / f".out.zarr{edit_output.TEMP_MARK}999-dead"
    TrajectoryStore(dead, mode="a").close()  # an edit killed after creating its store
    alive = tmp_path / f".out.zarr{edit_output.TEMP_MARK}998-live"
    writer = TrajectoryStore(alive, mode="a")  # an edit still writing (holds the lock)
    foreign = tmp_path / f".out.zarr{edit_output.TEMP_MARK}997-user"
    foreign.mkdir()
    (foreign / "data.csv").write_text("1,2")
    filter_store(source, tmp_path / "out.zarr", success=True)
    assert not dead.exists() and alive.exists() and (foreign / "data.csv").exists()
    writer.close()


def test_the_edited_store_is_a_store_like_any_other(source, tmp_path):
    filter_store(source, tmp_path / "e.zarr", success=True)
    store = TrajectoryStore(tmp_path / "e.zarr", mode="a")  # appendable, locked while open
    with pytest.raises(StoreError, match="being written by this process"):
        TrajectoryStore(tmp_path / "e.zarr", mode="a")
    store.add_episode(
        episode(2, np.random.default_rng(5)), env_id=ENV, initial_state=np.zeros(5), roles={"contact": "flag"}
    )
    store.close()
    assert (
        json.loads((tmp_path / "e.zarr" / "zarr.json").read_text())["attributes"]["embodia_format"]
        == FORMAT_VERSION
    )
    assert TrajectoryStore(tmp_path / "e.zarr").verify()["episodes"] == 4


def test_a_store_with_video_cameras_stays_video_with_everything_else_exact(tmp_path):
    """Camera keys kept as video are decoded and encoded again (the codec's error once more); the rest is exact."""
    ramp = np.linspace(0, 255, 48 * 48 * 3).reshape(48, 48, 3)
    rng = np.random.default_rng(0)
    with TrajectoryStore(tmp_path / "v.zarr", mode="a", video_codec="h264", fps=10.0) as store:
        for seed in range(3):
            data = episode(8, rng, image=48)
            data["pixels"] = np.stack([np.roll(ramp, 2 * t + seed, axis=1) for t in range(8)]).astype(
                np.uint8
            )
            store.add_episode(
                data, env_id=ENV, seed=seed, initial_state=rng.standard_normal(5), roles={"contact": "flag"}
            )
    filter_store(tmp_path / "v.zarr", tmp_path / "f.zarr", episodes="0,2")
    src, new = TrajectoryStore(tmp_path / "v.zarr"), TrajectoryStore(tmp_path / "f.zarr")
    assert (new.video_codec, new.video_keys, new.fps) == ("h264", ["pixels"], 10.0)
    for j, i in enumerate((0, 2)):
        a, b = src.episode(i), new.episode(j)
        for key in a:
            if key != "pixels":
                assert a[key].tobytes() == b[key].tobytes(), key
        error = np.mean((a["pixels"].astype(float) - b["pixels"].astype(float)) ** 2)
        assert b["pixels"].shape == a["pixels"].shape and 10 * np.log10(255**2 / max(error, 1e-12)) > 35.0
