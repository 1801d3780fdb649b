"""Results files: written with their provenance, read back checked, rendered as Markdown tables."""

from __future__ import annotations

import json
import subprocess

import pytest

from embodia.core.results import (
    REQUIRED_FIELDS,
    Column,
    ResultsError,
    Table,
    code_changed,
    default_results_path,
    format_cell,
    interval,
    layout_differences,
    read_results,
    table_of,
    write_results,
)


def small_table() -> Table:
    table = Table([Column("method", "method"), Column("success", "success", ".0%"), Column("n", "episodes")])
    table.add(method="DEAS", success=interval(0.09, 0.06, 0.12), n=300)
    table.add(method="BC", success=0.03, n=300)
    return table


def test_written_file_has_every_required_field_and_reads_back(tmp_path):
    path = write_results(tmp_path / "run.json", {"methods": small_table()}, seeds=[0, 1, 2], command="x --y")
    payload = read_results(path)
    assert set(REQUIRED_FIELDS) <= set(payload)
    assert payload["command"] == "x --y" and payload["seeds"] == [0, 1, 2]
    assert payload["provenance"] == "measured" and payload["machine"]["cores"] >= 1
    assert len(payload["commit"]) == 40  # the checkout's commit (tests run from a git checkout)
    assert table_of(payload, "methods").rows[0]["success"] == {"value": 0.09, "low": 0.06, "high": 0.12}


def test_cells_render_in_house_style():
    assert format_cell(0.09, ".0%") == "9 %"
    assert format_cell(interval(0.09, 0.06, 0.12), ".0%") == "9 % [6 %, 12 %]"
    assert format_cell({"low": 0.2, "high": 0.3}, ".0%") == "[20 %, 30 %]"
    assert format_cell([0.1, 0.25], ".0%") == "10 %, 25 %"
    assert format_cell(None, ".3f") == "—"
    assert format_cell(11577.4, ",.0f") == "11,577"
    assert format_cell("a | b") == "a \\| b"
    markdown = small_table().markdown().splitlines()
    assert markdown[0] == "| method | success | episodes |"
    assert markdown[2] == "| DEAS | 9 % [6 %, 12 %] | 300 |"


def test_a_row_without_a_column_is_refused_when_added_and_when_read(tmp_path):
    table = small_table()
    with pytest.raises(ValueError, match="lacks the columns"):
        table.add(method="IQL")
    path = write_results(tmp_path / "run.json", {"methods": table})
    payload = json.loads(path.read_text())
    del payload["tables"]["methods"]["rows"][1]["success"]
    path.write_text(json.dumps(payload))
    with pytest.raises(ResultsError, match=r"row 1 lacks \['success'\]"):
        read_results(path)


@pytest.mark.parametrize("field", ["command", "commit", "machine", "date", "seeds"])
def test_a_file_without_provenance_is_refused(tmp_path, field):
    path = write_results(tmp_path / "run.json", {"methods": small_table()})
    payload = json.loads(path.read_text())
    del payload[field]
    path.write_text(json.dumps(payload))
    with pytest.raises(ResultsError, match=field):
        read_results(path)


def test_missing_corrupt_and_foreign_files_are_one_line_errors(tmp_path):
    with pytest.raises(ResultsError, match="does not exist"):
        read_results(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ResultsError, match="corrupt"):
        read_results(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(ResultsError, match="not an embodia results file"):
        read_results(tmp_path / "other.json")


def test_transcribed_numbers_must_say_where_they_were_read(tmp_path):
    path = write_results(tmp_path / "run.json", {"methods": small_table()})
    payload = json.loads(path.read_text())
    payload["provenance"] = "transcribed"
    path.write_text(json.dumps(payload))
    with pytest.raises(ResultsError, match="source"):
        read_results(path)


def test_layout_differences_name_missing_tables_and_columns(tmp_path):
    reference = read_results(write_results(tmp_path / "a.json", {"methods": small_table()}))
    other = Table([Column("method", "method"), Column("success", "success")])
    produced = read_results(write_results(tmp_path / "b.json", {"methods": other, "extra": other}))
    assert layout_differences(reference, reference) == []
    assert layout_differences(produced, reference) == [
        "table 'methods': columns ['method', 'success'] != ['method', 'success', 'n']"
    ]
    assert layout_differences(reference, produced) == [
        "table 'methods': columns ['method', 'success', 'n'] != ['method', 'success']",
        "no table 'extra'",
    ]


def test_quick_runs_never_default_to_the_committed_results():
    assert default_results_path("benchmarks/x").parts[-3:] == ("results", "benchmarks", "x.json")
    assert "quick-results" in default_results_path("benchmarks/x", quick=True).parts


def test_dirty_means_code_changed_not_what_a_run_writes_into_results_or_docs(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)  # fmt: skip

    for name in ("results/perception/srl.json", "docs/images/masks.png", "embodia/method.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("committed")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "x")
    assert code_changed(tmp_path / "embodia") is False
    (tmp_path / "results/perception/srl.json").write_text("the run's results")
    (tmp_path / "docs/images/masks.png").write_text("the run's picture")
    (tmp_path / "notes.txt").write_text("untracked")
    assert code_changed(tmp_path / "embodia") is False  # run outputs and untracked files: clean
    (tmp_path / "embodia/method.py").write_text("changed")
    assert code_changed(tmp_path / "embodia") is True
    assert code_changed(tmp_path.parent / "not-a-checkout-anywhere") is None
