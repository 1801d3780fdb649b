"""A small learned Embodied-IQA model: an image (and optionally its reference) in, the expected damage out.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) train IQA models on
scores that measure what a distortion does to an embodied agent (:mod:`.database`) instead of human opinion.
This is the small CNN trained here on such a database. With the distorted image ``x'`` and its reference
``x`` (both scaled to [-0.5, 0.5]):

    u = [x', x, x' - x]   (full reference, 9 channels)   or   u = x'   (no reference, 3 channels)
    f = CNN(u)            four 3x3 conv blocks (GroupNorm, GELU), three of them stride 2
    q = w . [mean_hw f ; max_hw f] + b        (global average and max pooling: diffuse and local damage)
    y_hat = mu + sigma q

``mu``, ``sigma`` are the training targets' mean and standard deviation (buffers saved with the weights);
training minimises ``mean (q - (y - mu) / sigma)^2`` with AdamW on random batches of the training indices.
The target ``y`` is one column of the database (``execution`` by default, or ``progress_drop``,
``cognition``, ``decision``, ``perception``); rows whose target is NaN are left out.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from embodia.core.errors import EmbodiaError
from embodia.perception.iqa.database import IQADatabase


class IQAModelError(EmbodiaError):
    """An IQA model folder that is not one, a bad target, or inputs the model cannot take (one line)."""


TARGETS = ("perception", "cognition", "decision", "execution", "progress_drop", "success", "progress")
"""Database columns a model can be trained to predict."""


@dataclass
class IQAModelConfig:
    """The model's shape and its training (saved as ``config.json`` next to the weights)."""

    with_reference: bool = True
    """Full reference: the input is the distorted image, its reference and their difference (9 channels);
    False: the distorted image alone (no-reference IQA)."""
    channels: int = 32
    """Width of the first conv block (the later blocks have twice as many)."""
    steps: int = 600
    """Optimiser steps."""
    batch_size: int = 64
    """Images per step."""
    lr: float = 2e-3
    """AdamW learning rate (cosine decay to 5 % over ``steps``)."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    seed: int = 0
    """Seeds the initial weights and the batches."""
    target: str = "execution"
    """The database column to predict (one of :data:`TARGETS`)."""
    image_size: int = 64
    """Side of the square images it was trained on (set by :func:`train_iqa`; scoring resizes to it)."""


class IQAModel(nn.Module):
    """The CNN of the module docstring; ``forward`` returns standardised scores, :func:`predict` real ones."""

    def __init__(self, config: IQAModelConfig) -> None:
        super().__init__()
        self.config = config
        c = int(config.channels)
        layers: list[nn.Module] = []
        widths = [9 if config.with_reference else 3, c, 2 * c, 2 * c, 2 * c]
        for i, stride in enumerate((2, 2, 2, 1)):
            layers += [
                nn.Conv2d(widths[i], widths[i + 1], 3, stride=stride, padding=1),
                nn.GroupNorm(8, widths[i + 1]),
                nn.GELU(),
            ]
        self.net = nn.Sequential(*layers)
        self.head = nn.Linear(4 * c, 1)
        self.register_buffer("target_mean", torch.zeros(()))
        self.register_buffer("target_std", torch.ones(()))

    def inputs(
        self, images: np.ndarray | torch.Tensor, references: np.ndarray | torch.Tensor | None
    ) -> torch.Tensor:
        """uint8 ``(B, H, W, 3)`` images (and references) -> the network's float ``(B, C, H, W)`` input."""
        x = torch.as_tensor(np.asarray(images)).float().div(255.0).sub(0.5).permute(0, 3, 1, 2)
        if not self.config.with_reference:
            return x
        if references is None:
            raise IQAModelError(
                "this IQA model is full-reference (with_reference=True): pass the reference images"
            )
        ref = torch.as_tensor(np.asarray(references)).float().div(255.0).sub(0.5).permute(0, 3, 1, 2)
        if ref.shape != x.shape:
            raise IQAModelError(
                f"references have shape {tuple(ref.shape)}, the images {tuple(x.shape)}; pass one per image"
            )
        return torch.cat([x, ref, x - ref], dim=1)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        f = self.net(inputs)
        return self.head(torch.cat([f.mean(dim=(2, 3)), f.amax(dim=(2, 3))], dim=1)).squeeze(-1)


