"""DeepFaith, a faithfulness-guided amortised explainer: one forward pass gives a feature attribution.

Paper: Y. Guo, L. Ding, S. Jia, Y. Ren, P. Li, J. Fu, C. Li, Y. Yuan and G. Wang, "DeepFaith: A Domain-Free
and Model-Agnostic Unified Framework for Highly Faithful Explanations", arXiv:2508.03586 (2025); at ICLR 2026
as "Learning for Highly Faithful Explainability" (OpenReview bLgkkEGgBy). Authors' code, read for this
module (never copied): ``1911416-GuoYuhan/DeepFaith`` -- ``src/main/loss_func.py`` (the two losses and the
straight-through Bernoulli), ``src/main/train_explainer.py`` (the training loop and the alpha schedule),
``src/main/dedup_saliency.py`` and ``src/main/filter.py`` (per-input de-duplication and filtering),
``src/main/build_dataset.py`` and ``configs/explain_method/tabular.yaml`` (the eight-method prior pool).

An *explainer network* h_theta learns, once, to map an input x and a class c to an attribution
a = h_theta(x, c) of x's shape; afterwards an explanation costs one pass of h_theta and none of the model.

**Prior pool, per input** (:mod:`.priors`). Eight Captum methods explain the training inputs; for each input
the duplicates (cosine >= 0.9 to a method earlier in the pool that is itself kept) are removed, and a method
is dropped where it lies in the worst 20 % of the pool on any filter metric for that input. Every surviving
(input, prior) pair is one training example.

**Losses** (:mod:`.losses`; equations there). L = alpha * L_prior + (1 - alpha) * L_faith with

    L_prior = (1 - mean r(h(x), minmax(p))) / 2                             (pattern consistency)
    L_faith = (1 - mean_x r_runs(sum_i a_i m_i, f_c(x) - f_c(x_m))) / 2,    (local correlation)
    m ~ Bernoulli(sigmoid(a)) through a straight-through estimator, 100 runs,

r the authors' pearson (eps 1e-5 in the roots) and x_m the input with the features where m = 0 replaced
by N(0, 1) noise (the authors' ``perturb_by_mask``: m = 1 keeps a feature).

**Mix weight** (:class:`.losses.AlphaSchedule`): alpha = 1 until the variance of the last 5 epochs' L_prior
is at most 1e-5; then alpha = 1 - sigmoid((t - t0) / 10); reset to 1 when that variance exceeds 1e-4.

**Metrics** (:mod:`.metrics`). Held out (never used in training or prior filtering): deletion and
insertion AUC, infidelity (Captum) and region perturbation AOPC; the priors' filter metrics are
faithfulness correlation and faithfulness estimate.

Baselines: the training mean of each (standardised) feature for tables, black (zero) for the digit images.
Module map: :mod:`.data` (scikit-learn's bundled data sets, a CSV reader, the target models trained here),
:mod:`.metrics`, :mod:`.priors`, :mod:`.losses`, :mod:`.explainer` (the network, the training loop,
:func:`explain`, :func:`faithfulness_report`, save / load).
"""

from __future__ import annotations

import importlib
from typing import Any

DATASETS = ("breast_cancer", "wine", "iris", "digits")
"""The bundled data sets (scikit-learn): three tables and the 8x8 digit images."""
PRIOR_METHODS = (
    "integrated_gradients",
    "gradient_shap",
    "deeplift",
    "saliency",
    "occlusion",
    "feature_ablation",
    "lime",
    "kernel_shap",
)
"""The prior pool: the authors' eight tabular methods (``configs/explain_method/tabular.yaml``), all Captum."""
METHODS = ("amortized", *PRIOR_METHODS)
"""What :func:`explain` can run."""

_API = {
    "ExplainTask": "data",
    "load_task": "data",
    "train_target_model": "data",
    "class_probability": "data",
    "predict": "data",
    "deletion_auc": "metrics",
    "insertion_auc": "metrics",
    "perturbation_curve": "metrics",
    "faithfulness_correlation": "metrics",
    "faithfulness_estimate": "metrics",
    "region_perturbation": "metrics",
    "infidelity": "metrics",
    "pearson": "metrics",
    "mean_interval": "metrics",
    "prior_attributions": "priors",
    "select_priors": "priors",
    "compute_priors": "priors",
    "duplicates_per_input": "priors",
    "filter_per_input": "priors",
    "PriorSelection": "priors",
    "BernoulliSTE": "losses",
    "faithful_loss": "losses",
    "supervise_loss": "losses",
    "AlphaSchedule": "losses",
    "AmortizedExplainer": "explainer",
    "ExplainerConfig": "explainer",
    "train_explainer": "explainer",
    "explain": "explainer",
    "faithfulness_report": "explainer",
    "save_explainer": "explainer",
    "load_explainer": "explainer",
    "ExplainerError": "data",
}

__all__ = ["DATASETS", "METHODS", "PRIOR_METHODS", *_API]


def __getattr__(name: str) -> Any:
    """The API, imported on first use (importing the package itself loads neither torch nor Captum)."""
    if name in _API:
        module = importlib.import_module(f"{__name__}.{_API[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
