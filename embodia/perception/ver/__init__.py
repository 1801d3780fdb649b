"""VER: a vision expert library distilled from several teachers, routed per patch for robot learning.

Wang, Huo, Liang, Du, Sun, Lin, Shang, Peng, Bansal, Ding, Tomizuka, "VER: Vision Expert Transformer for Robot
Learning via Foundation Distillation and Dynamic Routing", arXiv:2510.05213 (2025). Pretraining distils frozen
teachers into one ViT whose last blocks are mixture-of-experts MLPs (the expert library), one noisy top-K router
per teacher, with

    L = sum_t [w_cos (1 - cos) + w_l1 smoothL1](student_t, teacher_t) - w_mi * MI(teacher; expert)

Downstream everything is frozen except a new patch-wise router per MoE layer (and the policy head), whose top-K
is annealed from all experts to ``K_min`` (Curriculum Top-K Annealing).

- :mod:`.model`: :class:`VERConfig`, :class:`NoisyTopKRouter`, :class:`MoEMLP`, :func:`curriculum_top_k`,
  :class:`VisionExpertLibrary` (encoder kind ``"ver-library"``).
- :mod:`.distill`: :class:`DistillConfig`, :func:`distill`, :func:`save_library`, :func:`load_library`.
- :mod:`.encoder`: :class:`VEREncoder` (encoder kind ``"ver"``), the frozen library with the trainable router.
"""

from embodia.perception.ver.distill import (
    DistillConfig,
    distill,
    feature_loss,
    load_library,
    mutual_information,
    resize_tokens,
    save_library,
)
from embodia.perception.ver.encoder import DOWNSTREAM, VEREncoder
from embodia.perception.ver.model import (
    MoEMLP,
    NoisyTopKRouter,
    VERConfig,
    VERError,
    VisionExpertLibrary,
    curriculum_top_k,
    entropy,
)

__all__ = [
    "DOWNSTREAM",
    "DistillConfig",
    "MoEMLP",
    "NoisyTopKRouter",
    "VERConfig",
    "VEREncoder",
    "VERError",
    "VisionExpertLibrary",
    "curriculum_top_k",
    "distill",
    "entropy",
    "feature_loss",
    "load_library",
    "mutual_information",
    "resize_tokens",
    "save_library",
]
