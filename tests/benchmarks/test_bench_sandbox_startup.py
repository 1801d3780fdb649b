"""``python -m benchmarks.bench_sandbox_startup --quick``: runs, and writes the committed file's layout."""

from __future__ import annotations

from benchmarks.bench_sandbox_startup import CONFINED, PLAIN, main
from embodia.core.results import RESULTS_DIR, layout_differences, read_results


def test_quick_run_writes_the_committed_layout(tmp_path):
    path = tmp_path / "sandbox_startup.json"
    assert main(["--quick", "--results", str(path)]) == 0
    written = read_results(path)
    committed = read_results(RESULTS_DIR / "benchmarks" / "sandbox_startup.json")
    assert layout_differences(written, committed) == []
    rows = {r["variant"]: r for r in written["tables"]["startup"]["rows"]}
    assert rows[PLAIN]["added"] == 0.0 and rows[PLAIN]["ratio"] == 1.0
    assert all(r["milliseconds"] > 0 for r in rows.values())
    # the boundary starts namespaces and mounts: it costs something, and it is counted
    assert rows[CONFINED]["milliseconds"] > 0 and rows[CONFINED]["ratio"] > 0
