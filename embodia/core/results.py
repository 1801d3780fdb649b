"""Results files: what an experiment or a benchmark measured, and how, where and when it was measured.

Every number embodia's documentation shows comes from one of these files; the pages render their tables
from them (``docs/hooks/results_pages.py``), so a page cannot disagree with what the code produced. The
code that measures writes the file (:func:`write_results`); nobody types a number into a page.

A results file is JSON::

    {
      "schema": "embodia.results/1",
      "name": "offline_rl/cube_single",            # its path under results/, without ".json"
      "title": "DEAS and its baselines on CubeSingle, five tasks",
      "command": "embodia bench offline-rl --env CubeSingle --seeds 0 1 2 ...",
      "commit": "ed73827...", "dirty": false,     # the checkout that ran it (dirty: uncommitted changes outside results/ and docs/)
      "machine": {"cpu": "Intel(R) Xeon(R) ...", "cores": 2, "system": "Linux-6.1-x86_64", "python": "3.11.7"},
      "date": "2026-12-02",
      "seeds": [0, 1, 2],
      "provenance": "measured",                   # or "transcribed" (see below), with "source"
      "tables": {
        "methods": {
          "columns": [{"key": "method", "label": "method"},
                      {"key": "success", "label": "success", "format": ".0%"}],
          "rows": [{"method": "DEAS", "success": {"value": 0.09, "low": 0.06, "high": 0.12}}, ...]
        }
      },
      "data": {...}                               # anything else the run wants to keep (free form)
    }

A cell is a number, a string (Markdown), a list of either, ``null`` (not measured: rendered "—"), or an
interval ``{"value": v, "low": l, "high": h}`` (rendered ``v [l, h]``; without ``value``: ``[l, h]``). A column's ``format`` is a Python
format spec applied to numbers (``".3f"``, ``".0%"``, ``","``); house style puts a space before a percent
sign (``9 %``).

``provenance: "transcribed"`` marks numbers that were measured by an earlier version of the code and kept
only as typed text (the README before the documentation site existed): ``source`` says where they were
read (file and commit), ``commit`` and ``date`` are those of the commit that added them, and the machine's
CPU is ``null`` where it was not recorded. The pages say so next to the table. Running the command again
replaces the file with a measured one.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from embodia.core.errors import EmbodiaError
from embodia.core.jsonable import to_jsonable

SCHEMA = "embodia.results/1"
#: the fields every results file has (what the pages show beside each table)
REQUIRED_FIELDS = ("name", "command", "commit", "machine", "date", "seeds", "provenance", "tables")
PROVENANCES = ("measured", "transcribed")
#: where a checkout keeps its results files (the documentation reads them from here)
RESULTS_DIR = Path(__file__).resolve().parents[2] / "results"


def default_results_path(name: str, quick: bool = False) -> Path:
    """Where a run writes its results file by default: ``results/<name>.json`` in the checkout, or for a
    ``--quick`` run ``runs/quick-results/<name>.json`` (ignored by git), so that a quick run never replaces
    a committed measurement."""
    if quick:
        return RESULTS_DIR.parent / "runs" / "quick-results" / f"{name}.json"
    return RESULTS_DIR / f"{name}.json"


class ResultsError(EmbodiaError):
    """A results file that is missing, not JSON, or lacks a field a page or a reader needs."""


@dataclass(frozen=True)
class Column:
    """One column of a results table."""

    key: str
    """The row field this column shows."""
    label: str
    """The column's heading on the page (Markdown)."""
    format: str = ""
    """A Python format spec for numbers (``".3f"``, ``".0%"``); empty: ``str(value)`` (integers) or 4 digits."""


