"""What the ScienceBoard sandbox adds to starting a program: a plain process against the same process inside
the operating-system boundary (bubblewrap), with and without its network namespace.

    python -m benchmarks.bench_sandbox_startup [--quick] [--results PATH]

Each variant runs ``true`` to completion through :meth:`Sandbox.run` (the path every api command and every
program start takes), interleaved in one process; the boundary's cost per started program is the difference
of the medians, and its ratio to the plain start is the median of paired runs. An episode starts one to three
programs (the scientific program, and for GUI tasks nothing more: the display and buses are the harness's,
outside the boundary), so this is the boundary's startup cost per episode up to that factor. Writes
``results/benchmarks/sandbox_startup.json`` (``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from benchmarks._common import interleaved, save_results
from embodia.agents.scienceboard.sandbox import Sandbox
from embodia.core.results import Column, Table

PLAIN = "plain process (no boundary)"
CONFINED = "inside the boundary (mount, PID and network namespaces) — what episodes run"
NO_NETWORK_NAMESPACE = "inside the boundary without its network namespace"


def starters(sandbox: Sandbox, runs: int) -> dict[str, Callable[[], float]]:
    """Variant name -> a function that starts ``true`` ``runs`` times and returns ``runs``."""
    with_network = [part for part in sandbox.confinement() if part != "--unshare-net"]

    def starting(argv: list[str], confined: bool) -> Callable[[], float]:
        def run() -> float:
            for _ in range(runs):
                result = sandbox.run(argv, timeout=30.0, confined=confined)
                assert result.returncode == 0, result.stdout
            return runs

        return run

    return {
        PLAIN: starting(["true"], confined=False),
        CONFINED: starting(["true"], confined=True),
        NO_NETWORK_NAMESPACE: starting([*with_network, "true"], confined=False),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/sandbox_startup.json)"
    )
    args = parser.parse_args(argv)
    runs, repeats = (5, 2) if args.quick else (40, 9)
    with Sandbox() as sandbox:
        rates = interleaved(starters(sandbox, runs), repeats)
    table = Table(
        [
            Column("variant", "how `true` is started"),
            Column("milliseconds", "ms per start (median)", ".1f"),
            Column("added", "ms added to a plain start", ".1f"),
            Column("ratio", "time / plain start (median of paired runs)", ".2f"),
        ]
    )
    plain_ms = 1000.0 / rates[PLAIN]
    for name in (PLAIN, CONFINED, NO_NETWORK_NAMESPACE):
        ms = 1000.0 / rates[name]
        table.add(
            variant=name,
            milliseconds=ms,
            added=ms - plain_ms,
            ratio=1.0 if name == PLAIN else 1.0 / rates[f"{name}/{PLAIN}"],
        )
    print(table.markdown())
    save_results(
        "sandbox_startup",
        {"startup": table},
        quick=args.quick,
        path=args.results,
        data={"rates": rates, "runs": runs, "repeats": repeats},
        title="Starting a program inside the ScienceBoard sandbox, against a plain start",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
