"""Three small vision teachers for VER, trained here on labelled simulator frames with different objectives.

VER distils several frozen vision foundation models into one mixture-of-experts student. No pretrained
weights can be downloaded here, so the teachers are small CNNs trained on frames of
``embodia/Visual-CubeSingle-v0`` (:mod:`embodia.perception.datasets`) with objectives chosen to make them
disagree: dense geometry, instance discrimination, and task state. Each implements the
:class:`~embodia.perception.encoders.ImageEncoder` protocol (64x64 input normalised with mean = std = 0.5;
``patches`` (B, N, D) = its last convolutional map, row-major; ``pooled`` (B, D) = their mean, except the
state teacher's, a learned linear map of the whole grid) and is saved
with :func:`embodia.perception.encoder_io.save_encoder` (``kind`` + ``encoder_config()``).

- :class:`GeometryTeacher` (``teacher-geometry``): a 16x16 grid encoder and a light decoder predicting
  depth and segmentation (multi-task dense prediction)::

      L = mean |log d_hat - log d| + CE(s_hat, s)          (4 classes, pixel-wise)

- :class:`ContrastiveTeacher` (``teacher-contrastive``): an 8x8 grid encoder trained with SimCLR's NT-Xent
  (Chen et al., "A Simple Framework for Contrastive Learning of Visual Representations", ICML 2020,
  arXiv:2002.05709) between two augmentations (pad + random crop, colour jitter, pixel noise) of each
  frame; z = g(pooled), an MLP projection head discarded after training; for the 2B views::

      l(i, j) = -log exp(cos(z_i, z_j) / tau) / sum_{k != i} exp(cos(z_i, z_k) / tau),   tau = 0.1
      L = 1/(2B) sum over positive pairs (i, j) and (j, i)

- :class:`StateTeacher` (``teacher-state``): an 8x8 grid encoder (5x5 stem) regressing the cube and
  effector positions and the gripper opening (standardised targets y, MSE) and classifying the phase::

      pooled = P vec(map),   L = mean ||W pooled + b - (y - mu) / sigma||^2 + CE(V pooled + c, phase)

Held-out metrics (:func:`evaluate_teacher`, the last 10 % of the frames): depth L1 in metres and
segmentation pixel accuracy; top-1 retrieval accuracy between two augmented views (cosine of the
centred pooled features: view 1 of frame i must be nearest to view 2 of frame i; ``_near`` also counts a
frame of the same episode at most 4 steps away, as consecutive frames differ by ~1 grey level); state R^2
(mean over the 7 targets) and phase accuracy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from embodia.core.errors import EmbodiaError
from embodia.perception.datasets import LabelledFrames
from embodia.perception.encoders import EncoderOutput, prepare

TEACHERS = ("geometry", "contrastive", "state")
OBJECTIVES = {
    "geometry": "depth (log L1) + segmentation (CE)",
    "contrastive": "SimCLR NT-Xent, tau=0.1",
    "state": "state MSE + phase CE",
}
HELDOUT_FRACTION = 0.1


class TeacherError(EmbodiaError):
    """An unknown teacher kind or an unusable training configuration."""


def _block(cin: int, cout: int, stride: int, kernel: int = 3) -> list[nn.Module]:
    return [
        nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2),
        nn.GroupNorm(8, cout),
        nn.GELU(),
    ]


class _Teacher(nn.Module):
    """Shared ImageEncoder plumbing: ``self.encoder`` maps (B, 3, 64, 64) to a (B, D, grid, grid) map."""

    image_size = 64
    mean = (0.5, 0.5, 0.5)
    std = (0.5, 0.5, 0.5)
    encoder: nn.Module

    def feature_map(self, images: torch.Tensor) -> torch.Tensor:
        return self.encoder(images)

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        tokens = self.feature_map(images).flatten(2).transpose(1, 2)
        return EncoderOutput(tokens, tokens.mean(dim=1))


class GeometryTeacher(_Teacher):
    """Depth + segmentation teacher: 3 conv blocks (two stride 2) to a 16x16 map of ``dim`` channels, and a
    decoder (1x1 conv, 2x upsampling, 3x3 conv, 1x1 conv to 1 + 4 channels at 32x32, bilinear to 64x64)."""

    kind = "teacher-geometry"

    def __init__(self, dim: int = 64, width: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.dim, self.width, self.classes = int(dim), int(width), int(classes)
        self.grid = self.image_size // 4
        self.encoder = nn.Sequential(
            *_block(3, width, 2), *_block(width, dim, 2), nn.Conv2d(dim, dim, 3, padding=1)
        )
        self.decoder = nn.Sequential(
            nn.Conv2d(dim, width, 1),
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            *_block(width, width, 1),
            nn.Conv2d(width, 1 + classes, 1),
        )

    def encoder_config(self) -> dict[str, int]:
        return {"dim": self.dim, "width": self.width, "classes": self.classes}

    def predict(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 64, 64) log depth (log metres) and (B, classes, 64, 64) segmentation logits."""
        out = self.decoder(F.gelu(self.feature_map(images)))
        out = F.interpolate(out, size=(self.image_size,) * 2, mode="bilinear", align_corners=False)
        return out[:, 0], out[:, 1:]


