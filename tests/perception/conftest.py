"""Shared helpers for the perception tests."""

from __future__ import annotations

import importlib.util

from tests.conftest import ROOT


def run_script(name: str, *args: str) -> int:
    """Import ``scripts/<name>.py`` and call its ``main(list(args))`` in this process; return its exit code."""
    spec = importlib.util.spec_from_file_location(f"_embodia_script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(list(args))
