"""Shared helpers for the perception tests."""

from __future__ import annotations

from tests.conftest import run_script

__all__ = ["run_script"]
