"""Vectorised episodes: several environments of one id stepped together, one batched policy call per step.

:func:`run_vector_episodes` runs exactly the episodes ``seeds`` (episode ``i`` reset with ``seeds[i]``) on a
gymnasium vector environment (``gymnasium.make_vec``, ``"sync"``: all environments in this process, one
after the other; ``"async"``: one process each) of ``num_envs`` environments. Each step asks the policy
once for the observations of every environment whose action chunk is used up (``act_batch``, a
:class:`~embodia.core.policy.BatchPolicy`: one forward pass), or, for a policy without ``act_batch``, once
per such environment (``act``).

Autoreset and seeding. gymnasium 1.x resets a finished sub-environment by itself on the *next* step
(``AutoresetMode.NEXT_STEP``) or within the same step (``SAME_STEP``), in both cases without a seed, so the
next episode could not be the serial runner's. The vector environment is therefore made with
``AutoresetMode.DISABLED``: after a step in which some episodes ended (terminated, truncated, or cut at
``max_steps``), those environments are reset explicitly with ``reset(seed=[...], options={"reset_mask":
mask})``, each with the next seed of the list, in environment order. An environment for which no seed is
left is *parked*: every sub-environment is wrapped in :class:`ParkingWrapper`, which, reset with the option
``{PARK_OPTION: True}``, stops stepping its simulator and returns its last observation (a vector
environment steps all of its environments every step; a parked one costs a method call, not a physics
step). A finished environment is thus never stepped before its seeded reset, and every episode is a pure
function of its seed: its return, length, success, observations and actions equal the serial runner's
(:func:`embodia.runner.rollout`), bit for bit with per-environment ``act`` (``batch=False``, or a policy
without ``act_batch``), and up to float32 rounding of the batched forward pass with ``act_batch`` (BLAS sums
in another order for another batch size: ~1e-7 on the actions of a 2x256 MLP). Results do not depend on
``mode``; with ``act_batch`` they may depend on ``num_envs`` in the last bits, never otherwise.

Policies. One policy object is shared by all environments and reset with each episode's seed when it
starts (as the serial runner does), so it must act on each observation alone: true of the trained policies
(``ActorPolicy``, ``OnnxActorPolicy``, ``LinearPolicy``). A stateful policy (one that remembers between
calls, or seeds itself in ``reset``) is given as a list of ``num_envs`` policies, one per environment;
a policy folder whose policy is stateful (:func:`~embodia.core.policy.is_stateful`: ACT's temporal
ensembling, Diffusion Policy's observation history) is loaded once per environment; a policy that is asked
only when its chunk is used up gets the other steps' observations through its ``observe`` (as the chunk
runner gives them); ``"random"`` makes such a list, ``"expert"`` too in ``"sync"`` mode (an expert reads its environment object,
which lives in another process in ``"async"`` mode).

Recording. Episodes are recorded (``record=``) or returned as arrays (``keep_episodes=True``:
:attr:`VectorResult.trajectories`, what :meth:`~embodia.data.store.TrajectoryStore.add_episodes` takes) in
seed order: an episode that finishes before an earlier one waits for it. The arrays are those the serial
recording hook writes, states included (read from the environments with ``call("get_state")``, one call
per step in which an episode ends, or per step with ``record_sim_state``). Hooks (video, metric hooks)
are not run: they need the environment object, which ``"async"`` mode does not have.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from embodia.core.errors import ActionError, EmbodiaError, PolicyError
from embodia.core.policy import (
    Policy,
    RandomPolicy,
    is_stateful,
    load_policy,
    make_policy,
    supports_batch,
)
from embodia.core.seeds import check_seeds
from embodia.data.recorder import EpisodeBuffer, EpisodeRecorder, EpisodeTransform, control_fps
from embodia.data.store import TrajectoryStore
from embodia.envs import resolve_id
from embodia.runner.episodes import RolloutResult
from embodia.runner.hooks import EpisodeStats

#: vectorization modes of ``gymnasium.make_vec`` this runner uses
MODES = ("sync", "async")
#: the reset option that parks a :class:`ParkingWrapper`
PARK_OPTION = "embodia_park"

#: one recorded episode: its arrays and its episode-table row
Episode = tuple[dict[str, np.ndarray], dict[str, Any]]
#: what receives finished episodes (statistics, and arrays when kept), in seed order
Commit = Callable[[tuple[EpisodeStats, Episode | None]], None]


class ParkingWrapper(gymnasium.Wrapper):
    """Lets a vector environment leave a sub-environment idle: ``reset(options={PARK_OPTION: True})``.

    A parked environment does not step its simulator: ``step`` returns its last observation, reward 0, not
    terminated or truncated, and an empty info, until the next ordinary reset. Other reset options go to the
    environment unchanged (``None`` when there are none, as in a plain ``reset(seed=...)``).
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.parked = False
        self._obs: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if options and options.get(PARK_OPTION):
            self.parked = True
            return self._obs, {}
        self.parked = False
        rest = {k: v for k, v in (options or {}).items() if k != PARK_OPTION} or None
        obs, info = self.env.reset(seed=seed, options=rest)
        self._obs = obs
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.parked:
            return self._obs, 0.0, False, False, {}
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._obs = obs
        return obs, reward, terminated, truncated, info


