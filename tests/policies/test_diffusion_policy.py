"""Diffusion Policy: the noise schedule and DDIM step against diffusers and by hand, the training windows, the
EMA warm-up, learning a state -> chunk map, the policy folder through the chunk runner, ONNX + NumPy sampling
against torch + diffusers, and the torch-free robot path."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from diffusers import DDIMScheduler, DDPMScheduler

from embodia.core.chunks import ActionChunker
from embodia.core.policy import load_policy
from embodia.data.sampling import WindowSampler
from embodia.policies.diffusion_folder import (
    OnnxDiffusionPolicy,
    TorchDiffusionPolicy,
    ddim_sample,
    ddim_step,
    ddim_timesteps,
)
from embodia.policies.diffusion_policy import (
    DiffusionPolicy,
    DiffusionPolicyConfig,
    ema_decay,
    schedulers,
)
from tests.robot.robot_install import HEAVY, run_robot_python

SMALL = {"horizon": 8, "n_obs_steps": 2, "n_action_steps": 4, "down_dims": (16, 32), "step_embed_dim": 16}


def test_the_schedule_is_diffusers_squaredcos_cap_v2_and_the_closed_form():
    ddpm, ddim = schedulers(DiffusionPolicyConfig())
    reference = DDPMScheduler(num_train_timesteps=100, beta_schedule="squaredcos_cap_v2")
    assert torch.equal(ddpm.alphas_cumprod, reference.alphas_cumprod)
    assert torch.equal(ddim.alphas_cumprod, reference.alphas_cumprod)

    # Nichol & Dhariwal: abar(s) = cos^2((s + 0.008) / 1.008 * pi / 2); beta_k = min(1 - abar((k+1)/K) / abar(k/K), 0.999)
    def abar(s):
        return math.cos((s + 0.008) / 1.008 * math.pi / 2) ** 2

    betas = [min(1 - abar((k + 1) / 100) / abar(k / 100), 0.999) for k in range(100)]
    assert ddpm.alphas_cumprod.numpy() == pytest.approx(np.cumprod(1 - np.array(betas)), rel=1e-5, abs=1e-9)
    for steps in (1, 3, 8, 10, 100):
        ddim.set_timesteps(steps)
        assert ddim_timesteps(100, steps).tolist() == ddim.timesteps.tolist()


def test_one_ddim_step_by_hand_and_as_diffusers():
    _, ddim = schedulers(DiffusionPolicyConfig())
    ddim.set_timesteps(10)  # stride 10
    acp = ddim.alphas_cumprod.numpy().astype(np.float64)
    x = np.array([[[0.5, -1.2], [2.0, 0.1]]], np.float32)  # (1, T=2, A=2)
    eps = np.array([[[0.3, 0.7], [-0.4, 1.5]]], np.float32)
    for k in (90, 40, 0):  # k = 0 steps to abar = 1 (set_alpha_to_one): the output is the clipped x0
        want = ddim.step(torch.from_numpy(eps), k, torch.from_numpy(x), eta=0.0).prev_sample.numpy()
        got = ddim_step(eps.astype(np.float64), k, x.astype(np.float64), acp, 10)
        assert got == pytest.approx(want, abs=2e-6)
    # by hand at k = 40: x0 = (x - sqrt(1 - a) eps) / sqrt(a), clipped, then x' = sqrt(a') x0 + sqrt(1 - a') eps
    a, a_prev = acp[40], acp[30]
    x0 = np.clip((x - np.sqrt(1 - a) * eps) / np.sqrt(a), -1, 1)
    assert np.abs(x0).max() == 1.0  # the hand-made inputs do hit the clip
    assert ddim_step(eps, 40, x, acp, 10) == pytest.approx(
        np.sqrt(a_prev) * x0 + np.sqrt(1 - a_prev) * eps, abs=1e-6
    )
    assert ddim_step(eps, 0, x, acp, 10) == pytest.approx(
        np.clip((x - np.sqrt(1 - acp[0]) * eps) / np.sqrt(acp[0]), -1, 1)
    )


def test_the_numpy_sampler_is_diffusers_ddim_loop():
    """A fixed analytic 'denoiser' run through both loops from the same noise."""
    ddim = DDIMScheduler(num_train_timesteps=100, beta_schedule="squaredcos_cap_v2", clip_sample=True)
    noise = np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32)

    def denoise(x, k):
        return np.tanh(x * 0.7 + k[:, None, None] / 100.0).astype(np.float32)

    ddim.set_timesteps(8)
    x = torch.from_numpy(noise)
    for k in ddim.timesteps:
        eps = torch.from_numpy(denoise(x.numpy(), np.full(3, int(k))))
        x = ddim.step(eps, k, x, eta=0.0).prev_sample
    got = ddim_sample(denoise, noise, ddim.alphas_cumprod.numpy(), 8)
    assert got == pytest.approx(x.numpy(), abs=1e-5)
    assert np.abs(got).max() <= 1.0


def test_ema_warm_up_is_the_reference_schedule():
    assert ema_decay(0, 0.75, 0.9999) == 0.0 and ema_decay(1, 0.75, 0.9999) == 0.0
    assert ema_decay(2, 0.75, 0.9999) == pytest.approx(1 - 2**-0.75)
    assert ema_decay(10_001, 0.75, 0.9999) == pytest.approx(0.999, abs=1e-6)  # the reference's comment
    assert ema_decay(10**9, 0.75, 0.9999) == 0.9999


def test_config_refuses_horizons_that_do_not_fit():
    with pytest.raises(ValueError, match="cannot exceed horizon"):
        DiffusionPolicyConfig(horizon=8, n_obs_steps=2, n_action_steps=8)
    with pytest.raises(ValueError, match="divisible"):
        DiffusionPolicyConfig(horizon=10, down_dims=(16, 32, 64))


def _episodes(episodes=48, length=20, seed=0):
    """State (v, t / L) with v ~ U[-1, 1] per episode; every action is 2 v + 0.5 (a state -> chunk map)."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(-1, 1, (episodes, 1)).astype(np.float32)
    phase = np.tile(np.arange(length) / length, episodes)[:, None]
    arrays = {
        "state": np.concatenate([np.repeat(v, length, 0), phase], 1).astype(np.float32),
        "action": (np.repeat(v, length, 0) * 2 + 0.5).astype(np.float32),
    }
    return arrays, np.arange(1, episodes + 1) * length


