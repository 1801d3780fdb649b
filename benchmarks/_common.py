"""Shared helpers: interleaved repeated timing (so drift hits baseline and candidate alike) and tables."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


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


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path
