"""``embodia vsr upscale``, run as a user would (``python -m embodia.cli vsr upscale ...``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from embodia.perception.vff import FieldConfig, VideoFourierField, read_video, save_field, write_video
from embodia.perception.video import render_videos
from tests.conftest import ROOT


def vsr(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "embodia.cli", "vsr", "upscale", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("vsr") / "in.mp4"
    write_video(path, render_videos("tiny", count=1, seed=2).rgb[0], fps=10)  # 6 frames of 32 x 32
    return str(path)


def test_upscale_with_a_model_gives_the_expected_size_and_frame_count(clip, tmp_path):
    torch.manual_seed(0)
    save_field(VideoFourierField(FieldConfig(bases=4, width=4, depth=1)), tmp_path / "model")
    out = vsr(
        clip,
        "--space",
        "4",
        "--time",
        "2",
        "--out",
        str(tmp_path / "big.mp4"),
        "--model",
        str(tmp_path / "model"),
    )
    assert out.returncode == 0, out.stderr
    assert "method vff" in out.stdout and "6 frames 32x32 -> 11 frames 128x128 at 20 fps" in out.stdout
    frames, fps = read_video(tmp_path / "big.mp4")
    assert frames.shape == (11, 128, 128, 3) and fps == 20
    # without a model: trilinear, and it says so; an odd size and a fractional factor work
    out = vsr(clip, "--space", "1.5", "--time", "3", "--out", str(tmp_path / "tri.mp4"))
    assert out.returncode == 0, out.stderr
    assert "trilinear (no --model given: not VFF)" in out.stdout
    assert read_video(tmp_path / "tri.mp4")[0].shape == (16, 48, 48, 3)


def _run(capsys, *args: str) -> tuple[int, str]:
    """``embodia vsr upscale ARGS`` in this process (faster than a subprocess): exit status and stderr."""
    from embodia.cli import main

    try:
        status = main(["vsr", "upscale", *args])
    except SystemExit as exit_:  # argparse's refusals
        status = exit_.code
    return status, capsys.readouterr().err


def test_bad_input_is_one_line_and_exit_2(clip, tmp_path, capsys):
    status, err = _run(capsys, str(tmp_path / "nope.mp4"), "--out", str(tmp_path / "o.mp4"))
    assert status == 2 and err.strip().count("\n") == 0
    assert "does not exist" in err and not (tmp_path / "o.mp4").exists()
    mine = tmp_path / "notes.txt"
    mine.write_text("keep me")
    for extra in ((), ("--overwrite",)):
        status, err = _run(capsys, clip, "--out", str(mine), *extra)
        assert status == 2 and err.strip().count("\n") == 0 and str(mine) in err, err
    assert mine.read_text() == "keep me"
    # a video this command wrote may be replaced, but only with --overwrite
    assert _run(capsys, clip, "--out", str(tmp_path / "v.mp4"))[0] == 0
    status, err = _run(capsys, clip, "--out", str(tmp_path / "v.mp4"))
    assert status == 2 and "--overwrite" in err
    assert _run(capsys, clip, "--space", "3", "--out", str(tmp_path / "v.mp4"), "--overwrite")[0] == 0
    assert read_video(tmp_path / "v.mp4")[0].shape[1] == 96
    status, err = _run(capsys, clip, "--space", "-1", "--out", str(tmp_path / "w.mp4"))
    assert status == 2 and err.strip().count("\n") == 0
    status, err = _run(capsys, clip, "--out", str(tmp_path / "w.mp4"), "--model", str(tmp_path))
    assert status == 2 and "config.json" in err and not (tmp_path / "w.mp4").exists()
