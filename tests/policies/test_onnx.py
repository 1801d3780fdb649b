"""ONNX export and the ONNX Runtime policy, end to end: real training, real export, real ONNX Runtime.

Every trainable method (BC with and without chunks, IQL, GCIQL, DEAS) is trained for a few steps on a tiny
store, exported, and run through ONNX Runtime next to torch: the same outputs, the same actions in a
PointMaze rollout, the same chunk shapes and metadata; refusals are one-line errors; a torch-free process
loads and runs the exported policy.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from embodia.core.errors import PolicyError
from embodia.core.policy import load_policy
from embodia.data.store import TrajectoryStore
from embodia.policies.actor_policy import ActorPolicy, save_actor_policy
from embodia.policies.onnx_export import OPSET, export_onnx
from embodia.policies.onnx_policy import OnnxActorPolicy
from embodia.policies.train import TrainConfig, train
from embodia.runner import rollout
from tests.conftest import ROOT, run_cli

ENV = "embodia/PointMaze-Medium-v0"  # observations: state (2,), goal (2,); actions (2,)
ATOL = 1e-5
CASES = {
    "bc": ("bc", {}),
    "bc_chunk4": ("bc", {"chunk": 4, "execute_steps": 2}),
    "iql": ("iql", {}),
    "gciql": ("gciql", {}),
    # a deterministic actor: the paper's FQL-style one-step policy samples noise, which the export does not cover
    "deas": ("deas", {"horizon": 4, "extraction": "ddpg_bc", "alpha": 1.0}),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Four short episodes of PointMaze-shaped data (positions in the maze's range, actions in [-1, 1])."""
    path = tmp_path_factory.mktemp("onnx") / "tiny.zarr"
    rng = np.random.default_rng(0)
    with TrajectoryStore(path, "w") as tiny:
        for _ in range(4):
            steps = 25
            tiny.add_episode(
                {
                    "state": rng.uniform(-2, 5, (steps, 2)).astype(np.float32),
                    "goal": rng.uniform(-2, 5, (steps, 2)).astype(np.float32),
                    "action": rng.uniform(-1, 1, (steps, 2)).astype(np.float32),
                    "reward": rng.normal(size=steps).astype(np.float32),
                    "terminated": np.zeros(steps, bool),
                    "truncated": np.zeros(steps, bool),
                },
                env_id=ENV,
            )
    return path


@pytest.fixture(scope="module")
def runs(store, tmp_path_factory) -> dict[str, Path]:
    """One run directory per case, trained for 20 steps (not exported)."""
    out = {}
    for name, (method, options) in CASES.items():
        run = tmp_path_factory.mktemp(name) / "run"
        train(
            TrainConfig(
                method=method,
                dataset=str(store),
                out=str(run),
                env_id=ENV,
                steps=20,
                batch_size=16,
                eval_every=0,
                eval_episodes=0,
                method_config={**options, "hidden": [32, 32]},
            )
        )
        out[name] = run
    return out


def copy_run(runs: dict[str, Path], name: str, tmp_path: Path) -> Path:
    """A private copy of a trained run, so each test exports and damages its own."""
    return Path(shutil.copytree(runs[name], tmp_path / name))


def observations(seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        {"state": rng.uniform(-3, 6, 2).astype(np.float32), "goal": rng.uniform(-3, 6, 2).astype(np.float32)}
        for _ in range(8)
    ]


class Recording:
    """A policy that records what the wrapped one returns (keeps its chunk settings)."""

    def __init__(self, policy) -> None:  # noqa: ANN001  (any policy)
        self.policy, self.outputs = policy, []
        self.chunk_size = policy.chunk_size
        if hasattr(policy, "execute_steps"):
            self.execute_steps = policy.execute_steps

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def act(self, obs) -> np.ndarray:  # noqa: ANN001
        out = self.policy.act(obs)
        self.outputs.append(np.array(out))
        return out