@dataclass
class VectorResult(RolloutResult):
    """A :class:`~embodia.runner.RolloutResult` (episodes in seed order) and how the run was vectorised."""

    num_envs: int = 1
    mode: str = "sync"
    batched: bool = False
    """Whether the policy was asked with ``act_batch`` (one call per step) rather than ``act`` per env."""
    policy_calls: int = 0
    """``act_batch`` calls (batched) or ``act`` calls (not batched)."""
    trajectories: list[Episode] = field(default_factory=list)
    """With ``keep_episodes``: each finished episode's ``(arrays, table row)``, in seed order."""

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "num_envs": self.num_envs,
            "mode": self.mode,
            "batched": self.batched,
            "policy_calls": self.policy_calls,
        }


class _Slot:
    """One sub-environment: the episode it runs, its action-chunk cursor and its running statistics.

    The cursor follows :class:`embodia.core.chunks.ActionChunker`: an output with one more dimension than
    an action is a chunk, run one action per step; the policy is asked again when the chunk is used up or
    after its ``execute_steps`` actions.
    """

    __slots__ = (
        "action_ndim",
        "buffer",
        "chunk",
        "cursor",
        "episode",
        "limit",
        "policy",
        "seed",
        "steps",
        "success",
        "total",
    )

    def __init__(self, policy: Policy, action_ndim: int, buffer: EpisodeBuffer | None) -> None:
        self.policy = policy
        self.action_ndim = action_ndim
        self.buffer = buffer
        self.episode: int | None = None
        self.seed = -1
        self.chunk: np.ndarray | None = None
        self.cursor = self.limit = self.steps = 0
        self.total = 0.0
        self.success = False

    def begin(self, episode: int, seed: int, initial_state: np.ndarray | None) -> None:
        self.episode, self.seed = episode, seed
        self.chunk, self.cursor, self.limit = None, 0, 0
        self.total, self.steps, self.success = 0.0, 0, False
        self.policy.reset(seed=seed)
        if self.buffer is not None:
            self.buffer.begin_episode(seed, initial_state)

    def needs_action(self) -> bool:
        return self.chunk is None or self.cursor >= self.limit

    def load(self, out: np.ndarray) -> None:
        """Take the policy's output for this environment (one action or a chunk)."""
        if out.ndim == self.action_ndim + 1:
            if len(out) == 0:
                raise ActionError("the policy returned an empty action chunk (0 actions)")
            self.chunk = out
        else:
            self.chunk = out[None]
        self.cursor, self.limit = 0, len(self.chunk)
        steps = getattr(self.policy, "execute_steps", None)
        if steps is not None:
            self.limit = min(self.limit, int(steps))

    def next_action(self) -> np.ndarray:
        assert self.chunk is not None
        action = self.chunk[self.cursor]
        self.cursor += 1
        return action


