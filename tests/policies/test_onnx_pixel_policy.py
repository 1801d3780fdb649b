"""The exported pixel policy in ONNX Runtime: what it accepts and refuses, and that it runs without torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from embodia.core.errors import PolicyError
from embodia.core.policy import load_policy
from embodia.policies.onnx_export import export_onnx
from tests.conftest import ROOT
from tests.policies.test_onnx_pixel_export import SIZE, pixel_folder, pixel_observations


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    folder = pixel_folder(tmp_path_factory.mktemp("pixel") / "policy")
    export_onnx(folder)
    return folder


def _one_line(call) -> str:  # noqa: ANN001
    with pytest.raises(PolicyError) as error:
        call()
    assert "\n" not in str(error.value), error.value
    return str(error.value)


def test_observations_it_takes_and_refuses(exported):
    policy = load_policy(exported, runtime="onnx")
    obs = pixel_observations(1)[0]
    want = policy.act(obs)
    # whole-number floats are pixels too (cast), a read-only frame is read as it is
    floats = {**obs, "rgb": obs["rgb"].astype(np.float32)}
    np.testing.assert_array_equal(policy.act(floats), want)
    frozen = obs["rgb"].copy()
    frozen.flags.writeable = False
    np.testing.assert_array_equal(policy.act({**obs, "rgb": frozen}), want)
    with warnings.catch_warnings():  # the torch policy too, without torch's warning about read-only arrays
        warnings.simplefilter("error")
        torch_policy = load_policy(exported, runtime="torch")
        np.testing.assert_allclose(torch_policy.act({**obs, "rgb": frozen}), want, rtol=0, atol=1e-5)

    big = {**obs, "rgb": np.zeros((2 * SIZE, 2 * SIZE, 3), np.uint8)}
    assert f"should be ({SIZE}, {SIZE}, 3) images (the size model.onnx takes" in _one_line(
        lambda: policy.act(big)
    )
    blurred = {**obs, "rgb": obs["rgb"] + 0.5}
    assert "uint8 pixels (whole numbers 0..255)" in _one_line(lambda: policy.act(blurred))
    missing = {k: v for k, v in obs.items() if k != "gripper"}
    assert "needs observation keys ['rgb', 'goal_rgb', 'arm', 'gripper']" in _one_line(
        lambda: policy.act(missing)
    )
    split = {**obs, "arm": np.zeros(3), "gripper": np.zeros(2)}
    assert "expects 2 values for observation key 'arm', got 3" in _one_line(lambda: policy.act(split))
    batch = {k: np.stack([v, v]) for k, v in obs.items()}
    batch["rgb"] = batch["rgb"][:1]
    assert "leading batch axis of one length" in _one_line(lambda: policy.act_batch(batch))


def test_a_model_that_does_not_match_its_config_is_refused(exported, tmp_path):
    other = pixel_folder(tmp_path / "other", image_keys=("rgb",), state_sizes=(("arm", 2),))
    export_onnx(other)
    config = json.loads((other / "config.json").read_text())
    config["image_keys"] = ["rgb", "goal_rgb"]  # the folder says two cameras, its model has one
    (other / "config.json").write_text(json.dumps(config))
    assert "does not match its config.json" in _one_line(lambda: load_policy(other, runtime="onnx"))


def test_exported_pixel_policy_runs_without_torch(exported):
    obs = pixel_observations(1)[0]
    want = load_policy(exported, runtime="torch").act(obs)
    code = f"""
        import json, sys
        import numpy as np
        from embodia.core.policy import load_policy
        rng = np.random.default_rng(1)
        obs = {{k: np.array(v, dtype=d) for k, (v, d) in json.loads({json.dumps(json.dumps({k: (v.tolist(), str(v.dtype)) for k, v in obs.items()}))}).items()}}
        a = load_policy({str(exported)!r}, runtime="onnx").act(obs)
        assert "torch" not in sys.modules, "torch was imported"
        sys.modules["torch"] = None  # as on a robot without torch: "auto" picks model.onnx
        policy = load_policy({str(exported)!r})
        print("TYPE", type(policy).__name__)
        print("ACTION", json.dumps(a.tolist()))
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "TYPE OnnxPixelPolicy" in lines
    action = json.loads(next(line for line in lines if line.startswith("ACTION"))[len("ACTION ") :])
    np.testing.assert_allclose(np.array(action), want, rtol=0, atol=1e-5)
