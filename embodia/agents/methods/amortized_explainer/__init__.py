"""A faithfulness-guided amortised explainer: one forward pass gives a feature attribution.

Paper: Y. Guo, L. Ding, S. Jia, Y. Ren, P. Li, J. Fu, C. Li, Y. Yuan and G. Wang, "DeepFaith: A Domain-Free
and Model-Agnostic Unified Framework for Highly Faithful Explanations", arXiv:2508.03586 (2025); at ICLR 2026
as "Learning for Highly Faithful Explainability" (OpenReview bLgkkEGgBy).

Prior attribution methods (here Captum's saliency, integrated gradients, occlusion / feature ablation and
Kernel SHAP) each cost one gradient or dozens to hundreds of forward passes of the model per explanation.
An *explainer network* h_theta learns, once, to map an input x and a class c to an attribution
a = h_theta(x, c) of the same shape as x; afterwards an explanation costs one pass of h_theta and none of
the model. It is trained with

    L = alpha * L_prior + (1 - alpha) * L_faith

**Prior explanations, de-duplicated and filtered** (:mod:`.priors`). On up to ``prior_samples`` training
inputs every prior method k gives attributions p_k(x). Each method's faithfulness correlation (below) is
measured on those inputs; methods are then taken in decreasing order of it and one is dropped as a
*duplicate* when its mean cosine similarity to an already kept method, mean_x cos(p_k(x), p_j(x)),
exceeds ``dedup_threshold``, and dropped as *unfaithful* when its faithfulness correlation is below
``faith_threshold``. The kept set K has weights w_k proportional to their faithfulness correlation, and

    L_prior = sum_{k in K} w_k * mean_x (1 - cos(h_theta(x, c), p_k(x)))

(cosine: attributions of different methods differ in scale, only their pattern is matched).

**Self-supervised faithfulness** (the paper's local-correlation idea). For each input, m random feature
subsets S_1..S_m are drawn (each feature in S_j with probability q_j ~ U[q_min, q_max]); with b the
baseline and x_{S<-b} the input with the features of S replaced by the baseline,

    A_j = sum_{i in S_j} a_i                       (attribution mass of the subset)
    D_j = f_c(x) - f_c(x_{S_j <- b})               (what removing the subset does; no gradient)
    L_faith = mean_x (1 - pearson(A, D))           (pearson over j = 1..m, differentiable in a)

where f_c is the model's probability of class c. The model is never differentiated: L_faith only needs
its outputs, so any model (a tree ensemble behind a torch wrapper, say) could be explained.

**Dynamic weighting** (:class:`.explainer.AlphaSchedule`). alpha = 1 at the start: the explainer first
imitates the priors. After each epoch the epoch's mean L_prior is recorded; L_prior has *plateaued* at
epoch t when the lowest value of the last ``plateau_patience`` epochs is not below (1 - tolerance) times
the lowest value before them. From that epoch on alpha <- max(alpha_floor, alpha * alpha_decay) once per
epoch, so the faithfulness loss takes over while the priors keep anchoring the explanation. Ablations:
alpha fixed at 1 (priors only) and at 0 (faithfulness only, no prior method is ever run).

**Metrics** (:mod:`.metrics`, written here; ``captum.metrics`` has infidelity and sensitivity but not
these). With features ordered by decreasing attribution and d features:

- deletion AUC: replace the top 0, 1, ..., d features by the baseline, record f_c after each step, and
  take the trapezoid area over the step fraction in [0, 1] (lower is better);
- insertion AUC: start from the baseline and insert features in the same order (higher is better);
- faithfulness correlation: pearson, over 50 random subsets of a fixed size (a quarter of the
  features), between the attribution mass of a subset and the output drop when it is removed.

Baselines: the training mean of each (standardised) feature for tables, black (zero) for the digit images.
Module map: :mod:`.data` (scikit-learn's bundled data sets, a CSV reader, the target models trained here),
:mod:`.metrics`, :mod:`.priors`, :mod:`.explainer` (the network, the training loop, :func:`explain`,
:func:`faithfulness_report`, save / load).
"""

from __future__ import annotations

import importlib
from typing import Any

DATASETS = ("breast_cancer", "wine", "iris", "digits")
"""The bundled data sets (scikit-learn): three tables and the 8x8 digit images."""
PRIOR_METHODS = ("saliency", "integrated_gradients", "occlusion", "kernel_shap")
"""The prior attribution methods (Captum)."""
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
    "pearson": "metrics",
    "mean_interval": "metrics",
    "prior_attributions": "priors",
    "select_priors": "priors",
    "deduplicate": "priors",
    "PriorSelection": "priors",
    "AmortizedExplainer": "explainer",
    "ExplainerConfig": "explainer",
    "AlphaSchedule": "explainer",
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
