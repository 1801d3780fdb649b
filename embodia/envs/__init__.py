"""Environment registry: every embodia environment is a ``gymnasium.Env`` registered as ``embodia/<Name>-v<N>``.

Each environment module registers its ids next to its class (see :func:`register_env`); importing this
package imports them all. :func:`make` wraps ``gymnasium.make`` with errors that suggest close matches.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

import gymnasium

from embodia.errors import UnknownEnvError

NAMESPACE = "embodia"

#: ids registered by embodia, in registration order, with a one-line description each.
_DESCRIPTIONS: dict[str, str] = {}

#: modules that register environments; imported lazily by :func:`_load_all`.
_ENV_MODULES = (
    "embodia.envs.ogbench",
    "embodia.envs.ogbench_play",
    "embodia.envs.kitchen",
    "embodia.envs.habitat",
)
_loaded = False


def register_env(
    env_id: str,
    entry_point: str,
    *,
    kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    description: str = "",
) -> None:
    """Register ``env_id`` (must start with ``embodia/``) with gymnasium, idempotently."""
    if not env_id.startswith(NAMESPACE + "/"):
        raise ValueError(f"embodia env ids live in the {NAMESPACE!r} namespace, got {env_id!r}")
    if env_id in gymnasium.registry:
        return
    gymnasium.register(
        id=env_id,
        entry_point=entry_point,
        kwargs=kwargs or {},
        max_episode_steps=max_episode_steps,
        disable_env_checker=True,
    )
    _DESCRIPTIONS[env_id] = description


def _load_all() -> None:
    global _loaded
    if not _loaded:
        for module in _ENV_MODULES:
            importlib.import_module(module)
        _loaded = True


def env_ids() -> list[str]:
    """All registered embodia environment ids."""
    _load_all()
    return list(_DESCRIPTIONS)


def resolve_id(env_id: str) -> str:
    """Return the registered id for ``env_id`` (the ``embodia/`` prefix may be omitted).

    Raises:
        UnknownEnvError: with the closest registered ids as suggestions.
    """
    ids = env_ids()
    if env_id in ids:
        return env_id
    prefixed = f"{NAMESPACE}/{env_id}"
    if prefixed in ids:
        return prefixed
    lowered = {i.lower(): i for i in ids}
    for candidate in (env_id.lower(), prefixed.lower()):
        if candidate in lowered:
            return lowered[candidate]
    close = difflib.get_close_matches(prefixed, ids, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UnknownEnvError(f"unknown environment id {env_id!r}.{hint} Run `embodia envs` for the full list.")


def make(env_id: str, **kwargs: Any) -> gymnasium.Env:
    """Create an embodia environment (``gymnasium.make`` with id resolution and clear errors).

    Args:
        env_id: a registered id such as ``"embodia/PointMaze-Medium-v0"`` (prefix optional).
        **kwargs: forwarded to the environment constructor (``render_mode="rgb_array"``, ...).
    """
    return gymnasium.make(resolve_id(env_id), **kwargs)


@dataclass(frozen=True)
class EnvInfo:
    """What `embodia envs` shows about one environment."""

    id: str
    description: str
    observation_space: str
    action_space: str
    max_episode_steps: int | None
    renders: bool
    has_expert: bool


def describe(env_id: str) -> EnvInfo:
    """Instantiate ``env_id`` once and describe its spaces, rendering and expert."""
    env_id = resolve_id(env_id)
    env = make(env_id)
    try:
        unwrapped = env.unwrapped
        return EnvInfo(
            id=env_id,
            description=_DESCRIPTIONS.get(env_id, ""),
            observation_space=_space_str(env.observation_space),
            action_space=_space_str(env.action_space),
            max_episode_steps=env.spec.max_episode_steps if env.spec else None,
            renders="rgb_array" in env.metadata.get("render_modes", []),
            has_expert=bool(getattr(unwrapped, "has_expert", False)),
        )
    finally:
        env.close()


def list_envs() -> list[str]:
    """Registered embodia environment ids (cheap: nothing is instantiated)."""
    return env_ids()


def _space_str(space: gymnasium.Space) -> str:
    if isinstance(space, gymnasium.spaces.Dict):
        return "{" + ", ".join(f"{k}: {_space_str(v)}" for k, v in space.spaces.items()) + "}"
    if isinstance(space, gymnasium.spaces.Box):
        return f"Box{tuple(space.shape)} {space.dtype}"
    return str(space)
