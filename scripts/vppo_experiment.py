"""VPPO vs GRPO on a tiny vision-language model trained here on rendered visual questions.

One supervised warm start per seed (shared by both arms: the same weights), then GRPO and VPPO for the same
RL steps on the same prompts; greedy exact-match accuracy on held-out questions every few steps, and the
sparsity of token perception (KL real vs perturbed image) of the warm-start and final policies.

    .venv/bin/python scripts/vppo_experiment.py                 # task count, 3 seeds, 300 SFT + 200 RL steps
    .venv/bin/python scripts/vppo_experiment.py --quick         # seconds (tests)
    .venv/bin/python scripts/vppo_experiment.py --save runs/agents/vppo_model   # model for the tool
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time

import torch

from embodia.agents.methods.report import markdown_table, progress_bar, save_json
from embodia.agents.methods.vppo.grpo import RLConfig, train_rl
from embodia.agents.methods.vppo.model import TinyVLM, generate, save_model, sft
from embodia.agents.methods.vppo.tasks import KINDS, make_batch
from embodia.agents.methods.vppo.vppo import PERTURBATIONS, perturb, sparsity, token_perception


def _perception_stats(model, batch, kind: str, seed: int) -> dict:
    images, prompts, _ = batch
    samples = generate(model, images, prompts, greedy=True)
    s = token_perception(
        model, images, perturb(images, kind, torch.Generator().manual_seed(seed)), prompts, samples
    )
    return {
        **sparsity(s),
        "answer_token_mean": float(s[:, 0].mean()),
        "eos_token_mean": float(s[:, 1].mean()),
    }


def _plot(path: str, steps: list[int], curves: dict[str, list[list[float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for method, runs in curves.items():
        mean = [statistics.mean(col) for col in zip(*runs, strict=True)]
        ax.plot(steps, mean, marker="o", label=f"{method} (mean of {len(runs)})")
        for run in runs:
            ax.plot(steps, run, alpha=0.25, color=ax.lines[-1].get_color())
    ax.set_xlabel("RL step")
    ax.set_ylabel("held-out accuracy")
    ax.legend()
    fig.tight_layout()
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--task", choices=KINDS, default="count")
    parser.add_argument("--sft-steps", type=int, default=300)
    parser.add_argument("--rl-steps", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval", type=int, default=512, help="held-out questions")
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--beta", type=float, default=0.04, help="weight of the k3 KL to the warm start")
    parser.add_argument("--top-k", type=float, default=0.4)
    parser.add_argument("--perturbation", choices=PERTURBATIONS, default="patches")
    parser.add_argument("--save", default=None, help="folder for the first seed's warm-start model")
    parser.add_argument("--out", default="runs/agents/vppo.json")
    parser.add_argument("--plot", default="runs/agents/vppo.png")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    sft_steps, rl_steps, seeds, n, every = (
        args.sft_steps,
        args.rl_steps,
        args.seeds,
        args.eval,
        args.eval_every,
    )
    if args.quick:
        sft_steps, rl_steps, seeds, n, every = 40, 4, 1, 64, 2
    eval_batch = make_batch(args.task, n, 999_000)
    runs, started = [], time.time()
    for seed in range(seeds):
        torch.manual_seed(seed)
        warm = sft(TinyVLM(), args.task, sft_steps, seed)
        if seed == 0 and args.save:
            save_model(warm, args.save, args.task)
        run = {"seed": seed, "warm_perception": _perception_stats(warm, eval_batch, args.perturbation, seed)}
        for method in ("grpo", "vppo"):
            model = copy.deepcopy(warm)
            config = RLConfig(method=method, steps=rl_steps, lr=args.lr, beta=args.beta, top_k=args.top_k)
            config.perturbation, config.eval_every = args.perturbation, every
            with progress_bar(f"{method} seed {seed}", not args.quiet) as update:
                curve = train_rl(model, args.task, config, seed, eval_batch, log=update)
            run[method] = {
                "curve": curve,
                "final_perception": _perception_stats(model, eval_batch, args.perturbation, seed),
            }
        runs.append(run)
    steps = [s for s, _ in runs[0]["grpo"]["curve"]]
    curves = {m: [[a for _, a in r[m]["curve"]] for r in runs] for m in ("grpo", "vppo")}
    rows = []
    for i, step in enumerate(steps):
        cells = [step]
        for m in ("grpo", "vppo"):
            acc = [c[i] for c in curves[m]]
            cells.append(
                f"{statistics.mean(acc):.1%}" + (f" ({min(acc):.1%}-{max(acc):.1%})" if len(acc) > 1 else "")
            )
        rows.append(cells)
    acc_table = markdown_table(["RL step", "GRPO accuracy", "VPPO accuracy"], rows)
    p_rows = []
    for label, get in (
        ("SFT warm start", lambda r: r["warm_perception"]),
        ("after GRPO", lambda r: r["grpo"]["final_perception"]),
        ("after VPPO", lambda r: r["vppo"]["final_perception"]),
    ):
        stats = [get(r) for r in runs]
        p_rows.append(
            [label]
            + [
                f"{statistics.mean(s[key] for s in stats):.3f}"
                for key in ("share_above", "gini", "answer_token_mean", "eos_token_mean")
            ]
        )
    p_table = markdown_table(
        ["policy", "share of tokens s > 0.05", "Gini of s", "mean s, answer token", "mean s, [EOS]"], p_rows
    )
    wins = sum(curves["vppo"][i][-1] > curves["grpo"][i][-1] for i in range(seeds))
    print(
        f"task {args.task}, {sft_steps} SFT + {rl_steps} RL steps, {seeds} seed(s), {n} held-out questions, "
        f"perturbation {args.perturbation}, top-k {args.top_k}, lr {args.lr}, beta {args.beta}; "
        f"{time.time() - started:.0f} s"
    )
    print(acc_table)
    print(p_table)
    print(f"VPPO ends above GRPO in {wins} of {seeds} seed(s)")
    if args.plot:
        _plot(args.plot, steps, curves)
    save_json(
        args.out,
        {
            "task": args.task,
            "sft_steps": sft_steps,
            "rl_steps": rl_steps,
            "eval": n,
            "perturbation": args.perturbation,
            "top_k": args.top_k,
            "lr": args.lr,
            "beta": args.beta,
            "runs": runs,
            "accuracy_table": acc_table,
            "perception_table": p_table,
            "vppo_final_wins": wins,
            "seconds": time.time() - started,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
