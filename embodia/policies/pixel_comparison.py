"""Which image encoder makes the better pixel policy? Same demonstrations, same head, same gradient steps.

The downstream half of VER (arXiv:2510.05213): behaviour cloning (:mod:`.pixel_bc`) on a pixel task from
scripted-expert demonstrations, once per *arm* — an encoder and how it is trained:

- ``cnn``: a small CNN trained end to end (the from-scratch baseline);
- a frozen teacher folder (only the token projection and the head train);
- a VER encoder folder: the frozen expert library, its patch-wise router trained with the head, with or
  without Curriculum Top-K Annealing (the schedule is part of the saved encoder).

Each arm and seed is trained, then evaluated for task success (pooled 95 % Wilson intervals) on layouts it
never saw (new environment seeds) and on the layouts of its first training demonstrations (the
demonstrations' seeds: what the policy fits), and for the action error on held-out demonstrations; VER arms also log the expert-usage entropy over training. Runs go
in parallel on Ray with ``workers > 1`` (:func:`embodia.runner.parallel.map_tasks`); a finished run is never
redone.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.results import Column, Table, interval
from embodia.runner.evaluate import evaluate_policy, wilson_interval
from embodia.runner.parallel import map_tasks, wants_ray


@dataclass
class PixelArm:
    """One encoder under comparison."""

    name: str
    """Short name, also of its run folders, e.g. ``ver-anneal``."""
    encoder: str
    """``cnn``, or a saved encoder folder (:mod:`embodia.perception.encoder_io`)."""
    freeze_encoder: bool = False
    """No gradient into the encoder (teachers); a VER encoder freezes its library itself."""
    label: str = ""
    """Label in the tables (default: the name)."""


@dataclass
class PixelComparisonConfig:
    """The shared budget of every arm."""

    env_id: str
    """The pixel task evaluated, e.g. ``embodia/Visual-CubeSingle-v0``."""
    dataset: str
    """Trajectory store of training demonstrations (``rgb``, ``goal_rgb``, ``action``)."""
    heldout: str
    """Trajectory store of held-out demonstrations (action error)."""
    out: str
    """Folder of the runs and the results."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the evaluation environment (render settings, episode length)."""
    steps: int = 1500
    """Gradient steps of every run."""
    batch_size: int = 64
    """Windows per gradient step."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden sizes of the policy head."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds (the evaluation seeds follow them)."""
    eval_episodes: int = 10
    """Evaluation episodes per run, on unseen layouts and again on training layouts."""
    demo_seed: int = 0
    """The first environment seed of the training demonstrations (``seen`` evaluation: this and the next ones)."""


def run_pixel_comparison(
    arms: list[PixelArm], config: PixelComparisonConfig, workers: int = 1, ray_address: str | None = None
) -> dict[str, Any]:
    """Train and evaluate every arm x seed; writes ``results.json`` into ``out`` and returns the summary."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(arm, seed, config) for arm in arms for seed in config.seeds]
    todo = [job for job in jobs if _finished(_run_dir(*job)) is None]
    if wants_ray(workers, ray_address) and len(todo) > 1:
        map_tasks(train_and_evaluate_arm, todo, workers, ray_address)
    else:
        for job in todo:
            train_and_evaluate_arm(*job)
    rows = []
    for arm in arms:
        runs = [_finished(_run_dir(arm, seed, config)) for seed in config.seeds]
        runs = [r for r in runs if r is not None]
        successes = sum(r["successes"] for r in runs)
        trials = sum(r["episodes"] for r in runs)
        per_seed = [r["success"] for r in runs]
        seen_successes = sum(r["seen_successes"] for r in runs)
        rows.append(
            {
                "arm": arm.name,
                "label": arm.label or arm.name,
                "encoder": arm.encoder,
                "success": successes / max(trials, 1),
                "interval": list(wilson_interval(successes, trials)),
                "per_seed": per_seed,
                "success_sd": float(np.std(per_seed)) if per_seed else float("nan"),
                "seen_success": seen_successes / max(trials, 1),
                "seen_interval": list(wilson_interval(seen_successes, trials)),
                "heldout_mse": float(np.mean([r["heldout_mse"] for r in runs])),
                "heldout_mse_sd": float(np.std([r["heldout_mse"] for r in runs])),
                "trainable_parameters": runs[0]["trainable_parameters"] if runs else 0,
                "encoder_parameters": runs[0]["encoder_parameters"] if runs else 0,
                "ms_per_image": float(np.mean([r["ms_per_image"] for r in runs])),
                "train_seconds": float(np.mean([r["train_seconds"] for r in runs])),
                "usage_entropy": [r.get("usage_entropy", []) for r in runs],
            }
        )
    summary = {"config": asdict(config), "arms": [asdict(a) for a in arms], "rows": rows}
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    return summary


def train_and_evaluate_arm(arm: PixelArm, seed: int, config: PixelComparisonConfig) -> dict[str, Any]:
    """One run: train, evaluate, measure; writes ``eval.json`` in the run folder (a Ray task too)."""
    from embodia.core.policy import load_policy
    from embodia.policies.train import TrainConfig, train

    run = _run_dir(arm, seed, config)
    started = time.perf_counter()
    train(
        TrainConfig(
            method="pixel_bc",
            dataset=config.dataset,
            out=str(run),
            steps=config.steps,
            batch_size=config.batch_size,
            seed=seed,
            eval_every=0,
            eval_episodes=0,
            log_every=max(1, config.steps // 20),
            method_config={
                "encoder": arm.encoder,
                "freeze_encoder": arm.freeze_encoder,
                "hidden": list(config.hidden),
            },
        )
    )
    train_seconds = time.perf_counter() - started
    policy = load_policy(run / "policy")
    scores = evaluate_policy(
        policy,
        config.env_id,
        episodes=config.eval_episodes,
        seeds=[1000 + seed],
        env_kwargs=config.env_kwargs,
    )
    seen = evaluate_policy(
        policy,
        config.env_id,
        episodes=config.eval_episodes,
        seeds=[config.demo_seed],
        seed_stride=1,
        env_kwargs=config.env_kwargs,
    )
    actor = policy.actor
    encoder = actor.observations.encoder
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    row = {
        "arm": arm.name,
        "seed": seed,
        "success": scores.success_rate,
        "successes": int(round(scores.success_rate * scores.episodes)),
        "episodes": scores.episodes,
        "seen_success": seen.success_rate,
        "seen_successes": int(round(seen.success_rate * seen.episodes)),
        "heldout_mse": heldout_action_error(policy, config.heldout),
        "trainable_parameters": _trainable(arm, actor),
        "encoder_parameters": sum(p.numel() for p in encoder.parameters()),
        "ms_per_image": time_per_image(encoder),
        "train_seconds": train_seconds,
        "steps": config.steps,
        "first_loss": records[0]["bc_mse"],
        "last_loss": records[-1]["bc_mse"],
    }
    if "expert_usage_entropy" in records[-1]:
        row["usage_entropy"] = [[r["step"], r["expert_usage_entropy"]] for r in records if "bc_mse" in r]
    (run / "eval.json").write_text(json.dumps(row))
    return row


def heldout_action_error(policy: Any, store_path: str, limit: int = 2000) -> float:
    """Mean squared error between the policy's first action and the demonstrated one on held-out frames."""
    from embodia.data.store import TrajectoryStore

    store = TrajectoryStore(store_path)
    keys = policy.keys
    errors: list[np.ndarray] = []
    count = 0
    for index in range(store.num_episodes):
        data = store.episode(index, keys=[*keys, "action"])
        predicted = policy.act_batch({k: data[k] for k in keys})
        predicted = predicted if predicted.ndim == 2 else predicted[:, 0]
        errors.append(((predicted - data["action"]) ** 2).mean(axis=1))
        count += len(predicted)
        if count >= limit:
            break
    return float(np.concatenate(errors).mean())