@dataclass
class Table:
    """A table of results: columns (what to show, in order) and rows (one dict per row, keyed by column key)."""

    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, **row: Any) -> None:
        """Append a row; every column must be given (``None`` where nothing was measured)."""
        missing = [c.key for c in self.columns if c.key not in row]
        if missing:
            raise ValueError(f"row {row} lacks the columns {missing}")
        self.rows.append(row)

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [
                {"key": c.key, "label": c.label, **({"format": c.format} if c.format else {})}
                for c in self.columns
            ],
            "rows": to_jsonable(self.rows),
        }

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> Table:
        columns = [Column(c["key"], c["label"], c.get("format", "")) for c in payload["columns"]]
        return cls(columns, [dict(row) for row in payload["rows"]])

    def markdown(self) -> str:
        """The table as Markdown (what the pages and the scripts' terminal output show)."""
        lines = [
            "| " + " | ".join(c.label for c in self.columns) + " |",
            "|" + "---|" * len(self.columns),
        ]
        for row in self.rows:
            lines.append(
                "| " + " | ".join(format_cell(row.get(c.key), c.format) for c in self.columns) + " |"
            )
        return "\n".join(lines)


def interval(value: float, low: float, high: float) -> dict[str, float]:
    """A measured value with its interval (e.g. a success rate with its 95 % Wilson interval)."""
    return {"value": float(value), "low": float(low), "high": float(high)}


def format_number(value: float | int, spec: str = "") -> str:
    """``value`` formatted by ``spec``; a percent gets a space before its sign (``9 %``); NaN as "—"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    if not spec:
        if isinstance(value, int):
            return str(value)
        return f"{value:.4g}"
    text = format(value, spec)
    if spec.endswith("%"):
        text = text[:-1] + " %"
    return text


def format_cell(value: Any, spec: str = "") -> str:
    """One table cell as Markdown text: numbers by ``spec``, intervals as ``v [l, h]``, lists joined."""
    if value is None:
        return "—"
    if isinstance(value, Mapping):
        if {"low", "high"} <= set(value) and set(value) <= {"value", "low", "high"}:
            if value["low"] is None or value["high"] is None:
                return format_cell(value.get("value"), spec)
            bounds = f"[{format_cell(value['low'], spec)}, {format_cell(value['high'], spec)}]"
            if value.get("value") is None:  # an interval alone (a column of its own)
                return bounds
            return f"{format_cell(value['value'], spec)} {bounds}"
        raise ResultsError(f"a cell holds {dict(value)}: a cell is a number, text, a list or an interval")
    if isinstance(value, list | tuple):
        return ", ".join(format_cell(v, spec) for v in value)
    if isinstance(value, int | float):
        return format_number(value, spec)
    return str(value).replace("|", "\\|").replace("\n", " ")


@cache
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args: str, cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=cwd or Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


OUTPUT_DIRS = ("results", "docs")
"""Top-level folders whose changes do not make a checkout dirty: what runs write (results files, pictures)
and the pages about them, not code that measures."""


def code_changed(checkout: Path | None = None) -> bool | None:
    """Whether tracked files of the git checkout around ``checkout`` (default: embodia's) differ from its
    commit outside :data:`OUTPUT_DIRS`; None where there is no git checkout. A run that writes its picture
    into ``docs/`` before its results file therefore still counts as clean."""
    excluded = [f":(top,exclude){name}" for name in OUTPUT_DIRS]
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ":/", *excluded, cwd=checkout)
    return None if status is None else bool(status)


def machine() -> dict[str, Any]:
    """The machine a measurement ran on: CPU model, cores the process may use, system, Python."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": cores,
        "system": platform.platform(terse=True),
        "python": platform.python_version(),
    }


