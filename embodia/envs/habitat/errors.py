"""Errors a user of the navigation environments can cause, one type per kind (all :class:`EmbodiaError`)."""

from __future__ import annotations

from embodia.core.errors import EmbodiaError


class NavSceneError(EmbodiaError, ValueError):
    """A scene that cannot be found, parsed or built (unknown name, bad JSON, overlapping rooms, ...)."""


class NavEpisodeError(EmbodiaError, ValueError):
    """An episode file that cannot be read, or an episode that does not fit its scene."""


class NavBackendError(EmbodiaError, RuntimeError):
    """A simulator back end that is unknown or cannot be used here (``habitat_sim`` not installed, ...)."""
