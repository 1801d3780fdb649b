"""``scripts/iqa_experiment.py --quick``: policy, database, IQA models and tables run end to end."""

from __future__ import annotations

import json

from embodia.core.results import layout_differences, read_results
from embodia.perception.iqa import load_database
from tests.conftest import ROOT
from tests.perception.conftest import run_script


def test_quick_run_writes_database_model_and_tables(tmp_path):
    results = tmp_path / "iqa.json"
    assert run_script("iqa_experiment", "--quick", "--out", str(tmp_path), "--results", str(results)) == 0
    db = load_database(tmp_path / "database.zarr")
    assert len(db.images) == 2 * 3 * 2 and db.images.shape[1:] == (64, 64, 3)
    summary = json.loads((tmp_path / "results.json").read_text())
    assert set(summary["results"]) == {"references", "classes"}
    assert "psnr (torchmetrics)" in summary["results"]["references"]
    assert (tmp_path / "iqa_model" / "config.json").is_file()
    assert "SRCC with execution" in (tmp_path / "results.md").read_text()
    # the committed results file (docs/guides/perception.md) has the layout this script writes
    committed = read_results(ROOT / "results" / "perception" / "iqa.json")
    assert layout_differences(read_results(results), committed) == []
    assert read_results(results)["tables"]["database"]["rows"][0]["images"] == len(db.images)
