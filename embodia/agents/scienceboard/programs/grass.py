"""GRASS GIS (ScienceBoard's GIS domain): raster and vector analysis in a GRASS database of the workspace.

Program: GRASS GIS 8.2 from Debian (``grass-core``; ``GISBASE`` = ``/usr/lib/grass82``). :meth:`Grass.start`
creates a GRASS database with one unprojected (XY) location ``project`` under ``<workspace>/grassdata``,
writes a ``GISRC`` file in the workspace (mapset ``PERMANENT``) and sets the default computational region
``n=100 s=0 e=100 w=0 res=1`` (100 x 100 cells), so every task starts from the same, deterministic state.

Programmatic interface: one **command** is one GRASS module call written as on GRASS's command line, e.g.
``r.mapcalc "dem2 = dem * 2"``, ``r.slope.aspect elevation=dem slope=slope``, ``v.buffer input=wells
output=wells_buf distance=10``, ``g.region -p``. It is split with :func:`shlex.split` (never given to a
shell) and the module runs directly with GRASS's environment (``GISBASE``, ``GISRC``, ``PATH`` ...); the
answer is the module's output (standard output and messages), plus its exit status when it failed. Only
GRASS modules of the families ``g. r. r3. v. i. t. db. m.`` run; display modules (``d.*``), the GUI, modules
that download, install or run other programs, and files outside the workspace are refused.

GUI interface: GRASS's own wxPython GUI (Debian's ``grass-gui``) on the sandbox's display, opened on the
task's database after its setup: the layer manager (data tree, layers, tools, the *Console* tab whose command
prompt runs modules, a Python shell) and a map display. The checkers ask the same database as on the api
interface, so a map the agent makes through a dialog or the console counts the same. Nothing the GUI runs is
screened by the rules above; the sandbox is the boundary there.

Queries (``QUERIES``; a map that does not exist answers ``None``):

- ``raster_exists`` {map}, ``vector_exists`` {map}: whether the map exists (bool);
- ``raster_univar`` {map, stat, [zones, zone]}: a statistic of ``r.univar`` (n, null_cells, min, max, range,
  mean, stddev, variance, sum, median, first_quartile, third_quartile ...), optionally within one category
  ``zone`` of the raster ``zones``;
- ``raster_value_at`` {map, x, y}: the cell value at a coordinate (``r.what``; ``"null"`` for no data);
- ``raster_info`` {map, key}: a field of ``r.info -gr`` (datatype, rows, cols, nsres, min, max, ...);
- ``raster_category_cells`` {map, value}: how many cells of an integer raster hold ``value``;
- ``raster_categories_count`` {map}: how many distinct values an integer raster holds (None if not CELL);
- ``region`` {key}: a field of ``g.region -g`` (n, s, e, w, nsres, ewres, rows, cols, cells);
- ``vector_count`` {map, type}: a count of ``v.info -t`` (points, lines, boundaries, centroids, areas ...);
- ``vector_columns`` {map}: the attribute columns of layer 1 (``[]`` without a table);
- ``vector_attribute_stat`` {map, column, stat}: a statistic of ``v.db.univar`` (n, min, max, mean, sum ...);
- ``vector_area_total`` {map}: the total area of the map's areas that have a category (``v.to.db -p``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, ClassVar

from embodia.agents.scienceboard.programs.base import Program, QueryError
from embodia.agents.scienceboard.sandbox import (
    SYSTEM_PYTHON,
    ProgramCrashedError,
    SandboxError,
)

GISBASE = Path("/usr/lib/grass82")
GUI_SCRIPT = GISBASE / "gui" / "wxpython" / "wxgui.py"
"""GRASS's wxPython GUI (Debian's ``grass-gui``), started directly on the task's database."""
LOCATION = "project"
DEFAULT_REGION = ("n=100", "s=0", "e=100", "w=0", "res=1")
MODULE = re.compile(r"^(g|r|r3|v|i|t|db|m)\.[a-z0-9_.]+$")
MAP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(@PERMANENT)?$")
FORBIDDEN = re.compile(
    r"^(g\.gui(\..*)?|g\.parser|g\.extension(\..*)?|g\.manual|g\.download\..*|g\.mapsets?|g\.gisenv|"
    r"g\.search\.modules|m\.nviz\..*|r\.in\.(wms|srtm)|v\.in\.(wfs|geonames)|t\.connect|db\.login|"
    r"g\.cairocomp|g\.pnmcomp|g\.ppmtopng)$"
)
"""Modules refused: GUI, parsers for scripts, add-on installers, browsers, network downloads, switching
the database or mapset, and helpers that are not analysis modules."""
UNIVAR_EXTENDED = {"median", "first_quartile", "third_quartile", "percentile_90"}


