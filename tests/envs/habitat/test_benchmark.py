"""`python -m benchmarks.bench_nav --quick`: env steps, geodesic queries and scene generation, in the committed layout."""

from __future__ import annotations

from benchmarks.bench_nav import main
from embodia.core.results import RESULTS_DIR, layout_differences, read_results


def test_benchmark_quick_writes_the_committed_layout(tmp_path):
    out = tmp_path / "nav.json"
    main(["--quick", "--results", str(out)])
    produced = read_results(out)
    assert layout_differences(produced, read_results(RESULTS_DIR / "benchmarks" / "nav.json")) == []
    geodesic = produced["tables"]["geodesic"]["rows"]
    assert geodesic[0]["excess_mean"] >= 0.0 and all(r["queries_per_second"] > 0 for r in geodesic)
