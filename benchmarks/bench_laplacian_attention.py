"""LaplacianFormer attention vs torch's softmax ``scaled_dot_product_attention``, 1k to 16k tokens,
forward only and forward + backward.

    python -m benchmarks.bench_laplacian_attention [--quick] [--max-backward-tokens N]

Batch 1, one head, head dim 64, random inputs; Laplacian attention as the layer runs it
(:func:`embodia.nn.laplacian_attention.laplacian_attention`): m = 64 landmarks pooled along the sequence, the
authors' ridge (W + 0.01 I) and start (alpha P), 6 Newton-Schulz iterations with the authors' backward
(-X^T G X^T), whitened query-landmark features.

Time. Forward: the median of ``repeats`` forward passes (no grad), interleaved with SDPA in the same
process; the ratio is the median of per-repeat ratios (drift cancels). Forward + backward: the same with
q, k, v requiring grad, one repeat = ``out = attn(q, k, v); out.sum().backward()`` (grads reset to None
before each repeat, so the grads of q, k, v are allocated in every repeat). Torch runs one intra-op thread by
default (``--threads``): on a shared, loaded machine, multi-threaded passes stall waiting for a descheduled
thread and the timings become noise.

Memory: the peak resident-set growth of one pass, each method, size and mode in a fresh subprocess: RSS
(``/proc/self/statm``) sampled every 0.5 ms by a thread during the pass, minus RSS just before it (inputs
allocated, a small warm-up pass of the same mode done; the output is kept until after the last sample).
Forward: one no-grad forward. Forward + backward: the forward that saves tensors for backward, then
``out.sum().backward()``; the peak includes the saved activations, backward temporaries and the three input
grads (3 x N x 64 floats: 12 MiB at 16k). It is what the process took from the machine, allocator caching
included; a pass shorter than a few ms can be missed and sizes under ~1 MiB are noise. Linux only.

``--quick`` runs 1k only (two repeats). ``--max-backward-tokens`` skips the forward + backward
measurement above that length (reported as null / "—"), default: no cap (SDPA's CPU kernel is flash-style,
so 16k tokens fit in memory on the 2-core machine; the results file says which sizes ran). Writes
``results/benchmarks/laplacian_attention.json`` (tables ``forward`` and ``backward``, the raw numbers in
``data``; ``--quick``: under ``runs/quick-results/``; ``--results PATH`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from benchmarks._common import save_results
from embodia.core.results import Column, Table
from embodia.nn.laplacian_attention import laplacian_attention

DIM, LANDMARKS, ITERATIONS = 64, 64, 6
TOKENS, QUICK_TOKENS = (1024, 2048, 4096, 8192, 16384), (1024,)

_MEMORY_CHILD = """
import os, sys, threading, time, torch
import torch.nn.functional as F
from embodia.nn.laplacian_attention import laplacian_attention
method, n, dim, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5]
torch.set_num_threads(int(sys.argv[4]))
grad = mode == "backward"
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * page
def inputs(size):
    return [(torch.randn(1, 1, size, dim) * dim**-0.5).requires_grad_(grad) for _ in range(3)]
run = lambda a, b, c: F.scaled_dot_product_attention(a, b, c) if method == "sdpa" else laplacian_attention(a, b, c, 64, 6)
def step(a, b, c):
    out = run(a, b, c)
    if grad:
        out.sum().backward()
    return out
q, k, v = inputs(n)
peak, done = [0], threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.0005)
with torch.set_grad_enabled(grad):
    step(*inputs(128))
    before = rss()
    thread = threading.Thread(target=sample)
    thread.start()
    out = step(q, k, v)
    peak[0] = max(peak[0], rss())
    done.set()
    thread.join()
print(max(peak[0] - before, 0) / 2**20)
"""
MODES = ("forward", "backward")


def _inputs(n: int, grad: bool = False) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(n)
    return tuple(
        (torch.randn(1, 1, n, DIM, generator=gen) * DIM**-0.5).requires_grad_(grad) for _ in range(3)
    )


def time_pair(n: int, repeats: int, mode: str = "forward") -> dict:
    """Median seconds per method and median per-repeat ratio SDPA / Laplacian, methods interleaved.

    ``mode="forward"``: one no-grad forward pass; ``mode="backward"``: forward + ``out.sum().backward()``.
    """
    grad = mode == "backward"
    q, k, v = _inputs(n, grad)
    attns = {
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v),
        "laplacian": lambda: laplacian_attention(q, k, v, LANDMARKS, ITERATIONS),
    }

    def step(attn: Callable[[], torch.Tensor]) -> None:
        if grad:
            for t in (q, k, v):
                t.grad = None
            attn().sum().backward()
        else:
            attn()

    times: dict[str, list[float]] = {name: [] for name in attns}
    with torch.set_grad_enabled(grad):
        for attn in attns.values():
            step(attn)  # warm-up
        for _ in range(repeats):
            for name, attn in attns.items():
                start = time.perf_counter()
                step(attn)
                times[name].append(time.perf_counter() - start)
    return {
        "sdpa_s": statistics.median(times["sdpa"]),
        "laplacian_s": statistics.median(times["laplacian"]),
        "speedup": statistics.median(a / b for a, b in zip(times["sdpa"], times["laplacian"])),
    }


def peak_memory_mib(method: str, n: int, mode: str = "forward") -> float:
    """Peak RSS growth (MiB) of one pass (``mode``: forward or forward + backward) in a fresh subprocess."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, method, str(n), str(DIM), str(torch.get_num_threads()), mode],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(out.stdout.strip().splitlines()[-1])


