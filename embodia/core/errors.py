"""Errors a user can cause, one type per kind.

Every message says what was wrong, where, and what to do. The CLI prints ``str(error)`` on one line
and exits with a non-zero status; library users catch :class:`EmbodiaError`.
"""

from __future__ import annotations


class EmbodiaError(Exception):
    """Base class of all errors embodia raises for bad input."""


class UnknownEnvError(EmbodiaError, KeyError):
    """An environment id that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class ActionError(EmbodiaError, ValueError):
    """An action of the wrong shape, or with NaN / inf entries."""


class StoreError(EmbodiaError):
    """A trajectory store that is missing, corrupt or of an unsupported format version."""


class StoreNotFoundError(StoreError, FileNotFoundError):
    """The store path does not exist (or is not a store)."""


class StoreFormatError(StoreError):
    """The store was written by an incompatible format version."""


class StoreSchemaError(StoreError, ValueError):
    """An episode does not match the keys / shapes / dtypes the store already holds."""


class PolicyError(EmbodiaError):
    """A policy that cannot be loaded or built (bad path, unknown type, no expert for an env)."""


class ReplayMismatchError(EmbodiaError):
    """Re-simulation diverged from the recorded states beyond the tolerance."""


class ConfigError(EmbodiaError, ValueError):
    """A configuration (training options, a node config, tool arguments) with a missing, unknown or invalid field."""


class StoreLockedError(StoreError):
    """Another writer holds the store's writer lock (one writer per store)."""


class StoreCorruptError(StoreError):
    """A store whose arrays, episode table and episode ends disagree, or whose chunks fail their checksums."""


class StoreWriteError(StoreError):
    """A store that cannot be written: its file system is full, read-only, or gone. What was committed
    before is kept."""


class EpisodeIndexError(StoreError, IndexError):
    """An episode index past the end of a store."""


class EnvArgumentError(EmbodiaError, ValueError):
    """An environment argument (``--env-kwarg``, ``task_id``, ...) that the environment does not accept."""


class OutputPathError(EmbodiaError, ValueError):
    """A file to write whose path is a folder, or lies under a file."""
