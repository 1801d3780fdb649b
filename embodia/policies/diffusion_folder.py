"""Diffusion Policy folders (``"type": "diffusion_policy"``): writing, loading, NumPy DDIM, ONNX export.

A folder (:func:`save_diffusion_policy`) holds config.json (the network's shape, the noise schedule's
``alphas_cumprod``, the action limits) and model.safetensors (the EMA weights of
:class:`~embodia.policies.diffusion_policy.DiffusionActor`). It loads
with :func:`embodia.load_policy` like every other folder and runs through the one chunk runner
(:mod:`embodia.core.chunks`): ``act`` returns the ``T_a`` actions to execute, and ``observe`` receives the
observations of the steps in between, so the policy always conditions on the last ``T_o`` observations
(:class:`ObservationHistory`; the first observation of an episode is repeated, as the training windows repeat
it at an episode's start).

``embodia export PATH --onnx`` (:func:`export_diffusion_onnx`) writes two graphs: ``encoder.onnx`` (the
observation history to the condition vector ``c``: state normalisation and camera CNNs) and ``model.onnx``
(the denoiser ``eps_theta(A^k, k, c)``, the noise-prediction U-Net). The sampling loop is NumPy
(:func:`ddim_sample`), the DDIM update of diffusers' ``DDIMScheduler`` (eta 0, "leading" timesteps,
``set_alpha_to_one``) written from the schedule's ``alphas_cumprod``:

    k_i = (S - 1 - i) * (K // S),   x0 = clip((x - sqrt(1 - abar_k) eps) / sqrt(abar_k), -1, 1),
    x <- sqrt(abar_{k - K//S}) x0 + sqrt(1 - abar_{k - K//S}) eps          (abar_{<0} = 1)

The export checks the denoiser graph against torch, and the whole NumPy + ONNX sampler against torch +
diffusers from the same initial noise, and refuses the model above ``atol``. This module imports no torch
(a torch-free robot install imports it to find the folder type); loading with runtime ``"torch"`` and
exporting do.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from embodia.core.errors import PolicyError
from embodia.core.policy import register_policy_type
from embodia.policies.actor_policy import ONNX_FILE, actor_meta, auto_runtime, file_sha256, torch_available

if TYPE_CHECKING:
    from embodia.policies.diffusion_policy import DiffusionActor, DiffusionPolicyConfig

#: the observation-encoder graph an export writes beside model.onnx (the denoiser)
ENCODER_ONNX_FILE = "encoder.onnx"
#: config.json keys that describe the folder's format (the rest is metadata: method, env_id, ...)
FORMAT_KEYS = (
    "type", "state_keys", "state_sizes", "image_keys", "encoders", "freeze_encoder", "token_channels", "action_dim",
    "horizon", "n_obs_steps", "n_action_steps", "down_dims", "kernel_size", "n_groups", "step_embed_dim",
    "num_inference_steps", "schedule", "action_low", "action_high", "onnx",
)  # fmt: skip


class ObservationHistory:
    """The last ``n_obs_steps`` observations of the keys a policy reads, padded at an episode's start by
    repeating its first observation."""

    def __init__(self, image_keys: Sequence[str], state_keys: Sequence[str], n_obs_steps: int) -> None:
        self.image_keys, self.state_keys = list(image_keys), list(state_keys)
        self.frames: deque[dict[str, np.ndarray]] = deque(maxlen=int(n_obs_steps))

    def clear(self) -> None:
        self.frames.clear()

    def append(self, obs: Mapping[str, Any]) -> None:
        keys = [*self.image_keys, *self.state_keys]
        missing = [k for k in keys if k not in obs]
        if missing:
            raise PolicyError(f"policy needs observation keys {keys}, the environment gives {sorted(obs)}")
        frame = {k: np.asarray(obs[k], dtype=np.float32).reshape(-1) for k in self.state_keys}
        for key in self.image_keys:
            image = np.asarray(obs[key])
            if image.ndim != 3 or image.shape[-1] != 3:
                raise PolicyError(f"observation {key!r} should be (H, W, 3) images, got {image.shape}")
            frame[key] = image.astype(np.uint8, copy=False)
        if not self.frames:
            self.frames.extend([frame] * self.frames.maxlen)  # type: ignore[operator]
        else:
            self.frames.append(frame)

    def stacked(self) -> dict[str, np.ndarray]:
        """``(1, T_o, ...)`` per key, oldest first."""
        if not self.frames:
            raise PolicyError("no observation yet: act(obs) first")
        keys = [*self.image_keys, *self.state_keys]
        return {k: np.ascontiguousarray(np.stack([f[k] for f in self.frames])[None]) for k in keys}


def ddim_timesteps(num_train_timesteps: int, steps: int) -> np.ndarray:
    """diffusers' DDIM timesteps ("leading" spacing, steps_offset 0): ``(S - 1 - i) * (K // S)``."""
    return (np.arange(steps, dtype=np.int64) * (num_train_timesteps // steps))[::-1].copy()


def ddim_step(
    eps: np.ndarray, k: int, x: np.ndarray, alphas_cumprod: np.ndarray, stride: int, clip: bool = True
) -> np.ndarray:
    """One DDIM update (eta 0) from step ``k`` to ``k - stride`` (the module docstring's equations)."""
    abar = alphas_cumprod[k]
    abar_prev = alphas_cumprod[k - stride] if k - stride >= 0 else 1.0
    x0 = (x - np.sqrt(1.0 - abar) * eps) / np.sqrt(abar)
    if clip:
        x0 = np.clip(x0, -1.0, 1.0)
    return (np.sqrt(abar_prev) * x0 + np.sqrt(1.0 - abar_prev) * eps).astype(np.float32)


def ddim_sample(
    denoise: Callable[[np.ndarray, np.ndarray], np.ndarray],
    noise: np.ndarray,
    alphas_cumprod: np.ndarray,
    steps: int,
    clip: bool = True,
) -> np.ndarray:
    """DDIM from ``noise`` ``(B, T_p, A)`` with ``denoise(x, k) -> eps`` (``k``: int64 ``(B,)``)."""
    alphas_cumprod = np.asarray(alphas_cumprod, dtype=np.float64)
    total = len(alphas_cumprod)
    x = np.asarray(noise, dtype=np.float32)
    for k in ddim_timesteps(total, steps):
        eps = denoise(x, np.full(len(x), k, dtype=np.int64))
        x = ddim_step(
            eps.astype(np.float64), int(k), x.astype(np.float64), alphas_cumprod, total // steps, clip
        )
    return x


class OnnxDiffusionPolicy:
    """``act(obs)``: the observation history through ``encoder.onnx``, DDIM in NumPy over ``model.onnx``,
    the ``T_a`` actions to execute (no torch, no diffusers)."""

    #: keeps the last T_o observations of its episode (``embodia.core.policy.is_stateful``)
    stateful = True

    def __init__(self, folder: Path, config: Mapping[str, Any], threads: int = 1) -> None:
        from embodia.policies.onnx_policy import inference_session, onnx_model_path

        model = onnx_model_path(folder, config)
        encoder = folder / str(config["onnx"].get("encoder_file", ENCODER_ONNX_FILE))
        if not encoder.is_file():
            raise PolicyError(
                f"{str(folder)!r} has no {encoder.name}; run `embodia export {folder} --onnx` again"
            )
        self.denoiser, self.encoder = inference_session(model, threads), inference_session(encoder, threads)
        self.image_keys, self.state_keys = list(config["image_keys"]), list(config["state_keys"])
        self.n_obs_steps, self.horizon = int(config["n_obs_steps"]), int(config["horizon"])
        self.n_action_steps, self.action_dim = int(config["n_action_steps"]), int(config["action_dim"])
        self.steps = int(config["num_inference_steps"])
        schedule = config["schedule"]
        self.alphas_cumprod = np.asarray(schedule["alphas_cumprod"], dtype=np.float64)
        self.clip = bool(schedule["clip_sample"])
        self.low = np.asarray(config["action_low"], dtype=np.float32)
        self.high = np.asarray(config["action_high"], dtype=np.float32)
        self.history = ObservationHistory(self.image_keys, self.state_keys, self.n_obs_steps)
        self.chunk_size = self.n_action_steps
        self.execute_steps = int(config.get("execute_steps") or self.n_action_steps)
        self.meta = actor_meta({k: v for k, v in config.items() if k not in FORMAT_KEYS})
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.history.clear()
        if seed is not None:
            self.rng = np.random.default_rng(int(seed))

    def observe(self, obs: Mapping[str, Any]) -> None:
        """Remember an observation of a step the chunk runner did not re-plan at."""
        self.history.append(obs)

    def sample(self, stacked: Mapping[str, np.ndarray], noise: np.ndarray) -> np.ndarray:
        """Normalised action sequences ``(B, T_p, A)`` from the observation histories and initial noise."""
        (cond,) = self.encoder.run(["global_cond"], dict(stacked))

        def denoise(x: np.ndarray, k: np.ndarray) -> np.ndarray:
            (eps,) = self.denoiser.run(["epsilon"], {"sample": x, "timestep": k, "global_cond": cond})
            return eps

        return ddim_sample(denoise, noise, self.alphas_cumprod, self.steps, self.clip)

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        self.history.append(obs)
        noise = self.rng.standard_normal((1, self.horizon, self.action_dim)).astype(np.float32)
        x = self.sample(self.history.stacked(), noise)
        actions = (x + 1.0) / 2.0 * (self.high - self.low) + self.low
        first = self.n_obs_steps - 1
        return actions[0, first : first + self.n_action_steps].astype(np.float32)


# --- writing and loading folders; the policy with torch ----------------------------------------------


def save_diffusion_policy(
    folder: str | Path, actor: DiffusionActor, config: DiffusionPolicyConfig, meta: dict[str, Any] | None = None,
    state_sizes: list[int] | None = None,
) -> Path:  # fmt: skip
    """Write a ``"diffusion_policy"`` folder: weights first, then config.json (each replaced atomically).

    config.json also records the schedule's ``alphas_cumprod`` and the action limits, which the NumPy
    sampler of a torch-free install reads (:class:`OnnxDiffusionPolicy`).
    """
    from safetensors.torch import save_file

    from embodia.perception.pixel_observations import encoder_description
    from embodia.policies.diffusion_policy import schedulers

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ddpm, _ = schedulers(config)
    obs = actor.observations
    sizes = (
        state_sizes if state_sizes is not None else ([int(obs.state_mean.numel())] if obs.state_keys else [])
    )
    description = {
        "type": "diffusion_policy",
        "state_keys": obs.state_keys,
        "state_sizes": dict(zip(obs.state_keys, (int(n) for n in sizes))),
        "image_keys": obs.image_keys,
        "encoders": [encoder_description(cam.encoder) for cam in obs.cameras],
        "freeze_encoder": config.freeze_encoder,
        "token_channels": config.token_channels,
        "action_dim": actor.action_dim,
        "horizon": config.horizon,
        "n_obs_steps": config.n_obs_steps,
        "n_action_steps": config.n_action_steps,
        "execute_steps": config.execute_steps,
        "down_dims": list(config.down_dims),
        "kernel_size": config.kernel_size,
        "n_groups": config.n_groups,
        "step_embed_dim": config.step_embed_dim,
        "num_inference_steps": config.num_inference_steps,
        "schedule": {
            "num_train_timesteps": config.num_train_timesteps,
            "beta_schedule": config.beta_schedule,
            "beta_start": config.beta_start,
            "beta_end": config.beta_end,
            "clip_sample": config.clip_sample,
            "alphas_cumprod": [float(a) for a in ddpm.alphas_cumprod],
        },
        "action_low": actor.action_low.tolist(),
        "action_high": actor.action_high.tolist(),
        **dict(meta or {}),
    }
    tensors = {k: v.detach().contiguous() for k, v in actor.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors.tmp"))
    (folder / "config.json.tmp").write_text(json.dumps(description, indent=2, default=str))
    for stale in (ONNX_FILE, ENCODER_ONNX_FILE):  # exported from earlier weights
        (folder / stale).unlink(missing_ok=True)
    os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
    os.replace(folder / "config.json.tmp", folder / "config.json")
    return folder


def config_from_folder(config: dict[str, Any]) -> DiffusionPolicyConfig:
    """The network-shaping fields of a folder's config.json as a ``DiffusionPolicyConfig``."""
    from embodia.policies.diffusion_policy import DiffusionPolicyConfig

    schedule = config["schedule"]
    return DiffusionPolicyConfig(
        horizon=config["horizon"], n_obs_steps=config["n_obs_steps"], n_action_steps=config["n_action_steps"],
        state_keys=tuple(config["state_keys"]), image_keys=tuple(config["image_keys"]),
        freeze_encoder=config["freeze_encoder"], token_channels=config["token_channels"],
        down_dims=tuple(config["down_dims"]), kernel_size=config["kernel_size"], n_groups=config["n_groups"],
        step_embed_dim=config["step_embed_dim"], num_inference_steps=config["num_inference_steps"],
        num_train_timesteps=schedule["num_train_timesteps"], beta_schedule=schedule["beta_schedule"],
        beta_start=schedule["beta_start"], beta_end=schedule["beta_end"], clip_sample=schedule["clip_sample"],
        execute_steps=config.get("execute_steps"),
    )  # fmt: skip


def load_torch_actor(folder: Path, config: dict[str, Any]) -> tuple[DiffusionActor, DiffusionPolicyConfig]:
    """The folder's network with its weights, and its config."""
    import torch
    from safetensors.torch import load_file

    from embodia.perception.pixel_observations import encoder_from_description
    from embodia.policies.diffusion_policy import build_actor

    cfg = config_from_folder(config)
    state_dim = sum(int(config["state_sizes"][k]) for k in cfg.state_keys)
    encoders = [encoder_from_description(spec) for spec in config["encoders"]]
    actor = build_actor(
        cfg, int(config["action_dim"]), torch.zeros(state_dim), torch.ones(state_dim), encoders
    )
    actor.load_state_dict(load_file(str(folder / "model.safetensors")))
    return actor.eval(), cfg


class TorchDiffusionPolicy:
    """``act(obs)``: the last ``T_o`` observations through DDIM (torch + diffusers); ``T_a`` actions.

    Noise comes from a NumPy generator seeded at ``reset(seed)``, the same stream as the ONNX policy's, so
    both runtimes give the same chunks for the same seed (up to float rounding)."""

    #: keeps the last T_o observations of its episode (``embodia.core.policy.is_stateful``)
    stateful = True

    def __init__(
        self, actor: DiffusionActor, config: DiffusionPolicyConfig, meta: dict[str, Any] | None = None
    ):
        from embodia.policies.diffusion_policy import schedulers

        self.actor, self.config = actor.eval(), config
        self.history = ObservationHistory(config.image_keys, config.state_keys, config.n_obs_steps)
        self.chunk_size = config.n_action_steps
        self.execute_steps = config.execute_steps or config.n_action_steps
        self.meta = dict(meta or {})
        _, self.ddim = schedulers(config)
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.history.clear()
        if seed is not None:
            self.rng = np.random.default_rng(int(seed))

    def observe(self, obs: dict[str, Any]) -> None:
        """Remember an observation of a step the chunk runner did not re-plan at."""
        self.history.append(obs)

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        import torch

        self.history.append(obs)
        stacked = {k: torch.from_numpy(v) for k, v in self.history.stacked().items()}
        noise = self.rng.standard_normal((1, self.config.horizon, self.actor.action_dim)).astype(np.float32)
        x = self.actor.sample(stacked, torch.from_numpy(noise), self.ddim, self.config.num_inference_steps)
        first = self.config.n_obs_steps - 1
        return self.actor.unnormalize_actions(x)[0, first : first + self.config.n_action_steps].numpy()


def load_diffusion_policy(folder: Path, runtime: str = "auto") -> Any:
    """Load a ``"diffusion_policy"`` folder with torch (``TorchDiffusionPolicy``) or ONNX Runtime
    (:class:`OnnxDiffusionPolicy`); ``runtime``: ``"torch"``, ``"onnx"`` or ``"auto"``."""
    config = json.loads((folder / "config.json").read_text())
    if runtime == "auto":
        runtime = auto_runtime(folder, config)
    if runtime == "onnx":
        return OnnxDiffusionPolicy(folder, config)
    if not torch_available():
        raise PolicyError(
            f"runtime 'torch' needs torch, which is not installed; load {str(folder)!r} with runtime='onnx' "
            f"(after `embodia export {folder} --onnx` on a machine with torch)"
        )
    if not (folder / "model.safetensors").is_file():
        raise PolicyError(f"{folder} has config.json but no model.safetensors; the export was interrupted")
    try:
        actor, cfg = load_torch_actor(folder, config)
    except (KeyError, RuntimeError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise PolicyError(f"{folder} is not a loadable diffusion policy: {first}") from None
    return TorchDiffusionPolicy(
        actor, cfg, actor_meta({k: v for k, v in config.items() if k not in FORMAT_KEYS})
    )


register_policy_type("diffusion_policy", load_diffusion_policy)


# --- export ---------------------------------------------------------------------------------------------


def _check_observations(config: Mapping[str, Any], rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``rows`` observation histories: states inside and beyond the dataset's range, random images."""
    rng = np.random.default_rng(seed)
    steps, out = int(config["n_obs_steps"]), {}
    for key in config["image_keys"]:
        size = int(config["onnx_image_size"])
        out[key] = rng.integers(0, 256, (rows, steps, size, size, 3), dtype=np.uint8)
    for key in config["state_keys"]:
        n = int(config["state_sizes"][key])
        out[key] = rng.uniform(-3.0, 3.0, (rows, steps, n)).astype(np.float32)
    return out


def export_diffusion_onnx(folder: Path, *, check: bool = True, atol: float = 1e-4, samples: int = 8) -> Path:
    """Write ``model.onnx`` (the denoiser) and ``encoder.onnx`` beside config.json and record them there.

    ``check``: the denoiser's outputs against torch on random inputs, and the NumPy + ONNX sampler against
    torch + diffusers (:meth:`DiffusionActor.sample`) from the same initial noise, ``samples`` observation
    histories; either differing by more than ``atol`` refuses the export.

    Raises:
        PolicyError: a folder torch cannot load or export, or outputs beyond ``atol``.
    """
    import torch

    from embodia.policies.onnx_export import OPSET, _quiet

    weights_sha256 = file_sha256(folder / "model.safetensors")
    policy = load_diffusion_policy(folder, "torch")
    assert isinstance(policy, TorchDiffusionPolicy)
    config = json.loads((folder / "config.json").read_text())
    actor = policy.actor
    observations = actor.observations
    keys = [*observations.image_keys, *observations.state_keys]
    image_size = int(observations.cameras[0].encoder.image_size) if observations.cameras else 0
    check_obs = _check_observations({**config, "onnx_image_size": image_size}, max(2, samples))

    class EncoderGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.observations = observations

        def forward(self, *values: torch.Tensor) -> torch.Tensor:
            return self.observations(dict(zip(keys, values)))

    class DenoiserGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unet = actor.unet

        def forward(
            self, sample: torch.Tensor, timestep: torch.Tensor, global_cond: torch.Tensor
        ) -> torch.Tensor:
            return self.unet(sample, timestep, global_cond)

    encoder_graph, denoiser_graph = EncoderGraph().eval(), DenoiserGraph().eval()
    batch = torch.export.Dim("batch")
    cond_dim, horizon, action_dim = observations.dim, int(config["horizon"]), actor.action_dim
    dims = {0: batch}  # batch 2 in the examples: sizes 0 and 1 would be specialised
    graphs = [  # (module, examples, dynamic shapes, input names, output names, file); the encoder takes *values
        (encoder_graph, tuple(torch.from_numpy(check_obs[k][:2]) for k in keys), (tuple(dims for _ in keys),), keys,
         ["global_cond"], ENCODER_ONNX_FILE),
        (denoiser_graph, (torch.zeros(2, horizon, action_dim), torch.zeros(2, dtype=torch.int64), torch.zeros(2, cond_dim)),
         (dims, dims, dims), ["sample", "timestep", "global_cond"], ["epsilon"], ONNX_FILE),
    ]  # fmt: skip
    tmps = [folder / f"{name}.tmp" for *_, name in graphs]
    try:
        for (module, examples, dynamic, names, outputs, _), tmp in zip(graphs, tmps):
            try:
                with _quiet(), torch.no_grad():
                    program = torch.onnx.export(
                        module, examples, dynamo=True, opset_version=OPSET, input_names=names, output_names=outputs,
                        dynamic_shapes=dynamic, optimize=True, verbose=False,
                    )  # fmt: skip
                    program.save(str(tmp), external_data=False)
            except Exception as error:
                first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                raise PolicyError(
                    f"torch could not export the diffusion policy: {type(error).__name__}: {first}"
                ) from None
        diffs = _compare(policy, folder, tmps, check_obs) if check else None
        if diffs is not None and not max(diffs.values()) <= atol:
            raise PolicyError(
                f"the ONNX sampler differs from torch by up to {max(diffs.values()):.3g} (> atol {atol:g}; {diffs}); "
                "model.onnx not written, pass a larger atol (--atol) if that is acceptable"
            )
        for (*_, name), tmp in zip(graphs, tmps):
            os.replace(tmp, folder / name)
    finally:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
    config["onnx"] = {
        "file": ONNX_FILE,
        "encoder_file": ENCODER_ONNX_FILE,
        "opset": OPSET,
        "max_abs_diff": None if diffs is None else max(diffs.values()),
        "max_abs_diff_parts": diffs,
        "atol": atol if check else None,
        "inputs": {k: list(v.shape[1:]) for k, v in check_obs.items()},
        "sampler": "numpy DDIM (eta 0) over model.onnx (epsilon), encoder.onnx (global_cond)",
        "exporter": f"torch {torch.__version__} (dynamo)",
        "weights_sha256": weights_sha256,
    }
    tmp = folder / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2, default=str))
    os.replace(tmp, folder / "config.json")
    return folder / ONNX_FILE


def _compare(
    policy: Any, folder: Path, models: list[Path], check_obs: dict[str, np.ndarray]
) -> dict[str, float]:
    """Largest differences: the encoder's condition, the denoiser's noise, and whole DDIM samples."""
    import torch

    from embodia.policies.onnx_policy import inference_session

    actor, cfg = policy.actor, policy.config
    encoder, denoiser = (inference_session(m, threads=1) for m in models)
    rng = np.random.default_rng(1)
    rows = len(next(iter(check_obs.values())))
    noise = rng.standard_normal((rows, cfg.horizon, actor.action_dim)).astype(np.float32)
    torch_obs = {k: torch.from_numpy(v) for k, v in check_obs.items()}
    with torch.no_grad():
        want_cond = actor.observations(torch_obs).numpy()
        k = rng.integers(0, cfg.num_train_timesteps, rows).astype(np.int64)
        want_eps = actor.unet(
            torch.from_numpy(noise), torch.from_numpy(k), torch.from_numpy(want_cond)
        ).numpy()
        want = actor.sample(torch_obs, torch.from_numpy(noise), policy.ddim, cfg.num_inference_steps).numpy()
    (cond,) = encoder.run(["global_cond"], check_obs)
    (eps,) = denoiser.run(["epsilon"], {"sample": noise, "timestep": k, "global_cond": want_cond})

    def denoise(x: np.ndarray, steps: np.ndarray) -> np.ndarray:
        return denoiser.run(["epsilon"], {"sample": x, "timestep": steps, "global_cond": cond})[0]

    config = json.loads((folder / "config.json").read_text())
    got = ddim_sample(
        denoise,
        noise,
        np.asarray(config["schedule"]["alphas_cumprod"]),
        cfg.num_inference_steps,
        cfg.clip_sample,
    )
    diffs = {
        "encoder": np.abs(cond - want_cond),
        "denoiser": np.abs(eps - want_eps),
        "sample": np.abs(got - want),
    }
    return {name: float(d.max()) if np.isfinite(d).all() else float("inf") for name, d in diffs.items()}
