"""Writing a question set as JSON lines + PNG images, and reading one back.

An export folder holds ``questions.jsonl`` (one :meth:`SpatialQuestion.to_record` per line, answer key
included, with the relative paths of its images), ``images/`` (per question a composite, the stimulus and
one image per option) and ``spatial_dise_export.json``, the manifest of every file the export wrote.
Exporting again into such a folder first removes exactly the files its manifest lists; a folder that holds
anything else is refused, so nothing embodia did not write is ever overwritten or deleted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from embodia.agents.methods.spatial_dise.core import IMAGE_SIZE, SpatialDiseError, SpatialQuestion

QUESTIONS = "questions.jsonl"
MANIFEST = "spatial_dise_export.json"
FORMAT = "embodia-spatial-dise/1"


def _refuse(folder: Path, why: str) -> SpatialDiseError:
    return SpatialDiseError(
        f"will not export into {str(folder)!r}: {why}; embodia never writes into or deletes what it did not "
        "write: choose a new path or an empty folder"
    )


def _clear_previous_export(folder: Path) -> None:
    """Check that ``folder`` is missing, empty, or an earlier export with nothing added; remove its files."""
    if folder.exists() and not folder.is_dir():
        raise _refuse(folder, "it is a file")
    if not folder.exists() or not any(folder.iterdir()):
        return
    manifest = folder / MANIFEST
    try:
        written = json.loads(manifest.read_text())
        assert written["format"] == FORMAT and all(isinstance(f, str) for f in written["files"])
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        raise _refuse(folder, f"it holds files and no Spatial-DISE export manifest ({MANIFEST})") from None
    ours = set(written["files"]) | {MANIFEST}
    present = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir() or p.is_symlink()
    )
    folders = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()
    )
    foreign = [p for p in present if p not in ours] + [d for d in folders if d != "images"]
    if foreign:
        raise _refuse(
            folder, f"besides an earlier export it holds {foreign[:5]}, which embodia did not write"
        )
    for name in present:
        (folder / name).unlink()


def _file_stem(index: int, question_id: str) -> str:
    return f"{index:05d}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", question_id)[:80]


def export_jsonl(
    questions: Sequence[SpatialQuestion],
    folder: str | Path,
    *,
    size: int = IMAGE_SIZE,
    images: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
) -> Path:
    """Write ``questions`` to ``folder`` (see the module docstring); returns the ``questions.jsonl`` path.

    Raises :class:`SpatialDiseError` if the folder holds anything but an earlier export, or if two
    questions share an id.
    """
    folder = Path(folder)
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise SpatialDiseError("question ids must be unique within an export")
    _clear_previous_export(folder)
    stems = [_file_stem(i, q.id) for i, q in enumerate(questions)]
    planned = [QUESTIONS]
    if images:
        for stem, q in zip(stems, questions):
            planned += [
                f"images/{stem}{part}.png" for part in ("", "_stimulus", *(f"_{lab}" for lab in q.labels))
            ]
    folder.mkdir(parents=True, exist_ok=True)
    # the manifest goes first, so that a folder left by an interrupted export can be exported into again
    (folder / MANIFEST).write_text(json.dumps({"format": FORMAT, "files": planned}, indent=1) + "\n")
    if images:
        (folder / "images").mkdir(exist_ok=True)
    lines = []
    for i, (stem, question) in enumerate(zip(stems, questions)):
        record: dict[str, Any] = question.to_record()
        if images:
            rendered = question.images(size)
            question.composite(size, rendered).save(folder / "images" / f"{stem}.png")
            record["image"] = f"images/{stem}.png"
            record["images"] = {}
            for name, image in rendered.items():
                path = f"images/{stem}_{name}.png"
                image.save(folder / path)
                record["images"][name] = path
        lines.append(json.dumps(record))
        if progress is not None:
            progress(i + 1, len(questions), question.id)
    (folder / QUESTIONS).write_text("\n".join(lines) + "\n")
    return folder / QUESTIONS


def load_jsonl(path: str | Path) -> list[SpatialQuestion]:
    """Questions from a JSON-lines file, or from an export folder (its ``questions.jsonl``)."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / QUESTIONS
    if not path.is_file():
        raise SpatialDiseError(f"no question file at {path}; pass a .jsonl file or an export folder")
    questions = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise SpatialDiseError(f"{path}:{number}: not JSON ({error.msg})") from None
        questions.append(SpatialQuestion.from_record(record, f"{path}:{number}"))
    if not questions:
        raise SpatialDiseError(f"{path} holds no questions")
    return questions
