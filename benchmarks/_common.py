"""Shared helpers: interleaved repeated timing (so drift hits baseline and candidate alike), tables,
intervals of latency quantiles and their ratios, and the results files the documentation's benchmark
tables are rendered from."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from embodia.core.results import Table, default_results_path, interval, write_results


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
    seeds: Sequence[int] | None = None,
) -> Path:
    """Write ``results/benchmarks/<name>.json`` (the tables the docs render, the raw numbers in ``data``).

    A ``--quick`` run writes under ``runs/quick-results/`` instead, never over the committed file; ``path``
    overrides both; ``seeds``: the seeds of the run's random parts (recorded in the file). Prints where it went.
    """
    target = Path(path) if path else default_results_path(f"benchmarks/{name}", quick)
    written = write_results(target, tables, name=f"benchmarks/{name}", title=title, data=data, seeds=seeds)
    print(f"results: {written}")
    return written


def quantile_interval(samples: Sequence[float], q: float, confidence: float = 0.95) -> dict[str, float]:
    """The ``q`` quantile of ``samples`` (linear interpolation, as ``numpy.percentile``) and its
    distribution-free confidence interval: the order statistics whose ranks bound a binomial(n, q) count
    (normal approximation), which assumes independent samples. A results-file interval cell."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = len(x)
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(n * q * (1 - q))
    low = min(max(math.floor(n * q - half), 1), n)  # 1-based ranks
    high = min(max(math.ceil(n * q + half), 1), n)
    return interval(float(np.percentile(x, 100 * q)), x[low - 1], x[high - 1])


def ratio_interval(
    a: Sequence[float], b: Sequence[float], q: float = 0.5, confidence: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """``quantile(a, q) / quantile(b, q)`` with a percentile-bootstrap interval (2000 resamples of each set,
    drawn independently with ``seed``). A results-file interval cell."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    resamples = 2000
    ratios = np.quantile(rng.choice(a, (resamples, len(a))), q, axis=1) / np.quantile(
        rng.choice(b, (resamples, len(b))), q, axis=1
    )
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return interval(float(np.quantile(a, q) / np.quantile(b, q)), low, high)
