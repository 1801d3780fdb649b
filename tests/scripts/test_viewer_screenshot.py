"""`scripts/viewer_screenshot.py`: the served Rerun web viewer loads in real headless Chromium and draws.

A tiny recording (a sine as `rr.Scalars`, one 4-colour `rr.Image`) is served on free localhost ports, by
the rerun CLI (`--rrd`), and a real navigation store by `embodia view STORE --serve`; the page must
answer 200, fetch its wasm, log no error, hear from the gRPC server, and the tiny recording's screenshot
must show the image's red quadrant. Screenshots are test artefacts: kept in the pytest
tmp dir and copied to `$EMBODIA_TEST_ARTEFACTS` when set.

The recording is written and the page loaded in fresh processes, as a user runs them: the Rerun SDK and
Chromium then never share the test process with what earlier tests left in it (a full-suite run once hung
here and nowhere else). The script gets a generous deadline; past it, its threads' stacks are printed
(SIGUSR1) and it is stopped (SIGTERM, which kills its Chromium and rerun server on the way out).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "viewer_screenshot.py"
DEADLINE_S = 600  # a load takes ~15-25 s on two idle cores


@pytest.fixture(scope="module")
def viewer_screenshot():
    spec = importlib.util.spec_from_file_location("_viewer_screenshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    assert any(shutil.which(name) for name in module.CHROMIUM_NAMES), module.MISSING_CHROMIUM
    return module


# A sine, and an image whose left half is red and top half green: yellow, green, red, black quadrants.
_WRITE_RRD = """
import sys
import numpy as np
import rerun as rr

recording = rr.RecordingStream("embodia_viewer_test")
recording.save(sys.argv[1])
for step in range(20):
    recording.set_time("step", sequence=step)
    recording.log("scalars/sin", rr.Scalars(np.sin(step / 3)))
