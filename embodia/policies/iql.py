"""IQL: Offline Reinforcement Learning with Implicit Q-Learning (Kostrikov, Nair, Levine; ICLR 2022;
arXiv:2110.06169), with an optional n-step target.

Scalar critics over single actions, the same networks as DEAS:

    L_V = E[ |tau - 1(u < 0)| u^2 ],                 u = min_j Qbar_j(s_t, a_t) - V(s_t)
    L_Q = sum_j E[ (Q_j(s_t, a_t) - y)^2 ],          y = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - d) V(s_{t+n})
    L_pi (DDPG+BC) = -Q(s, pi(s)) / mean|Q| + alpha ||pi(s) - a_t||^2
    L_pi (AWR)     = -exp(beta (Qbar(s,a) - V(s))) log pi(a | s)

``n_step = 1`` is IQL; ``n_step > 1`` is the n-step variant DEAS compares with (the action is still one
step: the n rewards come from the dataset's behaviour, not from the evaluated action). The update is
:class:`~embodia.policies.value_learning.ValueLearner`'s with one action for critic and actor, windows of
``n`` steps and ``gamma1 = gamma2 = gamma``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from pydantic import Field

from embodia.policies.value_learning import ValueLearner, ValueLearningConfig, ValueShape


@dataclass
class IQLConfig(ValueLearningConfig):
    """Hyperparameters of IQL (OGBench reference values where they exist)."""

    n_step: Annotated[int, Field(ge=1)] = 1
    """Rewards summed before bootstrapping (>= 1; 1 = IQL)."""
    gamma: Annotated[float, Field(gt=0, le=1)] = 0.99
    """Discount factor, in (0, 1]."""


class IQL(ValueLearner):
    """IQL learner over windows of ``n_step`` steps."""

    name: ClassVar[str] = "iql"
    config_class: ClassVar[type] = IQLConfig

    def shape(self) -> ValueShape:
        return ValueShape(1, 1, self.config.gamma, self.config.gamma)

    @classmethod
    def window_for(cls, config: IQLConfig) -> int:
        return config.n_step
