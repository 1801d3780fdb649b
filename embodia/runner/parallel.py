"""Episodes and runs in parallel on Ray: all local cores with no set-up, or an existing Ray cluster.

``rollout(..., workers=N)`` (and every command with ``--workers N`` / ``--ray-address ADDR``) comes here:

- **Tasks**: one Ray task per episode. A worker process keeps its environment and policy between tasks
  (built on first use), resets both with the episode's seed exactly as the serial runner does, runs the
  episode with :func:`embodia.runner.run_episode` and returns its statistics and, when recording, the
  whole episode (arrays and episode-table row). An episode is a pure function of its seed, so where it runs
  does not matter.
- **One writer**: only this process (the driver) writes the store. Finished episodes are committed in
  episode order: an episode waits until all earlier ones are in, so a completed run's store equals the
  serial run's, episode for episode and bit for bit.
- **Faults**: a worker process killed mid-episode (or a node that leaves the cluster) loses nothing: Ray
  reruns its task elsewhere (``max_retries``); a partial episode never leaves a worker, and results are
  keyed by episode index, so a rerun can never duplicate one. Ctrl-C cancels what is still running and
  commits every finished episode (in order; episodes that did not finish leave a gap, not a partial row).
- **Limits**: at most ``2 x workers`` episodes are in flight, so the driver holds few results in memory.
  What bounds a cluster is the single writer: see docs/guides/scaling-out.md.

Ray is optional (``pip install 'embodia[ray]'``); with ``workers=1`` and no address it is never imported.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embodia.core.errors import EmbodiaError
from embodia.core.extras import missing_extra
from embodia.core.interrupts import interrupt_flag
from embodia.core.policy import Policy
from embodia.data.recorder import EpisodeBuffer, EpisodeRecorder, EpisodeTransform, control_fps
from embodia.data.store import TrajectoryStore
from embodia.runner.hooks import EpisodeHook, EpisodeStats, Step
from embodia.runner.ray_reaper import start_reaper, stop_reaper

#: a worker reruns a task whose process died this many times before the run fails
MAX_RETRIES = 4


def wants_ray(workers: int, address: str | None) -> bool:
    """Whether a run goes through Ray: more than one worker, or a cluster address given."""
    return workers > 1 or bool(address)


@contextlib.contextmanager
def ray_session(workers: int, address: str | None = None) -> Iterator[Any]:
    """Connect to ``address`` (or ``$RAY_ADDRESS``), or start a local Ray instance with ``workers`` CPUs.

    A session that is already running (a caller's, or a test's) is used as it is and left running. While the
    session lasts, what Ray prints (a worker that died, a task that is retried) goes to stderr, so that a
    command's result on stdout (``--json``) stays clean.

    Raises:
        MissingExtraError: Ray is not installed (``pip install 'embodia[ray]'``).
        EmbodiaError: the cluster at ``address`` cannot be reached.
    """
    try:
        import ray
    except ModuleNotFoundError as error:
        raise (missing_extra(error) or error) from None
    if ray.is_initialized():
        with contextlib.redirect_stdout(sys.stderr):
            yield ray
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    reaper = None
    try:
        if address:  # someone else's cluster: it outlives this command
            ray.init(address=address, **options)
        else:  # ours: its processes must not outlive this command, even a SIGKILLed one (ray_reaper.py)
            _start_local_ray(ray, workers, options)
            reaper = start_reaper()
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise EmbodiaError(
            f"cannot connect to the Ray cluster at {address!r}: {error}; start one with `ray start --head` "
            "or drop --ray-address to use this machine's cores"
        ) from None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield ray
    finally:
        ray.shutdown()
        stop_reaper(reaper)


#: how many times a local Ray instance is started before a run gives up (see :func:`_start_local_ray`)
LOCAL_START_ATTEMPTS = 3


def _start_local_ray(ray: Any, workers: int, options: dict[str, Any]) -> None:
    """Start a local Ray instance, again (up to ``LOCAL_START_ATTEMPTS`` times) when its raylet misses
    Ray's fixed 30 s registration window, which a machine under heavy load can make it miss.

    Raises:
        EmbodiaError: every attempt timed out.
    """
    for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
        try:
            # Ray runs its workers at niceness 15 (RayConfig worker_niceness): beside any busy process they
            # got a few per cent of a core, and a one-worker run took minutes instead of seconds to start.
            # Here the workers are the job's own work, as Ray's job manager has it for the jobs it starts:
            # they run at the caller's priority
            ray.init(
                num_cpus=workers, include_dashboard=False, _system_config={"worker_niceness": 0}, **options
            )
            return
        except Exception as error:  # Ray raises a bare Exception for this one
            if "timed out during startup" not in str(error):
                raise
            ray.shutdown()
            if attempt == LOCAL_START_ATTEMPTS:
                raise EmbodiaError(
                    f"a local Ray instance did not start in {LOCAL_START_ATTEMPTS} attempts (its raylet missed "
                    "Ray's 30 s start-up window: the machine is overloaded); retry when it is less busy, or "
                    "run without Ray (--workers 1)"
                ) from None
            print(f"Ray did not start in time (attempt {attempt}); starting it again", file=sys.stderr)


# ---------------------------------------------------------------------- inside a worker
@dataclass(frozen=True)
class EpisodeTask:
    """Everything a worker needs to run one episode."""

    index: int
    seed: int
    env_id: str
    env_kwargs: dict[str, Any]
    policy: Any
    """``"random"``, ``"expert"``, a policy folder, a policy object, or a factory ``(env) -> Policy``."""
    max_steps: int | None
    record: bool
    record_sim_state: bool
    transform: EpisodeTransform | None
    hooks: tuple[EpisodeHook, ...]


@dataclass
class EpisodeOutcome:
    """What a worker sends back: the statistics, the episode when recording, who ran it and how long."""

    index: int
    stats: EpisodeStats
    episode: tuple[dict[str, Any], dict[str, Any]] | None
    worker: str
    seconds: float


class _Collect(EpisodeHook):
    """The recording hook of a worker: the episode goes back to the driver, not into a store."""

    def __init__(self, buffer: EpisodeBuffer, record_sim_state: bool) -> None:
        self.buffer = buffer
        self.wants_state = record_sim_state
        self.episode: tuple[dict[str, Any], dict[str, Any]] | None = None

    def begin(self, env: Any, seed: int, obs: Any, info: dict[str, Any]) -> None:
        self.buffer.begin_episode(seed, _state(env), fps=control_fps(env))

    def step(self, env: Any, step: Step) -> None:
        success = bool(step.info.get("success", False))
        self.buffer.add_step(
            step.obs, step.action, step.reward, step.terminated, step.truncated, success, step.state
        )

    def end(self, env: Any, stats: EpisodeStats) -> None:
        self.episode = self.buffer.finish_episode(_state(env), success=stats.success)

    def abort(self, env: Any) -> None:
        self.buffer.discard_episode()


def _node_suffix() -> str:
    """`` node abc123`` inside a Ray worker (which node of the cluster ran the task), else ``""``."""
    try:
        import ray

        return f" node {ray.get_runtime_context().get_node_id()[:6]}" if ray.is_initialized() else ""
    except ModuleNotFoundError:
        return ""


def _state(env: Any) -> Any:
    from embodia.core.env import supports_state

    return env.unwrapped.get_state() if supports_state(env) else None


#: per worker process: environments and policies built once, reused by later tasks
_ENVS: dict[str, Any] = {}
_POLICIES: dict[str, Any] = {}


def run_task(task: EpisodeTask, policy: Any = None) -> EpisodeOutcome:
    """Run one episode (called in a Ray worker; also usable in-process). ``policy`` overrides ``task.policy``
    (Ray passes a shared policy object this way, once per worker rather than once per task)."""
    import json

    from embodia.core.policy import make_policy
    from embodia.envs import make
    from embodia.runner.episodes import run_episode

    started = time.perf_counter()
    env_key = json.dumps([task.env_id, task.env_kwargs], sort_keys=True, default=str)
    env = _ENVS.get(env_key)
    if env is None:
        env = _ENVS[env_key] = make(task.env_id, **task.env_kwargs)
    spec = task.policy if policy is None else policy
    policy_key = f"{env_key}|{spec!r}" if isinstance(spec, str) else f"{env_key}|{id(spec)}"
    policy = _POLICIES.get(policy_key)
    if policy is None:
        policy = _POLICIES[policy_key] = make_policy(spec, env)
    collect = None
    hooks = list(task.hooks)
    if task.record:
        collect = _Collect(EpisodeBuffer(task.env_id, task.env_kwargs, task.transform), task.record_sim_state)
        hooks.append(collect)
    stats = run_episode(env, policy, task.seed, hooks=hooks, max_steps=task.max_steps, index=task.index)
    worker = f"{socket.gethostname()}:{os.getpid()}{_node_suffix()}"
    return EpisodeOutcome(
        task.index, stats, collect.episode if collect else None, worker, time.perf_counter() - started
    )


# ---------------------------------------------------------------------- the driver
@dataclass
class ParallelRun:
    """A parallel rollout's episodes (in index order) and how the workers shared them."""

    episodes: list[EpisodeStats]
    workers: dict[str, dict[str, float]]
    interrupted: bool
    seconds: float


