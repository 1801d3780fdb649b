"""``embodia scienceboard run``: per-task logs and a results table; the oracle scores 1 and `wrong` 0."""

from __future__ import annotations

import json
import subprocess
import sys

from embodia.cli import main


def test_run_writes_logs_and_a_results_table_per_domain(tmp_path, capsys):
    out = tmp_path / "oracle"
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "oracle",
                "--id",
                "kalgebra-define-variable",
                "--id",
                "kalgebra-circle-*",
                "--id",
                "pymol-add-*",
                "--id",
                "pymol-color-chain",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    records = json.loads((out / "results.json").read_text())
    assert len(records) == 4 and all(r["success"] for r in records)
    assert {r["domain"] for r in records} == {"kalgebra", "pymol"}
    table = (out / "results.md").read_text()
    assert "| kalgebra | 2/2 (100 %) |" in table and "| all | 4/4 (100 %) |" in table
    steps = [
        json.loads(line)
        for line in (out / "kalgebra-define-variable" / "steps.jsonl").read_text().splitlines()
    ]
    assert steps[1]["action"]["text"] == "radius:=7.5" and steps[1]["output"] == "7.5"
    assert steps[-1]["info"]["success"] is True
    capsys.readouterr()
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "wrong",
                "--domain",
                "kalgebra",
                "--difficulty",
                "easy",
                "--out",
                str(tmp_path / "wrong"),
            ]
        )
        == 0
    )
    records = json.loads((tmp_path / "wrong" / "results.json").read_text())
    assert not any(r["success"] for r in records)
    assert "FAIL kalgebra-define-variable" in capsys.readouterr().out


def test_a_bad_agent_or_selection_is_one_line_and_status_2(tmp_path, capsys):
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "no-such-model",
                "--domain",
                "kalgebra",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no local language model" in err and "Traceback" not in err
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "oracle",
                "--domain",
                "coq",
                "--difficulty",
                "hard",
                "--interface",
                "gui",
                "--out",
                str(tmp_path / "y"),
            ]
        )
        == 2
    )


def _without_user_namespaces(argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    """Run ``argv`` as an unprivileged user in a user namespace that may not make further ones: a machine
    where bubblewrap cannot build the episode boundary (like a distribution that restricts user namespaces)."""
    return subprocess.run(
        [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--unshare-user",
            "--disable-userns",
            "--uid",
            "1000",
            "--gid",
            "1000",
        ]
        + ["--setenv", "TMPDIR", str(tmp_path), "--", *argv],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_where_bubblewrap_cannot_run_the_run_is_refused_unless_unsafe(tmp_path):
    command = [sys.executable, "-m", "embodia.cli", "scienceboard", "run", "--agent", "oracle"]
    command += ["--domain", "pymol", "--id", "pymol-color-chain"]
    refused = _without_user_namespaces([*command, "--out", str(tmp_path / "refused")], tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "bubblewrap cannot make the episode's namespaces" in lines[0]
    assert "--unsafe-no-sandbox" in lines[0]
    assert not (tmp_path / "refused" / "results.json").exists()
    unsafe = _without_user_namespaces(
        [*command, "--out", str(tmp_path / "unsafe"), "--unsafe-no-sandbox"], tmp_path
    )
    assert unsafe.returncode == 0, unsafe.stdout + unsafe.stderr
    assert "without the operating-system boundary" in unsafe.stdout
    records = json.loads((tmp_path / "unsafe" / "results.json").read_text())
    assert [r["success"] for r in records] == [True]