def measure(n: int, repeats: int, mode: str) -> dict:
    """Timing and memory of both methods at ``n`` tokens in ``mode``: seconds, ratio and MiB."""
    timing = time_pair(n, repeats, mode)
    memory = {m: peak_memory_mib(m, n, mode) for m in ("sdpa", "laplacian")}
    return {**timing, "sdpa_mib": memory["sdpa"], "laplacian_mib": memory["laplacian"]}


def table() -> Table:
    return Table(
        [
            Column("tokens", "tokens"),
            Column("sdpa_ms", "SDPA ms", ".1f"),
            Column("laplacian_ms", "Laplacian ms", ".1f"),
            Column("speed_ratio", "speed ratio (SDPA / Laplacian, ×)", ".2f"),
            Column("sdpa_mib", "SDPA MiB", ".1f"),
            Column("laplacian_mib", "Laplacian MiB", ".1f"),
            Column("memory_ratio", "memory ratio (SDPA / Laplacian, ×)", ".1f"),
        ]
    )


def add_row(tab: Table, n: int, record: dict | None) -> None:
    """One row; a skipped measurement (``record`` None) is a row of nulls; the memory ratio is null
    where the Laplacian pass grew RSS by under 0.5 MiB (noise)."""
    if record is None:
        tab.add(tokens=n, **dict.fromkeys([c.key for c in tab.columns[1:]]))
        return
    tab.add(
        tokens=n,
        sdpa_ms=record["sdpa_s"] * 1e3,
        laplacian_ms=record["laplacian_s"] * 1e3,
        speed_ratio=record["speedup"],
        sdpa_mib=record["sdpa_mib"],
        laplacian_mib=record["laplacian_mib"],
        memory_ratio=record["sdpa_mib"] / record["laplacian_mib"] if record["laplacian_mib"] > 0.5 else None,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k tokens only")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/laplacian_attention.json)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (both methods)")
    parser.add_argument(
        "--max-backward-tokens", type=int, default=None, help="skip forward + backward above this length"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    tokens = QUICK_TOKENS if args.quick else TOKENS
    repeats = 2 if args.quick else args.repeats
    tables = {mode: table() for mode in MODES}
    results = []
    for n in tokens:
        forward = measure(n, repeats, "forward")
        add_row(tables["forward"], n, forward)
        backward = None
        if args.max_backward_tokens is None or n <= args.max_backward_tokens:
            backward = measure(n, repeats, "backward")
        add_row(tables["backward"], n, backward)
        results.append({"tokens": n, **forward, "backward": backward})
        print(f"{n} tokens done", file=sys.stderr)
    print("Forward (no grad):\n" + tables["forward"].markdown())
    print("\nForward + backward (out.sum().backward()):\n" + tables["backward"].markdown())
    data = {
        "dim": DIM,
        "heads": 1,
        "batch": 1,
        "landmarks": LANDMARKS,
        "iterations": ITERATIONS,
        "threads": torch.get_num_threads(),
        "repeats": repeats,
        "torch": torch.__version__,
        "loadavg": os.getloadavg(),
        "memory_method": "peak RSS growth of one pass in a fresh subprocess (statm sampled every 0.5 ms)",
        "backward_method": "results[i].backward: the same for forward + out.sum().backward() with q, k, v "
        "requiring grad (input grads included); null where skipped by --max-backward-tokens",
        "results": results,
        "cap": (
            f"forward + backward skipped above {args.max_backward_tokens} tokens"
            if args.max_backward_tokens is not None
            else f"no cap: both methods ran forward and forward + backward at every size up to {tokens[-1]}"
        ),
    }
    save_results(
        "laplacian_attention",
        tables,
        quick=args.quick,
        path=args.results,
        data=data,
        title="LaplacianFormer attention against torch's SDPA: time and peak memory, 1k-16k tokens",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
