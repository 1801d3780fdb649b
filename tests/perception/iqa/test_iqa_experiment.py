"""``scripts/iqa_experiment.py --quick``: policy, database with all four levels, benchmark and tables run."""

from __future__ import annotations

import json

import numpy as np

from embodia.core.results import layout_differences, read_results
from embodia.perception.iqa import load_database
from tests.conftest import ROOT
from tests.perception.conftest import run_script


def test_quick_run_writes_database_model_and_tables(tmp_path):
    results = tmp_path / "iqa.json"
    assert run_script("iqa_experiment", "--quick", "--out", str(tmp_path), "--results", str(results)) == 0
    db = load_database(tmp_path / "database.zarr")
    assert len(db.images) == 2 * 3 * 2 and db.images.shape[1:] == (64, 64, 3)
    assert np.isfinite(db.cognition).all()  # the cognition level was scored before saving
    summary = json.loads((tmp_path / "results.json").read_text())
    assert summary["answerer"]["frames"] >= 1
    assert (tmp_path / "iqa_model" / "config.json").is_file()
    produced = read_results(results)
    methods = {row["method"] for row in produced["tables"]["srcc"]["rows"]}
    assert {"PSNR", "SSIM", "MS-SSIM", "VIF", "IQA CNN trained on the level"} <= methods
    # the committed results file (docs/guides/perception.md) has the layout this script writes
    committed = read_results(ROOT / "results" / "perception" / "iqa.json")
    assert layout_differences(produced, committed) == []
    assert produced["tables"]["database"]["rows"][0]["images"] == len(db.images)