def _learner(arrays, ends, **overrides):
    cfg = DiffusionPolicyConfig(**{**SMALL, "lr": 3e-3, "lr_warmup_steps": 10, "kernel_size": 3, **overrides})
    sampler = WindowSampler(arrays, horizon=DiffusionPolicy.window_for(cfg), episode_ends=ends, seed=0)
    return DiffusionPolicy(
        cfg, DiffusionPolicy.fit_normalizer_for(cfg, sampler), action_dim=arrays["action"].shape[1], seed=0
    ), sampler


def test_windows_hold_the_observation_history_and_the_actions_before_it():
    rows = np.arange(30, dtype=np.float32)[:, None]
    arrays = {"state": rows, "action": rows + 100}
    learner, sampler = _learner(arrays, np.array([10, 30]))
    batch = learner.sample(sampler, 64)
    t = sampler.last_starts
    begin = np.where(t >= 10, 10, 0)
    prev = np.maximum(t - 1, begin)  # the first step of an episode is repeated, as the authors' pad_before
    assert batch["obs"]["state"].shape == (64, 2, 1) and batch["action"].shape == (64, 8, 1)
    assert batch["obs"]["state"][:, 0, 0].numpy().tolist() == prev.tolist()
    assert batch["obs"]["state"][:, 1, 0].numpy().tolist() == t.tolist()
    assert batch["action"][:, 0, 0].numpy().tolist() == (prev + 100).tolist()
    assert batch["action"][:, 1:, 0].numpy().tolist() == (t[:, None] + np.arange(7) + 100).tolist()
    assert (t == begin).any()  # an episode's first step was drawn: the padding was exercised


