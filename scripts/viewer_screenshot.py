"""Load Rerun's served web viewer in a real headless Chromium, collect its errors, save a screenshot.

    python scripts/viewer_screenshot.py URL --out viewer.png
    python scripts/viewer_screenshot.py --rrd episodes.rrd --out viewer.png [--renderer webgl] [--report r.json]

Why: `embodia view STORE --serve` serves the Rerun web viewer for headless machines. Only a real browser
proves that the page, its JavaScript and wasm load, that the viewer connects to the gRPC server and draws;
and the viewer guide wants pictures of it. Debian's `chromium` (`make setup`) is driven over the Chrome DevTools
Protocol (CDP) through `--remote-debugging-pipe` (fds 3 and 4, NUL-terminated JSON; no websocket library
needed), with a fresh temporary profile, `--no-sandbox` only as root, and software rendering (SwiftShader:
WebGPU through Vulkan, WebGL2 through ANGLE), so the viewer draws on a machine without a GPU.

`load_viewer_page` returns a `PageReport`: the page's HTTP status and title, the console errors
(`Runtime.consoleAPICalled` of type error/assert, `Runtime.exceptionThrown`, `Log.entryAdded` of level
error), the failed network loads, and the screenshot path. Errors are filtered by level; warnings (the
viewer warns about the software rasterizer and about egui viewport commands the web has no use for) are
not errors. What is dropped or set apart, and why:

- `console.debug` is replaced by a no-op before the page's scripts run. Rerun 0.41's web viewer logs
  wgpu/naga shader compilation at debug level: ~15,000 messages, each serialised to DevTools, which
  held the page busy for ~18 s instead of ~3 s here. Only the debug level is dropped.
- Offline failures (`PageReport.offline_failures`, not `errors`). The viewer page and the wasm app
  reach out to other origins: the Inter font stylesheet (fonts.googleapis.com), the latest-release
  check (api.github.com), the examples manifest (app.rerun.io) and usage telemetry (tel.rerun.io).
  On a machine without internet they fail with `net::ERR_NAME_NOT_RESOLVED`; the viewer draws with the
  fonts inside its wasm and works without any of them. So a failed load from another origin than the
  page's, Chromium's "Failed to load resource" log entry for it, and the wasm's
  `console.error("TypeError: Failed to fetch")` (as many as there were failed fetches to other origins)
  are set apart. A failure on the page's own origin (the HTML, `re_viewer.js`, `re_viewer_bg.wasm`), an
  HTTP error status, an exception, or one "Failed to fetch" more than the offline fetches is an error.

`--rrd FILE` serves a recording itself (`serve_rrd`: `rerun --serve-web FILE --port GRPC --web-viewer-port
HTTP --bind 127.0.0.1`) and opens `http://127.0.0.1:HTTP/?url=rerun+http://127.0.0.1:GRPC/proxy`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import faulthandler
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
MISSING_CHROMIUM = "chromium not found on PATH: `make setup` installs it (Debian package `chromium`)"
RERUN_CLI = Path(sys.executable).with_name("rerun")  # the venv's, else the one on PATH
FAILED_FETCH = "TypeError: Failed to fetch"

# Software rendering without a GPU: WebGL2 through ANGLE on SwiftShader, and WebGPU on SwiftShader's
# Vulkan (Chromium on Linux offers WebGPU only behind these flags). The viewer picks WebGPU when the
# browser has it, as Chrome on a desktop with a GPU does; `?renderer=webgl` in the URL forces WebGL.
RENDERING_FLAGS = ("--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist")
RENDERING_FLAGS += ("--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader")
RENDERING_FLAGS += ("--use-webgpu-adapter=swiftshader",)
BACKEND_LINE = "wgpu adapter backend: "  # the viewer's info line naming the graphics backend it uses


class ViewerPageError(RuntimeError):
    """The browser could not be started or driven (not a page error: those go into PageReport)."""


@dataclass
class PageReport:
    """What loading the viewer page showed."""

    url: str
    status: int | None  # HTTP status of the main document
    title: str
    screenshot: Path
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, same-origin failed loads
    offline_failures: list[str] = field(default_factory=list)  # failed loads from other origins (see top)
    loaded: list[str] = field(default_factory=list)  # URLs answered with HTTP 2xx/3xx
    backend: str = ""  # the viewer's wgpu backend and adapter (from its info log), e.g. "BrowserWebGpu, ..."
    settled: bool = False  # the page went idle (and heard from its gRPC server) before the wait ran out

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.title) and self.settled and not self.errors


def find_chromium() -> str:
    for path in map(shutil.which, CHROMIUM_NAMES):
        if path:
            return path
    raise ViewerPageError(MISSING_CHROMIUM)


class _DevToolsPipe:
    """CDP over `--remote-debugging-pipe`: we write to Chromium's fd 3 and read from its fd 4."""

    def __init__(self, to_browser: int, from_browser: int, log: Path) -> None:
        self._write_fd, self._read_fd = to_browser, from_browser
        self._log = log  # chromium's stderr, quoted when it stops answering
        self._next_id = 0
        self._responses: dict[int, dict] = {}
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._read_fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._cond:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._responses[message["id"]] = message
                    else:
                        self.events.append(message)
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout=30.0):
        with self._cond:
            self._next_id += 1
            message_id = self._next_id
        message = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            os.write(self._write_fd, json.dumps(message).encode() + b"\0")
        except OSError as error:
            raise ViewerPageError(f"chromium exited before {method} ({error}): {self._log_tail()}") from None
        deadline = time.monotonic() + timeout
        with self._cond:
            while message_id not in self._responses:
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    raise ViewerPageError(
                        f"chromium did not answer {method} within {timeout:.0f} s: {self._log_tail()}"
                    )
                self._cond.wait(remaining)
            response = self._responses.pop(message_id)
        if "error" in response:
            raise ViewerPageError(f"{method} failed: {response['error']}")
        return response.get("result", {})

    def _log_tail(self) -> str:
        return self._log.read_text(errors="replace")[-1500:].strip() if self._log.exists() else "(no log)"

    def snapshot(self) -> list[dict]:
        with self._cond:
            return list(self.events)

    def wait_quiet(self, quiet_s: float, timeout: float) -> None:
        """Return once no event arrived for `quiet_s` seconds, or after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._closed:
                count = len(self.events)
                now = time.monotonic()
                if now >= deadline:
                    return
                self._cond.wait(min(quiet_s, deadline - now))
                if len(self.events) == count and time.monotonic() < deadline:
                    return

    def wait_for(self, method: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(e.get("method") == method for e in self.events):
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True


@contextlib.contextmanager
def _chromium(width: int, height: int) -> Iterator[_DevToolsPipe]:
    """A headless Chromium with a throwaway profile; killed with its process group on exit."""
    binary = find_chromium()
    profile = Path(tempfile.mkdtemp(prefix="embodia-chromium-"))
    to_browser_read, to_browser_write = _pipe_above(10)
    from_browser_read, from_browser_write = _pipe_above(10)
    args = ["--headless=new", f"--user-data-dir={profile}", "--remote-debugging-pipe", *RENDERING_FLAGS]
    args += [f"--window-size={width},{height}", "--no-first-run", "--no-default-browser-check"]
    args += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    args += ["--disable-dev-shm-usage", "--mute-audio", "about:blank"]
    if os.geteuid() == 0:
        args.insert(0, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    # bash puts our pipe ends (all >= 10, so the redirections cannot clobber each other; dash takes only
    # one-digit fds) on fds 3 and 4, what --remote-debugging-pipe expects, and execs chromium; no
    # preexec_fn, which is unsafe in a process with threads (rerun's, pytest's).
    script = f'exec "$0" "$@" 3<&{to_browser_read} 4>&{from_browser_write}'
    log = profile / "chromium.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            ["/bin/bash", "-c", script, binary, *args],
            pass_fds=(to_browser_read, from_browser_write),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
    os.close(to_browser_read)
    os.close(from_browser_write)
    try:
        yield _DevToolsPipe(to_browser_write, from_browser_read, log)
    finally:
        with contextlib.suppress(OSError):
            os.close(to_browser_write)  # closing the pipe asks chromium to quit
        _kill_group(process)
        with contextlib.suppress(OSError):
            os.close(from_browser_read)
        shutil.rmtree(profile, ignore_errors=True)


def _pipe_above(lowest: int) -> tuple[int, int]:
    """A pipe whose two ends are file descriptors >= `lowest` (close-on-exec)."""
    ends = os.pipe()
    read_end, write_end = (fcntl.fcntl(end, fcntl.F_DUPFD_CLOEXEC, lowest) for end in ends)
    for end in ends:
        os.close(end)
    return read_end, write_end


def _kill_group(process: subprocess.Popen, grace_s: float = 3.0) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # renderer, GPU and zygote processes too
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)


def _console_text(params: dict) -> str:
    return " ".join(
        str(a.get("value", a.get("description", a.get("type", "")))) for a in params.get("args", [])
    )


def _collect(report: PageReport, events: list[dict], origin: str) -> None:
    """Turn the CDP events into the report's errors, offline failures and loaded URLs."""
    urls: dict[str, str] = {}
    offline_fetches = 0  # failed fetch() calls to other origins: each may log "TypeError: Failed to fetch"
    fetch_errors: list[str] = []
    same_origin_failures = False
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif method == "Network.responseReceived":
            response = params["response"]
            if params.get("type") == "Document" and response["url"] == report.url:
                report.status = response["status"]
            if response["status"] < 400:
                report.loaded.append(response["url"])
            else:
                report.errors.append(f"HTTP {response['status']}: {response['url']}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            url = urls.get(params["requestId"], "?")
            line = f"failed to load {url}: {params.get('errorText', '')}"
            if _origin(url) != origin:
                report.offline_failures.append(line)
                offline_fetches += params.get("type") == "Fetch"
            else:
                same_origin_failures = True
                report.errors.append(line)
        elif method == "Runtime.consoleAPICalled" and BACKEND_LINE in _console_text(params):
            report.backend = _console_text(params).split(BACKEND_LINE, 1)[1].strip()
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = _console_text(params)
            (fetch_errors if text.startswith(FAILED_FETCH) else report.errors).append(
                f"console.error: {text}"
            )
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            report.errors.append(f"exception: {text}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            if entry.get("source") == "network" and entry.get("url") and _origin(entry["url"]) != origin:
                continue  # the same failure as its Network.loadingFailed above
            report.errors.append(f"log.{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
    # A "Failed to fetch" is benign only while it can be one of the offline fetches to other origins.
    if same_origin_failures or len(fetch_errors) > offline_fetches:
        report.errors.extend(fetch_errors)
    else:
        report.offline_failures.extend(line.splitlines()[0] for line in fetch_errors)


def _is_response(event: dict) -> bool:
    return event.get("method") == "Network.responseReceived"


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def load_viewer_page(
    url: str,
    screenshot: Path,
    wait_s: float = 45.0,
    width: int = 1400,
    height: int = 900,
    quiet_s: float = 3.0,
) -> PageReport:
    """Open `url` in headless Chromium, wait until the viewer has drawn, save a PNG screenshot.

    After the load event the wasm viewer starts, builds its shaders on SwiftShader, connects to its gRPC
    server and draws. The page counts as drawn (`PageReport.settled`) once no CDP event (console message,
    network request) came for `quiet_s` seconds, two animation frames then pass within 1 s, and the
    viewer had a response from the gRPC server its URL names; `wait_s` caps the wait after the load event.
    Raises `ViewerPageError` when chromium is missing or stops answering.
    """
    screenshot = Path(screenshot)
    report = PageReport(url=url, status=None, title="", screenshot=screenshot)
    with _chromium(width, height) as browser:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable", session=session)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        browser.send("Page.addScriptToEvaluateOnNewDocument", {"source": _DROP_DEBUG}, session=session)
        navigation = browser.send("Page.navigate", {"url": url}, session=session)
        if navigation.get("errorText"):
            report.errors.append(f"navigation to {url} failed: {navigation['errorText']}")
        if not browser.wait_for("Page.loadEventFired", timeout=60.0):
            report.errors.append(f"no load event from {url} within 60 s")
        report.settled = _wait_drawn(browser, session, _data_origin(url), quiet_s, wait_s)
        title = browser.send(
            "Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session
        )
        report.title = str(title["result"].get("value", ""))
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session, timeout=60.0)
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        events = browser.snapshot()
    _collect(report, events, _origin(url))
    return report


def _data_origin(url: str) -> str | None:
    """The gRPC server the viewer page is told to connect to (`?url=rerun+http://HOST:PORT/proxy`)."""
    for value in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("url", []):
        if value.startswith(("rerun+http://", "rerun+https://")):
            return _origin(value.removeprefix("rerun+"))
    return None


def _wait_drawn(
    browser: _DevToolsPipe, session: str, data_origin: str | None, quiet_s: float, wait_s: float
) -> bool:
    """Wait until the page is idle: no CDP event for `quiet_s`, it answers within 1 s, and (when the URL
    names a gRPC server) the viewer has had a response from that server. False if `wait_s` ran out."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        browser.wait_quiet(quiet_s, timeout=deadline - time.monotonic())
        count, asked = len(browser.snapshot()), time.monotonic()
        browser.send("Runtime.evaluate", {"expression": _NEXT_FRAME, "awaitPromise": True}, session, 120.0)
        idle = time.monotonic() - asked < 1.0 and len(browser.snapshot()) == count
        answered = {_origin(e["params"]["response"]["url"]) for e in browser.snapshot() if _is_response(e)}
        if idle and (data_origin is None or data_origin in answered):
            return True
    return False


_DROP_DEBUG = "console.debug = () => {};"  # see the module docstring
_NEXT_FRAME = "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(1))))"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve_rrd(rrd: Path, startup_timeout_s: float = 30.0) -> Iterator[str]:
    """Serve `rrd` with the rerun CLI (gRPC + web viewer on free localhost ports); yield the viewer URL."""
    if not Path(rrd).is_file():
        raise ViewerPageError(f"no recording at {rrd}: pass an existing .rrd file")
    grpc_port, web_port = free_port(), free_port()
    rerun = str(RERUN_CLI) if RERUN_CLI.exists() else shutil.which("rerun") or "rerun"
    command = [rerun, "--serve-web", str(rrd), "--bind", "127.0.0.1", "--port", str(grpc_port)]
    command += ["--web-viewer-port", str(web_port), "--threads", "1"]
    page = f"http://127.0.0.1:{web_port}/"
    connect = urllib.parse.quote(f"rerun+http://127.0.0.1:{grpc_port}/proxy", safe="")
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        try:
            _wait_http(page, server, log, startup_timeout_s)
            yield f"{page}?url={connect}"
        finally:
            server.send_signal(signal.SIGTERM)
            _kill_group(server)


def _wait_http(url: str, server: subprocess.Popen, log, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise ViewerPageError(f"rerun server exited ({server.returncode}): {log.read()[-2000:].decode()}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.2)
    raise ViewerPageError(f"rerun web viewer did not answer at {url} within {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="viewer page URL (with ?url=rerun+http://HOST:PORT/proxy)")
    parser.add_argument("--rrd", type=Path, help="serve this recording and screenshot it instead of a URL")
    parser.add_argument("--out", type=Path, required=True, help="PNG screenshot to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    parser.add_argument("--wait", type=float, default=45.0, help="most seconds to wait after the load event")
    parser.add_argument("--size", type=int, nargs=2, default=(1400, 900), metavar=("WIDTH", "HEIGHT"))
    parser.add_argument("--renderer", choices=("webgl", "webgpu"), help="force the viewer's renderer")
    parser.add_argument("--report", type=Path, help="also write the page report as JSON to this file")
    args = parser.parse_args(argv)
    # SIGTERM unwinds (so Chromium and the rerun server are killed on the way out); SIGUSR1 prints every
    # thread's stack, for a caller whose deadline ran out to see where this process waited.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if (args.url is None) == (args.rrd is None):
        parser.error("give either a URL or --rrd FILE")
    if args.out.exists() and not args.overwrite:
        parser.error(f"{args.out} exists: pass --overwrite to replace it")
    try:
        with contextlib.ExitStack() as stack:
            url = stack.enter_context(serve_rrd(args.rrd)) if args.rrd else args.url
            if args.renderer:
                url += ("&" if "?" in url else "?") + f"renderer={args.renderer}"
            report = load_viewer_page(url, args.out, args.wait, *args.size)
    except ViewerPageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{report.url}: HTTP {report.status}, title {report.title!r}, graphics {report.backend or '?'}")
    if not report.settled:
        print(f"  ERROR the page did not settle (idle, data received) within {args.wait:.0f} s")
    for line in report.offline_failures:
        print(f"  ignored (other origin, offline): {line}")
    for line in report.errors:
        print(f"  ERROR {line}")
    print(f"screenshot: {report.screenshot}")
    if args.report:
        fields = {**dataclasses.asdict(report), "screenshot": str(report.screenshot), "ok": report.ok}
        args.report.write_text(json.dumps(fields, indent=1))
    return 0 if report.ok else 1


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
