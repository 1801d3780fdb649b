"""Tools on the embodied side: an MCP client can list environments, run and record episodes, inspect and
verify trajectory stores, train a policy and evaluate it, end to end.

Every path is an :data:`~embodia.agents.tools.registry.InputPath` or ``OutputPath``: under ``embodia mcp``
it must lie inside the server's workspace. Counts have upper bounds, so that one call cannot occupy the
server for days; long calls (episodes, training, evaluation) report MCP progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from embodia.agents.tools.registry import (
    EnvKwargs,
    InputPath,
    MethodOptions,
    OutputPath,
    Progress,
    name_or_input_path,
    no_progress,
    tool,
)

#: a policy: the environment's scripted expert, uniform random actions, or a trained policy folder
PolicySpec = name_or_input_path("expert", "random")


@dataclass
class ListEnvsArgs:
    """Arguments of ``list_envs``."""

    filter: str = ""
    """Only ids containing this text (case-insensitive)."""


@tool("list_envs")
def list_envs(args: ListEnvsArgs) -> dict:
    """List embodia's simulator environments: id, description, observation and action spaces, episode limit,
    whether it renders and whether it has a scripted expert (read from the shipped catalog: instant)."""
    from embodia.envs import describe, env_ids

    infos = [describe(i) for i in env_ids() if args.filter.lower() in i.lower()]
    return {"environments": [info.__dict__ for info in infos]}


@dataclass
class RunEpisodesArgs:
    """Arguments of ``run_episodes``."""

    env_id: str
    """An environment id from ``list_envs`` (e.g. ``embodia/PointMaze-Medium-v0``)."""
    policy: PolicySpec = "random"
    """``random``, ``expert`` (the environment's scripted expert) or a trained policy folder."""
    episodes: Annotated[int, Field(ge=1, le=1000)] = 1
    """Episodes to run (1-1000); episode i uses seed ``seed + i``."""
    seed: Annotated[int, Field(ge=0, le=2**32 - 1001)] = 0
    """Seed of the first episode."""
    max_steps: Annotated[int, Field(ge=1, le=100_000)] | None = None
    """Cut episodes at this many steps (default: the environment's limit)."""
    env_kwargs: EnvKwargs = field(default_factory=dict)
    """Environment arguments, e.g. ``{"task_id": 2}`` (file arguments, such as a navigation ``dataset``, must
    lie in the workspace)."""
    record: OutputPath | None = None
    """Append the episodes to this trajectory store (``*.zarr``; created if missing)."""


@tool("run_episodes")
def run_episodes(args: RunEpisodesArgs, progress: Progress = no_progress) -> dict:
    """Run seeded episodes of a policy in a simulator, headless; optionally record them to a trajectory store.
    Returns per-episode return, length and success, and the success rate."""
    from embodia.runner import EpisodeHook, rollout

    class Report(EpisodeHook):
        done = 0

        def end(self, env: Any, stats: Any) -> None:
            self.done += 1
            progress(
                self.done,
                args.episodes,
                f"episode {stats.index}: {'success' if stats.success else 'no success'}",
            )

    result = rollout(
        args.env_id,
        args.policy,
        episodes=args.episodes,
        seed=args.seed,
        max_steps=args.max_steps,
        env_kwargs=args.env_kwargs,
        record=args.record,
        hooks=[Report()],
    )
    out = result.to_dict()
    out["record"] = args.record
    return out


@dataclass
class StoreInfoArgs:
    """Arguments of ``store_info``."""

    store: InputPath
    """A trajectory store (``*.zarr`` folder)."""
    verify: bool = False
    """Also read every chunk and check its checksum (the store's metadata is always checked)."""


@tool("store_info")
def store_info(args: StoreInfoArgs) -> dict:
    """Summarise a trajectory store (episodes, steps, keys and shapes, success rate, env ids) after checking
    that its metadata, episode table and arrays agree; with ``verify``, read every chunk (checksums)."""
    from embodia.data.store import TrajectoryStore

    store = TrajectoryStore(args.store, mode="r")
    summary = store.summary()
    if args.verify:
        summary["verified"] = store.verify()
    return summary


@dataclass
class TrainPolicyArgs:
    """Arguments of ``train_policy``."""

    method: str
    """A training method: ``bc``, ``iql``, ``gciql`` or ``deas``."""
    dataset: InputPath
    """The trajectory store to learn from."""
    out: OutputPath
    """Run folder (created): metrics, learning curve, and the trained ``policy/`` folder."""
    steps: Annotated[int, Field(ge=1, le=1_000_000)] = 2000
    """Gradient steps."""
    batch_size: Annotated[int, Field(ge=1, le=4096)] = 256
    """Windows per gradient step."""
    seed: Annotated[int, Field(ge=0)] = 0
    """Seed of networks and sampling."""
    config: MethodOptions = field(default_factory=dict)
    """Method options, e.g. ``{"horizon": 4}`` for DEAS or ``{"chunk": 4}`` for BC (file options, such as a
    pixel policy's ``encoder`` folder, must lie in the workspace)."""
    env_id: str | None = None
    """Evaluate in this environment at the end (and every ``eval_every`` steps)."""
    eval_every: Annotated[int, Field(ge=0)] = 0
    """Evaluate every this many steps (0: only at the end)."""
    eval_episodes: Annotated[int, Field(ge=0, le=1000)] = 10
    """Episodes per evaluation."""


@tool("train_policy")
def train_policy(args: TrainPolicyArgs, progress: Progress = no_progress) -> dict:
    """Train a policy offline (BC, IQL, GCIQL or DEAS) on a trajectory store; returns the final metrics and
    where the policy folder is (usable as ``policy`` in ``run_episodes`` and ``evaluate_policy``)."""
    from embodia.policies.train import TrainConfig, train

    def report(record: dict[str, Any]) -> None:
        if "eval" in record:
            progress(record["step"], args.steps, f"success {record['eval']['success_rate']:.0%}")
        else:
            progress(record["step"], args.steps, None)

    config = TrainConfig(
        method=args.method,
        dataset=args.dataset,
        out=args.out,
        env_id=args.env_id,
        steps=args.steps,
        batch_size=args.batch_size,
        seed=args.seed,
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes if args.env_id else 0,
        log_every=max(1, args.steps // 20),
        method_config=args.config,
    )
    result = train(config, on_log=report)
    return {**result, "policy": f"{args.out}/policy", "run": args.out}


@dataclass
class EvaluatePolicyArgs:
    """Arguments of ``evaluate_policy``."""

    policy: PolicySpec
    """A trained policy folder or run folder (or ``expert`` / ``random``)."""
    env_id: str | None = None
    """Default: the environment the policy was trained for."""
    episodes: Annotated[int, Field(ge=1, le=1000)] = 20
    """Episodes per seed."""
    seeds: list[Annotated[int, Field(ge=0, le=400_000)]] = field(default_factory=lambda: [0])
    """Evaluation seeds; seed s runs episodes with seeds ``s * 10000 + i``."""


@tool("evaluate_policy")
def evaluate_policy(args: EvaluatePolicyArgs, progress: Progress = no_progress) -> dict:
    """Evaluate a policy: success rate with a 95 % Wilson interval, mean return and length, per seed."""
    from embodia.runner.evaluate import evaluate_policy as evaluate

    total = args.episodes * len(args.seeds)
    progress(0, total, "evaluating")
    result = evaluate(args.policy, args.env_id, episodes=args.episodes, seeds=args.seeds)
    progress(total, total, f"success {result.success_rate:.0%}")
    out = result.to_dict()
    out.pop("episode_stats")
    return out
