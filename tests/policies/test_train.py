"""Training end to end on a real simulator: methods learn, runs write what they promise, Ctrl-C keeps a checkpoint."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import embodia
from embodia.core.errors import PolicyError
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from embodia.runner.evaluate import evaluate_policy, wilson_interval
from tests.conftest import ROOT

ENV = "embodia/PointMaze-Medium-SingleTask-v0"


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    """30 noisy expert episodes of point-maze task 1 (a few seconds)."""
    path = tmp_path_factory.mktemp("demos") / "pm.zarr"
    env = embodia.make(ENV, task_id=1)
    result = rollout(
        env, env.unwrapped.make_expert(noise=0.3), episodes=30, seed=0, record=path, env_kwargs={"task_id": 1}
    )
    env.close()
    assert result.success_rate == 1.0
    return path


@pytest.mark.parametrize(
    ("method", "steps", "options"),
    [
        ("bc", 800, {}),
        # DDPG+BC extraction: the FQL-style default learns the rewarded mode in test_fql.py
        ("deas", 600, {"horizon": 4, "extraction": "ddpg_bc", "alpha": 1.0}),
        ("deas", 600, {"horizon": 4, "extraction": "ddpg_bc", "alpha": 1.0, "matmul_precision": "bfloat16"}),
        ("flow_bc", 800, {"chunk": 4}),
        ("fql", 600, {"horizon": 4, "alpha": 100.0}),  # QC-FQL
    ],
)
def test_learned_policy_beats_random(demos, tmp_path, method, steps, options):
    run = tmp_path / method
    result = train(
        TrainConfig(
            method=method,
            dataset=str(demos),
            out=str(run),
            steps=steps,
            batch_size=128,
            eval_every=0,
            eval_episodes=0,
            method_config={**options, "hidden": [128, 128]},
        )
    )
    assert result["step"] == steps and not result["interrupted"]
    learned = evaluate_policy(run, ENV, episodes=8, seeds=[7], env_kwargs={"task_id": 1})
    random = rollout(ENV, "random", episodes=8, seed=70_000, env_kwargs={"task_id": 1})
    assert learned.success_rate >= 0.5 > random.success_rate, (learned.success_rate, random.success_rate)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    key = {"deas": "critic_loss", "fql": "critic_loss", "flow_bc": "flow_loss"}.get(method, "bc_mse")
    assert records[-1][key] < records[0][key]  # the loss fell
    assert (run / "learning_curve.png").stat().st_size > 1000


def test_run_directory_and_chunked_policy(demos, tmp_path):
    run = tmp_path / "deas"
    result = train(
        TrainConfig(
            method="deas",
            dataset=str(demos),
            out=str(run),
            env_id=ENV,
            env_kwargs={"task_id": 1},
            steps=40,
            batch_size=32,
            eval_every=20,
            eval_episodes=1,
            log_every=10,
            method_config={"horizon": 4, "hidden": [32, 32]},
        )
    )
    assert 0.0 <= result["eval"]["success_rate"] <= 1.0
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "eval" in r] == [20, 40]
    assert all(np.isfinite(r["critic_loss"]) for r in records if "critic_loss" in r)
    policy = embodia.load_policy(run / "policy")
    assert policy.chunk_size == 4 and policy.meta["method"] == "deas"
    chunk = policy.act({"state": np.zeros(2, dtype=np.float32)})
    assert chunk.shape == (4, 2) and np.abs(chunk).max() <= 1.0
    config = json.loads((run / "train_config.json").read_text())
    assert config["resolved"]["horizon"] == 4 and config["resolved"]["gamma1"] == 0.9

    # evaluation episodes can be recorded and rendered
    from embodia.data.store import TrajectoryStore
    from embodia.data.video import read_video

    report = evaluate_policy(
        run,
        episodes=1,
        seeds=[0],
        env_kwargs={"task_id": 1, "width": 64, "height": 64},
        record=tmp_path / "eval.zarr",
        video=tmp_path / "eval.mp4",
    )
    recorded = TrajectoryStore(tmp_path / "eval.zarr")
    assert report.env_id == ENV and recorded.num_episodes == 1
    assert len(read_video(tmp_path / "eval.mp4")) == recorded.num_steps + 1

    # receding horizon: with execute_steps=1 the chunk policy is queried on every step
    calls = 0
    act = policy.act

    def counting_act(obs):
        nonlocal calls
        calls += 1
        return act(obs)

    policy.act = counting_act
    evaluate_policy(
        policy,
        ENV,
        episodes=1,
        seeds=[0],
        env_kwargs={"task_id": 1},
        execute_steps=1,
        record=tmp_path / "rh.zarr",
    )
    assert calls == TrajectoryStore(tmp_path / "rh.zarr").num_steps > 4
    with pytest.raises(PolicyError, match="chunk size 4"):
        evaluate_policy(policy, ENV, episodes=1, env_kwargs={"task_id": 1}, execute_steps=5)


def test_a_second_run_into_the_same_folder_starts_its_own_metrics(demos, tmp_path):
    run = tmp_path / "bc"

    def bc(steps: int) -> None:
        train(
            TrainConfig(method="bc", dataset=str(demos), out=str(run), steps=steps, log_every=5, eval_every=0)
        )

    bc(20)
    bc(10)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    # the file describes the run train_config.json and the policy describe: the second one's lines only
    assert [r["step"] for r in records] == [5, 10]
    assert json.loads((run / "train_config.json").read_text())["steps"] == 10


def test_ctrl_c_keeps_the_last_checkpoint(demos, tmp_path):
    run = tmp_path / "interrupted"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "embodia.cli",
            "train",
            "iql",
            "--dataset",
            str(demos),
            "--steps",
            "1000000",
            "--out",
            str(run),
            "--config",
            '{"hidden": [32, 32]}',
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (
            (run / "metrics.jsonl").exists() and (run / "metrics.jsonl").read_text()
        ):
            time.sleep(0.3)
            assert process.poll() is None, process.stderr.read()
        os.kill(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:  # never leave a million-step run behind
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr
    policy = embodia.load_policy(run / "policy")
    assert policy.act({"state": np.zeros(2, dtype=np.float32)}).shape == (2,)


def test_wilson_interval_by_hand():
    low, high = wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(10, 10)[1] == 1.0


def test_one_registry_of_methods_for_the_cli_and_training_and_the_cli_starts_without_torch():
    import subprocess
    import sys

    from embodia.cli import build_parser
    from embodia.policies import learner_classes, learner_names

    assert learner_names() == [
        "act",
        "bc",
        "deas",
        "diffusion_policy",
        "flow_bc",
        "fql",
        "gciql",
        "iql",
        "pixel_bc",
        "pixel_flow_bc",
    ]
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    assert list(next(a for a in train._actions if a.dest == "method").choices) == learner_names()
    for name in learner_names():
        learner_cls, config_cls = learner_classes(name)
        assert learner_cls.name == name and dataclasses.is_dataclass(config_cls)
    code = "import sys, embodia.cli; embodia.cli.build_parser(); print('torch' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )


def test_a_policy_trained_without_env_knows_its_dataset_environment_for_eval_and_onnx(demos, tmp_path):
    """`embodia train bc` without --env, then `embodia export --onnx` and `embodia eval --runtime onnx`."""
    run = tmp_path / "bc"
    train(TrainConfig(method="bc", dataset=str(demos), out=str(run), steps=20, batch_size=16, eval_every=0))
    meta = json.loads((run / "policy" / "config.json").read_text())
    assert (meta["env_id"], meta["env_kwargs"]) == (ENV, {"task_id": 1})
    for argv in (["export", str(run), "--onnx"], ["eval", str(run), "--episodes", "1", "--runtime", "onnx"]):
        out = subprocess.run(
            [sys.executable, "-m", "embodia.cli", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr[-2000:]
    assert f"{ENV}: success" in out.stdout


def test_play_data_evaluates_on_the_single_task_it_is_labelled_for(tmp_path):
    from embodia.data.store import TrajectoryStore
    from embodia.runner.datasets import dataset_environment, generate_dataset

    generate_dataset("embodia/PointMaze-Medium-v0", 2, tmp_path / "play.zarr", task_id=3, max_steps=20)
    store = TrajectoryStore(tmp_path / "play.zarr")
    assert store.episode_meta(0).env_id.endswith("-Play-v0")
    assert dataset_environment(store) == ("embodia/PointMaze-Medium-SingleTask-v0", {"task_id": 3})
