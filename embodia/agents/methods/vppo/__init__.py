"""VPPO: visually-perceptive policy optimisation on a tiny vision-language model trained here.

Paper: S. Huang, X. Qu, Y. Li, Y. Luo, Z. He, D. Liu and Y. Cheng, "Spotlight on Token Perception for
Multimodal Reinforcement Learning", arXiv:2510.09285 (2025). Token perception s_t measures how much a
generated token depends on the image: the KL between the policy given the real image and given a perturbed
one (random patches blackened). VPPO changes GRPO in two ways: only the top-k fraction of tokens by s_t
receive gradient (token-level gradient filtering, Eq. 6), and each trajectory's advantage is scaled by its
mean perception, min-max normalised over the batch and mapped to a range whose mean scale is 1
(trajectory-level advantage shaping, Eq. 5, in the form of the authors' code huaixuheqing/VPPO-RL). Reported (Qwen2.5-VL 7B, 8
benchmarks): 57.5 average vs 53.1 for GRPO.

Equations and the exact normalisation used here: :mod:`.vppo` (perception, filtering, shaping, loss) and
:mod:`.grpo` (group advantages, clipped objective, the trainer). :mod:`.tasks` renders the questions
(counting, colour at a cell, the templated two-colour count with its total), :mod:`.model` holds the tiny VLM and its supervised warm start.
"""

from embodia.agents.methods.vppo.grpo import RLConfig, group_advantages, grpo_loss, train_rl
from embodia.agents.methods.vppo.model import TinyVLM, VLMConfig, accuracy, load_model, save_model, sft
from embodia.agents.methods.vppo.tasks import KINDS, image_positions, lengths, make_batch
from embodia.agents.methods.vppo.vppo import (
    PERTURBATIONS,
    k3_perception,
    perturb,
    shape_advantages,
    sparsity,
    token_perception,
    top_k_mask,
    vppo_loss,
)

__all__ = [
    "KINDS",
    "PERTURBATIONS",
    "RLConfig",
    "TinyVLM",
    "VLMConfig",
    "accuracy",
    "group_advantages",
    "grpo_loss",
    "image_positions",
    "k3_perception",
    "lengths",
    "load_model",
    "make_batch",
    "perturb",
    "save_model",
    "sft",
    "shape_advantages",
    "sparsity",
    "token_perception",
    "top_k_mask",
    "train_rl",
    "vppo_loss",
]
