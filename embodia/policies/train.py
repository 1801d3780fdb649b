"""Train an offline-RL method on a trajectory store, evaluating it in simulation as it learns.

A run directory holds::

    run/
      train_config.json    what was run (method, dataset, env, steps, seed, method config)
      metrics.jsonl        one JSON line per log interval (losses, values) and per evaluation, of this
                           run only (a run into an existing folder replaces the file, as its config)
      learning_curve.png   losses and evaluation success against gradient steps
      policy/              the latest checkpoint: config.json + model.safetensors (embodia.load_policy)
      agent.safetensors    every network of the learner (critics, values, target critics, actor)

The policy folder is rewritten at every evaluation and when training stops for any reason, Ctrl-C
included, so an interrupted run keeps its last policy.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import BeforeValidator, Field
from safetensors.torch import save_file

from embodia.core.errors import EmbodiaError
from embodia.core.validation import validate
from embodia.data.sampling import WindowSampler
from embodia.data.store import TrajectoryStore
from embodia.policies.actor_policy import save_actor_policy
from embodia.policies.learner import Learner, learner_classes, learner_names
from embodia.runner.datasets import dataset_environment
from embodia.runner.evaluate import evaluate_policy


def _fspath(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


#: a file or folder path, given as a string or a ``pathlib.Path`` (stored as a string)
PathStr = Annotated[str, BeforeValidator(_fspath), Field(min_length=1)]


@dataclass
class TrainConfig:
    """One training run."""

    method: str
    """A registered method (``embodia.policies.learner.learner_names()``: act, bc, deas, diffusion_policy, flow_bc, fql, gciql,
    iql, pixel_bc)."""
    dataset: PathStr
    """Path of the trajectory store to learn from."""
    out: PathStr
    """Run directory (created)."""
    env_id: str | None = None
    """Environment for periodic evaluation (None: no evaluation). The policy folder records it; without it,
    the environment the dataset's episodes come from (when they all share one)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Arguments of the evaluation environment (e.g. {"task_id": 2})."""
    steps: Annotated[int, Field(ge=1)] = 10_000
    """Gradient steps (>= 1)."""
    batch_size: Annotated[int, Field(ge=1)] = 256
    """Windows per gradient step (>= 1)."""
    seed: Annotated[int, Field(ge=0)] = 0
    """Seed of networks, sampling and evaluation (>= 0)."""
    eval_every: Annotated[int, Field(ge=0)] = 2_000
    """Evaluate (and checkpoint) every this many steps (0: only at the end)."""
    eval_episodes: Annotated[int, Field(ge=0)] = 10
    """Episodes per evaluation (0: no evaluation)."""
    log_every: Annotated[int, Field(ge=1)] = 250
    """Write a metrics line every this many steps (>= 1)."""
    method_config: dict[str, Any] = field(default_factory=dict)
    """Overrides of the method's config dataclass (e.g. {"horizon": 8}); validated by
    :func:`method_config_for` (JSON lists become tuples)."""

    def __post_init__(self) -> None:
        if self.method not in learner_names():
            raise ValueError(f"unknown method {self.method!r}; choose one of {', '.join(learner_names())}")


def check_train_config(config: TrainConfig | dict[str, Any]) -> TrainConfig:
    """``config`` with every field checked (types, ranges, no NaN / inf, no unknown fields).

    Raises:
        ConfigError: one line naming every invalid field, e.g. ``train config: steps: Input should be
            greater than or equal to 1 (got 0)``.
    """
    return validate(TrainConfig, config, where="train config")


def method_config_for(method: str, options: dict[str, Any]) -> Any:
    """The validated config dataclass of ``method`` with ``options`` (e.g. parsed from ``--config``) applied.

    Raises:
        ConfigError: e.g. ``deas config: horizon: Input should be greater than or equal to 1 (got 0)``.
    """
    return validate(learner_classes(method)[1], options, where=f"{method} config")


def build_learner(config: TrainConfig, sampler_source: TrajectoryStore) -> tuple[Learner, WindowSampler]:
    """The learner and the window sampler it trains from.

    Raises:
        ConfigError: an invalid training or method config.
        EmbodiaError: the store lacks what the method learns from (``state``; ``reward`` for methods
            whose learner class sets ``needs_reward``).
    """
    config = check_train_config(config)
    learner_cls, _ = learner_classes(config.method)
    method_config = method_config_for(config.method, config.method_config)
    store = str(sampler_source.path)
    if learner_cls.needs_reward and "reward" not in sampler_source.keys:
        raise EmbodiaError(
            f"store {store!r} has no 'reward' key: {config.method} learns from rewards; "
            "record with rewards or use bc"
        )
    obs_keys = learner_cls.observation_keys(method_config)
    missing = [k for k in obs_keys if k not in sampler_source.keys]
    if missing:
        raise EmbodiaError(
            f"store {store!r} has no {', '.join(repr(k) for k in missing)} observations to learn from "
            f"(it holds {', '.join(sorted(sampler_source.obs_keys))})"
        )
    sampler = WindowSampler(
        sampler_source, horizon=learner_cls.window_for(method_config), obs_keys=obs_keys, seed=config.seed
    )
    normalizer = learner_cls.fit_normalizer_for(method_config, sampler)
    rewards = sampler.reward
    reward_range = (float(rewards.min()), float(rewards.max())) if len(rewards) else (0.0, 1.0)
    action_dim = int(np.prod(sampler.arrays["action"].shape[1:]))
    learner = learner_cls(method_config, normalizer, action_dim, reward_range, seed=config.seed)
    return learner, sampler


