"""Evaluating quality scores against embodied damage: splits, standard IQA baselines, correlations.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) report that standard
IQA predicts the damage to a robot poorly (decision level, SRCC about 0.77 for TOPIQ-FR, 0.49 for SSIM and
0.28 for PSNR). The same comparison here:

- :func:`splits`: held-out reference images (``"references"``) or held-out distortion classes
  (``"classes"``: ``held_out`` classes, 2 by default, drawn by the seed; ``held_out=1`` over several seeds
  gives leave-one-class-out);
- :func:`baseline_scores`: full-reference PSNR and SSIM (torchmetrics, data range 255) of every image against
  its reference, and the encoder's feature distance ``1 - cos(E(x), E(x'))``. All are returned as *damage*
  scores (larger = worse image): ``-PSNR`` (dB), ``1 - SSIM`` and the feature distance, so a useful
  baseline correlates *positively* with the database's damage scores;
- :func:`correlations`: SRCC (Spearman) and PLCC (Pearson) over the pairs where both are finite; fewer than
  three pairs or a constant input gives NaN (reported as such, never as 0);
- :func:`level_correlations`: SRCC between the pipeline levels' scores (perception, decision, execution).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from scipy import stats
from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

from embodia.core.errors import EmbodiaError
from embodia.perception.encoders import ImageEncoder, prepare
from embodia.perception.iqa.database import SCORES, IQADatabase

SPLITS = ("references", "classes")
PSNR_CAP = 100.0
"""PSNR of identical images (infinite) is capped at this many dB."""


class IQAEvaluationError(EmbodiaError, ValueError):
    """An unknown split kind, or a split that leaves nothing to train or test on."""


def splits(
    db: IQADatabase, kind: str, seed: int = 0, held_out: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` row indices of ``db``, disjoint, with whole references or classes held out.

    ``kind="references"``: ``held_out`` reference images (default a quarter, at least one) are test rows;
    ``kind="classes"``: ``held_out`` distortion classes (default 2; 1 when there are only 2) are test rows. Drawn with ``seed``.
    """
    if kind not in SPLITS:
        raise IQAEvaluationError(f"unknown split kind {kind!r}; choose one of {', '.join(SPLITS)}")
    groups = db.ref_index if kind == "references" else db.class_index
    present = np.unique(groups)
    if held_out is None:
        held_out = max(1, len(present) // 4) if kind == "references" else min(2, max(1, len(present) - 1))
    if not 1 <= held_out < len(present):
        raise IQAEvaluationError(
            f"cannot hold out {held_out} of the {len(present)} {kind} in the database; hold out 1..{len(present) - 1}"
        )
    test_groups = np.random.default_rng(seed).choice(present, size=held_out, replace=False)
    test = np.isin(groups, test_groups)
    return np.flatnonzero(~test), np.flatnonzero(test)


def _chw(images: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.asarray(images)).float().permute(0, 3, 1, 2)


@torch.no_grad()
def baseline_scores(
    db: IQADatabase, indices: np.ndarray | None = None, encoder: ImageEncoder | None = None
) -> dict[str, np.ndarray]:
    """Damage scores of standard full-reference IQA for the rows ``indices`` (default all; module docstring):
    ``{"psnr": -PSNR, "ssim": 1 - SSIM}`` and, with an ``encoder``, ``"feature_distance"``. (n,) float32 each."""
    indices = np.arange(len(db)) if indices is None else np.asarray(indices, dtype=np.int64)
    images, refs = db.images[indices], db.reference_images(indices)
    psnr, ssim, feature = [], [], []
    for i in range(0, len(indices), 256):
        x, r = _chw(images[i : i + 256]), _chw(refs[i : i + 256])
        p = peak_signal_noise_ratio(x, r, data_range=255.0, reduction="none", dim=(1, 2, 3))
        psnr.append(torch.nan_to_num(p, posinf=PSNR_CAP).clamp(max=PSNR_CAP))
        ssim.append(structural_similarity_index_measure(x, r, data_range=255.0, reduction="none"))
        if encoder is not None:
            a = encoder(prepare(images[i : i + 256], encoder)).pooled
            b = encoder(prepare(refs[i : i + 256], encoder)).pooled
            feature.append(1.0 - torch.nn.functional.cosine_similarity(a, b, dim=-1))
    empty = torch.zeros(0)
    out = {"psnr": -torch.cat(psnr or [empty]), "ssim": 1.0 - torch.cat(ssim or [empty])}
    if encoder is not None:
        out["feature_distance"] = torch.cat(feature or [empty])
    return {name: value.numpy().astype(np.float32) for name, value in out.items()}


def correlations(pred: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """``{"srcc", "plcc", "n"}`` of ``pred`` against ``target`` over the finite pairs (module docstring)."""
    pred, target = np.asarray(pred, dtype=np.float64).ravel(), np.asarray(target, dtype=np.float64).ravel()
    if pred.shape != target.shape:
        raise IQAEvaluationError(
            f"pred has {pred.size} values, target {target.size}; pass one score per image"
        )
    keep = np.isfinite(pred) & np.isfinite(target)
    p, t = pred[keep], target[keep]
    if len(p) < 3 or np.ptp(p) == 0 or np.ptp(t) == 0:
        return {"srcc": float("nan"), "plcc": float("nan"), "n": int(len(p))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srcc = float(stats.spearmanr(p, t).statistic)
        plcc = float(stats.pearsonr(p, t).statistic)
    return {"srcc": srcc, "plcc": plcc, "n": int(len(p))}


def level_correlations(db: IQADatabase, indices: np.ndarray | None = None) -> dict[str, float]:
    """SRCC between every two of the database's damage scores, keyed ``"perception/decision"`` etc."""
    rows = np.arange(len(db)) if indices is None else np.asarray(indices, dtype=np.int64)
    out = {}
    for i, a in enumerate(SCORES):
        for b in SCORES[i + 1 :]:
            out[f"{a}/{b}"] = correlations(getattr(db, a)[rows], getattr(db, b)[rows])["srcc"]
    return out