def _targets(db: IQADatabase, indices: np.ndarray, target: str) -> tuple[np.ndarray, np.ndarray]:
    if target not in TARGETS:
        raise IQAModelError(f"unknown IQA target {target!r}; choose one of {', '.join(TARGETS)}")
    indices = np.asarray(indices, dtype=np.int64)
    values = getattr(db, target)[indices].astype(np.float64)
    keep = np.isfinite(values)
    if keep.sum() < 2:
        raise IQAModelError(
            f"only {int(keep.sum())} training images have a finite {target!r} score; build the database with "
            "rollouts > 0 for execution targets, or pick another target"
        )
    return indices[keep], values[keep]


def train_iqa(db: IQADatabase, indices: np.ndarray, config: IQAModelConfig) -> tuple[IQAModel, dict]:
    """Train an :class:`IQAModel` on the database rows ``indices``; returns it (eval mode) and its history
    ``{"loss": [per-step MSE of the standardised target], "rows": used rows, "target_mean", "target_std"}``."""
    rows, y = _targets(db, indices, config.target)
    config = replace(config, image_size=int(db.images.shape[1]))
    torch.manual_seed(config.seed)
    model = IQAModel(config)
    mean, std = float(y.mean()), float(y.std())
    std = std if std > 1e-8 else 1.0
    model.target_mean.fill_(mean)
    model.target_std.fill_(std)
    x = model.inputs(db.images[rows], db.reference_images(rows) if config.with_reference else None)
    z = torch.as_tensor((y - mean) / std, dtype=torch.float32)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, config.steps, eta_min=0.05 * config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    model.train()
    for _ in range(config.steps):
        batch = torch.randint(len(rows), (min(config.batch_size, len(rows)),), generator=generator)
        loss = nn.functional.mse_loss(model(x[batch]), z[batch])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        losses.append(float(loss.detach()))
    model.eval()
    return model, {"loss": losses, "rows": rows.tolist(), "target_mean": mean, "target_std": std}


@torch.no_grad()
def predict(
    model: IQAModel, images: np.ndarray, references: np.ndarray | None = None, batch_size: int = 256
) -> np.ndarray:
    """Predicted damage (in the target's units) of uint8 ``(B, H, W, 3)`` images: ``(B,)`` float32."""
    model.eval()
    images = np.asarray(images)
    out = []
    for i in range(0, len(images), batch_size):
        refs = None if references is None else np.asarray(references)[i : i + batch_size]
        out.append(model(model.inputs(images[i : i + batch_size], refs)))
    if not out:
        return np.zeros(0, dtype=np.float32)
    scores = torch.cat(out) * model.target_std + model.target_mean
    return scores.numpy().astype(np.float32)


def save_iqa_model(model: IQAModel, folder: str | Path) -> Path:
    """``config.json`` + ``model.safetensors`` in ``folder`` (created)."""
    from safetensors.torch import save_file

    path = Path(folder)
    if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not _is_iqa_folder(path))):
        raise IQAModelError(
            f"cannot save an IQA model to {str(path)!r}: it holds something else; choose a new or empty folder"
        )
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(
        json.dumps({"method": "embodied_iqa", "config": asdict(model.config)}, indent=2) + "\n"
    )
    save_file(
        {k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(path / "model.safetensors")
    )
    return path


def _is_iqa_folder(path: Path) -> bool:
    try:
        return json.loads((path / "config.json").read_text()).get("method") == "embodied_iqa"
    except (OSError, ValueError, AttributeError):
        return False


def load_iqa_model(folder: str | Path) -> IQAModel:
    """The model saved by :func:`save_iqa_model`; :class:`IQAModelError` (one line) when the folder is not one."""
    from safetensors.torch import load_file

    path = Path(folder)
    config_file, weights_file = path / "config.json", path / "model.safetensors"
    if not config_file.is_file() or not weights_file.is_file():
        raise IQAModelError(
            f"IQA model folder {str(path)!r} has no config.json + model.safetensors; save one with save_iqa_model"
        )
    try:
        meta = json.loads(config_file.read_text())
        if not isinstance(meta, dict) or meta.get("method") != "embodied_iqa":
            raise ValueError("config.json does not say method 'embodied_iqa'")
        model = IQAModel(IQAModelConfig(**meta["config"]))
        model.load_state_dict(load_file(str(weights_file)))
    except Exception as error:  # JSON, config fields, safetensors header, state-dict mismatch
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise IQAModelError(f"IQA model folder {str(path)!r} is not an Embodied-IQA model: {first}") from None
    return model.eval()
