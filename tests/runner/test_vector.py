"""Vectorised episodes equal the serial runner's; ``act_batch`` equals per-sample ``act``.

Seven seeds on three environments: the environments run several episodes each, episodes end at different
steps (a goal-seeking policy reaches some goals), and environments park when no seed is left. Per-env
``act`` gives the serial runner's episodes bit for bit; a batched forward pass gives them up to float32
rounding (BLAS sums in another order for another batch size).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import embodia
from embodia.core.errors import EmbodiaError, PolicyError
from embodia.core.policy import BatchPolicy, load_policy, supports_batch
from embodia.data.store import TrajectoryStore
from embodia.policies.actor_policy import ActorPolicy, save_actor_policy
from embodia.policies.linear import LinearPolicy
from embodia.policies.networks import Actor, ObsNormalizer
from embodia.runner import rollout
from embodia.runner.hooks import EpisodeHook, Step
from embodia.runner.vector import PARK_OPTION, ParkingWrapper, run_vector_episodes

MAZE = "embodia/PointMaze-Medium-v0"  # observations: state (2,), goal (2,); actions (2,)
CUBE = "embodia/CubeSingle-v0"  # observations: state (28,), goal (28,); actions (5,)
SEEDS = list(range(7))
MAX_STEPS = 300
#: actions of a batched forward pass vs per-sample ones (float32 rounding, then a few hundred steps of physics)
ATOL = 1e-4


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """One intra-op thread: a shared 2-core machine runs small forward passes ~10x slower with two."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def goal_seeking_linear() -> LinearPolicy:
    """``a = 0.5 (goal - state)``: reaches some PointMaze goals in ~30 steps, walls stop it for others."""
    weight = np.array([[-0.5, 0, 0.5, 0], [0, -0.5, 0, 0.5]], dtype=np.float32)
    return LinearPolicy(weight, np.zeros(2, np.float32), ["state", "goal"])


