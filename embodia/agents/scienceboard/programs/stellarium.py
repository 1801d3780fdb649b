"""ScienceBoard's astronomy domain: Stellarium (standing in for the paper's Celestia).

Stellarium is an OpenGL planetarium, so it always runs on the sandbox's virtual display (Xvfb, software GL),
even on the api interface. It starts with its own user folder inside the workspace (a copy of Debian's
default configuration, with network plugins off, a fixed window size, a low frame rate, the clock preset to
J2000.0 and frozen) and its RemoteControl plugin listening on a port of the sandbox's own loopback. The
sandbox has no network, so the harness reaches that port through a Unix socket in the workspace, relayed
inside the sandbox by ``tcp_bridge.py``, which runs Stellarium as its child.

Programmatic interface: a **command** is Stellarium script code (one or a few statements of its
JavaScript-like scripting language), e.g. ``core.setDate("2024-04-08T18:42:00", "utc")``,
``core.selectObjectByName("Mars", true)``, ``StelMovementMgr.zoomTo(10, 0)`` or
``ConstellationMgr.setFlagLines(true)``. It is posted to RemoteControl's ``/api/scripts/direct``; the command
waits until the script has finished and answers ``ok`` or the error Stellarium reported. Scripts that touch
files or run programs (screenshots, loading images or other scripts, output files) are refused.

GUI interface: keyboard and mouse through xdotool (F3 search, F5 date/time, F6 location, ``c`` constellation
lines, ``a`` atmosphere, ``g`` ground, ``/`` and ``\\`` zoom ...).

Queries (``QUERIES``): ``location`` {key: name | latitude | longitude | altitude | planet}, ``time_jd``,
``time_utc``, ``timerate``, ``selected_object``, ``fov``, ``object_altitude`` {name}, ``object_azimuth``
{name}, ``object_magnitude`` {name}, ``separation`` {a, b}, ``property`` {id}.
"""

from __future__ import annotations

import configparser
import html
import http.client
import json
import math
import re
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from embodia.agents.scienceboard.programs.base import Program, QueryError
from embodia.agents.scienceboard.sandbox import (
    SYSTEM_PYTHON,
    ProgramCrashedError,
    ProgramHungError,
    SandboxError,
)

