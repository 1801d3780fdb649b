"""The one action-chunk runner: a policy's outputs (single actions or chunks) as one action per step.

Used by every place that executes a policy: the episode runner (simulation, evaluation, recording) and
the ROS 2 policy node. What a chunk is, is decided here and nowhere else:

- an output with one more dimension than an action (``(n, *action_shape)``) is a chunk of ``n`` actions,
  executed one per step;
- anything else is one action (its shape is the environment's or the command filter's to check).

The policy is queried again when the chunk is used up, or after ``execute_steps`` actions when the policy
sets that attribute (receding horizon: 1 re-plans every step). :meth:`ActionChunker.reset` drops the rest
of a chunk (a new episode). A policy that conditions on past observations (Diffusion Policy's observation
horizon) has ``observe(obs)``, which receives the observation of every step it is not asked to act at.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodia.core.errors import ActionError
from embodia.core.policy import Policy


class ActionChunker:
    """Executes a policy's action chunks step by step (see the module docstring).

    Args:
        policy: anything with ``act(obs)``; its ``execute_steps`` attribute, if set, limits how many actions
            of each chunk run before it is asked again.
        action_shape: the shape of one action (``env.action_space.shape``; ``(n,)`` for an n-entry command).
    """

    def __init__(self, policy: Policy, action_shape: tuple[int, ...]) -> None:
        self.policy = policy
        self.action_ndim = len(action_shape)
        self._chunk: np.ndarray | None = None
        self._cursor = 0

    def reset(self) -> None:
        """Forget the current chunk: the next call asks the policy."""
        self._chunk, self._cursor = None, 0

    @property
    def execute_steps(self) -> int | None:
        steps = getattr(self.policy, "execute_steps", None)
        return None if steps is None else int(steps)

    def next_action(self, obs: Any) -> np.ndarray:
        """The next action: from the current chunk, or from a new ``policy.act(obs)``."""
        limit = 0 if self._chunk is None else len(self._chunk)
        if self.execute_steps is not None:
            limit = min(limit, self.execute_steps)
        if self._chunk is None or self._cursor >= limit:
            out = np.asarray(self.policy.act(obs))
            if out.ndim == self.action_ndim + 1:
                if len(out) == 0:
                    raise ActionError("the policy returned an empty action chunk (0 actions)")
                self._chunk = out
            else:
                self._chunk = out[None]
            self._cursor = 0
        elif (observe := getattr(self.policy, "observe", None)) is not None:
            observe(obs)
        action = self._chunk[self._cursor]
        self._cursor += 1
        return action
