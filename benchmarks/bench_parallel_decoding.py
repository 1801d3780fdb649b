"""Learn2PD decoding speed: wall-clock per answer and forward passes per strategy, ratios vs one token per pass.

    python -m benchmarks.bench_parallel_decoding [--quick] [--model runs/agents/learn2pd_model]

Uses the LM + filter saved by ``scripts/learn2pd_experiment.py --save`` when the folder exists, otherwise
trains a small one here (``shuffle`` task). Every strategy decodes the same held-out prompts as one batch,
``repeats`` times interleaved (one torch thread); ratios are medians of per-repeat ratios to ``one``.
Writes ``results/benchmarks/parallel_decoding.json`` (table ``strategies``; ``--quick``: a 40-step model
trained here, written under ``runs/quick-results/``; ``--results PATH`` elsewhere).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from benchmarks._common import interleaved, save_results
from embodia.agents.methods.learn2pd.decode import parallel_decode
from embodia.agents.methods.learn2pd.pipeline import build, load
from embodia.agents.methods.learn2pd.tasks import check, make_batch
from embodia.core.results import Column, Table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", default="runs/agents/learn2pd_model")
    parser.add_argument("--tau", type=float, default=0.9)
    parser.add_argument("--rho", type=float, default=0.9)
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/parallel_decoding.json)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if Path(args.model, "filter.safetensors").exists() and not args.quick:
        trained, source = load(args.model), args.model
    else:
        steps = 40 if args.quick else 1500
        trained, source = (
            build("shuffle", steps, 0, 64 if args.quick else 512),
            f"trained here ({steps} steps)",
        )
    model, f = trained.model, trained.accept_filter
    task, length = model.config.task, model.config.answer
    n, repeats = (32, 2) if args.quick else (256, 5)
    gen = torch.Generator().manual_seed(123)
    prompts, _ = make_batch(task, n, model.config.max_len, gen, length, model.config.min_len)
    configs = {
        "one": {},
        f"threshold {args.tau}": {"strategy": "threshold", "threshold": args.tau},
        f"filter (rho {args.rho})": {"strategy": "filter", "accept_filter": f, "filter_threshold": args.rho},
        f"filter+eotp (rho {args.rho})": {
            "strategy": "filter+eotp",
            "accept_filter": f,
            "filter_threshold": args.rho,
        },
    }
    stats = {}

    def runner(name, kw):
        def run() -> float:
            out = parallel_decode(model, prompts, length, block=trained.block, **kw)
            stats[name] = {
                "accuracy": check(task, prompts, out.tokens).float().mean().item(),
                "passes": out.passes.float().mean().item(),
            }
            return n

        return run

    rates = interleaved({name: runner(name, kw) for name, kw in configs.items()}, repeats)
    table = Table(
        [
            Column("strategy", "strategy"),
            Column("accuracy", "accuracy", ".1%"),
            Column("passes", "forward passes", ".2f"),
            Column("pass_speedup", "passes ratio (×)", ".2f"),
            Column("ms_per_answer", "ms / answer", ".3f"),
            Column("wallclock_speedup", "wall-clock ratio (×)", ".2f"),
        ]
    )
    payload = {"model": source, "task": task, "prompts": n, "repeats": repeats, "strategies": {}}
    for name in configs:
        s = stats[name] | {
            "answers_per_s": rates[name],
            "ms_per_answer": 1000 / rates[name],
            "wallclock_speedup": 1.0 if name == "one" else rates[f"{name}/one"],
            "pass_speedup": stats["one"]["passes"] / stats[name]["passes"],
        }
        payload["strategies"][name] = s
        table.add(strategy=name, **{c.key: s[c.key] for c in table.columns[1:]})
    print(f"model: {source}; task {task}; {n} prompts decoded as one batch; {repeats} repeats")
    print(table.markdown())
    save_results(
        "parallel_decoding",
        {"strategies": table},
        quick=args.quick,
        path=args.results,
        data=payload,
        title="Learn2PD decoding: forward passes and wall-clock per strategy against one token per pass",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
