"""The offline-RL comparison of the DEAS paper at a CPU budget: DEAS vs QC-FQL vs FQL vs IQL vs BC.

OGBench's single-task protocol, as the DEAS and FQL tables report it: each environment family has five
evaluation tasks (``task_id`` 1-5); for each task, generate an OGBench-style play dataset with the noisy
expert labelled for that task, train every method on it for the same number of gradient steps with several
seeds, evaluate each final policy on that task, and report the family's success averaged over its tasks
(pooled over tasks and seeds, with a 95 % Wilson interval) as a Markdown table and a bar plot; per-task
numbers go to ``results.json``, and one results file per family (``results/offline_rl/<family>.json``,
:mod:`embodia.policies.comparison_results`) keeps the tables the documentation shows. Each method's
hyperparameters per family come from one table, :mod:`embodia.policies.paper_settings`.

``quick=True`` shrinks everything to seconds (tests run it); its numbers mean nothing beyond "the
pipeline runs, losses fall, numbers are finite".
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from embodia.core.results import provenance
from embodia.data.store import TrajectoryStore
from embodia.policies.comparison_results import dataset_coverage, method_row
from embodia.policies.paper_settings import PAPER_SETTINGS, method_setting, sparse_rewards
from embodia.policies.train import TrainConfig, train
from embodia.runner.datasets import generate_dataset
from embodia.runner.evaluate import evaluate_policy
from embodia.runner.parallel import map_tasks, wants_ray


@dataclass
class Case:
    """One environment of the comparison."""

    family: str
    """embodia family name, e.g. "CubeSingle" (data from -Play-v0, evaluation on -SingleTask-v0); its
    methods' settings are :data:`~embodia.policies.paper_settings.PAPER_SETTINGS`'s."""
    task_ids: tuple[int, ...] = (1, 2, 3, 4, 5)
    """The evaluation tasks, each with its own labelled dataset (OGBench's protocol: all five, averaged)."""


@dataclass
class ComparisonConfig:
    """Budget of the comparison."""

    cases: list[Case] = field(default_factory=lambda: [Case(family) for family in PAPER_SETTINGS])
    """Environments (CubeSingle, Scene, Puzzle3x3), each on its five tasks."""
    methods: tuple[str, ...] = ("deas", "qc_fql", "fql", "iql", "bc")
    """Method labels of the settings table (``qc_fql`` is the ``fql`` learner with chunks of 5)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    dataset_episodes: int = 100
    episode_steps: int = 1000
    noise: float = 0.1
    steps: int = 10_000
    batch_size: int = 256
    eval_episodes: int = 50
    matmul_precision: str = "float32"
    """Matrix products of every method's networks in training: "float32" or "bfloat16" (mixed precision,
    about 2x faster on CPUs with bfloat16 instructions; see ``NetworkConfig.matmul_precision``)."""
    out: str = "runs/offline_rl"


def quick_config(out: str) -> ComparisonConfig:
    """The whole protocol at toy size: CubeSingle's five tasks, every method, one seed, one episode each."""
    return ComparisonConfig(
        cases=[Case("CubeSingle")],
        seeds=(0,),
        dataset_episodes=2,
        episode_steps=200,
        steps=120,
        batch_size=64,
        eval_episodes=1,
        out=out,
    )


#: what the results files keep of every run (``eval.json``)
RUN_FIELDS = ("task_id", "seed", "success", "eval_episodes", "train_seconds", "steps_per_second", "commit")


@dataclass(frozen=True)
class RunSpec:
    """One training run of the comparison: a method on a case's dataset with a seed."""

    case: Case
    task_id: int
    method: str
    seed: int
    dataset: str
    run: str


def run_comparison(
    config: ComparisonConfig, progress: bool = False, workers: int = 1, ray_address: str | None = None
) -> dict[str, Any]:
    """Run the whole comparison; writes ``results.json``, ``results.md`` and ``results.png`` into ``out``.

    With ``workers > 1`` or a Ray address, datasets are generated and runs trained in parallel on Ray (each
    run on one core); results do not depend on where a run ran. Finished runs are never redone.
    """
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    specs: list[RunSpec] = []
    coverage: dict[str, list[dict[str, int]]] = {case.family: [] for case in config.cases}
    for case in config.cases:
        for task_id in case.task_ids:
            rewards = "sparse" if sparse_rewards(case.family) else "dense"
            dataset = out / "data" / f"{case.family}-task{task_id}-play-{rewards}.zarr"
            if (
                not (dataset / "zarr.json").exists()
                or TrajectoryStore(dataset).num_episodes < config.dataset_episodes
            ):
                generate_dataset(
                    f"embodia/{case.family}-Play-v0",
                    config.dataset_episodes,
                    dataset,
                    noise=config.noise,
                    task_id=task_id,
                    sparse=sparse_rewards(case.family),
                    max_steps=config.episode_steps,
                    overwrite=True,
                    workers=workers,
                    ray_address=ray_address,
                    progress=progress,
                )
            coverage[case.family].append(dataset_coverage(dataset, task_id))
            for method in config.methods:
                for seed in config.seeds:
                    run = out / "runs" / f"{case.family}-task{task_id}-{method}-seed{seed}"
                    specs.append(RunSpec(case, task_id, method, seed, str(dataset), str(run)))
    todo = [spec for spec in specs if _finished_run(Path(spec.run), config) is None]
    if wants_ray(workers, ray_address):
        map_tasks(train_and_evaluate, [(spec, config, False) for spec in todo], workers, ray_address)
    else:
        for spec in todo:
            train_and_evaluate(spec, config, progress)
    rows: list[dict[str, Any]] = []
    for case in config.cases:
        for method in config.methods:
            runs = []
            for spec in specs:
                if (spec.case, spec.method) == (case, method):
                    finished = _finished_run(Path(spec.run), config)
                    if finished is not None:
                        runs.append(
                            {k: finished[k] for k in RUN_FIELDS if k in finished}
                            | {"loss_drop": _loss_drop(Path(spec.run) / "metrics.jsonl")}
                        )
            rows.append(method_row(case.family, case.task_ids, method, runs, config.seeds))
    summary = {"config": asdict(config), "rows": rows, "coverage": coverage}
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    (out / "results.md").write_text(markdown(rows, config))
    plot(rows, out / "results.png")
    return summary