def time_per_image(encoder: Any, repeats: int = 20) -> float:
    """Milliseconds per image of the encoder alone (batch of 1, after a warm-up)."""
    import torch

    x = torch.zeros(1, 3, int(encoder.image_size), int(encoder.image_size))
    encoder.eval()
    with torch.no_grad():
        encoder(x)
        started = time.perf_counter()
        for _ in range(repeats):
            encoder(x)
    return (time.perf_counter() - started) / repeats * 1000.0


def _trainable(arm: PixelArm, actor: Any) -> int:
    """Parameters that trained: everything but a frozen encoder (VER: its router only)."""
    encoder = actor.observations.encoder
    if arm.freeze_encoder:
        frozen = sum(p.numel() for p in encoder.parameters())
    elif hasattr(encoder, "trainable_parameters"):
        frozen = sum(p.numel() for p in encoder.parameters()) - sum(
            p.numel() for p in encoder.trainable_parameters()
        )
    else:
        frozen = 0
    return sum(p.numel() for p in actor.parameters()) - frozen


def _run_dir(arm: PixelArm, seed: int, config: PixelComparisonConfig) -> Path:
    return Path(config.out) / "runs" / f"{arm.name}-seed{seed}"


def _finished(run: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run / "eval.json").read_text())
    except (OSError, ValueError):
        return None


def comparison_table(summary: dict[str, Any]) -> Table:
    """The comparison table: success (pooled 95 % Wilson intervals), held-out action error (mean and sd over
    seeds), parameters, time per image; one row per arm."""
    table = Table(
        [
            Column("encoder", "encoder"),
            Column("success", "success, new layouts", ".0%"),
            Column("per_seed", "per seed", ".0%"),
            Column("seen_success", "success, training layouts", ".0%"),
            Column("heldout_mse", "held-out action MSE", ".4f"),
            Column("heldout_mse_sd", "± sd over seeds", ".4f"),
            Column("trainable_parameters", "trained params", ","),
            Column("encoder_parameters", "encoder params", ","),
            Column("ms_per_image", "ms / image", ".2f"),
        ]
    )
    for r in summary["rows"]:
        table.add(
            encoder=r["label"],
            success=interval(r["success"], *r["interval"]),
            per_seed=list(r["per_seed"]),
            seen_success=interval(r["seen_success"], *r["seen_interval"]),
            heldout_mse=r["heldout_mse"],
            heldout_mse_sd=r["heldout_mse_sd"],
            trainable_parameters=r["trainable_parameters"],
            encoder_parameters=r["encoder_parameters"],
            ms_per_image=r["ms_per_image"],
        )
    return table


def markdown(summary: dict[str, Any]) -> str:
    """The comparison table as Markdown, under a line saying the budget."""
    config = summary["config"]
    return (
        f"{config['steps']} gradient steps, batch {config['batch_size']}, {len(config['seeds'])} seeds x "
        f"{config['eval_episodes']} evaluation episodes; 95 % Wilson interval over all episodes.\n\n"
        f"{comparison_table(summary).markdown()}\n"
    )
