"""LaplacianFormer attention vs torch's softmax ``scaled_dot_product_attention``, 1k to 16k tokens.

    python -m benchmarks.bench_laplacian_attention [--quick]

Batch 1, one head, head dim 64, random inputs; Laplacian attention with m = 64 landmarks and 6
Newton-Schulz iterations (:func:`embodia.nn.laplacian_attention.laplacian_attention`). Time: the median of
``repeats`` forward passes (no grad), interleaved with SDPA in the same process; the ratio is the median of
per-repeat ratios (drift cancels). Torch runs one intra-op thread by default (``--threads``): on a shared, loaded
machine, multi-threaded passes stall waiting for a descheduled thread and the timings become noise. Memory: the peak resident-set growth of one forward pass, each method
and size in a fresh subprocess: RSS (``/proc/self/statm``) sampled every 0.5 ms by a thread during the pass,
minus RSS just before it (inputs allocated, a small warm-up pass done). It is what the process took from the
machine, allocator caching included; a pass shorter than a few ms can be missed and sizes under ~1 MiB are
noise. Linux only. ``--quick`` runs 1k and 2k only. Raw numbers go to
``benchmarks/results/laplacian_attention.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from benchmarks._common import markdown_table, save
from embodia.nn.laplacian_attention import laplacian_attention

DIM, LANDMARKS, ITERATIONS = 64, 64, 6
TOKENS, QUICK_TOKENS = (1024, 2048, 4096, 8192, 16384), (1024, 2048)

_MEMORY_CHILD = """
import os, sys, threading, time, torch
import torch.nn.functional as F
from embodia.nn.laplacian_attention import laplacian_attention
method, n, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(int(sys.argv[4]))
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * page
q, k, v = (torch.randn(1, 1, n, dim) * dim**-0.5 for _ in range(3))
run = lambda a, b, c: F.scaled_dot_product_attention(a, b, c) if method == "sdpa" else laplacian_attention(a, b, c, 64, 6)
peak, done = [0], threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.0005)
with torch.no_grad():
    run(*(t[..., :128, :] for t in (q, k, v)))
    before = rss()
    thread = threading.Thread(target=sample)
    thread.start()
    out = run(q, k, v)
    peak[0] = max(peak[0], rss())
    done.set()
    thread.join()
print(max(peak[0] - before, 0) / 2**20)
"""


def _inputs(n: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(n)
    return tuple(torch.randn(1, 1, n, DIM, generator=gen) * DIM**-0.5 for _ in range(3))


def time_pair(n: int, repeats: int) -> dict:
    q, k, v = _inputs(n)
    fns = {
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v),
        "laplacian": lambda: laplacian_attention(q, k, v, LANDMARKS, ITERATIONS),
    }
    times: dict[str, list[float]] = {name: [] for name in fns}
    with torch.no_grad():
        for fn in fns.values():
            fn()  # warm-up
        for _ in range(repeats):
            for name, fn in fns.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {
        "sdpa_s": statistics.median(times["sdpa"]),
        "laplacian_s": statistics.median(times["laplacian"]),
        "speedup": statistics.median(a / b for a, b in zip(times["sdpa"], times["laplacian"])),
    }


def peak_memory_mib(method: str, n: int) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, method, str(n), str(DIM), str(torch.get_num_threads())],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 2k tokens only")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None, help="results JSON (default benchmarks/results/...)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (both methods)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    tokens = QUICK_TOKENS if args.quick else TOKENS
    repeats = 2 if args.quick else args.repeats
    rows, results = [], []
    for n in tokens:
        timing = time_pair(n, repeats)
        memory = {m: peak_memory_mib(m, n) for m in ("sdpa", "laplacian")}
        ratio = memory["sdpa"] / memory["laplacian"] if memory["laplacian"] > 0.5 else None
        results.append(
            {"tokens": n, **timing, "sdpa_mib": memory["sdpa"], "laplacian_mib": memory["laplacian"]}
        )
        rows.append(
            [
                str(n),
                f"{timing['sdpa_s'] * 1e3:.1f}",
                f"{timing['laplacian_s'] * 1e3:.1f}",
                f"{timing['speedup']:.2f}x",
                f"{memory['sdpa']:.1f}",
                f"{memory['laplacian']:.1f}",
                "-" if ratio is None else f"{ratio:.1f}x",
            ]
        )
        print(f"{n} tokens done", file=sys.stderr)
    header = ["tokens", "SDPA ms", "Laplacian ms", "speed ratio", "SDPA MiB", "Laplacian MiB", "memory ratio"]
    table = markdown_table(header, rows)
    print(table)
    payload = {
        "dim": DIM,
        "heads": 1,
        "batch": 1,
        "landmarks": LANDMARKS,
        "iterations": ITERATIONS,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "loadavg": os.getloadavg(),
        "memory_method": "peak RSS growth of one forward pass in a fresh subprocess (statm sampled every 0.5 ms)",
        "results": results,
    }
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(payload, fh, indent=2)
    else:
        print(save("laplacian_attention", payload), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