class ContrastiveTeacher(_Teacher):
    """SimCLR teacher: 4 conv blocks (three stride 2) of widths ``width``, 2 ``width``, ``dim``, ``dim`` to an
    8x8 map. The projection head lives in :func:`train_teacher` and is discarded."""

    kind = "teacher-contrastive"

    def __init__(self, dim: int = 96, width: int = 32) -> None:
        super().__init__()
        self.dim, self.width = int(dim), int(width)
        self.grid = self.image_size // 8
        self.encoder = nn.Sequential(
            *_block(3, width, 2), *_block(width, 2 * width, 2), *_block(2 * width, dim, 2),
            nn.Conv2d(dim, dim, 3, padding=1),
        )  # fmt: skip

    def encoder_config(self) -> dict[str, int]:
        return {"dim": self.dim, "width": self.width}


STATE_TARGETS = ("cube_x", "cube_y", "cube_z", "effector_x", "effector_y", "effector_z", "gripper_opening")


class StateTeacher(_Teacher):
    """State teacher: a 5x5 stride-2 stem and 2 stride-2 3x3 blocks to an 8x8 map of ``dim`` channels (the
    patches); pooled = a learned linear map of the whole flattened map (positions must survive pooling to
    regress positions; a mean over cells would be nearly translation invariant); linear heads on the pooled
    vector predict the 7 standardised state targets and the 4 phase logits. The target mean and std are
    buffers set before training (:meth:`predict_state` returns metres)."""

    kind = "teacher-state"

    def __init__(self, dim: int = 64, width: int = 32, phases: int = 4) -> None:
        super().__init__()
        self.dim, self.width, self.phases = int(dim), int(width), int(phases)
        self.grid = self.image_size // 8
        self.encoder = nn.Sequential(
            *_block(3, width, 2, kernel=5), *_block(width, 48, 2), *_block(48, dim, 2),
            nn.Conv2d(dim, dim, 3, padding=1),
        )  # fmt: skip
        self.pool = nn.Linear(self.grid * self.grid * dim, dim)
        self.state_head = nn.Linear(dim, len(STATE_TARGETS))
        self.phase_head = nn.Linear(dim, phases)
        self.register_buffer("target_mean", torch.zeros(len(STATE_TARGETS)))
        self.register_buffer("target_std", torch.ones(len(STATE_TARGETS)))

    def encoder_config(self) -> dict[str, int]:
        return {"dim": self.dim, "width": self.width, "phases": self.phases}

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        grid = self.feature_map(images)
        pooled = self.pool(F.gelu(grid).flatten(1))  # where things are matters: no mean over positions
        return EncoderOutput(grid.flatten(2).transpose(1, 2), pooled)

    def heads(self, pooled: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Standardised state predictions (B, 7) and phase logits (B, phases)."""
        return self.state_head(pooled), self.phase_head(pooled)

    def predict_state(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """State in physical units (B, 7) (see ``STATE_TARGETS``) and phase logits."""
        z, logits = self.heads(self(images).pooled)
        return z * self.target_std + self.target_mean, logits


_CLASSES = {"geometry": GeometryTeacher, "contrastive": ContrastiveTeacher, "state": StateTeacher}


@dataclass
class TeacherTrainConfig:
    """Optimisation of one teacher."""

    steps: int = 400
    """Adam steps."""
    batch_size: int = 64
    """Frames per step (the contrastive teacher sees two views of each)."""
    lr: float = 2e-3
    """Peak learning rate (cosine decay to 5 % of it)."""
    seed: int = 0
    """Seed of the initialisation, batches and augmentations."""
    log_every: int = 20
    """Steps between history entries (the last step is always logged)."""
    temperature: float = 0.1
    """NT-Xent temperature of the contrastive teacher."""


def state_targets(frames: LabelledFrames) -> np.ndarray:
    """(N, 7) float32 regression targets in ``STATE_TARGETS`` order."""
    return np.concatenate(
        [frames.cube_pos, frames.effector_pos, frames.gripper_opening[:, None]], axis=1
    ).astype(np.float32)


def split_frames(frames: LabelledFrames) -> tuple[LabelledFrames, LabelledFrames]:
    """Training frames and the held-out last ``HELDOUT_FRACTION`` (at least one frame each)."""
    n = len(frames)
    if n < 2:
        raise TeacherError(
            f"teachers need at least 2 frames (train + held-out), got {n}; render more episodes"
        )
    cut = min(n - 1, max(1, int(round(n * (1 - HELDOUT_FRACTION)))))
    return frames.subset(slice(0, cut)), frames.subset(slice(cut, n))


def augment(images01: torch.Tensor, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """SimCLR-style views of (B, 3, H, W) images in [0, 1]: random shift (replicate-pad + crop), brightness,
    contrast and per-channel gain jitter, Gaussian pixel noise (std 0.02); returns [0, 1] images."""
    b, _, h, w = images01.shape
    padded = F.pad(images01, (pad,) * 4, mode="replicate")
    dx = torch.randint(0, 2 * pad + 1, (b,), generator=generator)
    dy = torch.randint(0, 2 * pad + 1, (b,), generator=generator)
    rows = (dy[:, None] + torch.arange(h)[None]).view(b, 1, h, 1).expand(b, 3, h, w + 2 * pad)
    cols = (dx[:, None] + torch.arange(w)[None]).view(b, 1, 1, w).expand(b, 3, h, w)
    out = padded.gather(2, rows).gather(3, cols)
    rand = lambda *shape: torch.rand(*shape, generator=generator)  # noqa: E731
    brightness = 0.7 + 0.6 * rand(b, 1, 1, 1)
    gain = 0.85 + 0.3 * rand(b, 3, 1, 1)
    contrast = 0.7 + 0.6 * rand(b, 1, 1, 1)
    mean = out.mean(dim=(1, 2, 3), keepdim=True)
    out = (out - mean) * contrast + mean
    out = out * brightness * gain + 0.02 * torch.randn(out.shape, generator=generator)
    return out.clamp(0.0, 1.0)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """SimCLR's normalised-temperature cross-entropy over the 2B views (module docstring)."""
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    logits = z @ z.T / temperature
    logits.fill_diagonal_(float("-inf"))
    b = len(z1)
    target = torch.cat([torch.arange(b, 2 * b), torch.arange(b)])
    return F.cross_entropy(logits, target)


def _normalise(images01: torch.Tensor) -> torch.Tensor:
    return (images01 - 0.5) / 0.5


def _tensors(frames: LabelledFrames) -> dict[str, torch.Tensor]:
    return {
        "images01": torch.as_tensor(frames.rgb).permute(0, 3, 1, 2).float().div(255.0),
        "log_depth": torch.as_tensor(frames.depth).clamp_min(1e-3).log(),
        "segmentation": torch.as_tensor(frames.segmentation).long(),
        "state": torch.as_tensor(state_targets(frames)),
        "phase": torch.as_tensor(frames.phase).long(),
    }


def _loss(kind, model, head, batch, generator, config) -> dict[str, torch.Tensor]:
    if kind == "geometry":
        log_depth, seg_logits = model.predict(_normalise(batch["images01"]))
        depth = (log_depth - batch["log_depth"]).abs().mean()
        seg = F.cross_entropy(seg_logits, batch["segmentation"])
        return {"loss": depth + seg, "depth": depth, "seg": seg}
    if kind == "contrastive":
        v1 = _normalise(augment(batch["images01"], generator))
        v2 = _normalise(augment(batch["images01"], generator))
        loss = nt_xent(head(model(v1).pooled), head(model(v2).pooled), config.temperature)
        return {"loss": loss}
    z, logits = model.heads(model(_normalise(batch["images01"])).pooled)
    target = (batch["state"] - model.target_mean) / model.target_std
    mse = F.mse_loss(z, target)
    phase = F.cross_entropy(logits, batch["phase"])
    return {"loss": mse + phase, "mse": mse, "phase": phase}


def train_teacher(
    kind: str, frames: LabelledFrames, config: TeacherTrainConfig | None = None
) -> tuple[nn.Module, list[dict]]:
    """Train the ``kind`` teacher (one of ``TEACHERS``) on the first 90 % of ``frames``.

    Returns:
        The teacher (eval mode) and its history: ``{"step", "loss", ...loss terms}`` every ``log_every``
        steps; the last entry also has ``"heldout"`` (:func:`evaluate_teacher` on the last 10 %) and
        ``"seconds"`` (training time).
    """
    config = config or TeacherTrainConfig()
    if kind not in _CLASSES:
        raise TeacherError(f"unknown teacher {kind!r}; choose one of {', '.join(TEACHERS)}")
    if config.steps < 1 or config.batch_size < 2 or config.lr <= 0:
        raise TeacherError(f"teacher training needs steps >= 1, batch_size >= 2, lr > 0; got {config}")
    train, heldout = split_frames(frames)
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    model = _CLASSES[kind]()
    head = None
    if kind == "contrastive":
        head = nn.Sequential(nn.Linear(model.dim, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64))
    if kind == "state":
        y = torch.as_tensor(state_targets(train))
        model.target_mean.copy_(y.mean(0))
        model.target_std.copy_(y.std(0, unbiased=False).clamp_min(1e-3))
    params = list(model.parameters()) + (list(head.parameters()) if head is not None else [])
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(s, config.steps) / config.steps))
    )
    data = _tensors(train)
    n = len(train)
    history: list[dict] = []
    start = time.perf_counter()
    model.train()
    for step in range(1, config.steps + 1):
        if n >= config.batch_size:  # distinct frames (the contrastive negatives), else with replacement
            index = torch.randperm(n, generator=generator)[: config.batch_size]
        else:
            index = torch.randint(0, n, (config.batch_size,), generator=generator)
        batch = {key: value[index] for key, value in data.items()}
        terms = _loss(kind, model, head, batch, generator, config)
        optimizer.zero_grad(set_to_none=True)
        terms["loss"].backward()
        nn.utils.clip_grad_norm_(params, 5.0)
        optimizer.step()
        schedule.step()
        if step % config.log_every == 0 or step == config.steps or step == 1:
            history.append({"step": step, **{k: float(v.detach()) for k, v in terms.items()}})
    seconds = time.perf_counter() - start
    model.eval()
    history[-1]["heldout"] = evaluate_teacher(kind, model, heldout, seed=config.seed)
    history[-1]["seconds"] = seconds
    return model, history