@pytest.fixture(scope="module")
def trained():
    torch.set_num_threads(1)
    arrays, ends = _episodes()
    # a short run: a high learning rate, and the EMA capped at 0.9 so that the average follows it
    learner, sampler = _learner(arrays, ends, lr=1e-2, ema_max_decay=0.9)
    losses = [learner.update(learner.sample(sampler, 32))["diffusion_loss"] for _ in range(150)]
    return learner, arrays, losses


def test_it_learns_a_state_to_chunk_map(trained):
    learner, arrays, losses = trained
    assert np.mean(losses[-25:]) < 0.15 * np.mean(losses[:5])
    policy = TorchDiffusionPolicy(learner.actor, learner.config)
    errors = []
    for episode in range(8):
        policy.reset(seed=episode)
        chunk = policy.act({"state": arrays["state"][episode * 20]})
        assert chunk.shape == (4, 1)
        errors.append(np.abs(chunk - arrays["action"][episode * 20]).mean())
    spread = np.abs(arrays["action"] - arrays["action"].mean()).mean()  # what ignoring the state costs (~1)
    assert np.mean(errors) < 0.5 * spread


def test_policy_folder_round_trip_through_the_chunk_runner(trained, tmp_path):
    learner, arrays, _ = trained
    policy = learner.export(tmp_path / "policy", {"method": "diffusion_policy", "env_id": None})
    loaded = load_policy(tmp_path / "policy", runtime="torch")
    config = json.loads((tmp_path / "policy" / "config.json").read_text())
    assert config["type"] == "diffusion_policy" and loaded.meta["method"] == "diffusion_policy"
    assert config["schedule"]["alphas_cumprod"] == pytest.approx(
        schedulers(learner.config)[0].alphas_cumprod.tolist()
    )
    observations = [{"state": arrays["state"][i]} for i in range(20, 30)]
    for p in (policy, loaded):
        p.reset(seed=7)
    assert np.allclose(policy.act(observations[0]), loaded.act(observations[0]), atol=1e-6)
    # through the chunk runner: 4 actions per decision, every observation of the steps between reaches the history
    loaded.reset(seed=1)
    chunker = ActionChunker(loaded, (1,))
    first = [chunker.next_action(o) for o in observations[:4]]
    assert [f["state"][1] for f in loaded.history.frames] == pytest.approx(
        [observations[2]["state"][1], observations[3]["state"][1]]
    )
    chunker.next_action(observations[4])  # a new decision, conditioned on steps 3 and 4
    assert [f["state"][1] for f in loaded.history.frames] == pytest.approx(
        [observations[3]["state"][1], observations[4]["state"][1]]
    )
    assert np.shape(first) == (4, 1)


def test_onnx_sampler_equals_torch_and_runs_without_torch(trained, tmp_path):
    from embodia.policies.onnx_export import export_onnx

    learner, arrays, _ = trained
    folder = tmp_path / "policy"
    learner.export(folder, {"method": "diffusion_policy"})
    # the exporter's default tolerance, 1e-5, on the encoder, the denoiser and whole samples
    export_onnx(folder)
    record = json.loads((folder / "config.json").read_text())["onnx"]
    assert record["max_abs_diff"] <= 1e-5 and set(record["max_abs_diff_parts"]) == {
        "encoder",
        "denoiser",
        "sample",
    }
    onnx_policy, torch_policy = load_policy(folder, runtime="onnx"), load_policy(folder, runtime="torch")
    assert isinstance(onnx_policy, OnnxDiffusionPolicy)
    for p in (onnx_policy, torch_policy):
        p.reset(seed=3)
    for i in range(3):  # same seed -> same noise stream in both runtimes
        obs = {"state": arrays["state"][40 + i]}
        assert onnx_policy.act(obs) == pytest.approx(torch_policy.act(obs), abs=1e-4)
    # the robot install (Python 3.12, embodia[robot]: onnxruntime, no torch, no diffusers) runs the folder
    code = (
        "import sys, json\nimport numpy as np\nfrom embodia.core.policy import load_policy\n"
        f"p = load_policy({str(folder)!r})\np.reset(seed=3)\n"
        f"chunk = p.act({{'state': np.array({arrays['state'][40].tolist()})}}).tolist()\n"
        f"print(type(p).__name__, json.dumps([[m for m in {HEAVY + ('diffusers',)!r} if m in sys.modules], chunk]))\n"
    )
    result = run_robot_python(code)
    assert result.returncode == 0, result.stderr
    name, values = result.stdout.strip().splitlines()[-1].split(" ", 1)
    heavy, chunk = json.loads(values)
    assert name == "OnnxDiffusionPolicy" and heavy == []
    onnx_policy.reset(seed=3)
    assert np.array(chunk) == pytest.approx(onnx_policy.act({"state": arrays["state"][40]}), abs=1e-6)


