"""VPPO vs GRPO on a tiny vision-language model trained here on rendered visual questions.

One supervised warm start per seed (shared by both arms: the same weights), then GRPO and VPPO for the same
RL steps on the same prompts; greedy exact-match accuracy on held-out questions every few steps, and the
sparsity of token perception (KL real vs perturbed image) of the warm-start and final policies.

    .venv/bin/python scripts/vppo_experiment.py                 # task total, 3 seeds, 150 SFT + 150 RL steps
    .venv/bin/python scripts/vppo_experiment.py --quick         # seconds (tests)
    .venv/bin/python scripts/vppo_experiment.py --save runs/agents/vppo_model   # model for the tool

Writes the results file ``results/methods/vppo_<task>.json`` (tables ``accuracy``: mean over seeds per
evaluated RL step, the range over seeds as the interval; ``seeds``: warm start and final accuracy per seed;
``perception``: sparsity of token perception of the warm-start and final policies, its mean on the answer
positions that depend on the image and on the templated ones, and the share of the top-k tokens that depend
on the image, mean over seeds; a
``--quick`` run writes under ``runs/quick-results/``, ``--results PATH`` elsewhere) and the raw numbers of
every run to ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time

import torch

from embodia.agents.methods.report import progress_bar, save_json
from embodia.agents.methods.vppo.grpo import RLConfig, train_rl
from embodia.agents.methods.vppo.model import TinyVLM, VLMConfig, generate, save_model, sft
from embodia.agents.methods.vppo.tasks import KINDS, image_positions, make_batch
from embodia.agents.methods.vppo.vppo import PERTURBATIONS, perturb, sparsity, token_perception, top_k_mask
from embodia.core.results import Column, Table, default_results_path, interval, write_results


def _perception_stats(model, batch, task: str, kind: str, seed: int, top_k: float) -> dict:
    """Exact-KL perception of the greedy answers: sparsity, mean on image / template positions, and the
    share of the top-k tokens (VPPO's filter) that sit on image-dependent positions."""
    images, prompts, _ = batch
    samples = generate(model, images, prompts, greedy=True)
    s = token_perception(
        model, images, perturb(images, kind, torch.Generator().manual_seed(seed)), prompts, samples
    )
    visual = torch.tensor(image_positions(task)).expand_as(s)
    kept = top_k_mask(s, top_k)
    return {
        **sparsity(s),
        "position_mean": s.mean(0).tolist(),
        "position_kept": kept.float().mean(0).tolist(),
        "image_token_mean": float(s[visual].mean()),
        "template_token_mean": float(s[~visual].mean()),
        "filter_precision": float((kept & visual).sum() / kept.sum()),
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


POSITION_NAMES = {
    "total": ["colour 1", "count 1", "colour 2", "count 2", "total", "n1 + n2", "[EOS]"],
    "other": ["answer word", "[EOS]"],
}


def result_tables(runs: list[dict], task: str) -> dict[str, Table]:
    """Accuracy per RL step (mean, range over seeds; the paired VPPO - GRPO difference), accuracy per seed,
    perception sparsity per policy, perception and top-k selection per answer position."""
    steps = [s for s, _ in runs[0]["grpo"]["curve"]]
    curves = {m: [[a for _, a in r[m]["curve"]] for r in runs] for m in ("grpo", "vppo")}

    def over_seeds(values: list[float]) -> float | dict:
        return interval(statistics.mean(values), min(values), max(values)) if len(values) > 1 else values[0]

    accuracy = Table(
        [
            Column("step", "RL step"),
            Column("grpo", "GRPO accuracy", ".1%"),
            Column("vppo", "VPPO accuracy", ".1%"),
            Column("difference", "VPPO - GRPO (same seed)", "+.1%"),
        ]
    )
    for i, step in enumerate(steps):
        paired = [v[i] - g[i] for v, g in zip(curves["vppo"], curves["grpo"], strict=True)]
        accuracy.add(
            step=step,
            **{m: over_seeds([c[i] for c in curves[m]]) for m in ("grpo", "vppo")},
            difference=over_seeds(paired),
        )
    seeds = Table(
        [
            Column("seed", "seed"),
            Column("warm", "warm start (step 0)", ".1%"),
            Column("grpo", "GRPO, last step", ".1%"),
            Column("vppo", "VPPO, last step", ".1%"),
            Column("difference", "VPPO - GRPO", "+.1%"),
            Column("grpo_mean", "GRPO, mean over evaluated RL steps", ".1%"),
            Column("vppo_mean", "VPPO, mean over evaluated RL steps", ".1%"),
            Column("warm_image_s", "warm start: mean s of image-dependent tokens", ".2f"),
        ]
    )
    for i, run in enumerate(runs):
        grpo, vppo = curves["grpo"][i][-1], curves["vppo"][i][-1]
        seeds.add(
            seed=run["seed"],
            warm=curves["grpo"][i][0],
            grpo=grpo,
            vppo=vppo,
            difference=vppo - grpo,
            grpo_mean=statistics.mean(curves["grpo"][i][1:]),
            vppo_mean=statistics.mean(curves["vppo"][i][1:]),
            warm_image_s=run["warm_perception"]["image_token_mean"],
        )
    perception = Table(
        [
            Column("policy", "policy"),
            Column("share_above", "share of tokens s > 0.05", ".3f"),
            Column("gini", "Gini of s", ".3f"),
            Column("image_token_mean", "mean s, image-dependent tokens", ".3f"),
            Column("template_token_mean", "mean s, template tokens", ".3f"),
            Column("filter_precision", "top-k tokens on image-dependent positions", ".1%"),
        ]
    )
    keys = [c.key for c in perception.columns[1:]]
    for label, get in (
        ("SFT warm start", lambda r: r["warm_perception"]),
        ("after GRPO", lambda r: r["grpo"]["final_perception"]),
        ("after VPPO", lambda r: r["vppo"]["final_perception"]),
    ):
        stats = [get(r) for r in runs]
        perception.add(policy=label, **{key: statistics.mean(s[key] for s in stats) for key in keys})
    names = POSITION_NAMES["total" if task == "total" else "other"]
    positions = Table(
        [
            Column("position", "answer position"),
            Column("warm", "mean s, warm start", ".3f"),
            Column("grpo", "mean s, after GRPO", ".3f"),
            Column("vppo", "mean s, after VPPO", ".3f"),
            Column("kept", "kept by top-k, warm start", ".1%"),
        ]
    )
    for j, name in enumerate(names):
        positions.add(
            position=name,
            warm=statistics.mean(r["warm_perception"]["position_mean"][j] for r in runs),
            grpo=statistics.mean(r["grpo"]["final_perception"]["position_mean"][j] for r in runs),
            vppo=statistics.mean(r["vppo"]["final_perception"]["position_mean"][j] for r in runs),
            kept=statistics.mean(r["warm_perception"]["position_kept"][j] for r in runs),
        )
    return {"accuracy": accuracy, "seeds": seeds, "perception": perception, "positions": positions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--task", choices=KINDS, default="total")
    parser.add_argument("--sft-steps", type=int, default=150)
    parser.add_argument("--rl-steps", type=int, default=150)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval", type=int, default=512, help="held-out questions")
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--beta", type=float, default=0.04, help="weight of the k3 KL to the warm start")
    parser.add_argument("--top-k", type=float, default=0.4)
    parser.add_argument("--scaling-min", type=float, default=0.9, help="VPPO advantage_scaling_min")
    parser.add_argument("--perception", choices=("k3", "exact"), default="k3", help="VPPO's estimate in RL")
    parser.add_argument("--perturbation", choices=PERTURBATIONS, default="patches")
    parser.add_argument("--save", default=None, help="folder for the first seed's warm-start model")
    parser.add_argument("--out", default="runs/agents/vppo.json", help="raw numbers (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/vppo_<task>.json)"
    )
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
        warm = sft(TinyVLM(VLMConfig.for_task(args.task)), args.task, sft_steps, seed)
        if seed == 0 and args.save:
            save_model(warm, args.save, args.task)
        stats = (args.task, args.perturbation, seed, args.top_k)
        run = {"seed": seed, "warm_perception": _perception_stats(warm, eval_batch, *stats)}
        for method in ("grpo", "vppo"):
            model = copy.deepcopy(warm)
            config = RLConfig(method=method, steps=rl_steps, lr=args.lr, beta=args.beta, top_k=args.top_k)
            config.perturbation, config.eval_every = args.perturbation, every
            config.scaling_min, config.perception = args.scaling_min, args.perception
            with progress_bar(f"{method} seed {seed}", not args.quiet) as update:
                curve = train_rl(model, args.task, config, seed, eval_batch, log=update)
            run[method] = {
                "curve": curve,
                "final_perception": _perception_stats(model, eval_batch, *stats),
            }
        runs.append(run)
    steps = [s for s, _ in runs[0]["grpo"]["curve"]]
    curves = {m: [[a for _, a in r[m]["curve"]] for r in runs] for m in ("grpo", "vppo")}
    tables = result_tables(runs, args.task)
    wins = sum(curves["vppo"][i][-1] > curves["grpo"][i][-1] for i in range(seeds))
    print(
        f"task {args.task}, {sft_steps} SFT + {rl_steps} RL steps, {seeds} seed(s), {n} held-out questions, "
        f"perturbation {args.perturbation}, top-k {args.top_k}, scaling_min {args.scaling_min}, "
        f"perception {args.perception}, lr {args.lr}, beta {args.beta}; "
        f"{time.time() - started:.0f} s"
    )
    for table in tables.values():
        print(table.markdown() + "\n")
    print(f"VPPO ends above GRPO in {wins} of {seeds} seed(s)")
    if args.plot:
        _plot(args.plot, steps, curves)
    raw = {
        "task": args.task,
        "sft_steps": sft_steps,
        "rl_steps": rl_steps,
        "eval": n,
        "perturbation": args.perturbation,
        "top_k": args.top_k,
        "scaling_min": args.scaling_min,
        "perception": args.perception,
        "lr": args.lr,
        "beta": args.beta,
        "runs": runs,
        "vppo_final_wins": wins,
        "seconds": time.time() - started,
    }
    save_json(args.out, raw)
    written = write_results(
        args.results or default_results_path(f"methods/vppo_{args.task}", quick=args.quick),
        tables,
        title=f"VPPO against GRPO on the {args.task} task: held-out accuracy and token perception",
        seeds=range(seeds),
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