def run_parallel(
    env_id: str,
    policy: str | Path | Policy | Callable[[Any], Policy],
    *,
    episodes: int,
    seed: int,
    workers: int,
    address: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_steps: int | None = None,
    store: TrajectoryStore | None = None,
    record_sim_state: bool = False,
    commit_every: float = 2.0,
    transform: EpisodeTransform | None = None,
    hooks: Sequence[EpisodeHook] = (),
    on_episode: Callable[[EpisodeStats], None] | None = None,
) -> ParallelRun:
    """Run episodes ``seed .. seed + episodes - 1`` on Ray; record them into ``store`` (this process writes).

    Metric hooks run in the workers (each gets its own copy), so they must be picklable; their values come
    back in :attr:`EpisodeStats.metrics`.
    """
    env_kwargs = dict(env_kwargs or {})
    recorder = EpisodeRecorder(store, env_id, env_kwargs, commit_every) if store is not None else None
    with ray_session(workers, address) as ray:
        remote = ray.remote(run_task).options(max_retries=MAX_RETRIES, retry_exceptions=False, num_cpus=1)
        by_name = isinstance(policy, str | Path)
        shared = None if by_name else ray.put(policy)  # one copy in the object store, not one per task
        base = store.num_episodes if store is not None else 0
        tasks = [
            EpisodeTask(
                i,
                seed + i,
                env_id,
                env_kwargs,
                str(policy) if by_name else None,
                max_steps,
                store is not None,
                record_sim_state,
                transform,
                tuple(hooks),
            )
            for i in range(episodes)
        ]
        in_flight = max(2, 2 * int(ray.cluster_resources().get("CPU", workers)))
        started = time.perf_counter()
        done: dict[int, EpisodeOutcome] = {}
        committed = 0
        pending: dict[Any, int] = {}
        queue = iter(tasks)
        # Ctrl-C only sets a flag here (on the main thread), so it can never land between handing an
        # episode to the recorder and counting it, or inside a store write: the loop stops at the next wait
        with interrupt_flag() as stop:
            try:
                for task in queue:
                    pending[remote.remote(task, shared)] = task.index
                    if len(pending) >= in_flight:
                        break
                while pending and not stop.requested:
                    ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_SECONDS)
                    if not ready:
                        continue
                    ref = ready[0]
                    index = pending.pop(ref)
                    outcome = _result(ray, ref)
                    if index not in done:  # a retried task can never count twice
                        done[index] = outcome
                        if on_episode is not None:
                            on_episode(outcome.stats)
                    committed = _commit_in_order(recorder, done, committed)
                    if not stop.requested:
                        for task in queue:
                            pending[remote.remote(task, shared)] = task.index
                            break
            except KeyboardInterrupt:  # off the main thread, or a second Ctrl-C while stopping
                stop.requested = True
                raise
            finally:
                if stop.requested:
                    _cancel(ray, list(pending))
                if recorder is not None:
                    # every finished episode is kept: in order, past any gap a cancelled episode left
                    for index in sorted(i for i in done if i >= committed):
                        if done[index].episode is not None:
                            recorder.add_finished(done[index].episode)
                    recorder.flush()
        interrupted = stop.requested
    ordered = [done[i] for i in sorted(done)]
    recorded = [o for o in ordered if o.episode is not None]
    for offset, outcome in enumerate(recorded):  # committed in index order, after what the store held
        outcome.stats.store_index = base + offset
    summary: dict[str, dict[str, float]] = {}
    for outcome in ordered:
        row = summary.setdefault(outcome.worker, {"episodes": 0, "steps": 0, "seconds": 0.0})
        row["episodes"] += 1
        row["steps"] += outcome.stats.length
        row["seconds"] += outcome.seconds
    return ParallelRun([o.stats for o in ordered], summary, interrupted, time.perf_counter() - started)