@pytest.mark.parametrize("name", list(CASES))
def test_exported_policy_matches_torch(runs, tmp_path, name):
    run = copy_run(runs, name, tmp_path)
    method, options = CASES[name]
    horizon = options.get("chunk", options.get("horizon", 1))
    model = export_onnx(run, atol=ATOL)  # a run directory: its policy/ folder
    assert model == run / "policy" / "model.onnx" and model.is_file()
    assert not (run / "policy" / "model.onnx.tmp").exists()
    config = json.loads((run / "policy" / "config.json").read_text())
    record = config["onnx"]
    assert record["file"] == "model.onnx" and record["opset"] == OPSET
    assert 0 <= record["max_abs_diff"] <= ATOL
    assert config["method"] == method and config["type"] == "actor"  # the existing keys are untouched

    torch_policy = load_policy(run / "policy", runtime="torch")
    onnx_policy = load_policy(run / "policy", runtime="onnx")
    assert isinstance(torch_policy, ActorPolicy) and isinstance(onnx_policy, OnnxActorPolicy)
    assert isinstance(load_policy(run / "policy"), ActorPolicy)  # auto: torch is installed here
    assert onnx_policy.chunk_size == torch_policy.chunk_size == horizon
    assert getattr(onnx_policy, "execute_steps", None) == options.get("execute_steps")
    assert onnx_policy.meta == torch_policy.meta and "onnx" not in onnx_policy.meta

    mean = torch_policy.normalizer.mean.numpy()
    keys = torch_policy.normalizer.keys
    at_mean = {k: part for k, part in zip(keys, np.split(mean, len(keys)))}
    for obs in [*observations(), at_mean]:
        want, got = torch_policy.act(obs), onnx_policy.act(obs)
        assert got.shape == want.shape == ((2,) if horizon == 1 else (horizon, 2))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)

    # the graph itself: one input per key (dynamic batch), the policy's output shape
    session = onnx_policy.session
    assert [(i.name, i.shape[1]) for i in session.get_inputs()] == [(k, 2) for k in keys]
    batch = {k: np.random.default_rng(1).normal(size=(3, 2)).astype(np.float32) for k in keys}
    (out,) = session.run(["action"], batch)
    assert out.shape == ((3, 2) if horizon == 1 else (3, horizon, 2))

    # a rollout with each runtime: the same actions (queried at the same, re-planned, steps)
    recorded = {}
    for runtime, policy in (("torch", torch_policy), ("onnx", onnx_policy)):
        recorder = Recording(policy)
        rollout(ENV, recorder, episodes=1, seed=3, max_steps=120)
        recorded[runtime] = np.stack(recorder.outputs)
    assert recorded["onnx"].shape == recorded["torch"].shape
    np.testing.assert_allclose(recorded["onnx"], recorded["torch"], rtol=0, atol=1e-4)


def test_onnx_policy_refuses_bad_observations_like_torch(runs, tmp_path):
    run = copy_run(runs, "gciql", tmp_path)
    export_onnx(run)
    policies = [load_policy(run / "policy", runtime=r) for r in ("torch", "onnx")]
    messages = []
    for policy in policies:
        with pytest.raises(PolicyError) as missing:
            policy.act({"state": np.zeros(2)})
        with pytest.raises(PolicyError) as size:
            policy.act({"state": np.zeros(3), "goal": np.zeros(2)})
        messages.append((str(missing.value), str(size.value)))
    assert messages[0] == messages[1]
    assert "needs observation keys ['state', 'goal']" in messages[1][0]
    assert "expects 4 observation values, got 5" in messages[1][1]
    with pytest.raises(PolicyError, match="expects 2 values for observation key 'state', got 3"):
        policies[1].act({"state": np.zeros(3), "goal": np.zeros(1)})  # right total, wrong split


def test_export_check_fails_loudly_beyond_atol(runs, tmp_path):
    run = copy_run(runs, "bc", tmp_path)
    with pytest.raises(PolicyError, match=r"differs from torch by up to [0-9.e-]+ \(> atol 1e-15\)") as error:
        export_onnx(run, atol=1e-15)
    assert "\n" not in str(error.value)
    assert not (run / "policy" / "model.onnx").exists() and not (run / "policy" / "model.onnx.tmp").exists()
    assert "onnx" not in json.loads((run / "policy" / "config.json").read_text())


def _one_line_error(call) -> str:  # noqa: ANN001
    with pytest.raises(PolicyError) as error:
        call()
    message = str(error.value)
    assert "\n" not in message, message
    return message


