"""``embodia data rerender``: a new store with the rendered cameras; bad input is one line and exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embodia.cli import main
from embodia.data.store import TrajectoryStore
from embodia.runner import rollout

POINTMAZE = "embodia/PointMaze-Medium-v0"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("rerender_cli")
    rollout(
        POINTMAZE,
        "expert",
        episodes=1,
        seed=0,
        record=root / "states.zarr",
        record_sim_state=True,
        max_steps=6,
    )
    with TrajectoryStore(root / "stateless.zarr", mode="a") as store:
        store.add_episode(
            {"state": np.zeros((3, 4), np.float32), "action": np.zeros((3, 2), np.float32)}, env_id=POINTMAZE
        )
    return root


def test_rerender_writes_a_new_store_and_reports_it(work, capsys):
    out = work / "pixels.zarr"
    status = main(
        [
            "data",
            "rerender",
            str(work / "states.zarr"),
            "--cameras",
            "render",
            "--size",
            "24x32",
            "--out",
            str(out),
        ]
    )
    assert status == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report == {
        "store": str(out),
        "episodes": 1,
        "steps": 6,
        "images": {"render_rgb": [24, 32, 3]},
        "restored_states": 1,
    }
    assert TrajectoryStore(out).episode(0, ["render_rgb"])["render_rgb"].shape == (6, 24, 32, 3)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["{w}/states.zarr", "--cameras", "render,wrist"],
            "unknown camera 'wrist' for embodia/PointMaze-Medium-v0; its cameras: render",
        ),
        (["{w}/stateless.zarr", "--cameras", "render"], "has no simulator state"),
        (["{w}/missing.zarr", "--cameras", "render"], "does not exist"),
        (["{w}/states.zarr", "--cameras", "render,"], "--cameras: expected comma-separated camera names"),
        (["{w}/states.zarr", "--cameras", "render", "--size", "0"], "--size: expected N or HxW"),
        (["{w}/states.zarr", "--cameras", "render", "--size", "64x"], "--size: expected N or HxW"),
    ],
    ids=["unknown-camera", "no-states", "missing-store", "empty-camera", "zero-size", "half-size"],
)
def test_bad_input_is_one_line_and_status_2(work, capsys, arguments, message):
    arguments = [a.replace("{w}", str(work)) for a in arguments]
    if "--size" not in arguments:
        arguments += ["--size", "16"]
    status = _status(["data", "rerender", *arguments, "--out", str(work / "never.zarr")])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (work / "never.zarr").exists()


def test_an_existing_destination_is_refused_and_kept(work, capsys):
    status = main(
        [
            "data",
            "rerender",
            str(work / "states.zarr"),
            "--cameras",
            "render",
            "--size",
            "8",
            "--out",
            str(work / "stateless.zarr"),
        ]
    )
    assert status == 2
    assert "already holds a trajectory store" in capsys.readouterr().err
    assert TrajectoryStore(work / "stateless.zarr").keys == ["state", "action"]


def _status(arguments: list[str]) -> int:
    """``main``'s exit status, whether it returns it or argparse exits with it."""
    try:
        return main(arguments)
    except SystemExit as exit:
        return int(exit.code)
