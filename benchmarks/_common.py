"""Shared helpers: interleaved repeated timing (so drift hits baseline and candidate alike), tables, and the
results files the documentation's benchmark tables are rendered from."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from embodia.core.results import Table, default_results_path, write_results


def interleaved(fns: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Run each ``fn`` ``repeats`` times, alternating between them; each returns a work count.

    Returns the median throughput (work / second) per name, and for every name after the first the
    median of its per-repeat ratios to the first (``"<name>/<first>"``): pairing runs that happened
    seconds apart cancels most of the machine's drift.
    """
    rates: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            work = fn()
            rates[name].append(work / (time.perf_counter() - start))
    result = {name: statistics.median(values) for name, values in rates.items()}
    base = next(iter(fns))
    for name in list(fns)[1:]:
        result[f"{name}/{base}"] = statistics.median(a / b for a, b in zip(rates[name], rates[base]))
    return result


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def save_results(
    name: str,
    tables: Mapping[str, Table],
    *,
    quick: bool,
    data: Mapping[str, Any] | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> Path:
    """Write ``results/benchmarks/<name>.json`` (the tables the docs render, the raw numbers in ``data``).

    A ``--quick`` run writes under ``runs/quick-results/`` instead, never over the committed file; ``path``
    overrides both. Prints where it went.
    """
    target = Path(path) if path else default_results_path(f"benchmarks/{name}", quick)
    written = write_results(target, tables, name=f"benchmarks/{name}", title=title, data=data)
    print(f"results: {written}")
    return written