_POLL_SECONDS = 0.2
"""How often the driver looks at the Ctrl-C flag while it waits for an episode."""


def _result(ray: Any, ref: Any) -> EpisodeOutcome:
    """A task's outcome; an error the episode raised (a user error) is raised as itself, not wrapped."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        cause = getattr(error, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise


def _commit_in_order(
    recorder: EpisodeRecorder | None, done: dict[int, EpisodeOutcome], committed: int
) -> int:
    """Hand every episode whose predecessors are all in to the recorder; returns the next index to commit."""
    while committed in done:
        if recorder is not None and done[committed].episode is not None:
            recorder.add_finished(done[committed].episode)
        committed += 1
    return committed


def _cancel(ray: Any, refs: list) -> None:
    """Cancel the tasks of ``refs`` that have not finished. Not ``force=True``: killing a worker whose reply
    is already on its way trips a fatal check in Ray's task manager (seen with Ray 2.60: "Tried to complete
    task that was not pending", the driver dies with status 1); a plain cancel raises KeyboardInterrupt in
    the task, which ends at its next Python instruction (an episode step)."""
    if not refs:
        return
    _, running = ray.wait(refs, num_returns=len(refs), timeout=0)
    for ref in running:
        ray.cancel(ref)


def map_tasks(
    function: Callable[..., Any],
    arguments: Sequence[tuple[Any, ...]],
    workers: int,
    address: str | None = None,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``[function(*args) for args in arguments]`` on Ray, one core each; results in the arguments' order.

    For independent runs (training sweeps, comparisons): a task whose worker died is rerun, a task that
    raised re-raises its error here (Ctrl-C cancels what is still running and raises KeyboardInterrupt).
    ``function`` must be importable by the workers (a module-level function).
    """
    results: dict[int, Any] = {}
    with ray_session(workers, address) as ray:
        remote = ray.remote(function).options(max_retries=MAX_RETRIES, retry_exceptions=False, num_cpus=1)
        pending = {remote.remote(*args): i for i, args in enumerate(arguments)}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ready[0])
                results[index] = _result(ray, ready[0])
                if on_result is not None:
                    on_result(index, results[index])
        except BaseException:
            _cancel(ray, list(pending))
            raise
    return [results[i] for i in range(len(arguments))]
