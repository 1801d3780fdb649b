"""The environment registry: every embodia environment is a ``gymnasium.Env`` registered with gymnasium as
``embodia/<Name>-v<N>``.

Each family registers its ids next to its class, with the entry point as a string, so registering imports
no simulator: ``import embodia`` (or ``import embodia.envs``) makes every id available to
``gymnasium.make`` / ``gymnasium.make_vec`` at the cost of a few dictionary entries. gymnasium's own
``"module:id"`` form works too, without importing embodia first: ``gymnasium.make("embodia:embodia/CubeSingle-v0")``.

:func:`make` wraps ``gymnasium.make`` with errors that suggest close matches and name bad arguments;
:func:`describe` reads the spaces from the shipped catalog (:mod:`embodia.envs.catalog`) instead of
building the simulator.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import gymnasium

from embodia.core.errors import EnvArgumentError, UnknownEnvError

NAMESPACE = "embodia"

#: ids registered by embodia, in registration order, with a one-line description each.
_DESCRIPTIONS: dict[str, str] = {}


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
    if not isinstance(entry_point, str):
        raise TypeError(
            f"{env_id}: the entry point must be a 'module:Class' string, so registering stays cheap"
        )
    _DESCRIPTIONS[env_id] = description
    if env_id in gymnasium.registry:
        return
    gymnasium.register(
        id=env_id,
        entry_point=entry_point,
        kwargs=kwargs or {},
        max_episode_steps=max_episode_steps,
        disable_env_checker=True,
    )


def env_ids() -> list[str]:
    """All registered embodia environment ids, in registration order."""
    return list(_DESCRIPTIONS)


def resolve_id(env_id: str) -> str:
    """Return the registered id for ``env_id`` (the ``embodia/`` prefix may be omitted, case is ignored).

    Raises:
        UnknownEnvError: with the closest registered ids as suggestions.
    """
    ids = env_ids()
    if env_id in _DESCRIPTIONS:
        return env_id
    prefixed = f"{NAMESPACE}/{env_id}"
    if prefixed in _DESCRIPTIONS:
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

    Raises:
        UnknownEnvError: no such id.
        EnvArgumentError: an argument the environment does not take, or whose value it refuses (environments
            raise EnvArgumentError for values a user can get wrong).
    """
    env_id = resolve_id(env_id)
    try:
        return gymnasium.make(env_id, **kwargs)
    except EnvArgumentError as error:
        raise EnvArgumentError(f"cannot make {env_id}: {error}") from None
    except TypeError:
        unknown = _unknown_arguments(env_id, kwargs)
        if not unknown:
            raise
        raise EnvArgumentError(
            f"cannot make {env_id}: unknown argument(s) {', '.join(unknown)}; it accepts "
            f"{', '.join(_parameters(env_id))}"
        ) from None


def env_config_type(env_id: str) -> type | None:
    """The type of an environment's keyword arguments, where its class declares one (``config_type``).

    Its fields typed as paths (:class:`embodia.core.paths.PathArgument`) are what a caller that passes on
    untrusted arguments (the MCP server's ``run_episodes``) confines; an environment without one takes no path.
    """
    from gymnasium.envs.registration import load_env_creator

    return getattr(load_env_creator(gymnasium.spec(resolve_id(env_id)).entry_point), "config_type", None)


def _parameters(env_id: str) -> list[str]:
    """The keyword arguments the environment's constructor takes (besides those its id fixes)."""
    import inspect

    from gymnasium.envs.registration import load_env_creator

    spec = gymnasium.spec(env_id)
    fixed = set(spec.kwargs)
    signature = inspect.signature(load_env_creator(spec.entry_point))
    return [
        name
        for name, p in signature.parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in fixed
    ]


def _unknown_arguments(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    try:
        accepted = set(_parameters(env_id)) | set(gymnasium.spec(env_id).kwargs)
    except (ValueError, TypeError):  # a signature that cannot be read
        return []
    return sorted(k for k in kwargs if k not in accepted and k not in ("render_mode", "max_episode_steps"))


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


def describe(env_id: str, *, build: bool = False) -> EnvInfo:
    """Describe ``env_id``'s spaces, rendering and expert; from the shipped catalog unless ``build``.

    An id missing from the catalog (a new environment before ``scripts/update_env_catalog.py`` ran) is built.
    """
    from embodia.envs.catalog import entry, space_from_json, space_summary

    env_id = resolve_id(env_id)
    cached = None if build else entry(env_id)
    if cached is None:
        cached = inspect_env(env_id)
    return EnvInfo(
        id=env_id,
        description=_DESCRIPTIONS.get(env_id, ""),
        observation_space=space_summary(space_from_json(cached["observation_space"])),
        action_space=space_summary(space_from_json(cached["action_space"])),
        max_episode_steps=cached["max_episode_steps"],
        renders=cached["renders"],
        has_expert=cached["has_expert"],
    )


def inspect_env(env_id: str) -> dict[str, Any]:
    """Build ``env_id`` once (default arguments), check its contract, and return its catalog entry.

    Raises:
        EnvContractError: the environment breaks embodia's environment contract (:mod:`embodia.core.env`).
    """
    from embodia.core.env import check_embodied_env, has_expert
    from embodia.envs.catalog import space_to_json

    env = make(env_id)
    try:
        check_embodied_env(env)
        return {
            "observation_space": space_to_json(env.observation_space),
            "action_space": space_to_json(env.action_space),
            "max_episode_steps": env.spec.max_episode_steps if env.spec else None,
            "renders": "rgb_array" in env.metadata.get("render_modes", []),
            "has_expert": has_expert(env),
        }
    finally:
        env.close()
