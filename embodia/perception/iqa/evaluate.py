"""Evaluating quality scores against embodied damage: splits, standard IQA baselines, correlations.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026) report that standard
IQA predicts the damage to a robot poorly (decision level, SRCC about 0.77 for TOPIQ-FR, 0.49 for SSIM and
0.28 for PSNR). The same comparison here:

- :func:`splits`: held-out reference images (``"references"``) or held-out distortion classes
  (``"classes"``: ``held_out`` classes, 2 by default, drawn by the seed; ``held_out=1`` over several seeds
  gives leave-one-class-out);
- :func:`baseline_scores`: full-reference PSNR and SSIM (torchmetrics, data range 255) of every image against
  its reference, and the encoder's feature distance ``1 - cos(E(x), E(x'))``; with ``extended=True`` also
  MS-SSIM (torchmetrics, with as many of Wang et al.'s five scales as the image allows, :func:`ms_ssim_betas`:
  three for 64-pixel images) and VIF (torchmetrics' pixel-domain visual
  information fidelity, per image). All are returned as *damage* scores (larger = worse image): ``-PSNR``
  (dB), ``1 - SSIM``, ``1 - MS-SSIM``, ``-VIF`` and the feature distance, so a useful baseline correlates
  *positively* with the database's damage scores (LPIPS, DISTS and TOPIQ need network weights that cannot
  be downloaded here; the feature distance of the agent's own encoder stands in for a deep-feature metric);
- :func:`correlations`: SRCC (Spearman) and PLCC (Pearson) over the pairs where both are finite; fewer than
  three pairs or a constant input gives NaN (reported as such, never as 0);
- :func:`level_correlations`: SRCC between the pipeline levels' scores (perception, cognition, decision,
  execution);
- :func:`t_interval`: the mean over split seeds and its 95 % Student-t interval.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from scipy import stats
from torchmetrics.functional.image import (
    multiscale_structural_similarity_index_measure,
    peak_signal_noise_ratio,
    structural_similarity_index_measure,
    visual_information_fidelity,
)

from embodia.core.errors import EmbodiaError
from embodia.perception.encoders import ImageEncoder, prepare
from embodia.perception.iqa.database import SCORES, IQADatabase

SPLITS = ("references", "classes")
VIF_MIN_SIDE = 41
"""torchmetrics' VIF needs images of at least this many pixels a side (smaller ones get NaN)."""
PSNR_CAP = 100.0
"""PSNR of identical images (infinite) is capped at this many dB."""


class IQAEvaluationError(EmbodiaError, ValueError):
    """An unknown split kind, or a split that leaves nothing to train or test on."""


def splits(
    db: IQADatabase, kind: str, seed: int = 0, held_out: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` row indices of ``db``, disjoint, with whole references or classes held out.

    ``kind="references"``: ``held_out`` reference images (default a quarter, at least one) are test rows;
    ``kind="classes"``: ``held_out`` distortion types (default a quarter, at least 2; 1 when there are only 2)
    are test rows. Drawn with ``seed``.
    """
    if kind not in SPLITS:
        raise IQAEvaluationError(f"unknown split kind {kind!r}; choose one of {', '.join(SPLITS)}")
    groups = db.ref_index if kind == "references" else db.class_index
    present = np.unique(groups)
    if held_out is None:
        quarter = len(present) // 4
        held_out = max(1, quarter) if kind == "references" else max(min(2, max(1, len(present) - 1)), quarter)
    if not 1 <= held_out < len(present):
        raise IQAEvaluationError(
            f"cannot hold out {held_out} of the {len(present)} {kind} in the database; hold out 1..{len(present) - 1}"
        )
    test_groups = np.random.default_rng(seed).choice(present, size=held_out, replace=False)
    test = np.isin(groups, test_groups)
    return np.flatnonzero(~test), np.flatnonzero(test)


def _chw(images: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.asarray(images)).float().permute(0, 3, 1, 2)


MS_SSIM_BETAS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
"""The scale weights of MS-SSIM (Wang et al., 2003); torchmetrics renormalises the ones used."""


def ms_ssim_betas(side: int, window: int = 11) -> tuple[float, ...]:
    """The first scales of :data:`MS_SSIM_BETAS` whose coarsest image still exceeds the Gaussian window
    (``side > (window - 1) 2^(n - 1)``): three for 64-pixel images, two for 32."""
    n = 1
    while n < len(MS_SSIM_BETAS) and side > (window - 1) * 2**n:
        n += 1
    return MS_SSIM_BETAS[:n]


@torch.no_grad()
def baseline_scores(
    db: IQADatabase,
    indices: np.ndarray | None = None,
    encoder: ImageEncoder | None = None,
    extended: bool = False,
) -> dict[str, np.ndarray]:
    """Damage scores of standard full-reference IQA for the rows ``indices`` (default all; module docstring):
    ``{"psnr": -PSNR, "ssim": 1 - SSIM}``, with ``extended`` also ``"ms_ssim"`` and ``"vif"``, and with an
    ``encoder`` ``"feature_distance"``. (n,) float32 each."""
    indices = np.arange(len(db)) if indices is None else np.asarray(indices, dtype=np.int64)
    images, refs = db.images[indices], db.reference_images(indices)
    psnr, ssim, ms_ssim, vif, feature = [], [], [], [], []
    for i in range(0, len(indices), 256):
        x, r = _chw(images[i : i + 256]), _chw(refs[i : i + 256])
        p = peak_signal_noise_ratio(x, r, data_range=255.0, reduction="none", dim=(1, 2, 3))
        psnr.append(torch.nan_to_num(p, posinf=PSNR_CAP).clamp(max=PSNR_CAP))
        ssim.append(structural_similarity_index_measure(x, r, data_range=255.0, reduction="none"))
        if extended:
            ms_ssim.append(
                multiscale_structural_similarity_index_measure(
                    x, r, data_range=255.0, reduction="none", betas=ms_ssim_betas(min(x.shape[-2:]))
                )
            )
            if min(x.shape[-2:]) < VIF_MIN_SIDE:
                vif.append(torch.full((len(x),), float("nan")))
            else:
                vif.append(
                    torch.stack(
                        [visual_information_fidelity(a[None] / 255.0, b[None] / 255.0) for a, b in zip(x, r)]
                    )
                )
        if encoder is not None:
            a = encoder(prepare(images[i : i + 256], encoder)).pooled
            b = encoder(prepare(refs[i : i + 256], encoder)).pooled
            feature.append(1.0 - torch.nn.functional.cosine_similarity(a, b, dim=-1))
    empty = torch.zeros(0)
    out = {"psnr": -torch.cat(psnr or [empty]), "ssim": 1.0 - torch.cat(ssim or [empty])}
    if extended:
        out["ms_ssim"] = 1.0 - torch.cat(ms_ssim or [empty])
        out["vif"] = -torch.cat(vif or [empty])
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


def t_interval(values: list[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the finite ``values`` with the Student-t interval of the mean; one value gives
    ``(v, v, v)``, none ``(nan, nan, nan)``."""
    finite = np.asarray([v for v in np.asarray(values, dtype=np.float64).ravel() if np.isfinite(v)])
    if len(finite) == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(finite.mean())
    if len(finite) == 1:
        return mean, mean, mean
    half = float(
        stats.t.ppf(0.5 + confidence / 2, len(finite) - 1) * finite.std(ddof=1) / np.sqrt(len(finite))
    )
    return mean, mean - half, mean + half
