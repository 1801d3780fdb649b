"""ACT (embodia/policies/act.py, act_policy.py): temporal ensembling, the KL term, padding, learning, policy
folders through the chunk runner and the episode runner, ONNX equivalence."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from embodia.core.chunks import ActionChunker
from embodia.core.errors import ConfigError
from embodia.core.policy import load_policy
from embodia.data.sampling import WindowSampler
from embodia.data.store import TrajectoryStore
from embodia.policies.act import ACT, ACTStatistics, chunk_batch, kl_divergence
from embodia.policies.act_policy import (
    ActPolicy,
    TemporalEnsembler,
    TemporalEnsemblingPolicy,
    ensemble_weights,
    save_act_policy,
)
from embodia.policies.train import TrainConfig, method_config_for, train

ENV = "embodia/PointMaze-Medium-v0"  # observations: state (2,), goal (2,); actions (2,)
#: a model small enough for seconds on a shared 2-core CPU
TINY = {"d_model": 32, "heads": 4, "feedforward": 64, "encoder_layers": 1, "vae_layers": 1, "latent_dim": 4}
#: ONNX Runtime against torch, largest |difference| of any action value (float32 rounding of a small transformer)
ONNX_ATOL = 1e-5


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread, as training uses (two threads on a shared 2-core machine run many times slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_ensemble_weights_are_the_papers():
    w = ensemble_weights(3, 0.01)
    assert np.allclose(w, np.exp(-0.01 * np.arange(3)) / np.exp(-0.01 * np.arange(3)).sum())
    assert w[0] > w[1] > w[2]  # i = 0, the oldest prediction, weighs most
    assert np.allclose(ensemble_weights(4, 0.0), 0.25)


def test_temporal_ensembling_on_hand_made_chunks():
    """Chunks of 3 one-dimensional actions predicted at steps 0..3, value 10 * (step + 1) + offset."""
    m = 0.5
    ens = TemporalEnsembler(m, chunk=3)
    chunks = [np.array([[10.0 * (t + 1) + j] for j in range(3)]) for t in range(4)]
    e1, e2 = math.exp(-m), math.exp(-2 * m)
    expected = [
        10.0,  # step 0: only chunk 0's first action
        (11.0 + 20.0 * e1) / (1 + e1),  # step 1: chunk 0 (oldest, weight 1) offset 1, chunk 1 offset 0
        (12.0 + 21.0 * e1 + 30.0 * e2) / (1 + e1 + e2),
        (22.0 + 31.0 * e1 + 40.0 * e2) / (1 + e1 + e2),  # chunk 0 no longer covers step 3
    ]
    got = [float(ens(c)[0]) for c in chunks]
    assert np.allclose(got, expected, atol=1e-5), (got, expected)
    ens.reset()
    assert float(ens(chunks[3])[0]) == pytest.approx(40.0)  # a new episode forgets the old chunks


class _ChunkPolicy:
    """Predicts chunk ``[[10 (t + 1) + j, 0] for j in range(3)]`` on its ``t``-th call."""

    chunk_size = 3
    meta: dict = {}

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, seed=None) -> None:  # noqa: ANN001
        self.calls = 0

    def act(self, obs):  # noqa: ANN001
        self.calls += 1
        return np.array([[10.0 * self.calls + j, 0.0] for j in range(3)], dtype=np.float32)


def test_temporal_ensembling_runs_through_the_chunk_runner():
    """The ensembling policy returns one action, so the one chunk runner asks it every step."""
    inner = _ChunkPolicy()
    policy = TemporalEnsemblingPolicy(inner, 0.01)
    chunker = ActionChunker(policy, (2,))
    actions = [chunker.next_action({}) for _ in range(4)]
    assert inner.calls == 4 and all(a.shape == (2,) for a in actions)
    w = ensemble_weights(2, 0.01)
    assert actions[0][0] == pytest.approx(10.0) and actions[1][0] == pytest.approx(w @ [11.0, 20.0], abs=1e-4)
    plain = ActionChunker(_ChunkPolicy(), (2,))  # without ensembling: the chunk, one action per step
    assert [plain.next_action({})[0] for _ in range(4)] == [10.0, 11.0, 12.0, 20.0]


def test_kl_term_against_the_closed_form():
    mu = torch.tensor([[0.5, -1.0], [0.0, 2.0]])
    logvar = torch.tensor([[0.0, math.log(4.0)], [math.log(0.25), -1.0]])
    # KL(N(mu, s^2) || N(0, 1)) = log(1 / s) + (s^2 + mu^2) / 2 - 1 / 2, summed over dims, mean over the batch
    per_dim = [
        [0.0 + (1.0 + 0.25) / 2 - 0.5, -math.log(2.0) + (4.0 + 1.0) / 2 - 0.5],
        [math.log(2.0) + (0.25 + 0.0) / 2 - 0.5, 0.5 + (math.exp(-1.0) + 4.0) / 2 - 0.5],
    ]
    expected = np.mean([sum(row) for row in per_dim])
    assert float(kl_divergence(mu, logvar)) == pytest.approx(expected, rel=1e-6)
    q = torch.distributions.Normal(mu, (0.5 * logvar).exp())
    p = torch.distributions.Normal(torch.zeros(2, 2), torch.ones(2, 2))
    assert float(kl_divergence(mu, logvar)) == pytest.approx(
        float(torch.distributions.kl_divergence(q, p).sum(-1).mean()), rel=1e-6
    )
    assert float(kl_divergence(torch.zeros(3, 4), torch.zeros(3, 4))) == 0.0


def test_config_refusals():
    with pytest.raises(ConfigError, match="execute_steps"):
        method_config_for(
            "act", {"chunk": 8, "execute_steps": 4}
        )  # ensembling (the default) queries every step
    assert (
        method_config_for("act", {"chunk": 8, "execute_steps": 4, "temporal_ensemble": None}).execute_steps
        == 4
    )
    with pytest.raises(ConfigError, match="multiple"):
        method_config_for("act", {"d_model": 30, "heads": 8})
    with pytest.raises(ConfigError, match="observations"):
        method_config_for("act", {"state_keys": []})


def _statistics(state_dim: int = 2, action_dim: int = 2) -> ACTStatistics:
    zeros, ones = np.zeros(state_dim), np.ones(state_dim)
    return ACTStatistics(["state"], zeros, ones, [state_dim], np.zeros(action_dim), np.ones(action_dim))


def test_chunks_past_the_episode_end_are_padded_and_masked():
    steps = np.arange(7, dtype=np.float32)
    arrays = {"state": np.stack([steps, -steps], 1), "action": np.stack([steps, 10 + steps], 1)}
    sampler = WindowSampler(arrays, 1, episode_ends=np.array([4, 7]), seed=0)
    batch = chunk_batch(sampler, 64, chunk=3)
    starts, valid, actions = sampler.last_starts, batch["valid"].numpy(), batch["action"].numpy()
    for start, row, chunk in zip(starts, valid, actions):
        last = 3 if start < 4 else 6
        inside = np.arange(start, start + 3) <= last
        assert np.array_equal(row, inside.astype(np.float32))
        assert np.array_equal(
            chunk[:, 0], np.minimum(np.arange(start, start + 3), last)
        )  # the last action repeated
    assert (valid == 0).any() and np.array_equal(batch["obs"]["state"][:, 0].numpy(), starts)

    # the loss does not see what padded steps hold (the CVAE encoder masks them, the L1 term zeroes them)
    learner = ACT({**TINY, "chunk": 3}, _statistics(), action_dim=2)
    obs, target = batch["obs"], batch["action"].float()
    changed = torch.where(batch["valid"][..., None] > 0, target, torch.full_like(target, 50.0))
    learner.actor.eval()  # no dropout: only the posterior sample is random
    torch.manual_seed(1)
    with torch.no_grad():
        first = learner.actor.loss(obs, target, batch["valid"], 10.0)[0]
        torch.manual_seed(1)
        second = learner.actor.loss(obs, changed, batch["valid"], 10.0)[0]
    assert float(first) == pytest.approx(float(second), rel=1e-5)


def test_act_learns_a_state_to_chunk_map():
    """Chunk ``a_{t+j} = tanh(W s) (j + 1) / 4``: the L1 loss falls and the z = 0 policy predicts it."""
    torch.manual_seed(0)
    learner = ACT({**TINY, "chunk": 4, "lr": 1e-3, "dropout": 0.0}, _statistics(), action_dim=2)
    g = torch.Generator().manual_seed(0)
    w = torch.randn(2, 2, generator=g)

    def batch(n: int = 64) -> dict:
        s = torch.randn(n, 2, generator=g)
        a = torch.stack([torch.tanh(s @ w) * (j + 1) / 4 for j in range(4)], 1)
        return {"obs": {"state": s}, "action": a, "valid": torch.ones(n, 4)}

    test = batch(256)
    with torch.no_grad():
        before = float((learner.actor.eval()(test["obs"]) - test["action"]).abs().mean())
    history = [learner.update(batch()) for _ in range(180)]
    first = np.mean([h["l1_loss"] for h in history[:10]])
    last = np.mean([h["l1_loss"] for h in history[-10:]])
    assert last < 0.4 * first, (first, last)
    assert all(np.isfinite(h["kl_loss"]) for h in history)
    with torch.no_grad():
        after = float((learner.actor.eval()(test["obs"]) - test["action"]).abs().mean())
    baseline = float((test["action"] - test["action"].mean(0)).abs().mean())
    assert after < 0.5 * before and after < 0.5 * baseline, (before, after, baseline)


def test_act_learns_from_a_camera():
    """Camera only: the bright half of the image (left or right) decides the chunk's sign."""
    torch.manual_seed(0)
    stats = ACTStatistics([], np.zeros(0), np.ones(0), [], np.zeros(1), np.ones(1))
    config = {**TINY, "chunk": 3, "image_keys": ["rgb"], "state_keys": [], "image_size": 16}
    learner = ACT({**config, "lr": 1e-3, "lr_backbone": 1e-3, "dropout": 0.0}, stats, action_dim=1)
    g = torch.Generator().manual_seed(0)

    def batch(n: int = 16) -> dict:
        side = torch.randint(0, 2, (n,), generator=g)
        images = torch.randint(0, 60, (n, 16, 16, 3), generator=g, dtype=torch.uint8)
        for i in range(n):
            images[i, :, 8:] += 150 * side[i].to(torch.uint8)
            images[i, :, :8] += 150 * (1 - side[i]).to(torch.uint8)
        actions = (side.float() - 0.5)[:, None, None].expand(n, 3, 1).clone()
        return {"obs": {"rgb": images}, "action": actions, "valid": torch.ones(n, 3)}

    history = [learner.update(batch()) for _ in range(150)]
    assert np.mean([h["l1_loss"] for h in history[-10:]]) < 0.3 * np.mean(
        [h["l1_loss"] for h in history[:10]]
    )
    test = batch(64)
    with torch.no_grad():
        error = float((learner.actor.eval()(test["obs"]) - test["action"]).abs().mean())
    assert error < 0.15, error  # acting 0 (not seeing the image) errs by 0.5


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Four short PointMaze-shaped episodes (the second terminated early), rewards not needed."""
    path = tmp_path_factory.mktemp("act") / "tiny.zarr"
    rng = np.random.default_rng(0)
    with TrajectoryStore(path, "w") as tiny:
        for episode in range(4):
            steps = 12
            terminated = np.zeros(steps, bool)
            terminated[-1] = episode == 1
            state = rng.uniform(-2, 5, (steps, 2)).astype(np.float32)
            tiny.add_episode(
                {
                    "state": state,
                    "goal": rng.uniform(-2, 5, (steps, 2)).astype(np.float32),
                    "action": np.tanh(state[:, ::-1] - 1.5).astype(np.float32),
                    "terminated": terminated,
                    "truncated": ~terminated & (np.arange(steps) == steps - 1),
                },
                env_id=ENV,
            )
    return path


def test_train_writes_a_folder_that_loads_and_runs_in_the_episode_runner(store, tmp_path):
    from embodia.runner import rollout

    run = tmp_path / "run"
    result = train(
        TrainConfig(
            method="act",
            dataset=str(store),
            out=str(run),
            env_id=ENV,
            steps=12,
            batch_size=16,
            eval_every=0,
            eval_episodes=0,
            log_every=4,
            method_config={**TINY, "chunk": 5, "state_keys": ["state", "goal"]},
        )
    )
    assert result["step"] == 12
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert {"l1_loss", "kl_loss", "act_loss"} <= set(records[0])
    config = json.loads((run / "policy" / "config.json").read_text())
    assert (
        config["type"] == "act"
        and config["horizon"] == 5
        and config["state_sizes"] == {"state": 2, "goal": 2}
    )
    assert config["temporal_ensemble"] == 0.01 and config["encoder"] is None

    policy = load_policy(run / "policy")
    assert isinstance(policy, TemporalEnsemblingPolicy) and isinstance(policy.policy, ActPolicy)
    assert policy.meta["method"] == "act" and policy.meta["env_id"] == ENV
    obs = {"state": np.array([1.0, 2.0], np.float32), "goal": np.array([0.5, 0.5], np.float32)}
    chunk = policy.policy.act(obs)
    assert chunk.shape == (5, 2)
    batch = policy.policy.act_batch({k: np.stack([v, v + 1]) for k, v in obs.items()})
    assert batch.shape == (2, 5, 2) and np.allclose(batch[0], chunk, atol=1e-5)
    actions = TrajectoryStore(store).load(["action"])["action"]
    assert np.allclose(
        policy.policy.model.action_mean.numpy(), actions.mean(0), atol=1e-5
    )  # the data's statistics

    # the episode runner (the one chunk runner) asks the ensembling policy once per step
    calls = []
    inner_act = policy.policy.act
    policy.policy.act = lambda o: calls.append(1) or inner_act(o)
    result = rollout(ENV, policy, episodes=1, seed=0, max_steps=6)
    assert result.episodes[0].length == 6 and len(calls) == 6


def test_camera_policy_exports_to_onnx_and_matches_torch(tmp_path):
    """Camera + two state keys, temporal ensembling on: one ONNX graph, the same ensembled actions."""
    from embodia.policies.onnx_export import export_onnx
    from embodia.policies.onnx_pixel_policy import OnnxPixelPolicy

    config = {**TINY, "chunk": 4, "image_keys": ["rgb"], "image_size": 16, "state_keys": ["state", "goal"]}
    stats = ACTStatistics(
        ["state", "goal"], np.array([1.0, 2, 3]), np.array([2.0, 2, 2]), [2, 1], [0.1, 0.2], [0.5, 0.5]
    )
    learner = ACT(config, stats, action_dim=2)
    rng = np.random.default_rng(0)
    images = torch.as_tensor(rng.integers(0, 256, (8, 16, 16, 3), dtype=np.uint8))
    train_batch = {
        "obs": {"rgb": images, "state": torch.randn(8, 2), "goal": torch.randn(8, 1)},
        "action": torch.randn(8, 4, 2),
        "valid": torch.ones(8, 4),
    }
    learner.update(train_batch)  # weights away from their initial values
    folder = save_act_policy(tmp_path / "policy", learner.actor, learner.config, {"method": "act"}, [2, 1])
    export_onnx(folder, atol=ONNX_ATOL)
    record = json.loads((folder / "config.json").read_text())["onnx"]
    assert record["max_abs_diff"] <= ONNX_ATOL
    assert record["inputs"]["rgb"] == {"shape": [16, 16, 3], "dtype": "uint8"}

    torch_policy, onnx_policy = load_policy(folder, runtime="torch"), load_policy(folder, runtime="onnx")
    assert isinstance(onnx_policy.policy, OnnxPixelPolicy)
    for policy in (torch_policy, onnx_policy):
        policy.reset(0)
    for _ in range(6):  # the ensembled actions of a sequence of observations agree
        obs = {
            "rgb": rng.integers(0, 256, (16, 16, 3), dtype=np.uint8),
            "state": rng.normal(size=2).astype(np.float32),
            "goal": rng.normal(size=1).astype(np.float32),
        }
        a, b = torch_policy.act(obs), onnx_policy.act(obs)
        assert a.shape == (2,) and np.abs(a - b).max() <= ONNX_ATOL
        assert np.abs(torch_policy.policy.act(obs) - onnx_policy.policy.act(obs)).max() <= ONNX_ATOL

    # as on a robot: a process without torch loads the folder ("auto" picks model.onnx) and ensembles in NumPy
    code = f"""
import sys
sys.modules["torch"] = None
import numpy as np
from embodia.core.policy import load_policy
policy = load_policy({str(folder)!r})
policy.reset(0)
obs = {{"rgb": np.zeros((16, 16, 3), np.uint8), "state": np.ones(2, np.float32), "goal": np.ones(1, np.float32)}}
print(type(policy).__name__, type(policy.policy).__name__, policy.act(obs).shape, policy.act(obs).shape)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["TemporalEnsemblingPolicy", "OnnxPixelPolicy", "(2,)", "(2,)"]