@pytest.fixture(scope="module")
def chunk_actor(tmp_path_factory) -> str:
    """A policy folder: an MLP fitted to the goal-seeking policy, chunks of 4, 2 executed per query."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    state, goal = (rng.uniform(-2, 30, (1024, 2)).astype(np.float32) for _ in range(2))
    target = np.repeat(np.clip(0.5 * (goal - state), -0.95, 0.95)[:, None], 4, 1).reshape(1024, -1)
    normalizer = ObsNormalizer.fit(["state", "goal"], {"state": state, "goal": goal})
    actor = Actor(4, 2, 4, (32, 32))
    optimizer = torch.optim.Adam(actor.parameters(), 3e-3)
    x = normalizer({"state": torch.from_numpy(state), "goal": torch.from_numpy(goal)})
    for _ in range(200):
        loss = ((actor(x) - torch.from_numpy(target)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    folder = tmp_path_factory.mktemp("vector") / "chunk_actor"
    save_actor_policy(folder, actor, normalizer, hidden=(32, 32), execute_steps=2)
    return str(folder)


def random_actor(obs_dim: int, action_dim: int, horizon: int = 1) -> ActorPolicy:
    torch.manual_seed(1)
    sizes = [obs_dim // 2, obs_dim - obs_dim // 2]
    normalizer = ObsNormalizer(["state", "goal"], np.zeros(obs_dim), np.ones(obs_dim), sizes=sizes)
    return ActorPolicy(Actor(obs_dim, action_dim, horizon, (64, 64)), normalizer)


class Capture(EpisodeHook):
    """The observations and actions of every episode of a serial rollout."""

    def __init__(self) -> None:
        self.episodes: list[dict[str, list]] = []

    def begin(self, env, seed, obs, info) -> None:
        self.episodes.append({"state": [], "goal": [], "action": []})

    def step(self, env, step: Step) -> None:
        for key in ("state", "goal"):
            self.episodes[-1][key].append(step.obs[key])
        self.episodes[-1]["action"].append(step.action)


def serial(env_id: str, policy, max_steps: int, seeds=SEEDS):
    capture = Capture()
    result = rollout(env_id, policy, episodes=len(seeds), seed=seeds[0], max_steps=max_steps, hooks=[capture])
    return result, capture.episodes


def assert_same_episodes(vector, reference, captured, exact: bool) -> None:
    """Statistics, observations and actions of the vectorised run against the serial one."""
    assert [e.index for e in vector.episodes] == list(range(len(reference.episodes)))
    for got, want, steps, arrays in zip(
        vector.episodes, reference.episodes, captured, vector.trajectories, strict=True
    ):
        assert (got.seed, got.length, got.success, got.terminated, got.truncated) == (
            want.seed,
            want.length,
            want.success,
            want.terminated,
            want.truncated,
        )
        for key in ("state", "goal", "action"):
            if exact:
                np.testing.assert_array_equal(arrays[0][key], np.stack(steps[key]), err_msg=key)
            else:
                np.testing.assert_allclose(
                    arrays[0][key], np.stack(steps[key]), rtol=0, atol=ATOL, err_msg=key
                )
        assert got.return_ == (want.return_ if exact else pytest.approx(want.return_, abs=1e-3))


@pytest.mark.parametrize(("mode", "batch"), [("sync", True), ("async", True), ("sync", False)])
def test_linear_policy_episodes_equal_the_serial_runner(mode, batch):
    policy = goal_seeking_linear()
    reference, captured = serial(MAZE, policy, MAX_STEPS)
    lengths = {e.length for e in reference.episodes}
    assert len(lengths) > 2 and MAX_STEPS in lengths  # episodes end at different steps, some are cut
    vector = run_vector_episodes(
        MAZE, policy, SEEDS, num_envs=3, mode=mode, max_steps=MAX_STEPS, batch=batch, keep_episodes=True
    )
    assert vector.batched is batch and vector.num_envs == 3
    assert_same_episodes(vector, reference, captured, exact=not batch)
    steps = sum(e.length for e in reference.episodes)
    assert vector.policy_calls < steps if batch else vector.policy_calls == steps


def test_chunked_actor_episodes_equal_the_serial_runner_in_both_modes(chunk_actor):
    reference, captured = serial(MAZE, load_policy(chunk_actor), MAX_STEPS)
    assert len({e.length for e in reference.episodes}) > 1
    runs = {
        mode: run_vector_episodes(
            MAZE, chunk_actor, SEEDS, num_envs=3, mode=mode, max_steps=MAX_STEPS, keep_episodes=True
        )
        for mode in ("sync", "async")
    }
    for vector in runs.values():
        assert vector.batched
        assert_same_episodes(vector, reference, captured, exact=False)
    # the schedule of batches is a function of the seeds and num_envs alone: sync and async agree exactly
    for a, b in zip(runs["sync"].trajectories, runs["async"].trajectories, strict=True):
        for key in a[0]:
            np.testing.assert_array_equal(a[0][key], b[0][key])
    per_env = run_vector_episodes(MAZE, chunk_actor, SEEDS, num_envs=3, max_steps=MAX_STEPS, batch=False)
    assert per_env.policy_calls == sum(-(-e.length // 2) for e in reference.episodes)  # 2 actions per query
    assert runs["sync"].policy_calls < per_env.policy_calls


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_cube_single_episodes_and_recording_equal_the_serial_runner(mode, tmp_path):
    policy = random_actor(56, 5)
    seeds, max_steps = SEEDS, 12
    want = rollout(
        CUBE, policy, episodes=7, max_steps=max_steps, record=tmp_path / "serial.zarr", record_sim_state=True
    )
    got = run_vector_episodes(
        CUBE,
        policy,
        seeds,
        num_envs=3,
        mode=mode,
        max_steps=max_steps,
        record=tmp_path / "vector.zarr",
        record_sim_state=True,
    )
    assert [(e.seed, e.length, e.success) for e in got.episodes] == [
        (e.seed, e.length, e.success) for e in want.episodes
    ]
    assert [e.store_index for e in got.episodes] == list(range(7))
    serial_store, vector_store = (
        TrajectoryStore(tmp_path / "serial.zarr"),
        TrajectoryStore(tmp_path / "vector.zarr"),
    )
    # the obs keys come in the observation space's (sorted) order, not the env's dict order: same schema
    assert vector_store.num_episodes == 7 and vector_store.schema == serial_store.schema
    assert "sim_state" in vector_store.keys
    for i in range(7):
        a, b = serial_store.episode(i), vector_store.episode(i)
        for key in a:
            if key == "action":
                np.testing.assert_allclose(b[key], a[key], rtol=0, atol=ATOL)
            else:
                np.testing.assert_allclose(b[key], a[key], rtol=0, atol=1e-3, err_msg=key)
        meta_a, meta_b = serial_store.episode_meta(i), vector_store.episode_meta(i)
        assert meta_b.seed == meta_a.seed == i
        np.testing.assert_array_equal(meta_b.initial_state, meta_a.initial_state)  # reset(seed) alone
        np.testing.assert_allclose(meta_b.final_state, meta_a.final_state, rtol=0, atol=1e-3)


def test_random_and_expert_run_one_policy_per_environment():
    reference, captured = serial(MAZE, "random", 20, seeds=[3, 4, 5, 6, 7])
    vector = run_vector_episodes(
        MAZE, "random", [3, 4, 5, 6, 7], num_envs=2, max_steps=20, keep_episodes=True
    )
    assert_same_episodes(vector, reference, captured, exact=True)
    reference, captured = serial(MAZE, "expert", 60, seeds=[0, 1, 2])
    vector = run_vector_episodes(MAZE, "expert", [0, 1, 2], num_envs=8, max_steps=60, keep_episodes=True)
    assert vector.num_envs == 3  # never more environments than episodes
    assert_same_episodes(vector, reference, captured, exact=True)
    with pytest.raises(PolicyError, match="sync"):
        run_vector_episodes(MAZE, "expert", [0, 1], num_envs=2, mode="async", max_steps=5)


def test_act_batch_equals_act_for_every_policy_type(chunk_actor, tmp_path):
    from embodia.policies.onnx_export import export_onnx
    from embodia.policies.onnx_policy import OnnxActorPolicy

    rng = np.random.default_rng(0)
    batch = {"state": rng.uniform(-2, 30, (5, 2)).astype(np.float32), "goal": rng.uniform(-2, 30, (5, 2))}
    export_onnx(chunk_actor)
    onnx = load_policy(chunk_actor, runtime="onnx")
    assert isinstance(onnx, OnnxActorPolicy)
    policies = {
        "linear": (goal_seeking_linear(), (5, 2)),
        "actor": (random_actor(4, 2), (5, 2)),
        "actor_chunks": (load_policy(chunk_actor, runtime="torch"), (5, 4, 2)),
        "onnx_chunks": (onnx, (5, 4, 2)),
    }
    for name, (policy, shape) in policies.items():
        assert isinstance(policy, BatchPolicy) and supports_batch(policy), name
        out = policy.act_batch(batch)
        assert out.shape == shape and out.dtype == np.float32, name
        rows = np.stack([policy.act({k: v[i] for k, v in batch.items()}) for i in range(5)])
        np.testing.assert_allclose(out, rows, rtol=1e-5, atol=1e-6, err_msg=name)
        with pytest.raises(PolicyError, match="goal"):
            policy.act_batch({"state": batch["state"]})
        with pytest.raises(PolicyError):
            policy.act_batch({"state": batch["state"], "goal": batch["goal"][:3]})
    assert not supports_batch(object())


def test_a_parked_environment_does_not_step():
    env = ParkingWrapper(embodia.make(MAZE))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.ones(2, np.float32))
    state = env.unwrapped.get_state()
    parked, info = env.reset(options={PARK_OPTION: True})
    assert parked is obs and info == {}
    for _ in range(3):
        assert env.step(np.ones(2, np.float32)) == (obs, 0.0, False, False, {})
    np.testing.assert_array_equal(env.unwrapped.get_state(), state)
    fresh, _ = env.reset(seed=0)  # an ordinary reset wakes it: what reset(seed) alone gives
    want, _ = embodia.make(MAZE).reset(seed=0)
    np.testing.assert_array_equal(fresh["state"], want["state"])
    env.close()


class WrongRows:
    def reset(self, seed=None) -> None:
        pass

    def act(self, obs):
        return np.zeros(2, np.float32)

    def act_batch(self, obs_batch):
        return np.zeros((1, 2), np.float32)


def test_refusals():
    policy = goal_seeking_linear()
    for kwargs, match in [
        ({"seeds": []}, "at least one"),
        ({"seeds": [-1]}, "outside"),
        ({"num_envs": 0}, "num_envs"),
        ({"mode": "threads"}, "mode"),
        ({"max_steps": 0}, "max_steps"),
    ]:
        with pytest.raises(EmbodiaError, match=match):
            run_vector_episodes(MAZE, policy, **{"seeds": [0], **kwargs})
    with pytest.raises(PolicyError, match="one action"):
        run_vector_episodes(MAZE, WrongRows(), [0, 1], num_envs=2, max_steps=3)
    with pytest.raises(PolicyError, match="one per environment"):
        run_vector_episodes(MAZE, [policy], [0, 1], num_envs=2, max_steps=3)


def test_run_and_eval_commands_step_vector_environments(chunk_actor, tmp_path, capsys):
    """``embodia run|eval --num-envs K``: the episodes (and the store) of the serial command."""
    from embodia.cli import main

    common = [MAZE, "--policy", chunk_actor, "--episodes", "5", "--max-steps", "40", "--quiet", "--json"]
    stores = {}
    for name, extra in (("serial", []), ("vector", ["--num-envs", "3", "--vector-mode", "async"])):
        stores[name] = tmp_path / f"{name}.zarr"
        assert main(["run", *common, "--record", str(stores[name]), *extra]) == 0
    serial_store, vector_store = (TrajectoryStore(stores[k]) for k in ("serial", "vector"))
    assert vector_store.num_episodes == serial_store.num_episodes == 5
    for i in range(5):
        a, b = serial_store.episode(i), vector_store.episode(i)
        assert serial_store.episode_meta(i).seed == vector_store.episode_meta(i).seed == i
        np.testing.assert_allclose(b["action"], a["action"], rtol=0, atol=ATOL)
        np.testing.assert_allclose(b["state"], a["state"], rtol=0, atol=1e-3)
    capsys.readouterr()
    args = ["eval", chunk_actor, "--env", MAZE, "--episodes", "4", "--json"]
    assert main(args) == 0
    serial_eval = json.loads(capsys.readouterr().out)
    assert main([*args, "--num-envs", "2"]) == 0
    vector_eval = json.loads(capsys.readouterr().out)
    assert vector_eval["episodes"] == serial_eval["episodes"] == 4
    assert vector_eval["success_rate"] == serial_eval["success_rate"]
    assert vector_eval["mean_return"] == pytest.approx(serial_eval["mean_return"], abs=1e-3)
    assert main(["run", *common, "--num-envs", "2", "--video", str(tmp_path / "v.mp4")]) == 2
    assert "--num-envs 1" in capsys.readouterr().err


class HistoryPolicy:
    """A stateful chunk policy: chunks of 3 actions toward the goal from the mean of every state seen since
    ``reset`` (those it acted on and those the runner passed to ``observe``)."""

    stateful = True
    execute_steps = 3

    def reset(self, seed: int | None = None) -> None:
        self.states: list[np.ndarray] = []

    def observe(self, obs) -> None:
        self.states.append(np.asarray(obs["state"], dtype=np.float32))

    def act(self, obs) -> np.ndarray:
        self.observe(obs)
        seen = np.mean(self.states, axis=0)
        step = np.clip(0.5 * (np.asarray(obs["goal"]) - seen), -1, 1).astype(np.float32)
        return np.stack([step, 0.8 * step, 0.6 * step])


def test_a_stateful_policy_runs_one_copy_per_environment_and_observes_every_step():
    reference, captured = serial(MAZE, HistoryPolicy(), 60)
    vector = run_vector_episodes(
        MAZE, [HistoryPolicy() for _ in range(3)], SEEDS, num_envs=3, max_steps=60, keep_episodes=True
    )
    assert_same_episodes(vector, reference, captured, exact=True)  # observe() saw the same steps
    with pytest.raises(PolicyError, match="remembers earlier steps.*one policy per environment"):
        run_vector_episodes(MAZE, HistoryPolicy(), SEEDS, num_envs=3, max_steps=60)
