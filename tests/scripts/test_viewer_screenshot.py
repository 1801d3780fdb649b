"""`scripts/viewer_screenshot.py`: the served Rerun web viewer loads in real headless Chromium and draws.

A tiny recording (a sine as `rr.Scalars`, one 4-colour `rr.Image`) is served on free localhost ports, by
the rerun CLI (`serve_rrd`), and a real navigation store by `embodia view STORE --serve`; the page must
answer 200, fetch its wasm, log no error, hear from the gRPC server, and the tiny recording's screenshot
must show the image's red quadrant. Screenshots are test artefacts: kept in the pytest
tmp dir and copied to `$EMBODIA_TEST_ARTEFACTS` when set.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def viewer_screenshot():
    spec = importlib.util.spec_from_file_location(
        "_viewer_screenshot", ROOT / "scripts" / "viewer_screenshot.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    assert any(shutil.which(name) for name in module.CHROMIUM_NAMES), module.MISSING_CHROMIUM
    return module


# The data, logged in this process (the .rrd) and in the SDK server's subprocess alike.
_LOG_DATA = """
for step in range(20):
    recording.set_time("step", sequence=step)
    recording.log("scalars/sin", rr.Scalars(np.sin(step / 3)))
image = np.zeros((32, 48, 3), np.uint8)
image[:, :24, 0] = 255  # left half red, top half green: yellow, green, red, black quadrants
image[:16, :, 1] = 200
recording.log("camera/rgb", rr.Image(image))
"""


def _log_data(recording) -> None:
    import rerun as rr

    exec(_LOG_DATA, {"rr": rr, "np": np, "recording": recording})


def _write_rrd(path: Path) -> Path:
    import rerun as rr

    recording = rr.RecordingStream("embodia_viewer_test")
    _log_data(recording)
    recording.save(path)
    recording.flush()
    return path


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
    with viewer_screenshot.serve_rrd(rrd) as url:
        report = viewer_screenshot.load_viewer_page(url, tmp_path / "viewer.png")
    _check_drawn(report, tmp_path)


def test_embodia_view_serve_draws_a_store_in_chromium(viewer_screenshot, tmp_path):
    """`embodia view STORE --serve`, as a user on a headless machine runs it: the printed URL loads."""
    import embodia

    store = tmp_path / "nav.zarr"
    embodia.rollout("embodia/Nav-PointNav-v0", "expert", episodes=2, seed=0, max_steps=8, record=store)
    web_port, grpc_port = viewer_screenshot.free_port(), viewer_screenshot.free_port()
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
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    try:
        lines = [server.stdout.readline() for _ in range(2)]  # the export summary, then the URL
        page = lines[1].split()[1] if lines[1].startswith("open ") else ""
        assert page.startswith(f"http://localhost:{web_port}/?url="), "".join(lines)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _answers(page):
            time.sleep(0.2)
        report = viewer_screenshot.load_viewer_page(page, tmp_path / "viewer.png")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0
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
