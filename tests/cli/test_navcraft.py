"""The ``embodia navcraft`` commands, run as a user would (``python -m embodia.cli navcraft ...``)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from embodia.agents.navcraft.episode_io import load_episodes
from tests.conftest import ROOT


def navcraft(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embodia.cli", "navcraft", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_generate_then_run_writes_episodes_stats_and_results(tmp_path):
    out = navcraft(
        "generate", "--scenes", "1", "--episodes", "3", "--seed", "5", "--out", str(tmp_path / "eps")
    )
    assert out.returncode == 0, out.stderr
    episodes = load_episodes(tmp_path / "eps" / "episodes.json.gz")
    stats = json.loads((tmp_path / "eps" / "stats.json").read_text())
    assert len(episodes) == stats["episodes"] == 3 and sum(stats["by_taxonomy"].values()) == 3
    assert "3 episodes in 1 scenes" in out.stdout
    with gzip.open(tmp_path / "eps" / "episodes.json.gz", "rt") as handle:  # the scene graph travels along
        assert set(json.load(handle)["scene_graphs"]) == {"apartment_0"}

    again = navcraft(
        "generate", "--scenes", "1", "--episodes", "3", "--seed", "5", "--out", str(tmp_path / "eps")
    )
    assert again.returncode == 0, again.stderr  # its own files are replaced ...
    assert [e.episode_id for e in load_episodes(tmp_path / "eps" / "episodes.json.gz")] == [
        e.episode_id for e in episodes
    ]

    run = navcraft(
        "run", "--agent", "solo", "--episodes", str(tmp_path / "eps"), "--out", str(tmp_path / "res")
    )
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "res" / "results.json").read_text())
    assert [r["episode_id"] for r in report["rows"]] == [e.episode_id for e in episodes]
    assert all(r["agent"] == "solo" and 0.0 <= r["step_success"] <= 1.0 for r in report["rows"])
    assert report["summary"][0]["taxonomy"] == "all" and report["summary"][0]["episodes"] == 3
    assert "| all | 3 |" in run.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    refused = navcraft("generate", "--scenes", "1", "--episodes", "1", "--out", str(tmp_path / "notes"))
    assert refused.returncode == 2 and "did not write" in refused.stderr
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"

    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "episodes.json.gz").write_bytes(gzip.compress(b"not json"))
    impostor = navcraft("generate", "--scenes", "1", "--episodes", "1", "--out", str(tmp_path / "fake"))
    assert impostor.returncode == 2 and "is not a file embodia navcraft wrote" in impostor.stderr
    corrupt = navcraft("run", "--episodes", str(tmp_path / "fake"), "--out", str(tmp_path / "r"))
    assert corrupt.returncode == 2 and "not a readable habitat-lab JSON file" in corrupt.stderr

    for args in (
        ("run", "--episodes", str(tmp_path / "missing"), "--out", str(tmp_path / "r")),
        ("generate", "--scenes", "0", "--out", str(tmp_path / "x")),
        ("run", "--agent", "oracle", "--episodes", "x", "--out", "y"),
    ):
        result = navcraft(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, (
            result.stderr
        )