def train_and_evaluate(spec: RunSpec, config: ComparisonConfig, progress: bool = False) -> dict[str, Any]:
    """Train one run and evaluate its final policy; writes ``eval.json`` into the run folder (a Ray task too)."""
    case = spec.case
    env_id = f"embodia/{case.family}-SingleTask-v0"
    env_kwargs = {"task_id": spec.task_id, **({"sparse": True} if sparse_rewards(spec.case.family) else {})}
    setting = method_setting(case.family, spec.method)
    started = time.perf_counter()
    result = train(
        TrainConfig(
            method=setting.learner,
            dataset=spec.dataset,
            out=spec.run,
            env_id=None,
            steps=config.steps,
            batch_size=config.batch_size,
            seed=spec.seed,
            eval_every=0,
            eval_episodes=0,
            log_every=max(1, min(250, config.steps // 10)),
            method_config={**setting.config, "matmul_precision": config.matmul_precision},
        ),
        progress=progress,
    )
    train_seconds = time.perf_counter() - started
    scores = evaluate_policy(
        Path(spec.run) / "policy",
        env_id,
        episodes=config.eval_episodes,
        seeds=[spec.seed],
        env_kwargs=env_kwargs,
    )
    row = {
        "case": case.family,
        "task_id": spec.task_id,
        "method": spec.method,
        "seed": spec.seed,
        "success": scores.success_rate,
        "train_seconds": train_seconds,
        "steps": config.steps,
        "batch_size": config.batch_size,
        "eval_episodes": scores.episodes,
        "steps_per_second": result["steps_per_second"],
        "commit": provenance()["commit"],
    }
    (Path(spec.run) / "eval.json").write_text(json.dumps(row))
    return row


def _finished_run(run: Path, config: ComparisonConfig) -> dict[str, Any] | None:
    """The saved result of a run that already finished with this budget (reruns resume), else None."""
    try:
        saved = json.loads((run / "eval.json").read_text())
        trained = json.loads((run / "train_config.json").read_text())
        last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None
    if (trained["steps"], trained["batch_size"]) != (config.steps, config.batch_size):
        return None
    if trained.get("method_config", {}).get("matmul_precision", "float32") != config.matmul_precision:
        return None
    saved.setdefault("eval_episodes", config.eval_episodes)
    if saved["eval_episodes"] != config.eval_episodes or last.get("step") != config.steps:
        return None
    saved.setdefault("steps_per_second", config.steps / last["time"])
    return saved


def _loss_drop(metrics_path: Path) -> dict[str, float]:
    """First and last logged value of the main loss (evidence that training moved)."""
    records = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    records = [r for r in records if "eval" not in r]
    key = next(k for k in ("critic_loss", "bc_mse", "flow_loss") if k in records[0])
    return {"loss": key, "first": records[0][key], "last": records[-1][key]}


def markdown(rows: list[dict[str, Any]], config: ComparisonConfig) -> str:
    lines = [
        f"Data: {config.dataset_episodes} play episodes x {config.episode_steps} steps per environment (noise "
        f"{config.noise}); {config.steps} gradient steps, batch {config.batch_size}, {config.matmul_precision} matrix products; "
        f"{len(config.seeds)} seeds x "
        f"{config.eval_episodes} evaluation episodes per task and seed; success averaged over each environment's "
        "tasks; 95 % Wilson intervals over all episodes.",
        "",
        "| environment (tasks) | method | success | 95 % interval | per task | per seed | grad steps/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        tasks = ", ".join("-" if v is None else f"{v:.0%}" for v in r["per_task"].values())
        lines.append(
            f"| {r['case']} ({', '.join(map(str, r['task_ids']))}) | {r['method']} | {r['success']:.1%} | "
            f"[{r['interval'][0]:.1%}, {r['interval'][1]:.1%}] | {tasks} | "
            f"{', '.join(f'{s:.0%}' for s in r['per_seed'])} | {r['steps_per_second']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cases = list(dict.fromkeys(r["case"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(cases), 3.4))
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        picked = [next(r for r in rows if r["case"] == c and r["method"] == method) for c in cases]
        x = np.arange(len(cases)) + (j - (len(methods) - 1) / 2) * width
        values = np.array([r["success"] for r in picked])
        low = values - np.array([r["interval"][0] for r in picked])
        high = np.array([r["interval"][1] for r in picked]) - values
        ax.bar(x, values, width, yerr=[low, high], capsize=3, label=method)
    ax.set_xticks(np.arange(len(cases)), cases)
    ax.set_ylim(0, 1)
    ax.set_ylabel("success rate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
