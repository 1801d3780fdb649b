"""``python -m benchmarks.bench_deas_throughput --quick``: runs, and writes the committed file's layout."""

from __future__ import annotations

from benchmarks.bench_deas_throughput import FLOAT32_OF, main
from embodia.core.results import RESULTS_DIR, layout_differences, read_results


def test_quick_run_writes_the_committed_layout(tmp_path):
    path = tmp_path / "deas_throughput.json"
    assert main(["--quick", "--results", str(path)]) == 0
    written = read_results(path)
    committed = read_results(RESULTS_DIR / "benchmarks" / "deas_throughput.json")
    assert layout_differences(written, committed) == []
    rows = written["tables"]["learners"]["rows"]
    assert [r["learner"] for r in rows] == [r["learner"] for r in committed["tables"]["learners"]["rows"]]
    assert rows[0]["ratio"] == 1.0 and all(r["steps_per_second"] > 0 for r in rows)
    assert [r["learner"] for r in rows if r["bfloat16_gain"] is not None] == list(FLOAT32_OF)
    fix = written["tables"]["distillation_fix"]["rows"]
    assert [r["learner"] for r in fix] == [
        r["learner"] for r in committed["tables"]["distillation_fix"]["rows"]
    ]
    assert all(r["before"] > 0 and r["after"] > 0 and r["ratio"] > 0 for r in fix)
