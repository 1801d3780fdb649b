"""`scripts/imitation_comparison.py --quick`: demonstrations -> BC, flow BC, ACT, Diffusion Policy and DEAS on a
kitchen task and the image-based ones on ALOHA's transfer cube -> evaluation, call latency in torch and ONNX
Runtime, in one results file."""

from __future__ import annotations

import subprocess
import sys

from embodia.core.results import read_results
from tests.conftest import ROOT

KITCHEN = ("--tasks", "Kitchen-PickPlaceCounterToSink")  # one flat-observation task: the merge tests' parts


def _comparison(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    """``imitation_comparison.py --quick`` writing under ``tmp_path``, with ``extra`` arguments."""
    return subprocess.run(
        [
            sys.executable,
            "scripts/imitation_comparison.py",
            "--quick",
            "--out",
            str(tmp_path / "runs"),
            "--results",
            str(tmp_path / "comparison.json"),
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def test_quick_comparison_trains_evaluates_and_times_every_method(tmp_path):
    result = _comparison(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    produced = read_results(tmp_path / "comparison.json")
    rows = produced["data"]["rows"]
    assert [(r["task"], r["method"]) for r in rows] == [
        ("Kitchen-PickPlaceCounterToSink", m) for m in ("bc", "flow_bc", "act", "diffusion_policy", "deas")
    ] + [("AlohaTransferCube", m) for m in ("bc", "flow_bc", "act", "diffusion_policy")]
    assert [r["learner"] for r in rows if r["task"] == "AlohaTransferCube"] == [
        "pixel_bc",
        "pixel_flow_bc",
        "act",
        "diffusion_policy",
    ]
    for row in rows:
        assert row["episodes"] == 1 and 0 <= row["successes"] <= 1 and row["train_seconds"] > 0
        assert row["torch_call_seconds"] > 0
        # the deterministic policies export and run through ONNX Runtime; the noise-driven ones say they do not
        exported = row["method"] in ("bc", "act", "diffusion_policy")
        assert (row["onnx_call_seconds"] is not None) == exported, row
    table = produced["tables"]["comparison"]["rows"]
    assert len(table) == 9
    for cell in table:
        assert 0.0 <= cell["success"]["low"] <= cell["success"]["value"] <= cell["success"]["high"] <= 1.0
    assert {r["task"] for r in produced["tables"]["demonstrations"]["rows"]} == {
        "Kitchen-PickPlaceCounterToSink",
        "AlohaTransferCube",
    }
    assert produced["data"]["act_paper"]["AlohaTransferCube"]["scripted"] == 0.9
    paper = {r["task"]: r for r in produced["tables"]["act_paper"]["rows"]}
    assert (
        paper["AlohaTransferCube"]["paper_scripted"] == 0.9
        and paper["AlohaInsertion"]["embodia"] == "not run"
    )
    act = next(r for r in rows if (r["task"], r["method"]) == ("AlohaTransferCube", "act"))
    assert paper["AlohaTransferCube"]["embodia"]["value"] == act["successes"] / act["episodes"]


def test_an_unknown_method_is_refused_with_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "scripts/imitation_comparison.py",
            "--methods",
            "vq_bet",
            "--out",
            str(tmp_path / "x"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--methods ['vq_bet']: not a method here; choose from bc, flow_bc, act" in result.stderr
    assert not (tmp_path / "x").exists()


def test_a_comparison_run_in_parts_merges_into_one_results_file(tmp_path):
    first = _comparison(tmp_path, *KITCHEN, "--methods", "flow_bc", "--merge")
    assert first.returncode == 0, first.stderr[-3000:]
    second = _comparison(tmp_path, *KITCHEN, "--methods", "bc", "--merge")
    assert second.returncode == 0, second.stderr[-3000:]
    produced = read_results(tmp_path / "comparison.json")
    assert [(r["task"], r["method"]) for r in produced["data"]["rows"]] == [
        ("Kitchen-PickPlaceCounterToSink", "flow_bc"),
        ("Kitchen-PickPlaceCounterToSink", "bc"),
    ]
    # the table in the methods' order, whatever order the parts ran in
    assert [r["method"] for r in produced["tables"]["comparison"]["rows"]] == ["bc", "flow_bc"]
    assert len(produced["tables"]["demonstrations"]["rows"]) == 1
    # each part's command and commit, and each row's commit
    parts = produced["data"]["parts"]
    assert ["--methods flow_bc" in p["command"] for p in parts] == [True, False] and "--methods bc" in parts[
        1
    ]["command"]
    assert produced["command"] == " ; ".join(p["command"] for p in parts)
    assert all(r["commit"] == produced["commit"] for r in produced["data"]["rows"])
    other = _comparison(tmp_path, *KITCHEN, "--methods", "bc", "--merge", "--camera", "32")
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert "was measured with other settings (camera 64 there, 32 here)" in other.stderr
    assert len(read_results(tmp_path / "comparison.json")["data"]["rows"]) == 2

    # a part run at the same time into a file of its own, joined afterwards: its row beside the earlier ones
    part = tmp_path / "part"
    alone = _comparison(part, *KITCHEN, "--methods", "bc", "--seeds", "1")
    assert alone.returncode == 0, alone.stderr[-3000:]
    joined = _comparison(tmp_path, "--include", str(part / "comparison.json"))
    assert joined.returncode == 0, joined.stderr[-3000:]
    produced = read_results(tmp_path / "comparison.json")
    assert [(r["method"], r["seed"]) for r in produced["data"]["rows"]] == [
        ("flow_bc", 0),
        ("bc", 0),
        ("bc", 1),
    ]
    bc = next(r for r in produced["tables"]["comparison"]["rows"] if r["method"] == "bc")
    assert bc["per_seed"].startswith("0: ") and ", 1: " in bc["per_seed"]
    assert len(produced["data"]["parts"]) == 3 and len(produced["tables"]["demonstrations"]["rows"]) == 1
    missing = _comparison(tmp_path, "--include", str(tmp_path / "nowhere.json"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert f"--include {tmp_path / 'nowhere.json'}: no such results file" in missing.stderr
    assert len(read_results(tmp_path / "comparison.json")["data"]["rows"]) == 3


def test_cpu_scale_narrows_only_act_and_diffusion_policy_and_act_keeps_its_papers_batch():
    from types import SimpleNamespace

    from embodia.policies.act import ACTConfig
    from tests.conftest import load_script

    script = load_script("imitation_comparison")
    task = "Kitchen-OpenSingleDoor"
    _, act = script.method_options("act", task, 64, scale="cpu")
    assert act["d_model"] < ACTConfig().d_model and "chunk" not in act  # narrower, the paper's chunk of 100
    _, diffusion = script.method_options("diffusion_policy", task, 64, scale="cpu")
    assert diffusion["down_dims"] == [64, 128, 256]
    assert script.method_options("bc", task, 64, scale="cpu") == script.method_options("bc", task, 64)
    args = SimpleNamespace(batch_size=64, quick=False)
    assert (script.batch_size("act", args), script.batch_size("diffusion_policy", args)) == (8, 64)
