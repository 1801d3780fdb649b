"""Helpers the reproduction scripts share: Markdown tables, JSON output, a rich progress bar."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from embodia.core.jsonable import to_jsonable


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def save_json(path: str | Path, payload: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_jsonable(payload), indent=2) + "\n")
    return path


@contextmanager
def progress_bar(title: str, enabled: bool = True) -> Iterator[Callable[[int, int, str], None]]:
    """A rich progress bar on stderr; yields ``update(done, total, message)``."""
    if not enabled:
        yield lambda done, total, message: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(f"[bold]{title}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[message]}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(title, total=None, message="")
        yield lambda done, total, message: bar.update(task, completed=done, total=total, message=message)
