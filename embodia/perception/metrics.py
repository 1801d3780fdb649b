"""Object-discovery metrics for video segmentation: FG-ARI and mBO.

Both compare a predicted label map with the ground-truth instance masks of a video (``0`` = background,
``1..K`` = objects, the same id across frames), all frames of a video together (video metrics, as in
SAVi, SlotContrast and SRL), and average over videos:

- **FG-ARI**: the adjusted Rand index (``sklearn.metrics.adjusted_rand_score``) between the true and the
  predicted labels over the foreground pixels only (true id > 0) of all frames of a video. It is 1 for a
  perfect partition (whatever the predicted ids), about 0 for a chance one, and 0 when every foreground
  pixel carries the same predicted label while there are two or more objects.
- **mBO** (mean best overlap): for each true object ``o``, the best IoU with any predicted mask ``p``,
  ``max_p |o ∩ p| / |o ∪ p|`` over all pixels of all frames, averaged over the objects of the video.

Predictions at a coarser patch grid are upsampled (nearest) to the frame size with
:func:`upsample_labels`. Videos without foreground are skipped (NaN per video, ignored in the mean).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score

from embodia.core.errors import EmbodiaError


class MetricShapeError(EmbodiaError):
    """Ground truth and prediction do not have the same shape."""


def upsample_labels(labels: np.ndarray | torch.Tensor, size: int | tuple[int, int]) -> np.ndarray:
    """Integer label maps ``(..., g, g)`` -> ``(..., H, W)`` by nearest-neighbour upsampling."""
    x = torch.as_tensor(np.asarray(labels))
    size = (size, size) if isinstance(size, int) else tuple(size)
    lead = x.shape[:-2]
    flat = x.reshape(-1, 1, *x.shape[-2:]).float()
    out = torch.nn.functional.interpolate(flat, size=size, mode="nearest")
    return out.reshape(*lead, *size).long().numpy()


def _check(true: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    true, pred = np.asarray(true), np.asarray(pred)
    if true.shape != pred.shape:
        raise MetricShapeError(f"ground truth {true.shape} and prediction {pred.shape} differ in shape")
    return true, pred


def video_fg_ari(true: np.ndarray, pred: np.ndarray) -> float:
    """FG-ARI of one video: ``true`` and ``pred`` integer maps of the same shape (e.g. ``(T, H, W)``)."""
    true, pred = _check(true, pred)
    fg = true > 0
    if not fg.any():
        return float("nan")
    return float(adjusted_rand_score(true[fg].ravel(), pred[fg].ravel()))


def video_mbo(true: np.ndarray, pred: np.ndarray) -> float:
    """mBO of one video: mean over true objects (id > 0) of the best IoU with any predicted label."""
    true, pred = _check(true, pred)
    t, p = true.ravel(), pred.ravel()
    objects = [o for o in np.unique(t) if o > 0]
    if not objects:
        return float("nan")
    labels = np.unique(p)
    best = []
    for o in objects:
        obj = t == o
        ious = [(obj & (p == q)).sum() / (obj | (p == q)).sum() for q in labels]
        best.append(max(ious))
    return float(np.mean(best))


def fg_ari(true: np.ndarray, pred: np.ndarray) -> float:
    """FG-ARI averaged over videos: ``(N, T, H, W)`` true ids and predicted labels."""
    true, pred = _check(true, pred)
    return float(np.nanmean([video_fg_ari(a, b) for a, b in zip(true, pred, strict=True)]))


def mbo(true: np.ndarray, pred: np.ndarray) -> float:
    """mBO averaged over videos: ``(N, T, H, W)`` true ids and predicted labels."""
    true, pred = _check(true, pred)
    return float(np.nanmean([video_mbo(a, b) for a, b in zip(true, pred, strict=True)]))
