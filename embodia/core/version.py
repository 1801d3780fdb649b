"""The package version (one place; ``embodia.__version__`` and store attributes read it)."""

from __future__ import annotations

__version__ = "0.1.0"
