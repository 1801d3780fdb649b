"""`scripts/walkthrough.py --quick`: every command of docs/walkthrough.md runs, in order, with small numbers."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import embodia
from tests.conftest import ROOT


def _walkthrough_module():
    spec = importlib.util.spec_from_file_location("walkthrough", ROOT / "scripts" / "walkthrough.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_document_is_the_script():
    walkthrough = _walkthrough_module()
    text = walkthrough.DOCUMENT.read_text()
    commands = walkthrough.document_commands(text)
    assert all(c.startswith("embodia ") for c in commands)
    steps = [c.split()[1:3] for c in commands]
    for step in (["run", "embodia/Kitchen-OpenDrawer-v0"], ["train", "bc"], ["robot", "launch"], ["view"]):
        assert any(s[: len(step)] == step for s in steps), step
    # the quick form changes numbers only, each in exactly one place
    quick = walkthrough.document_commands(walkthrough.quick_form(text))
    assert len(quick) == len(commands)
    assert sum(a != b for a, b in zip(quick, commands)) == len(walkthrough.QUICK)


def test_refuses_an_output_folder_it_did_not_write(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    result = subprocess.run(
        [sys.executable, "scripts/walkthrough.py", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "was not written by this script" in result.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_quick_walkthrough_end_to_end(tmp_path):
    out = tmp_path / "walkthrough"
    result = subprocess.run(
        [sys.executable, "scripts/walkthrough.py", "--quick", "--out", str(out), "--isolated"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    last = result.stdout.strip().splitlines()[-1]
    assert "every step ran" in last and "through ROS 2" in last
    demos = embodia.TrajectoryStore(out / "demos.zarr")
    assert demos.num_episodes == 4
    assert (out / "bc" / "policy" / "model.safetensors").exists()
    ros = embodia.TrajectoryStore(out / "ros.zarr")
    assert ros.num_episodes == 1 and ros.episode_meta(0).env_id == "embodia/Kitchen-OpenDrawer-v0"
    assert (out / "ros.mcap").stat().st_size > 0
    for recording in ("demos.rrd", "ros.rrd"):
        assert (out / recording).stat().st_size > 0
    summary = json.loads((out / "walkthrough.json").read_text())
    assert summary["episodes"] == 1 and 0 <= summary["successes"] <= 1
