"""``embodia iqa build | train | score`` and the ``iqa_score`` tool, run as a user and an agent would."""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from mcp import ClientSession, stdio_client
from PIL import Image

from embodia.agents.tools import call_tool, get_tool
from embodia.perception.iqa import load_database
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from tests.agents.conftest import mcp_server
from tests.conftest import run_cli

FAST = {"shadow_size": 0, "multisamples": 0}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A barely trained pixel policy, a two-class database built from it, and a model trained on it."""
    root = tmp_path_factory.mktemp("iqa")
    rollout(
        "embodia/Visual-CubeSingle-v0",
        "expert",
        episodes=1,
        seed=0,
        record=root / "d.zarr",
        env_kwargs=FAST,
        max_steps=20,
    )
    train(
        TrainConfig(
            method="pixel_bc",
            dataset=str(root / "d.zarr"),
            out=str(root / "run"),
            steps=3,
            batch_size=8,
            eval_episodes=0,
            method_config={"hidden": [16]},
        )
    )
    result = run_cli(
        "iqa",
        "build",
        "--policy",
        str(root / "run" / "policy"),
        "--out",
        str(root / "db.zarr"),
        "--references",
        "2",
        "--reference-episodes",
        "1",
        "--classes",
        "blur",
        "occlusion",
        "--rollouts",
        "1",
        "--horizon",
        "3",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "20 distorted images of 2 references (2 classes x 5 levels)" in result.stdout
    result = run_cli(
        "iqa",
        "train",
        str(root / "db.zarr"),
        "--out",
        str(root / "model"),
        "--steps",
        "15",
        "--target",
        "decision",
        "--holdout",
        "references",
    )
    assert result.returncode == 0, result.stderr
    assert "held-out references" in result.stdout and "SRCC" in result.stdout
    db = load_database(root / "db.zarr")
    Image.fromarray(db.references[0]).save(root / "ref.png")
    Image.fromarray(db.images[-1]).save(root / "img.png")
    return root


def test_score_prints_the_predicted_damage(built):
    result = run_cli(
        "iqa",
        "score",
        str(built / "img.png"),
        "--reference",
        str(built / "ref.png"),
        "--model",
        str(built / "model"),
    )
    assert result.returncode == 0, result.stderr
    assert np.isfinite(float(result.stdout.split()[0])) and "decision damage" in result.stdout


def test_bad_input_is_one_line_and_status_2(built, tmp_path):
    no_reference = run_cli("iqa", "score", str(built / "img.png"), "--model", str(built / "model"))
    assert no_reference.returncode == 2 and "full-reference" in no_reference.stderr
    (tmp_path / "fake.png").write_text("not an image")
    fake = run_cli(
        "iqa",
        "score",
        str(tmp_path / "fake.png"),
        "--reference",
        str(built / "ref.png"),
        "--model",
        str(built / "model"),
    )
    assert fake.returncode == 2 and "not a readable image" in fake.stderr
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "notes.txt").write_text("mine")
    refused = run_cli("iqa", "train", str(built / "db.zarr"), "--out", str(tmp_path / "keep"), "--steps", "2")
    assert refused.returncode == 2 and "holds something else" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "keep").iterdir()) == ["notes.txt"]
    for result in (no_reference, fake, refused):
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_tool_scores_in_process_and_stays_in_its_workspace(built, tmp_path):
    result = call_tool(
        "iqa_score",
        {"image": str(built / "img.png"), "reference": str(built / "ref.png"), "model": str(built / "model")},
    )
    assert result["target"] == "decision" and result["full_reference"] and np.isfinite(result["score"])
    assert set(get_tool("iqa_score").input_schema()["required"]) == {"image", "model"}

    ws = tmp_path / "ws"
    ws.mkdir()
    outcome = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            outcome["escape"] = await session.call_tool(
                "iqa_score", {"image": str(built / "img.png"), "model": str(built / "model")}
            )

    anyio.run(run)
    message = outcome["escape"].content[0].text
    assert outcome["escape"].is_error and "is outside the workspace" in message