def test_camera_observations_train_save_and_export(tmp_path):
    """One camera (its own small CNN) and a state key: a few updates, the folder, the ONNX check."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    n = 40
    arrays = {
        "rgb": rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8),
        "state": rng.normal(size=(n, 3)).astype(np.float32),
        "action": rng.uniform(-1, 1, (n, 2)).astype(np.float32),
    }
    cfg = DiffusionPolicyConfig(**SMALL, image_keys=("rgb",), state_keys=("state",), shift=2)
    sampler = WindowSampler(
        arrays, horizon=DiffusionPolicy.window_for(cfg), episode_ends=np.array([20, 40]), seed=0
    )
    learner = DiffusionPolicy(cfg, DiffusionPolicy.fit_normalizer_for(cfg, sampler), action_dim=2, seed=0)
    before = [p.detach().clone() for p in learner.model.observations.cameras[0].parameters()]
    for _ in range(3):
        learner.update(learner.sample(sampler, 8))
    after = list(learner.model.observations.cameras[0].parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, before))  # the camera CNN trains end to end
    learner.export(tmp_path / "p", {})
    from embodia.policies.onnx_export import export_onnx

    export_onnx(tmp_path / "p", atol=1e-4)
    config = json.loads((tmp_path / "p" / "config.json").read_text())
    assert config["onnx"]["inputs"]["rgb"] == [2, 64, 64, 3]
    obs = {"rgb": rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), "state": arrays["state"][0]}
    chunks = []
    for runtime in ("torch", "onnx"):
        p = load_policy(tmp_path / "p", runtime=runtime)
        p.reset(seed=0)
        chunks.append(p.act(obs))
    assert chunks[0].shape == (4, 2) and chunks[0] == pytest.approx(chunks[1], abs=1e-4)


def test_normalisation_maps_to_the_unit_box_and_only_centres_constant_dimensions():
    rng = np.random.default_rng(0)
    arrays = {
        "state": np.stack([rng.uniform(2, 6, 40), np.full(40, 3.0)], 1).astype(np.float32),
        "action": np.stack([rng.uniform(-5, 1, 40), np.full(40, 0.25)], 1).astype(np.float32),
    }
    learner, sampler = _learner(arrays, np.array([20, 40]))
    batch = learner.sample(sampler, 16)
    x = learner.model.normalize_actions(batch["action"])
    assert x[..., 0].min() >= -1 and x[..., 0].max() <= 1 and torch.all(x[..., 1] == 0)
    assert learner.model.unnormalize_actions(x) == pytest.approx(batch["action"], abs=1e-5)
    states = learner.model.observations({"state": batch["obs"]["state"]}).reshape(16, 2, 2)
    assert states[..., 0].abs().max() <= 1 + 1e-6 and torch.all(states[..., 1] == 0)
    arrays["state"][0, 1] = 3.001  # a range of 1e-3 (>= 1e-4) is scaled into [-1, 1] again
    learner, sampler = _learner(arrays, np.array([20, 40]))
    row = learner.model.observations({"state": torch.from_numpy(arrays["state"][:1])[:, None]})
    assert float(row[0, 1]) == pytest.approx(
        0.5, abs=0.01
    )  # (3.001 - 3.0005) / 0.001 (ObsNormalizer's floor)