def export_policy(learner: Learner, folder: Path, meta: dict[str, Any]) -> Any:
    """Write the learner's policy folder and load it back (a learner with ``export`` writes its own format)."""
    if hasattr(learner, "export"):
        return learner.export(folder, meta)
    cfg = learner.config
    save_actor_policy(
        folder,
        learner.actor,
        learner.normalizer,
        hidden=tuple(cfg.hidden),
        execute_steps=getattr(cfg, "execute_steps", None),
        meta=meta,
    )
    from embodia.policies.actor_policy import load_actor_policy

    return load_actor_policy(folder, "torch")


def train(
    config: TrainConfig,
    progress: bool = False,
    on_log: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run ``config``; returns the final metrics (with ``interrupted`` if stopped by Ctrl-C).

    ``progress`` shows a progress bar; ``on_log`` receives every line written to ``metrics.jsonl`` (the
    agent tool forwards them as MCP progress).
    """
    # Small MLPs on a 2-core machine: one intra-op thread is faster than two fighting the simulator.
    torch.set_num_threads(int(os.environ.get("EMBODIA_TORCH_THREADS", "1")))
    config = check_train_config(config)
    method_config_for(config.method, config.method_config)  # a bad --config is named before the store is read
    store = TrajectoryStore(config.dataset)
    learner, sampler = build_learner(config, store)  # every refusal comes before the run directory exists
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_config.json").write_text(
        json.dumps(
            {**dataclasses.asdict(config), "resolved": dataclasses.asdict(learner.config)},
            indent=2,
            default=str,
        )
    )
    env_id, env_kwargs = config.env_id, config.env_kwargs
    if env_id is None:  # the policy folder still says what it was trained for: eval and deploy need it
        env_id, env_kwargs = dataset_environment(store)
    meta = {"method": config.method, "env_id": env_id, "env_kwargs": env_kwargs, "dataset": config.dataset}
    metrics_file = (out / "metrics.jsonl").open("w")  # this run's lines, as train_config.json is this run's
    history: list[dict[str, Any]] = []
    last: dict[str, Any] = {}
    step, started, interrupted = 0, time.perf_counter(), False

    def log(record: dict[str, Any]) -> None:
        history.append(record)
        metrics_file.write(json.dumps(record) + "\n")
        metrics_file.flush()
        if on_log is not None:
            on_log(record)

    def checkpoint_and_eval() -> None:
        policy = export_policy(learner, out / "policy", {**meta, "step": step})
        save_file(
            {
                f"{name}.{k}": v.contiguous()
                for name, m in learner.modules().items()
                for k, v in m.state_dict().items()
            },
            str(out / "agent.safetensors"),
        )
        if config.env_id and config.eval_episodes > 0:
            result = evaluate_policy(
                policy,
                config.env_id,
                episodes=config.eval_episodes,
                seeds=[100_000 + config.seed * 1000],  # never the seeds of the final evaluations
                seed_stride=1,
                env_kwargs=config.env_kwargs,
            )
            scores = {k: getattr(result, k) for k in ("success_rate", "mean_return", "mean_length")}
            record = {"step": step, "eval": scores, "time": time.perf_counter() - started}
            log(record)
            last.update(record)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, disable=not progress) as bar:
            task = bar.add_task(
                f"{config.method} on {Path(config.dataset).name}", total=config.steps, status=""
            )
            running: dict[str, list[float]] = {}
            while step < config.steps:
                metrics = learner.update(learner.sample(sampler, config.batch_size))
                step += 1
                for key, value in metrics.items():
                    running.setdefault(key, []).append(value)
                if step % config.log_every == 0 or step == config.steps:
                    record = {
                        "step": step,
                        **{k: float(np.mean(v)) for k, v in running.items()},
                        "time": time.perf_counter() - started,
                    }
                    log(record)
                    running = {}
                    bar.update(
                        task,
                        completed=step,
                        status=" ".join(f"{k}={record[k]:.3g}" for k in list(metrics)[:2]),
                    )
                if config.eval_every and step % config.eval_every == 0 and step < config.steps:
                    checkpoint_and_eval()
                    if "eval" in last:
                        bar.update(task, status=f"success {last['eval']['success_rate']:.0%}")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        checkpoint_and_eval()
        metrics_file.close()
        plot_learning_curve(
            history, out / "learning_curve.png", title=f"{config.method} | {Path(config.dataset).name}"
        )
    return {
        "step": step,
        "interrupted": interrupted,
        "steps_per_second": step / max(time.perf_counter() - started, 1e-9),
        **last,
    }


def plot_learning_curve(history: list[dict[str, Any]], path: Path, title: str = "") -> None:
    """Losses (left) and evaluation success (right) against gradient steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train_rows = [r for r in history if "eval" not in r]
    eval_rows = [r for r in history if "eval" in r]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    # every logged loss, whichever learner wrote the history (``*_loss``, ``*_mse``)
    losses = dict.fromkeys(k for r in train_rows for k in r if k.endswith(("_loss", "_mse")))
    for key in losses:
        points = [(r["step"], r[key]) for r in train_rows if key in r]
        if points:
            left.plot(*zip(*points), label=key)
    left.set_xlabel("gradient step")
    left.set_yscale("symlog", linthresh=1e-2)
    left.legend(fontsize=8)
    left.set_title("training losses")
    if eval_rows:
        right.plot([r["step"] for r in eval_rows], [r["eval"]["success_rate"] for r in eval_rows], marker="o")
    right.set_ylim(-0.02, 1.02)
    right.set_xlabel("gradient step")
    right.set_title("evaluation success rate")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