image = np.zeros((32, 48, 3), np.uint8)
image[:, :24, 0] = 255
image[:16, :, 1] = 200
recording.log("camera/rgb", rr.Image(image))
recording.flush(timeout_sec=60)
"""


def _write_rrd(path: Path) -> Path:
    subprocess.run([sys.executable, "-c", _WRITE_RRD, str(path)], check=True, timeout=DEADLINE_S)
    assert path.stat().st_size > 0
    return path


def _screenshot(tmp_path: Path, *args: str) -> SimpleNamespace:
    """Run the script on a URL or `--rrd FILE`; its page report (it exits 0 or 1 with one)."""
    report_file = tmp_path / "report.json"
    command = [sys.executable, str(SCRIPT), *args, "--out", str(tmp_path / "viewer.png")]
    process = subprocess.Popen(
        [*command, "--report", str(report_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    try:
        output, _ = process.communicate(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)
        time.sleep(2)
        process.terminate()
        try:
            output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        pytest.fail(f"viewer_screenshot.py still ran after {DEADLINE_S} s; its stacks:\n{output[-8000:]}")
    assert process.returncode in (0, 1) and report_file.is_file(), output
    report = json.loads(report_file.read_text())
    return SimpleNamespace(**{**report, "screenshot": Path(report["screenshot"]), "output": output})


def _check_drawn(report, tmp_path: Path, logged_red: bool = True) -> None:
    from PIL import Image

    artefacts = os.environ.get("EMBODIA_TEST_ARTEFACTS")
    if artefacts and report.screenshot.exists():
        Path(artefacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(report.screenshot, Path(artefacts) / f"viewer_{tmp_path.name}.png")
    assert report.status == 200, report
    assert report.title == "Rerun Viewer"
    assert any(url.endswith("/re_viewer_bg.wasm") for url in report.loaded), report.loaded
    assert report.errors == [], "\n".join(report.errors)
    assert report.settled, "the viewer never went idle after hearing from its gRPC server"
    assert report.backend, "the viewer did not say which graphics backend it uses"
    pixels = np.asarray(Image.open(report.screenshot).convert("RGB")).astype(int)
    assert pixels.shape == (900, 1400, 3)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, "the screenshot is (nearly) one flat colour"
    if not logged_red:
        return
    red = (pixels[..., 0] > 200) & (pixels[..., 1] < 60) & (pixels[..., 2] < 60)
    assert red.mean() > 0.005, f"the logged image's red quadrant is not drawn ({red.mean():.4f} of pixels)"


def test_rrd_served_by_the_rerun_cli_draws_in_chromium(viewer_screenshot, tmp_path):
    rrd = _write_rrd(tmp_path / "tiny.rrd")
    report = _screenshot(tmp_path, "--rrd", str(rrd))
    assert report.ok, report.output
    _check_drawn(report, tmp_path)


def test_embodia_view_serve_draws_a_store_in_chromium(viewer_screenshot, tmp_path):
    """`embodia view STORE --serve`, as a user on a headless machine runs it: the printed URL loads."""
    import embodia

    store = tmp_path / "nav.zarr"
    embodia.rollout("embodia/Nav-PointNav-v0", "expert", episodes=2, seed=0, max_steps=8, record=store)
    web_port, grpc_port = viewer_screenshot.free_port(), viewer_screenshot.free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as log_file:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "embodia.cli",
                "view",
                str(store),
                "--out",
                str(tmp_path / "nav.rrd"),
                "--serve",
                "--web-port",
                str(web_port),
                "--grpc-port",
                str(grpc_port),
            ],  # fmt: skip
            stdout=log_file,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )
    try:
        page = ""
        deadline = time.monotonic() + DEADLINE_S
        while not page and server.poll() is None and time.monotonic() < deadline:
            lines = log.read_text().splitlines()  # the export summary, then "open URL  (Ctrl-C stops)"
            page = next((line.split()[1] for line in lines if line.startswith("open ")), "")
            time.sleep(0.2)
        assert page.startswith(f"http://localhost:{web_port}/?url="), log.read_text()
        while time.monotonic() < deadline and not _answers(page):
            time.sleep(0.2)
        report = _screenshot(tmp_path, page)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0, log.read_text()
    _check_drawn(report, tmp_path, logged_red=False)


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _event(method: str, **params) -> dict:
    return {"method": method, "params": params}


def test_offline_failures_are_set_apart_but_own_failures_are_errors(viewer_screenshot, tmp_path):
    page = "http://127.0.0.1:9090/?url=x"
    events = [
        _event("Network.requestWillBeSent", requestId="1", request={"url": page}),
        _event(
            "Network.responseReceived", requestId="1", type="Document", response={"url": page, "status": 200}
        ),
        _event("Network.requestWillBeSent", requestId="2", request={"url": "https://tel.rerun.io/api/pog"}),
        _event("Network.loadingFailed", requestId="2", type="Fetch", errorText="net::ERR_NAME_NOT_RESOLVED"),
        _event(
            "Runtime.consoleAPICalled",
            type="error",
            args=[{"type": "object", "description": "TypeError: Failed to fetch"}],
        ),
        _event(
            "Runtime.consoleAPICalled",
            type="warning",
            args=[{"type": "string", "value": "Software rasterizer"}],
        ),
    ]
    collect = viewer_screenshot._collect

    report = viewer_screenshot.PageReport(url=page, status=None, title="", screenshot=tmp_path / "x.png")
    collect(report, events, "http://127.0.0.1:9090")
    assert report.status == 200 and report.errors == [] and len(report.offline_failures) == 2

    # one "Failed to fetch" more than the offline fetches is an error (it may be the viewer's own fetch)
    report = viewer_screenshot.PageReport(url=page, status=None, title="", screenshot=tmp_path / "x.png")
    collect(report, [*events, events[4]], "http://127.0.0.1:9090")
    assert len(report.errors) == 2 and all("Failed to fetch" in e for e in report.errors)

    # a failure on the page's own origin is an error, and then no "Failed to fetch" is excused
    wasm = "http://127.0.0.1:9090/re_viewer_bg.wasm"
    own = [
        _event("Network.requestWillBeSent", requestId="3", request={"url": wasm}),
        _event("Network.loadingFailed", requestId="3", type="Fetch", errorText="net::ERR_CONNECTION_RESET"),
    ]
    report = viewer_screenshot.PageReport(url=page, status=None, title="", screenshot=tmp_path / "x.png")
    collect(report, [*events, *own], "http://127.0.0.1:9090")
    assert any(wasm in e for e in report.errors) and any("Failed to fetch" in e for e in report.errors)
