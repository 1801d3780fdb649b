"""DEAS: DEtached value learning with Action Sequence for Scalable Offline RL (Kim, Lee, Seo, Lee, Zhu;
ICLR 2026; arXiv:2510.07730).

The critic scores an *action sequence* ``o_t = a_{t:t+H-1}`` (an option of an SMDP) and is trained without
the actor ("detached", as in IQL), so that values stay on sequences the dataset contains. With a twin target
critic ``Qbar = min(Qbar_1, Qbar_2)`` (Polyak-averaged), per batch of windows of ``H`` steps:

    value, expectile regression toward in-distribution sequences        (L_V)
        u = Qbar(s_t, o_t) - V(s_t),   L_V = E[ |tau - 1(u < 0)| * l(V(s_t), Qbar(s_t, o_t)) ]
    critic, SMDP target with two discounts, masked at terminals          (L_Q)
        y = sum_{k<H} gamma1^k r_{t+k} + gamma2^H (1 - d) V(s_{t+H}),   L_Q = sum_j l(Q_j(s_t, o_t), y)
    actor, any extraction over sequences                                 (L_pi)
        DDPG+BC:  -Q(s, pi(s)) / mean|Q| + alpha * ||pi(s) - o_t||^2
        AWR:      -exp(beta * (Qbar(s, o_t) - V(s))) * log pi(o_t | s)   (weights clipped at 100)
        FQL:      L_flow + alpha * E_z||mu(s, z) - flow(s, z)||^2 - E_z[mean_j Q_j(s, mu(s, z))]
                  (flow BC over sequences and a one-step policy distilled from it: embodia.policies.fql; the
                  authors' OGBench code builds DEAS on FQL's actor, embodia.policies.paper_settings)

With ``distributional=True`` (the paper's choice) V and Q output logits over ``bins`` bins, ``l`` is the
cross-entropy against the HL-Gauss distribution of the scalar target (see ``distributional.py``), and every
value above is the distribution's mean; the bins cover the values rewards in the dataset's range can reach
(or start at ``v_min``). With ``value_target="distribution"`` (the authors' code) L_V's target is instead
the categorical distribution of the target critic member with the lower mean, ``softmax(Qbar_j*)``.
``d`` is 1 when the episode terminated inside the window (its later rewards are masked). The actor outputs a
whole sequence; the runner executes it as an action chunk.

The update is :class:`~embodia.policies.value_learning.ValueLearner`'s with critic and actor horizons ``H``;
``H = 1``, scalar heads and ``gamma1 = gamma2`` give IQL (:mod:`embodia.policies.iql`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from embodia.policies.distributional import Support, value_range
from embodia.policies.learner import ChunkedPolicyConfig
from embodia.policies.value_learning import ValueLearner, ValueLearningConfig, ValueShape, sequence_target

__all__ = ["DEAS", "DEASConfig", "sequence_target"]


@dataclass
class DEASConfig(ValueLearningConfig, ChunkedPolicyConfig):
    """Hyperparameters of DEAS: the defaults are the paper's OGBench settings (each field says its source);
    the DDPG+BC and best-of-N extractions are one key away (``extraction``)."""

    chunk_field: ClassVar[str] = "horizon"

    horizon: Annotated[int, Field(ge=1)] = 4
    """H (>= 1): length of the action sequences the critic scores and the actor outputs (paper: 4 cube, 8 scene/puzzle)."""
    gamma1: Annotated[float, Field(gt=0, le=1)] = 0.9
    """Discount of rewards inside a sequence, in (0, 1] (intra-option; the paper reports 0.9)."""
    gamma2: Annotated[float, Field(gt=0, lt=1)] = 0.999
    """Discount between sequences, in (0, 1) (inter-option; the bootstrap is weighted by gamma2 ** H; paper:
    0.999, authors' robot code: 0.99 — which doubled CubeSingle success at a 10k-step budget, see docs/guides/offline-rl.md;
    1 would make the value support infinite)."""
    distributional: bool = True
    """Categorical V and Q with HL-Gauss targets (False: scalar heads and squared errors)."""
    bins: Annotated[int, Field(ge=2)] = 101
    """Number of bins (>= 2) of the categorical value distributions."""
    value_target: Literal["distribution", "hl_gauss"] = "distribution"
    """Categorical heads: V's target is the target critic's own distribution of the ensemble member with the
    lower mean ("distribution", the authors' code: the default) or the HL-Gauss projection of that mean
    ("hl_gauss", embodia's earlier target)."""
    extraction: Literal["ddpg_bc", "awr", "fql", "best_of_n"] = "fql"
    """Policy extraction (the paper's OGBench table: FQL's one-step policy, "fql"; also "ddpg_bc", "awr",
    "best_of_n"; see :class:`~embodia.policies.value_learning.ValueLearningConfig`)."""
    alpha: Annotated[float, Field(ge=0)] = 300.0
    """Weight (>= 0) of the behaviour term: FQL's distillation weight, 300 as FQL states it for cube and scene
    (1000 on puzzle: :mod:`embodia.policies.paper_settings` has it per environment); with DDPG+BC its BC term."""
    v_min: Annotated[float, Field(lt=0)] | None = None
    """Lower end of the value support (< 0); None: the lowest value rewards in the dataset's range can reach
    (for rewards in {-1, 0}: -(sum_k gamma1^k) / (1 - gamma2^H)); the authors use -1 / (1 - gamma2)."""


class DEAS(ValueLearner):
    """DEAS learner over windows of ``H`` steps (:class:`embodia.data.sampling.WindowSampler`)."""

    name: ClassVar[str] = "deas"
    config_class: ClassVar[type] = DEASConfig

    def shape(self) -> ValueShape:
        cfg = self.config
        support = None
        if cfg.distributional:  # the bins cover every value rewards in the dataset's range can reach
            low, high = value_range(*self.reward_range, cfg.horizon, cfg.gamma1, cfg.gamma2)
            support = Support(low if cfg.v_min is None else cfg.v_min, high, cfg.bins)
        distribution_target = cfg.value_target == "distribution"
        return ValueShape(cfg.horizon, cfg.horizon, cfg.gamma1, cfg.gamma2, support, distribution_target)

    @classmethod
    def window_for(cls, config: DEASConfig) -> int:
        return config.horizon
