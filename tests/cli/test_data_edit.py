"""``embodia data filter | drop | split | merge`` on real recordings: an edited store still replays exactly, and
every bad input is one line and exit status 2 with nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import embodia
from embodia.cli import main
from embodia.data.store import TrajectoryStore
from tests.data.test_store_guarantees import one_line_error

POINTMAZE = "embodia/PointMaze-Medium-v0"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Four short PointMaze episodes with simulator states (seeds 0-3)."""
    path = tmp_path_factory.mktemp("edit") / "pm.zarr"
    embodia.rollout(POINTMAZE, "random", episodes=4, seed=0, max_steps=25, record=path, record_sim_state=True)
    return path


def run(argv: list[str]) -> int:
    """``embodia ARGV`` in this process; argparse's refusals exit, the handlers' return."""
    try:
        return main(argv)
    except SystemExit as exit:
        return int(exit.code)


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    return lines[0]


def test_a_filtered_recording_replays_exactly(recorded, tmp_path, capsys):
    out = tmp_path / "kept.zarr"
    assert main(["data", "filter", str(recorded), "--out", str(out), "--episodes", "1,3"]) == 0
    assert f"wrote 2 episodes (50 steps) to {out}" in capsys.readouterr().out
    store = TrajectoryStore(out)
    assert store.episodes_table()["seed"].tolist() == [1, 3]
    assert "sim_state" in store.keys and store.fps == TrajectoryStore(recorded).fps
    assert main(["replay", str(out), "--verify", "--json"]) == 0  # re-simulates from the copied states
    assert main(["info", str(out), "--check"]) == 0


def test_split_drop_and_merge_from_the_command_line(recorded, tmp_path, capsys):
    train, val = tmp_path / "train.zarr", tmp_path / "val.zarr"
    assert main(["data", "split", str(recorded), "--out-train", str(train), "--out-val", str(val),
                 "--val-fraction", "0.25", "--in-order"]) == 0  # fmt: skip
    assert TrajectoryStore(val).episodes_table()["seed"].tolist() == [3]
    assert main(["data", "drop", str(train), "--out", str(tmp_path / "d.zarr"), "--seeds", "0"]) == 0
    merged = tmp_path / "m.zarr"
    assert main(["data", "merge", str(val), str(tmp_path / "d.zarr"), "--out", str(merged)]) == 0
    assert TrajectoryStore(merged).episodes_table()["seed"].tolist() == [3, 1, 2]
    source = TrajectoryStore(recorded)
    for j, i in enumerate((3, 1, 2)):
        a, b = source.episode(i), TrajectoryStore(merged).episode(j)
        assert all(np.array_equal(a[k], b[k]) for k in a)
    assert main(["replay", str(merged), "--verify", "--json"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["filter", "{w}/missing.zarr", "--out", "{w}/o.zarr", "--success"], "does not exist"),
        (["filter", "{r}", "--out", "{w}/o.zarr", "--episodes", "2,9"], "episode 9 out of range"),
        (["filter", "{r}", "--out", "{w}/o.zarr", "--episodes", "two"], "--episodes: expected non-negative"),
        (["filter", "{r}", "--out", "{w}/o.zarr"], "needs a criterion: --success, --failure"),
        (["filter", "{r}", "--out", "{w}/o.zarr", "--success", "--failure"], "not allowed with argument"),
        (["filter", "{r}", "--out", "{w}/o.zarr", "--seeds", "40-50"], "has seed 40-50 (its seeds: 0-3)"),
        (["filter", "{r}", "--out", "{r}", "--seeds", "1"], "already holds a trajectory store"),
        (["drop", "{r}", "--out", "{w}/o.zarr", "--episodes", "0-3"], "would remove all 4 episodes"),
        (["drop", "{r}", "--out", "{w}/o.zarr"], "needs --episodes or --seeds"),
        (
            ["split", "{r}", "--out-train", "{w}/a", "--out-val", "{w}/b", "--val-fraction", "1"],
            "strictly between",
        ),
        (["merge", "{r}", "--out", "{w}/o.zarr"], "at least two stores"),
        (["merge", "{r}", "{w}/other.zarr", "--out", "{w}/o.zarr"], "cannot merge"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(recorded, tmp_path, capsys, arguments, message):
    with TrajectoryStore(tmp_path / "other.zarr", mode="a", fps=99.0) as other:
        other.add_episode({"state": np.zeros((3, 2), np.float32)}, env_id=POINTMAZE)
    args = [a.format(w=tmp_path, r=recorded) for a in arguments]
    before = {p.name for p in tmp_path.iterdir()}
    assert run(["data", *args]) == 2
    assert message in error_line(capsys)
    assert {p.name for p in tmp_path.iterdir()} == before


def test_merge_refusal_from_a_real_process(cli, recorded, tmp_path):
    with TrajectoryStore(tmp_path / "other.zarr", mode="a") as other:
        other.add_episode({"state": np.zeros((3, 2), np.float32)}, env_id=POINTMAZE)
    line = one_line_error(cli("data", "merge", str(recorded), str(tmp_path / "other.zarr"), "--out",
                              str(tmp_path / "m.zarr")))  # fmt: skip
    assert "cannot merge" in line and "only stores with the same keys" in line
    assert not (tmp_path / "m.zarr").exists()