@torch.no_grad()
def evaluate_teacher(kind: str, model: nn.Module, frames: LabelledFrames, seed: int = 0) -> dict[str, float]:
    """The teacher's held-out metrics on ``frames`` (module docstring)."""
    model.eval()
    data = _tensors(frames)
    x = _normalise(data["images01"])
    if kind == "geometry":
        log_depth, seg_logits = model.predict(x)
        depth = torch.as_tensor(frames.depth)
        return {
            "depth_l1_m": float((log_depth.exp() - depth).abs().mean()),
            "seg_pixel_acc": float((seg_logits.argmax(1) == data["segmentation"]).float().mean()),
            "cube_pixel_recall": _recall(seg_logits.argmax(1), data["segmentation"], 3),
        }
    if kind == "contrastive":
        generator = torch.Generator().manual_seed(seed + 1)
        h1 = model(_normalise(augment(data["images01"], generator))).pooled
        h2 = model(_normalise(augment(data["images01"], generator))).pooled
        centre = torch.cat([h1, h2]).mean(0)  # all frames share the scene: compare what differs
        h1, h2 = F.normalize(h1 - centre, dim=1), F.normalize(h2 - centre, dim=1)
        found = (h1 @ h2.T).argmax(1).numpy()
        same = found == np.arange(len(found))
        near = (frames.episode[found] == frames.episode) & (np.abs(frames.step[found] - frames.step) <= 4)
        return {
            "retrieval_top1": float(same.mean()),
            "retrieval_top1_near": float(near.mean()),
            "chance": 1.0 / len(found),
        }
    if kind == "state":
        from sklearn.metrics import r2_score

        state, logits = model.predict_state(x)
        target = data["state"].numpy()
        r2 = [float(r2_score(target[:, i], state[:, i].numpy())) for i in range(target.shape[1])]
        return {
            "state_r2": float(np.mean(r2)),
            **{f"r2_{name}": value for name, value in zip(STATE_TARGETS, r2, strict=True)},
            "phase_acc": float((logits.argmax(1) == data["phase"]).float().mean()),
        }
    raise TeacherError(f"unknown teacher {kind!r}; choose one of {', '.join(TEACHERS)}")


def _recall(pred: torch.Tensor, target: torch.Tensor, label: int) -> float:
    mask = target == label
    return float((pred[mask] == label).float().mean()) if mask.any() else float("nan")


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA (Kornblith et al., "Similarity of Neural Network Representations Revisited", ICML 2019,
    arXiv:1905.00414) of two (N, D1), (N, D2) feature sets: ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)
    with Xc, Yc column-centred."""
    x = np.asarray(x, dtype=np.float64) - np.mean(x, axis=0)
    y = np.asarray(y, dtype=np.float64) - np.mean(y, axis=0)
    cross = np.linalg.norm(y.T @ x) ** 2
    return float(cross / (np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)))


@torch.no_grad()
def pooled_features(model: nn.Module, rgb: np.ndarray, batch: int = 256) -> np.ndarray:
    """(N, D) pooled features of uint8 (N, 64, 64, 3) frames."""
    model.eval()
    out = [model(prepare(rgb[i : i + batch], model)).pooled for i in range(0, len(rgb), batch)]
    return torch.cat(out).numpy()
