"""The commands the guides and the README show run as written: every fenced block marked ``<!-- test: run -->``.

A guide marks a block a user would copy, and that takes seconds, with the comment on the line before its
fence (``<!-- test: run -->``, or ``<!-- test: run timeout=120 -->``). The marked blocks of a page run in
order, ```bash blocks with ``bash -e`` and ```python blocks with this interpreter, in one scratch folder
that sees the checkout's files (``docs/``, ``ros2/``, ``embodia/``, ...) but writes its own ``runs/``. A
block that exits with a non-zero status fails the page. A block's timeout is what it needs on a quiet machine;
it only guards against a hang, so the run allows ``HANG_FACTOR`` times as long (a loaded machine is slower,
and that must not fail the page). The first-hour walkthrough runs the same way
through ``scripts/walkthrough.py`` (tests/scripts/test_walkthrough.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: how many times its marked timeout a block may take before it counts as hung
HANG_FACTOR = 5
MARKED = re.compile(
    r"^<!-- test: run(?: timeout=(\d+))? -->\n```(bash|python)[^\n]*\n(.*?)^```", flags=re.S | re.M
)
#: checkout entries a scratch folder does not link (what a run writes, and what is private to git)
PRIVATE = {".git", "runs", "site", ".venv", ".venv-robot", ".pytest_cache", ".ruff_cache", "demo_out"}


def marked_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, code, timeout in seconds) of every marked block, in page order."""
    return [(lang, code, int(timeout or 60)) for timeout, lang, code in MARKED.findall(text)]


def pages_with_blocks() -> list[Path]:
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [p for p in pages if marked_blocks(p.read_text())]


def scratch_folder(path: Path) -> Path:
    path.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in PRIVATE:
            (path / entry.name).symlink_to(entry)
    return path


def test_marker_syntax_is_found():
    text = "x\n<!-- test: run timeout=9 -->\n```bash\necho hi\n```\n```bash\nnot marked\n```\n"
    assert marked_blocks(text) == [("bash", "echo hi\n", 9)]


def test_some_guides_have_runnable_blocks():
    assert len(pages_with_blocks()) >= 3


@pytest.mark.parametrize("page", pages_with_blocks(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_marked_blocks_of_a_page_run(page, tmp_path):
    work = scratch_folder(tmp_path / "work")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),
        "MPLBACKEND": "Agg",
    }
    for i, (lang, code, timeout) in enumerate(marked_blocks(page.read_text())):
        argv = (
            ["bash", "-e", "-o", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
        )
        out = subprocess.run(
            argv, cwd=work, env=env, capture_output=True, text=True, timeout=timeout * HANG_FACTOR
        )
        assert out.returncode == 0, (
            f"block {i + 1} of {page.name} failed:\n{code}\n{out.stdout[-2000:]}{out.stderr[-3000:]}"
        )
