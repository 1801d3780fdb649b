"""The environment contract beyond gymnasium: what embodia's runner, recorder, replay and experts rely on.

An embodia environment is a ``gymnasium.Env`` (it passes ``gymnasium.utils.env_checker.check_env``) whose
unwrapped object also satisfies :class:`EmbodiedEnv`:

- ``get_state() -> float64 (n,)`` and ``set_state(state)``: the full simulator state, so that a recorded
  episode can be re-simulated exactly from its initial state and actions (replay), and the future after
  ``set_state`` equals the future after the state was read;
- ``info["success"]``: a ``bool`` on every step (episode success = true at any step);
- ``has_expert`` and ``make_expert(**options) -> Policy``: a scripted expert where the task has one;
- dict observations with stable keys (``state``, ``goal``, ``rgb`` / ``<camera>_rgb``, ``depth``, ...);
- ``render()`` returns an ``(H, W, 3)`` uint8 frame when made with ``render_mode="rgb_array"``.
- optionally (:class:`CameraEnv`), camera images in its observations, chosen when it is made, and
  ``observe()``: the observation of the current state (what re-rendering a restored state needs).

:func:`check_embodied_env` checks all of it on a live environment and names every violation; the registry
test runs it on every registered id and the catalog records what it found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import gymnasium
import numpy as np

from embodia.core.errors import EmbodiaError

if TYPE_CHECKING:
    from embodia.core.policy import Policy

#: observation keys with a fixed meaning (other keys are allowed)
STABLE_KEYS = ("state", "goal", "rgb", "depth", "proprio", "instruction")


class EnvContractError(EmbodiaError):
    """An environment that breaks the contract above (listed, one problem per clause)."""


@runtime_checkable
class EmbodiedEnv(Protocol):
    """The unwrapped environment's extras (see the module docstring)."""

    def get_state(self) -> np.ndarray: ...

    def set_state(self, state: np.ndarray) -> None: ...


@runtime_checkable
class ExpertEnv(Protocol):
    """An environment with a scripted expert (``has_expert`` may still be False for some ids of a class)."""

    has_expert: bool

    def make_expert(self, **options: Any) -> Policy: ...


@runtime_checkable
class CameraEnv(Protocol):
    """An environment whose observations can include camera images, chosen when it is made.

    Made with ``cameras=(name, ...)``, ``camera_height=H`` and ``camera_width=W`` (names from
    ``camera_names``), it adds ``<name>_rgb`` (uint8 ``(H, W, 3)``) to every observation. ``observe()``
    returns the observation of the current simulator state as ``reset`` and ``step`` return it, so that a
    state restored with ``set_state`` can be seen through other cameras (:mod:`embodia.runner.rerender`).
    """

    camera_names: tuple[str, ...]

    def observe(self) -> dict[str, np.ndarray]: ...


def supports_state(env: gymnasium.Env) -> bool:
    """Whether the environment can save and restore its simulator state (needed to record and replay)."""
    return isinstance(env.unwrapped, EmbodiedEnv)


def has_expert(env: gymnasium.Env) -> bool:
    """Whether ``make_expert()`` gives a scripted expert for this environment."""
    unwrapped = env.unwrapped
    return isinstance(unwrapped, ExpertEnv) and bool(unwrapped.has_expert)


def check_embodied_env(env: gymnasium.Env, seed: int = 0) -> None:
    """Run ``env`` for a step and check every clause of the contract.

    Raises:
        EnvContractError: listing every violation found.
    """
    problems: list[str] = []
    unwrapped = env.unwrapped
    obs, info = env.reset(seed=seed)
    if not isinstance(obs, dict):
        problems.append(f"observations must be dicts, got {type(obs).__name__}")
    elif not any(k in STABLE_KEYS or k.endswith("_rgb") for k in obs):
        problems.append(f"no stable observation key among {sorted(obs)} (expected one of {STABLE_KEYS})")
    if not supports_state(env):
        problems.append("the unwrapped env has no get_state() / set_state(state)")
    else:
        state = unwrapped.get_state()
        if not (isinstance(state, np.ndarray) and state.dtype == np.float64 and state.ndim == 1):
            problems.append(
                f"get_state() must return a flat float64 array, got {getattr(state, 'dtype', state)!r}"
            )
        else:
            unwrapped.set_state(state)
            if not np.array_equal(unwrapped.get_state(), state):
                problems.append("set_state(get_state()) changed the state")
    _, _, _, _, info = env.step(env.action_space.sample())
    if not isinstance(info.get("success"), bool):
        problems.append(f"info['success'] must be a bool on every step, got {info.get('success')!r}")
    if env.render_mode == "rgb_array":
        frame = env.render()
        if not (
            isinstance(frame, np.ndarray)
            and frame.dtype == np.uint8
            and frame.ndim == 3
            and frame.shape[2] == 3
        ):
            problems.append("render() must return an (H, W, 3) uint8 frame in rgb_array mode")
    if has_expert(env):
        expert = unwrapped.make_expert()
        if not (callable(getattr(expert, "act", None)) and callable(getattr(expert, "reset", None))):
            problems.append("make_expert() must return a policy (reset(seed) and act(obs))")
    if problems:
        name = env.spec.id if env.spec else type(unwrapped).__name__
        raise EnvContractError(f"{name} breaks the environment contract: " + "; ".join(problems))