def provenance(command: str | None = None, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """How, where and when: the command (default: this process's), commit, machine, date, seeds."""
    from embodia.core.version import __version__

    if command is None:
        program = Path(sys.argv[0]).name
        argv = sys.argv[1:]
        if program == "embodia" or program.endswith("__main__.py"):
            command = shlex.join(["embodia", *argv])
        elif getattr(sys.modules["__main__"], "__spec__", None) is not None:  # python -m package.module
            command = shlex.join(["python", "-m", sys.modules["__main__"].__spec__.name, *argv])
        else:
            script = Path(sys.argv[0]).resolve()
            if script.is_relative_to(RESULTS_DIR.parent):
                script = script.relative_to(RESULTS_DIR.parent)
            command = shlex.join(["python", str(script), *argv])
    commit = _git("rev-parse", "HEAD")
    dirty = code_changed() if commit else None
    return {
        "command": command,
        "commit": commit or f"unknown (embodia {__version__}, not a git checkout)",
        "dirty": dirty,
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "seeds": [int(s) for s in seeds] if seeds is not None else [],
        "provenance": "measured",
    }


def write_results(
    path: str | Path,
    tables: Mapping[str, Table],
    *,
    name: str | None = None,
    title: str = "",
    command: str | None = None,
    seeds: Iterable[int] | None = None,
    data: Mapping[str, Any] | None = None,
) -> Path:
    """Write a results file: the tables, the provenance of this process, and ``data`` (free form).

    ``name`` defaults to the path under ``results/`` (or the file's stem elsewhere). Returns the path.
    """
    path = Path(path)
    if name is None:
        try:
            name = path.resolve().relative_to(RESULTS_DIR.resolve()).with_suffix("").as_posix()
        except ValueError:
            name = path.stem
    payload = {
        "schema": SCHEMA,
        "name": name,
        "title": title,
        **provenance(command, list(seeds) if seeds is not None else None),
        "tables": {key: table.to_json() for key, table in tables.items()},
        "data": to_jsonable(dict(data or {})),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # one temporary file per process: two writers of the same results file (two test workers' quick runs)
    # each replace it whole, never interleave their bytes in a shared temporary file
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def read_results(path: str | Path) -> dict[str, Any]:
    """A results file, checked for the fields every page shows; :class:`ResultsError` says what is wrong."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"results file {path} does not exist: run the command that writes it") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"results file {path} is corrupt ({error}): write it again") from None
    if not isinstance(payload, dict) or payload.get("schema") != SCHEMA:
        raise ResultsError(f"{path} is not an embodia results file (schema {SCHEMA!r} expected)")
    missing = [key for key in REQUIRED_FIELDS if key not in payload]
    if missing:
        raise ResultsError(
            f"results file {path} lacks {', '.join(missing)}: write it again with write_results"
        )
    if payload["provenance"] not in PROVENANCES:
        raise ResultsError(f"results file {path}: provenance must be one of {PROVENANCES}")
    if payload["provenance"] == "transcribed" and not payload.get("source"):
        raise ResultsError(f"results file {path} is transcribed but does not say from where ('source')")
    for key, table in payload["tables"].items():
        if not isinstance(table, dict) or "columns" not in table or "rows" not in table:
            raise ResultsError(f"results file {path}: table {key!r} needs 'columns' and 'rows'")
        keys = [c.get("key") for c in table["columns"]]
        for i, row in enumerate(table["rows"]):
            absent = [k for k in keys if k not in row]
            if absent:
                raise ResultsError(f"results file {path}: table {key!r} row {i} lacks {absent}")
    return payload


def table_of(payload: Mapping[str, Any], table: str, where: str = "") -> Table:
    """Table ``table`` of a results file read by :func:`read_results`."""
    try:
        return Table.from_json(payload["tables"][table])
    except KeyError:
        known = ", ".join(payload["tables"]) or "none"
        raise ResultsError(
            f"results file {where or payload.get('name')} has no table {table!r} (it has: {known})"
        ) from None


def layout_differences(produced: Mapping[str, Any], reference: Mapping[str, Any]) -> list[str]:
    """What ``produced`` lacks of ``reference``'s layout: tables and column keys (values are not compared).

    A script's quick run and the committed results file must have the same layout, so that a full run
    of the script renders the same page.
    """
    problems = []
    for name, table in reference["tables"].items():
        if name not in produced["tables"]:
            problems.append(f"no table {name!r}")
            continue
        ours = [c["key"] for c in produced["tables"][name]["columns"]]
        theirs = [c["key"] for c in table["columns"]]
        if ours != theirs:
            problems.append(f"table {name!r}: columns {ours} != {theirs}")
    return problems