def run_vector_episodes(
    env: str,
    policy: str | Policy | Sequence[Policy],
    seeds: Sequence[int],
    *,
    num_envs: int = 4,
    mode: str = "sync",
    max_steps: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    batch: bool = True,
    record: str | Path | TrajectoryStore | None = None,
    record_sim_state: bool = False,
    commit_every: float = 2.0,
    keep_episodes: bool = False,
    transform: EpisodeTransform | None = None,
    on_episode: Callable[[EpisodeStats], None] | None = None,
) -> VectorResult:
    """Run the episodes ``seeds`` on ``num_envs`` environments stepped together (see the module docstring).

    Args:
        env: an environment id (the environments are made here, with ``env_kwargs``, and closed at the end).
        policy: a policy object (shared: see the module docstring), a list of ``num_envs`` policies (one per
            environment), a policy folder, ``"random"``, or ``"expert"`` (``"sync"`` only).
        seeds: episode ``i`` is reset with ``seeds[i]``; the result lists the episodes in this order.
        num_envs: environments stepped together (at most ``len(seeds)`` are made).
        mode: ``"sync"`` (one process) or ``"async"`` (a process per environment).
        max_steps: cut episodes at this many steps (on top of the environment's own time limit).
        batch: ask a policy that has ``act_batch`` once per step for all environments; False asks ``act``
            per environment (bit-for-bit the serial runner's actions).
        record: a store path (opened for appending) or store; episodes are committed in seed order, in
            batches at most ``commit_every`` seconds apart, and all finished ones when the run stops.
        record_sim_state: also record the simulator state before every step (one ``get_state`` call
            to every environment per step).
        keep_episodes: return every episode's arrays in :attr:`VectorResult.trajectories`.
        transform: applied to every recorded episode's arrays before they are stored.
        on_episode: called with each finished episode's statistics, in seed order (a progress bar).

    Ctrl-C stops the run after committing the episodes already finished (in seed order; an unfinished
    episode leaves a gap); the result says ``interrupted``.

    Raises:
        EmbodiaError: no seeds, a seed outside NumPy's range, a bad ``num_envs``, ``mode`` or ``max_steps``.
        PolicyError: the policy cannot run vectorised (``"expert"`` in ``"async"`` mode, a list of the wrong
            length) or its ``act_batch`` output does not have one row per environment asked.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise EmbodiaError("seeds must name at least one episode")
    for seed in seeds:
        check_seeds(seed)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise EmbodiaError(f"num_envs must be a positive integer, got {num_envs!r}")
    if mode not in MODES:
        raise EmbodiaError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if max_steps is not None and max_steps < 1:
        raise EmbodiaError(f"max_steps must be at least 1, got {max_steps}")
    env_id = resolve_id(env)
    env_kwargs = dict(env_kwargs or {})
    n = min(num_envs, len(seeds))
    vec = gymnasium.make_vec(
        env_id,
        n,
        vectorization_mode=mode,
        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
        wrappers=[ParkingWrapper],
        **env_kwargs,
    )
    failed = True
    store = recorder = None
    result = VectorResult(env_id=env_id, policy=_name(policy), num_envs=n, mode=mode)
    try:
        policies, result.batched = _policies(policy, vec, n, mode, batch)
        if record is not None:
            store = record if isinstance(record, TrajectoryStore) else TrajectoryStore(record, mode="a")
            recorder = EpisodeRecorder(store, env_id, env_kwargs, commit_every, transform)
        runner = _Runner(vec, env_id, env_kwargs, policies, result.batched, seeds, max_steps)
        runner.keep = recorder is not None or keep_episodes
        runner.record_sim_state = record_sim_state and runner.keep
        started = time.perf_counter()
        try:
            runner.run(lambda episode: _commit(episode, recorder, result, keep_episodes, on_episode))
        except KeyboardInterrupt:
            result.interrupted = True
        finally:  # episodes that finished after an unfinished one: saved too (leaving a gap) on any stop
            runner.drain(lambda episode: _commit(episode, recorder, result, keep_episodes, on_episode))
        elapsed = time.perf_counter() - started
        result.steps_per_second = sum(e.length for e in result.episodes) / max(elapsed, 1e-9)
        result.policy_calls = runner.policy_calls
        failed = False
        return result
    finally:
        try:
            if recorder is not None:
                try:
                    recorder.flush()  # finished episodes are saved whatever stopped the run
                    store.touch()
                finally:
                    if store is not record:
                        store.close()
        finally:
            if mode == "async" and (failed or result.interrupted):
                vec.close(terminate=True)  # a worker may be dead (Ctrl-C reaches them too)
            else:
                vec.close()


def _name(policy: str | Policy | Sequence[Policy]) -> str:
    if isinstance(policy, str):
        return policy
    if isinstance(policy, Sequence) and len(policy):
        return type(policy[0]).__name__
    return type(policy).__name__


def _commit(
    finished: tuple[EpisodeStats, Episode | None],
    recorder: EpisodeRecorder | None,
    result: VectorResult,
    keep: bool,
    on_episode: Callable[[EpisodeStats], None] | None = None,
) -> None:
    """Hand one finished episode, in seed order, to the store and the result."""
    stats, episode = finished
    if episode is not None:
        if recorder is not None:
            stats.store_index = recorder.add_finished(episode)
        if keep:
            result.trajectories.append(episode)
    result.episodes.append(stats)
    if on_episode is not None:
        on_episode(stats)


def _policies(
    spec: str | Policy | Sequence[Policy], vec: gymnasium.vector.VectorEnv, n: int, mode: str, batch: bool
) -> tuple[list[Policy], bool]:
    """One policy per environment (the same object when shared), and whether to call ``act_batch``."""
    if isinstance(spec, str):
        if spec == "random":
            return [RandomPolicy(copy.deepcopy(vec.single_action_space)) for _ in range(n)], False
        if spec == "expert":
            if mode != "sync":
                raise PolicyError(
                    "a scripted expert reads its environment object: run it with mode='sync' (or rollout)"
                )
            return [make_policy("expert", env) for env in vec.envs], False
        path, spec = spec, load_policy(spec)
        if is_stateful(spec):  # one copy per environment: its memory belongs to one episode
            return [spec, *(load_policy(path) for _ in range(n - 1))], False
    if isinstance(spec, Sequence):
        policies = list(spec)
        if len(policies) != n:
            raise PolicyError(f"a list of policies needs one per environment ({n}), got {len(policies)}")
        return policies, False
    if n > 1 and is_stateful(spec):
        raise PolicyError(
            f"{type(spec).__name__} remembers earlier steps of its episode: give one policy per environment "
            f"(a list of {n}), or its folder's path"
        )
    return [spec] * n, batch and supports_batch(spec)


def _row(batch: Any, i: int) -> Any:
    """Environment ``i``'s part of a batched observation (a dict of arrays, or an array)."""
    if isinstance(batch, Mapping):
        return {k: v[i] for k, v in batch.items()}
    return batch[i]


