"""Run the timing-sensitive tests with the machine under load, several times in a row (`make test-load`).

    python scripts/under_load.py                        # 3 runs, one busy process per core beside them
    python scripts/under_load.py --runs 5 --hogs 4 -- tests/robot -k launch
    python scripts/under_load.py --quick                # one short run (what the tests run)

What it proves: the tests that involve other processes and time — ROS 2 nodes talking over DDS, Ray
clusters, scientific programs under Xvfb — wait for events and acknowledgements, not for fixed sleeps,
so they pass when every core is also busy with something else (a CI machine running other jobs). A
test that fails here fails somewhere else one day.

Each run is a fresh pytest process over the selection (default: ``tests/robot``,
``tests/runner/test_parallel.py``, ``tests/agents/scienceboard``), with ``--hogs`` processes (default: one
per core) spinning at full speed for the whole run. The exit status is 0 only when every run passed;
the runs' counts and wall times go to the results file (``results/reliability/under_load.json``; with
``--quick`` under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from embodia.core.results import Column, Table, default_results_path, write_results

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SELECTION = [
    "tests/robot",
    "tests/runner/test_parallel.py",
    "tests/runner/test_ray_reaper.py",
    "tests/agents/scienceboard",
]
QUICK_SELECTION = ["tests/core/test_results.py"]


def _spin() -> None:
    while True:
        pass


def start_hogs(count: int) -> list[multiprocessing.Process]:
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for hog in hogs:
        hog.start()
    return hogs


def run_pytest(selection: list[str]) -> dict:
    """One pytest process over ``selection``: its exit code, counts (from its JUnit report) and wall time."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.xml"
        start = time.monotonic()
        code = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={report}",
                *selection,
            ],
            cwd=ROOT,
        ).returncode
        wall = time.monotonic() - start
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if report.is_file():
            suite = ElementTree.parse(report).getroot()
            suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
            counts = {k: int(suite.get(k, 0)) for k in counts}
    return {"exit_code": code, "wall_s": wall, **counts}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs in a row (default 3)")
    parser.add_argument(
        "--hogs", type=int, default=None, help="busy processes beside the tests (default: cores)"
    )
    parser.add_argument("--quick", action="store_true", help="one run of a few fast tests, one hog (tests)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/reliability/under_load.json)"
    )
    parser.add_argument(
        "selection",
        nargs="*",
        help="pytest arguments after -- (default: the ROS, Ray and ScienceBoard tests)",
    )
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    hogs = args.hogs if args.hogs is not None else (1 if args.quick else cores)
    runs = 1 if args.quick else args.runs
    selection = args.selection or (QUICK_SELECTION if args.quick else DEFAULT_SELECTION)

    table = Table(
        [
            Column("run", "run"),
            Column("passed", "passed"),
            Column("failed", "failed"),
            Column("skipped", "skipped"),
            Column("wall_min", "wall time, min", ".1f"),
        ]
    )
    hog_processes = start_hogs(hogs)
    print(f"under load: {hogs} busy process(es) on {cores} core(s); {runs} run(s) of {' '.join(selection)}")
    try:
        outcomes = []
        for run in range(1, runs + 1):
            outcome = run_pytest(selection)
            outcomes.append(outcome)
            failed = outcome["failures"] + outcome["errors"]
            table.add(
                run=run,
                passed=outcome["tests"] - failed - outcome["skipped"],
                failed=failed,
                skipped=outcome["skipped"],
                wall_min=outcome["wall_s"] / 60,
            )
            print(
                f"run {run}: exit {outcome['exit_code']}, {failed} failed, {outcome['wall_s'] / 60:.1f} min"
            )
    finally:
        for hog in hog_processes:
            hog.terminate()
    print(table.markdown())
    green = all(o["exit_code"] == 0 for o in outcomes)
    path = Path(args.results) if args.results else default_results_path("reliability/under_load", args.quick)
    write_results(
        path,
        {"runs": table},
        title="The ROS 2, Ray and ScienceBoard tests with every core busy",
        data={"selection": selection, "hogs": hogs, "cores": cores, "green": green, "outcomes": outcomes},
    )
    print(f"results: {path}")
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main())