DEFAULT_CONFIG = Path("/usr/share/stellarium/data/default_cfg.ini")
START_TIMEOUT = 150.0
"""Seconds Stellarium may take to start answering (cold caches and software OpenGL make it slow)."""
J2000 = 2451545.0
NETWORK_PLUGINS = (
    "Satellites",
    "Exoplanets",
    "Novae",
    "MeteorShowers",
    "Oculars",
    "SolarSystemEditor",
    "Quasars",
    "Pulsars",
)
_FORBIDDEN = re.compile(
    r"screenshot|runscript|include\s*\(|loadskyimage|screenimage|file|load|save|exec|process|output|"
    r"system\s*\(|import|quit|\bdir\b|path|qt\.|script\s*\.",
    re.IGNORECASE,
)
BRIDGE = Path(__file__).with_name("tcp_bridge.py")
PORT = 8090
"""RemoteControl's port on the sandbox's own loopback (no other program listens there)."""


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over the Unix socket that ``tcp_bridge.py`` relays to Stellarium's port."""

    def __init__(self, host: str, *, socket_path: str, timeout: float | None = None) -> None:
        super().__init__(host, timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class _UnixHTTPHandler(urllib.request.AbstractHTTPHandler):
    """urllib's handler for ``http://`` URLs, sent over the bridge's Unix socket."""

    handler_order = 100  # before urllib's own HTTPHandler

    def __init__(self, socket_path: str) -> None:
        super().__init__()
        self.socket_path = socket_path

    def http_open(self, request: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_UnixHTTPConnection, request, socket_path=self.socket_path)

    http_request = urllib.request.AbstractHTTPHandler.do_request_


class Stellarium(Program):
    """Stellarium driven through its RemoteControl HTTP API (see the module docstring)."""

    domain: ClassVar[str] = "stellarium"
    executables: ClassVar[tuple[str, ...]] = ("stellarium",)
    apt_packages: ClassVar[str] = "stellarium"
    gui_application: ClassVar[str | None] = "stellarium"
    needs_display: ClassVar[bool] = True
    QUERIES: ClassVar[dict[str, str]] = {
        "location": "the observer's location field {key}: name, latitude, longitude (degrees), altitude (m), planet",
        "time_jd": "the simulation time as a Julian day (UT)",
        "time_utc": "the simulation time as ISO text (UTC)",
        "timerate": "the time rate (Julian days per real second; 0 when the clock is stopped)",
        "selected_object": "the English name of the selected object, or None",
        "fov": "the field of view in degrees",
        "object_altitude": "the apparent altitude in degrees of object {name} (as seen from the current place/time)",
        "object_azimuth": "the azimuth in degrees of object {name}",
        "object_magnitude": "the apparent magnitude of object {name}",
        "separation": "the angular distance in degrees between objects {a} and {b} (RA/Dec of date)",
        "property": "the value of the StelProperty {id}, e.g. ConstellationMgr.linesDisplayed",
    }

    process: Any = None
    port = PORT
    _opener: urllib.request.OpenerDirector | None = None
    log_seen = 0
    """Lines of Stellarium's log already searched for script errors."""

    # ------------------------------------------------------------------------------------------- life
    def start(self) -> None:
        user_dir = self.sandbox.workspace / "stellarium"
        user_dir.mkdir(exist_ok=True)
        config_file = user_dir / "config.ini"
        self._write_config(config_file)
        bridge = self.sandbox.workspace / ".run" / "stellarium.sock"
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), _UnixHTTPHandler(str(bridge))
        )
        self.process = self.sandbox.spawn(
            [SYSTEM_PYTHON, "-I", str(BRIDGE), str(bridge), str(self.port), "--"]
            + ["stellarium", "--user-dir", str(user_dir), "--config-file", str(config_file)],
            stdin=None,
            stdout=None,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise ProgramCrashedError(
                    f"stellarium exited while starting (status {self.process.returncode})"
                )
            try:
                self._get("/api/main/status", timeout=5.0)
                break
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    self.sandbox.kill(self.process)
                    raise ProgramHungError(f"stellarium did not start within {START_TIMEOUT:g} s") from None
                time.sleep(0.5)
        self._post("/api/main/time", {"timerate": "0"})
        self._post("/api/main/time", {"time": str(J2000)})
        self._focus()

    def _write_config(self, path: Path) -> None:
        if not DEFAULT_CONFIG.exists():
            raise SandboxError(f"{DEFAULT_CONFIG} missing; reinstall Debian's stellarium-data package")
        shutil.copyfile(DEFAULT_CONFIG, path)
        config = configparser.ConfigParser(interpolation=None, strict=False)
        config.optionxform = str  # type: ignore[assignment,method-assign]
        config.read(path, encoding="utf-8")
        settings = {
            "plugins_load_at_startup": {"RemoteControl": "true", **dict.fromkeys(NETWORK_PLUGINS, "false")},
            "RemoteControl": {
                "autostart": "true",
                "port": str(self.port),
                "use_password": "false",
                "enable_cors": "false",
            },
            "video": {
                "fullscreen": "false",
                "screen_w": "1024",
                "screen_h": "700",
                "screen_x": "0",
                "screen_y": "0",
                "maximum_fps": "10",
                "minimum_fps": "5",
            },
            "navigation": {"startup_time_mode": "preset", "preset_sky_time": str(J2000)},
            "localization": {"sky_locale": "en", "app_locale": "en"},
            "search": {"flag_search_online": "false"},
            "init_location": {"location": "Paris, Western Europe"},
            "scripts": {"flag_script_allow_write_absolute_path": "false"},
            "main": {"check_requirements": "false"},
        }
        for section, values in settings.items():
            if not config.has_section(section):
                config.add_section(section)
            for key, value in values.items():
                config.set(section, key, value)
        with path.open("w", encoding="utf-8") as handle:
            config.write(handle)

    def _focus(self) -> None:
        """Give Stellarium's window the keyboard focus (there is no window manager on Xvfb)."""
        if self.sandbox.display is None:
            return
        try:
            ids = self.sandbox.xdotool("search", "--onlyvisible", "--pid", str(self.process.pid)).split()
            if ids:
                self.sandbox.xdotool("windowmove", ids[0], "0", "0")
                self.sandbox.xdotool("windowfocus", ids[0])
        except SandboxError:
            pass

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.sandbox.kill(self.process, grace=2.0)
        self.process = None

    # ------------------------------------------------------------------------------------------- http
    def _url(self, path: str, params: dict[str, str] | None = None) -> str:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"http://127.0.0.1:{self.port}{path}{query}"

    def _open(self, request: urllib.request.Request, timeout: float) -> str:
        if self._opener is None:
            raise ProgramCrashedError("stellarium is not running")
        with self._opener.open(request, timeout=timeout) as answer:
            return answer.read().decode("utf-8", "replace")

    def _call(
        self, path: str, data: dict[str, str] | None = None, params: dict[str, str] | None = None
    ) -> str:
        """One request; ProgramCrashedError / ProgramHungError when Stellarium is gone or stuck."""
        if self.process is None or self.process.poll() is not None:
            raise ProgramCrashedError("stellarium is no longer running")
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self._url(path, params), data=body)
        try:
            return self._open(request, timeout=self.timeout)
        except urllib.error.HTTPError as error:
            return error.read().decode("utf-8", "replace")
        except OSError as error:
            if self.process.poll() is not None:
                raise ProgramCrashedError(f"stellarium exited (status {self.process.returncode})") from None
            self.sandbox.kill(self.process)  # a timeout, or a remote control that stopped answering
            raise ProgramHungError(
                f"stellarium did not answer within {self.timeout:g} s ({error}) and was killed"
            ) from None

    def _get(self, path: str, timeout: float, params: dict[str, str] | None = None) -> Any:
        request = urllib.request.Request(self._url(path, params))
        return json.loads(self._open(request, timeout))

    def _post(self, path: str, data: dict[str, str]) -> str:
        return self._call(path, data=data)

    def _json(self, path: str, params: dict[str, str] | None = None) -> Any:
        text = self._call(path, params=params)
        try:
            return json.loads(text)
        except ValueError:
            return None

    # ------------------------------------------------------------------------------------------- api
    def refuse(self, text: str) -> str | None:
        match = _FORBIDDEN.search(text)
        if match:
            return f"refused: {match.group(0)!r} (files, other scripts and programs) is not allowed in this sandbox"
        return super().refuse(text)

    def command(self, text: str) -> str:
        answer = self._post("/api/scripts/direct", {"code": text}).strip()
        if answer != "ok":
            return f"error: {answer}"
        deadline = time.monotonic() + self.timeout
        while True:
            status = self._json("/api/scripts/status") or {}
            if not status.get("scriptIsRunning"):
                break
            if time.monotonic() > deadline:
                self.sandbox.kill(self.process)
                raise ProgramHungError(
                    f"the script did not finish within {self.timeout:g} s; stellarium was killed"
                )
            time.sleep(0.1)
        time.sleep(0.6)  # let two frames pass: positions and selections are updated when a frame is drawn
        errors = self._script_errors()
        return f"error: {errors}" if errors else "ok"

    def _script_errors(self) -> str:
        log = self.sandbox.workspace / "stellarium" / "log.txt"
        try:
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        seen, self.log_seen = self.log_seen, len(lines)
        errors = [
            line.strip().strip('"').replace('\\"', '"')
            for line in lines[seen:]
            if re.search(r"script error", line, re.IGNORECASE)
        ]
        return "; ".join(errors[-3:])

    def status(self) -> str:
        state = self._json("/api/main/status") or {}
        location = state.get("location", {})
        selected = self._selected()
        return (
            f"{state.get('time', {}).get('utc', '?')} UTC (JD {state.get('time', {}).get('jday', '?')}), "
            f"{location.get('name') or '?'} ({location.get('latitude')}, {location.get('longitude')}) on "
            f"{location.get('planet')}, fov {state.get('view', {}).get('fov')}, selected: {selected}"
        )

    # ------------------------------------------------------------------------------------------- queries
    def _selected(self) -> str | None:
        state = self._json("/api/main/status") or {}
        info = state.get("selectioninfo") or ""
        match = re.search(r"<h2>(.*?)</h2>", info, re.DOTALL)
        if not match:
            return None
        # the heading's first line is the name; further lines (<br>) list other designations
        first = re.split(r"<br\s*/?>", match.group(1), maxsplit=1)[0]
        name = html.unescape(re.sub(r"<[^>]+>", "", first)).strip()
        return re.split(r"\s+\(", name)[0].strip() or None

    def _object(self, name: str) -> dict[str, Any]:
        info = self._json("/api/objects/info", params={"name": str(name), "format": "json"})
        if not isinstance(info, dict):
            raise QueryError(f"stellarium: no object named {name!r}")
        return info

    def query(self, name: str, args: dict[str, Any]) -> Any:
        if name == "location":
            (key,) = self.require(name, args, "key")
            location = (self._json("/api/main/status") or {}).get("location", {})
            if key not in location:
                raise QueryError(f"stellarium: location has no {key!r}; known: {', '.join(location)}")
            return location[key]
        if name in ("time_jd", "time_utc", "timerate"):
            clock = (self._json("/api/main/status") or {}).get("time", {})
            return clock.get({"time_jd": "jday", "time_utc": "utc", "timerate": "timerate"}[name])
        if name == "selected_object":
            return self._selected()
        if name == "fov":
            return (self._json("/api/main/status") or {}).get("view", {}).get("fov")
        if name in ("object_altitude", "object_azimuth", "object_magnitude"):
            (target,) = self.require(name, args, "name")
            key = {"object_altitude": "altitude", "object_azimuth": "azimuth", "object_magnitude": "vmag"}[
                name
            ]
            return self._object(target).get(key)
        if name == "separation":
            a, b = self.require(name, args, "a", "b")
            one, two = self._object(a), self._object(b)
            return _angle(one["raJ2000"], one["decJ2000"], two["raJ2000"], two["decJ2000"])
        if name == "property":
            (prop,) = self.require(name, args, "id")
            value = self._json("/api/stelproperty/list") or {}
            if prop not in value:
                raise QueryError(f"stellarium: unknown property {prop!r}")
            return value[prop].get("value")
        return super().query(name, args)


def _angle(ra1: float, dec1: float, ra2: float, dec2: float) -> float:
    """Angular distance in degrees between two equatorial positions given in degrees."""
    r1, d1, r2, d2 = map(math.radians, (ra1, dec1, ra2, dec2))
    cosine = math.sin(d1) * math.sin(d2) + math.cos(d1) * math.cos(d2) * math.cos(r1 - r2)
    return math.degrees(math.acos(max(-1.0, min(1.0, cosine))))