def _rows(batch: Any, index: list[int]) -> Any:
    if isinstance(batch, Mapping):
        return {k: v[index] for k, v in batch.items()}
    return batch[index]


class _Runner:
    """The stepping loop of :func:`run_vector_episodes`, and the finished episodes waiting for earlier ones."""

    def __init__(
        self,
        vec: gymnasium.vector.VectorEnv,
        env_id: str,
        env_kwargs: dict[str, Any],
        policies: list[Policy],
        batched: bool,
        seeds: list[int],
        max_steps: int | None,
    ) -> None:
        self.vec, self.env_id, self.env_kwargs = vec, env_id, env_kwargs
        self.policies, self.batched, self.seeds, self.max_steps = policies, batched, seeds, max_steps
        self.n = vec.num_envs
        self.action_ndim = len(vec.single_action_space.shape or ())
        self.keep = False
        """Collect every episode's arrays (to record or return them)."""
        self.record_sim_state = False
        self.has_state = False
        self.policy_calls = 0
        self.slots: list[_Slot] = []
        self.upcoming = 0
        """Index of the next episode to start."""
        self.finished: dict[int, tuple[EpisodeStats, Episode | None]] = {}
        self.next_commit = 0

    def run(self, commit: Commit) -> None:
        """Run every episode; ``commit(finished)`` gets them in seed order as soon as they can go."""
        self.has_state = self.keep and _has_state(self.env_id)
        self.slots = [
            _Slot(p, self.action_ndim, EpisodeBuffer(self.env_id, self.env_kwargs) if self.keep else None)
            for p in self.policies
        ]
        for slot in self.slots:  # the environments' control frequency, recorded with each episode
            if slot.buffer is not None:
                slot.buffer.fps = control_fps(self.vec)
        obs, _ = self.vec.reset(seed=self.seeds[: self.n])
        states = self._states()
        for i, slot in enumerate(self.slots):
            slot.begin(i, self.seeds[i], None if states is None else states[i])
        self.upcoming = self.n
        while any(slot.episode is not None for slot in self.slots):
            obs, ended = self._step(obs)
            if ended:
                obs = self._next_episodes(obs, ended)
                while self.next_commit in self.finished:
                    commit(self.finished.pop(self.next_commit))
                    self.next_commit += 1

    def drain(self, commit: Commit) -> None:
        """Commit the finished episodes still waiting (after an interruption: with gaps), in seed order."""
        for index in sorted(self.finished):
            commit(self.finished.pop(index))

    def _step(self, obs: Any) -> tuple[Any, list[tuple[int, bool, bool]]]:
        """One step of every environment; the next observations and the episodes that ended."""
        self._ask_policy(obs)
        actions = [None if s.episode is None else s.next_action() for s in self.slots]
        if any(a is None for a in actions):  # parked environments ignore their action
            zeros = np.zeros_like(next(a for a in actions if a is not None))
            actions = [zeros if a is None else a for a in actions]
        try:
            action_batch = np.stack(actions)
        except ValueError as error:
            raise ActionError(f"the policy's actions differ in shape between environments: {error}") from None
        step_states = self.vec.call("get_state") if self.record_sim_state and self.has_state else None
        next_obs, rewards, terminations, truncations, infos = self.vec.step(action_batch)
        success, has_success = infos.get("success"), infos.get("_success")
        ended = []
        for i, slot in enumerate(self.slots):
            if slot.episode is None:
                continue
            reward, terminated, truncated = float(rewards[i]), bool(terminations[i]), bool(truncations[i])
            slot.steps += 1
            if self.max_steps is not None and slot.steps >= self.max_steps:
                truncated = True
            step_success = bool(success[i]) if has_success is not None and has_success[i] else False
            slot.success = slot.success or step_success
            slot.total += reward
            if slot.buffer is not None:
                state = None if step_states is None else step_states[i]
                row = _row(obs, i)
                slot.buffer.add_step(row, actions[i], reward, terminated, truncated, step_success, state)
            if terminated or truncated:
                ended.append((i, terminated, truncated))
        return next_obs, ended

    def _next_episodes(self, obs: Any, ended: list[tuple[int, bool, bool]]) -> Any:
        """Finish the ended episodes; reset their environments with the next seeds, or park them."""
        finals = self._states()
        restart = np.zeros(self.n, dtype=np.bool_)
        park = np.zeros(self.n, dtype=np.bool_)
        for i, terminated, truncated in ended:
            slot = self.slots[i]
            self._finish(slot, terminated, truncated, None if finals is None else finals[i])
            if self.upcoming < len(self.seeds):
                slot.episode, self.upcoming = self.upcoming, self.upcoming + 1
                restart[i] = True
            else:
                slot.episode = None
                park[i] = True
        if restart.any():
            seeds = [self.seeds[s.episode] if restart[i] else None for i, s in enumerate(self.slots)]
            reset_obs, _ = self.vec.reset(seed=seeds, options={"reset_mask": restart})
            obs = _merge(obs, reset_obs, restart)
            states = self._states()
            for i in np.flatnonzero(restart):
                slot = self.slots[i]
                slot.begin(slot.episode, self.seeds[slot.episode], None if states is None else states[i])
        if park.any():
            self.vec.reset(options={"reset_mask": park, PARK_OPTION: True})
        return obs

    def _ask_policy(self, obs: Any) -> None:
        """Give every running environment whose chunk is used up the policy's next output."""
        need = []
        for i, slot in enumerate(self.slots):
            if slot.episode is None:
                continue
            if slot.needs_action():
                need.append(i)
            elif (observe := getattr(slot.policy, "observe", None)) is not None:
                observe(_row(obs, i))  # as the chunk runner: every step the policy is not asked at
        if not need:
            return
        if self.batched:
            sub = obs if len(need) == self.n else _rows(obs, need)
            out = np.asarray(self.policies[0].act_batch(sub))  # type: ignore[attr-defined]
            self.policy_calls += 1
            if out.ndim == 0 or len(out) != len(need):
                raise PolicyError(
                    f"act_batch returned {out.shape} for a batch of {len(need)} observations; it must "
                    "return one action (or chunk) per observation, stacked on the first axis"
                )
            for row, i in zip(out, need):
                self.slots[i].load(row)
        else:
            for i in need:
                self.slots[i].load(np.asarray(self.slots[i].policy.act(_row(obs, i))))
            self.policy_calls += len(need)

    def _finish(self, slot: _Slot, terminated: bool, truncated: bool, final_state: np.ndarray | None) -> None:
        assert slot.episode is not None
        stats = EpisodeStats(
            slot.episode, slot.seed, slot.total, slot.steps, slot.success, terminated, truncated
        )
        episode = None
        if slot.buffer is not None:
            episode = slot.buffer.finish_episode(final_state, success=slot.success)
        self.finished[slot.episode] = (stats, episode)

    def _states(self) -> tuple[np.ndarray, ...] | None:
        """Every environment's simulator state, when episodes are kept and the environment has one."""
        return self.vec.call("get_state") if self.has_state else None


def _merge(obs: Any, reset_obs: Any, mask: np.ndarray) -> Any:
    """``obs`` with the rows of the environments in ``mask`` taken from ``reset_obs``."""
    if isinstance(obs, Mapping):
        for key, value in obs.items():
            value[mask] = reset_obs[key][mask]
        return obs
    obs[mask] = reset_obs[mask]
    return obs


def _has_state(env_id: str) -> bool:
    """Whether ``env_id``'s environment class has ``get_state``/``set_state`` (checked without making one)."""
    from gymnasium.envs.registration import load_env_creator

    entry = gymnasium.spec(env_id).entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    return callable(getattr(creator, "get_state", None)) and callable(getattr(creator, "set_state", None))