class Grass(Program):
    """GRASS GIS modules on a fresh XY location of the workspace (see the module docstring)."""

    domain: ClassVar[str] = "grass"
    executables: ClassVar[tuple[str, ...]] = ("grass",)
    apt_packages: ClassVar[str] = "grass-core grass-gui"
    gui_application: ClassVar[str | None] = "wxgui.py"
    QUERIES: ClassVar[dict[str, str]] = {
        "raster_exists": "{map}: whether the raster map exists (bool)",
        "vector_exists": "{map}: whether the vector map exists (bool)",
        "raster_univar": "{map, stat, [zones, zone]}: r.univar statistic (n, min, max, mean, stddev, sum, "
        "median ...), optionally within category `zone` of raster `zones`",
        "raster_value_at": "{map, x, y}: the cell value at coordinate (x, y) ('null' for no data)",
        "raster_info": "{map, key}: a field of r.info -gr (datatype, rows, cols, nsres, ewres, min, max ...)",
        "raster_category_cells": "{map, value}: number of cells of an integer raster equal to `value`",
        "raster_categories_count": "{map}: number of distinct values of an integer (CELL) raster",
        "region": "{key}: a field of g.region -g (n, s, e, w, nsres, ewres, rows, cols, cells)",
        "vector_count": "{map, type}: a count of v.info -t (points, lines, boundaries, centroids, areas ...)",
        "vector_columns": "{map}: attribute column names of layer 1 ([] without a table)",
        "vector_attribute_stat": "{map, column, stat}: v.db.univar statistic (n, min, max, mean, sum ...)",
        "vector_area_total": "{map}: total area of the vector map's areas (with categories)",
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.database = self.sandbox.workspace / "grassdata"
        self.gisrc = self.sandbox.workspace / ".grassrc"
        self.env: dict[str, str] = {}
        self.started = False
        self.gui: subprocess.Popen | None = None

    # ------------------------------------------------------------------------------------------- running
    def start(self) -> None:
        if not (GISBASE / "bin" / "r.mapcalc").exists():
            raise SandboxError(
                f"GRASS GIS 8.2 not found in {GISBASE}; run `make setup` (apt-get install grass-core)"
            )
        result = self.sandbox.run(
            ["grass", "-c", "XY", "-e", str(self.database / LOCATION)], timeout=max(self.timeout, 30.0)
        )
        if result.returncode != 0 or not (self.database / LOCATION / "PERMANENT" / "DEFAULT_WIND").exists():
            raise ProgramCrashedError(f"grass could not create its database: {result.stdout.strip()[-300:]}")
        self.gisrc.write_text(
            f"GISDBASE: {self.database}\nLOCATION_NAME: {LOCATION}\nMAPSET: PERMANENT\nGUI: text\n",
            encoding="utf-8",
        )
        path = f"{GISBASE}/bin:{GISBASE}/scripts:{self.sandbox.env['PATH']}"
        self.env = {
            "GISBASE": str(GISBASE),
            "GISRC": str(self.gisrc),
            "PATH": path,
            "LD_LIBRARY_PATH": f"{GISBASE}/lib",
            "PYTHONPATH": f"{GISBASE}/etc/python",
            "GRASS_PYTHON": "/usr/bin/python3",
            "GRASS_MESSAGE_FORMAT": "silent",  # no progress percentages
            "GRASS_SKIP_MAPSET_OWNER_CHECK": "1",
            "OMP_NUM_THREADS": "1",
        }
        self.started = True
        self._module(["g.region", *DEFAULT_REGION], check=True)

    def setup_done(self) -> None:
        if self.interface == "gui":
            self._start_gui()

    def _start_gui(self) -> None:
        """GRASS's wxPython GUI on the database the setup prepared (its layer manager and a map display)."""
        if not GUI_SCRIPT.exists():
            raise SandboxError(
                f"GRASS's GUI not found ({GUI_SCRIPT}); run `make setup` (apt-get install grass-gui)"
            )
        env = {key: value for key, value in self.env.items() if key != "GRASS_MESSAGE_FORMAT"}
        self.gui = self.sandbox.spawn([SYSTEM_PYTHON, str(GUI_SCRIPT)], stdin=None, stdout=None, env=env)
        title = f"{LOCATION}/PERMANENT - GRASS GIS"
        # then the data tree and the map display finish laying out
        self.wait_for_window(
            self.gui,
            lambda: title in self.sandbox.a11y_tree(self.gui_application, max_lines=5),
            "GRASS's GUI",
            settle=2.0,
            at_least=60.0,
        )

    def close(self) -> None:
        if self.gui is not None and self.gui.poll() is None:
            self.sandbox.kill(self.gui, grace=1.0)
        self.gui = None

    def _module(self, argv: list[str], *, check: bool = False) -> subprocess.CompletedProcess:
        """Run one GRASS module (stdout and messages merged)."""
        if not self.started:
            raise ProgramCrashedError("GRASS is not started")
        executable = _executable(argv[0])
        if executable is None:
            raise QueryError(f"grass: no module named {argv[0]!r}")
        result = self.sandbox.run([str(executable), *argv[1:]], timeout=self.timeout, env=self.env)
        if check and result.returncode != 0:
            raise ProgramCrashedError(f"{argv[0]} failed: {result.stdout.strip()[-300:]}")
        return result

    def command(self, text: str) -> str:
        try:
            argv = shlex.split(text)
        except ValueError as error:
            return f"error: {error}"
        if not argv:
            return ""
        if _executable(argv[0]) is None:
            return f"error: {argv[0]!r} is not a GRASS module"
        result = self._module(argv)
        output = result.stdout.strip()
        if result.returncode != 0:
            output = f"{output}\n(exit status {result.returncode})".strip()
        return output or f"{argv[0]}: done (no output)"

    def refuse(self, text: str) -> str | None:
        try:
            argv = shlex.split(text)
        except ValueError as error:
            return f"refused: the command cannot be parsed ({error}); balance its quotes"
        if not argv:
            return "refused: empty command; give one GRASS module call, e.g. g.region -p"
        name = argv[0]
        if name.startswith("d."):
            return f"refused: {name} is a display module; there is no monitor, use query modules instead"
        if not MODULE.match(name) or _executable(name) is None:
            return f"refused: {name!r} is not a GRASS module (one command is one module call, e.g. r.info map=dem)"
        if FORBIDDEN.match(name):
            return f"refused: {name} is not available in this sandbox (GUI, installers, network or database switch)"
        if "--ui" in argv[1:]:
            return "refused: --ui opens the GUI; run the module with its options instead"
        return super().refuse(text)

    def status(self) -> str:
        if not self.started:
            return ""
        region = self._module(["g.region", "-g"]).stdout.split()
        shown = " ".join(
            item for item in region if item.split("=")[0] in ("n", "s", "e", "w", "nsres", "ewres")
        )
        rasters = self._list("raster")
        vectors = self._list("vector")
        return f"region: {shown}\nrasters: {', '.join(rasters) or '-'}\nvectors: {', '.join(vectors) or '-'}"

    def _list(self, kind: str) -> list[str]:
        result = self._module(["g.list", f"type={kind}", "mapset=PERMANENT"])
        return result.stdout.split() if result.returncode == 0 else []

    # ------------------------------------------------------------------------------------------- queries
    def query(self, name: str, args: dict[str, Any]) -> Any:
        handler = getattr(self, f"_q_{name}", None)
        if name not in self.QUERIES or handler is None:
            return super().query(name, args)
        return handler(name, args)

    def _map(self, name: str, args: dict[str, Any], kind: str, key: str = "map") -> str | None:
        """The map named in ``args[key]`` if it exists (None if not)."""
        (value,) = self.require(name, args, key)
        value = str(value)
        if not MAP_NAME.match(value):
            raise QueryError(f"grass: {value!r} is not a valid map name")
        element = "cell" if kind == "raster" else "vector"
        found = self._module(["g.findfile", f"element={element}", f"file={value}", "mapset=PERMANENT", "-n"])
        return value if found.returncode == 0 and f"name={value.split('@')[0]}" in found.stdout else None

    def _q_raster_exists(self, name: str, args: dict[str, Any]) -> bool:
        return self._map(name, args, "raster") is not None

    def _q_vector_exists(self, name: str, args: dict[str, Any]) -> bool:
        return self._map(name, args, "vector") is not None

    def _q_raster_univar(self, name: str, args: dict[str, Any]) -> float | None:
        raster = self._map(name, args, "raster")
        (stat,) = self.require(name, args, "stat")
        if raster is None:
            return None
        flags = ["-e"] if stat in UNIVAR_EXTENDED else []
        if "zones" in args:
            zones = self._map(name, args, "raster", key="zones")
            (zone,) = self.require(name, args, "zone")
            if zones is None:
                return None
            result = self._module(
                ["r.univar", "-t", *flags, f"map={raster}", f"zones={zones}", "separator=|"]
            )
            lines = [line.split("|") for line in result.stdout.splitlines() if "|" in line]
            if result.returncode != 0 or not lines:
                return None
            header = lines[0]
            column = {"n": "non_null_cells"}.get(stat, stat)
            if column not in header:
                raise QueryError(f"grass: r.univar has no statistic {stat!r}; known: {', '.join(header[2:])}")
            for row in lines[1:]:
                if row[0].strip() == str(zone):
                    return _float(row[header.index(column)])
            return None
        values = _pairs(self._module(["r.univar", "-g", *flags, f"map={raster}"]).stdout)
        if stat not in values:
            raise QueryError(f"grass: r.univar has no statistic {stat!r}; known: {', '.join(values)}")
        return _float(values[stat])

    def _q_raster_value_at(self, name: str, args: dict[str, Any]) -> float | str | None:
        raster = self._map(name, args, "raster")
        x, y = (_float(value) for value in self.require(name, args, "x", "y"))
        if x is None or y is None:
            raise QueryError("grass: raster_value_at needs numeric x and y")
        if raster is None:
            return None
        result = self._module(["r.what", f"map={raster}", f"coordinates={x},{y}"])
        lines = [line for line in result.stdout.splitlines() if line.count("|") >= 3]
        if result.returncode != 0 or not lines:
            return None
        value = lines[-1].split("|")[3].strip()
        return "null" if value == "*" else _float(value)

    def _q_raster_info(self, name: str, args: dict[str, Any]) -> Any:
        raster = self._map(name, args, "raster")
        (key,) = self.require(name, args, "key")
        if raster is None:
            return None
        values = _pairs(self._module(["r.info", "-gr", f"map={raster}"]).stdout)
        value = values.get(str(key))
        number = _float(value) if value is not None else None
        return number if number is not None else value

    def _category_counts(self, raster: str) -> dict[int, int] | None:
        info = _pairs(self._module(["r.info", "-g", f"map={raster}"]).stdout)
        if info.get("datatype") != "CELL":
            return None
        result = self._module(["r.stats", "-c", "-n", f"input={raster}", "separator=space"])
        counts = {}
        for line in result.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].lstrip("-").isdigit() and parts[1].isdigit():
                counts[int(parts[0])] = int(parts[1])
        return counts

    def _q_raster_category_cells(self, name: str, args: dict[str, Any]) -> int | None:
        raster = self._map(name, args, "raster")
        (value,) = self.require(name, args, "value")
        counts = self._category_counts(raster) if raster else None
        return None if counts is None else counts.get(int(value), 0)

    def _q_raster_categories_count(self, name: str, args: dict[str, Any]) -> int | None:
        raster = self._map(name, args, "raster")
        counts = self._category_counts(raster) if raster else None
        return None if counts is None else len(counts)

    def _q_region(self, name: str, args: dict[str, Any]) -> float | None:
        (key,) = self.require(name, args, "key")
        return _float(_pairs(self._module(["g.region", "-g"]).stdout).get(str(key), ""))

    def _q_vector_count(self, name: str, args: dict[str, Any]) -> int | None:
        vector = self._map(name, args, "vector")
        (kind,) = self.require(name, args, "type")
        if vector is None:
            return None
        value = _float(_pairs(self._module(["v.info", "-t", f"map={vector}"]).stdout).get(str(kind), ""))
        return None if value is None else int(value)

    def _q_vector_columns(self, name: str, args: dict[str, Any]) -> list[str] | None:
        vector = self._map(name, args, "vector")
        if vector is None:
            return None
        result = self._module(["v.info", "-c", f"map={vector}"])
        if result.returncode != 0:
            return []
        return [line.split("|", 1)[1].strip() for line in result.stdout.splitlines() if line.count("|") == 1]

    def _q_vector_attribute_stat(self, name: str, args: dict[str, Any]) -> float | None:
        vector = self._map(name, args, "vector")
        column, stat = self.require(name, args, "column", "stat")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(column)):
            raise QueryError(f"grass: {column!r} is not a valid column name")
        if vector is None or column not in (self._q_vector_columns(name, {"map": vector}) or []):
            return None
        result = self._module(["v.db.univar", "-g", f"map={vector}", f"column={column}"])
        return _float(_pairs(result.stdout).get(str(stat), "")) if result.returncode == 0 else None

    def _q_vector_area_total(self, name: str, args: dict[str, Any]) -> float | None:
        vector = self._map(name, args, "vector")
        if vector is None:
            return None
        result = self._module(["v.to.db", "-p", f"map={vector}", "option=area", "separator=|"])
        total = 0.0
        for line in result.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 2 and _float(parts[0]) is not None and _float(parts[1]) is not None:
                total += float(parts[1])
        return total


def _executable(name: str) -> Path | None:
    """The GRASS module ``name`` (in ``$GISBASE/bin`` or ``$GISBASE/scripts``), or None."""
    if not MODULE.match(name):
        return None
    for folder in ("bin", "scripts"):
        path = GISBASE / folder / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def _pairs(text: str) -> dict[str, str]:
    """``key=value`` lines (GRASS's shell-script style output) as a dict."""
    pairs = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key.strip()):
            pairs[key.strip()] = value.strip()
    return pairs


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
