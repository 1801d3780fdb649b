"""Package data: MJCF, meshes, textures and generated scenes, shipped in the wheel.

Each family keeps its assets in a subfolder (``kitchen/``, ``nav/``); :func:`asset_path` resolves a path
inside this package.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent


def asset_path(*parts: str) -> Path:
    """The path of ``parts`` inside ``embodia/sim_assets`` (not checked for existence)."""
    return ROOT.joinpath(*parts)