def test_export_refusals_are_one_line(runs, tmp_path):
    from embodia.policies.linear import LinearPolicy

    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no policy at" in _one_line_error(lambda: export_onnx(empty))
    linear = LinearPolicy(np.ones((2, 4)), np.zeros(2), ["state", "goal"]).save(tmp_path / "linear")
    assert "only actor and pixel policies" in _one_line_error(lambda: export_onnx(linear))
    damaged = copy_run(runs, "iql", tmp_path) / "policy"
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert "damaged" in _one_line_error(lambda: export_onnx(damaged))
    assert not (damaged / "model.onnx").exists()


def test_onnx_runtime_refusals_are_one_line(runs, tmp_path):
    run = copy_run(runs, "deas", tmp_path)
    folder = run / "policy"
    message = _one_line_error(lambda: load_policy(folder, runtime="onnx"))
    assert message == f"{str(folder)!r} has no model.onnx; run `embodia export {folder} --onnx`"
    assert "runtime must be one of auto, torch, onnx" in _one_line_error(lambda: load_policy(folder, "tf"))

    export_onnx(folder)
    model = folder / "model.onnx"
    good = model.read_bytes()
    model.write_bytes(good[: len(good) // 3])  # a damaged model
    assert "ONNX Runtime cannot load" in _one_line_error(lambda: load_policy(folder, runtime="onnx"))
    model.write_bytes(good)

    # weights that changed after the export: the model no longer belongs to the folder
    other = runs["bc_chunk4"] / "policy" / "model.safetensors"
    original = (folder / "model.safetensors").read_bytes()
    shutil.copy(other, folder / "model.safetensors")
    assert "exported from other weights" in _one_line_error(lambda: load_policy(folder, runtime="onnx"))
    (folder / "model.safetensors").write_bytes(original)
    assert isinstance(load_policy(folder, runtime="onnx"), OnnxActorPolicy)

    # saving new weights (a training checkpoint) removes the stale export
    torch_policy = load_policy(folder, runtime="torch")
    save_actor_policy(folder, torch_policy.actor, torch_policy.normalizer, hidden=(32, 32))
    assert not model.exists()
    assert "has no model.onnx" in _one_line_error(lambda: load_policy(folder, runtime="onnx"))


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_onnx_policy_runs_without_torch(runs, tmp_path):
    exported = copy_run(runs, "deas", tmp_path) / "policy"
    export_onnx(exported)
    obs = observations()[0]
    want = load_policy(exported, runtime="torch").act(obs)
    not_exported = copy_run(runs, "bc", tmp_path) / "policy"
    result = _python(
        f"""
        import json, sys
        import numpy as np
        from embodia.core.policy import load_policy
        p = load_policy({str(exported)!r}, runtime="onnx")
        a = p.act({{k: np.array(v, np.float32) for k, v in {json.dumps({k: v.tolist() for k, v in obs.items()})}.items()}})
        assert "torch" not in sys.modules, "torch was imported"
        sys.modules["torch"] = None  # as on a robot without torch: "auto" must pick model.onnx
        assert type(load_policy({str(exported)!r})).__name__ == "OnnxActorPolicy"
        try:
            load_policy({str(not_exported)!r})
        except Exception as error:
            print("ERROR", type(error).__name__, error)
        print("ACTION", json.dumps(a.tolist()))
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    action = json.loads(next(line for line in lines if line.startswith("ACTION"))[len("ACTION ") :])
    np.testing.assert_allclose(np.array(action), want, rtol=0, atol=ATOL)
    error = next(line for line in lines if line.startswith("ERROR"))
    assert error.startswith("ERROR PolicyError ") and "torch is not installed" in error
    assert f"`embodia export {not_exported} --onnx` on a machine with torch" in error


def test_cli_export_and_eval_with_onnx(runs, tmp_path):
    run = copy_run(runs, "bc_chunk4", tmp_path)
    result = run_cli("export", str(run), "--onnx", check=True)
    assert str(run / "policy" / "model.onnx") in result.stdout and "max |onnx - torch|" in result.stdout
    result = run_cli(
        "eval", str(run), "--runtime", "onnx", "--episodes", "1", "--execute-steps", "1", "--json", check=True
    )
    assert json.loads(result.stdout)["episodes"] == 1
    failed = run_cli("export", str(tmp_path / "nowhere"), "--onnx")
    assert failed.returncode == 2
    assert (
        failed.stderr.strip().startswith("error: no policy at")
        and len(failed.stderr.strip().splitlines()) == 1
    )
