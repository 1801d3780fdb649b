"""ONNX export of pixel policy folders: the whole network (encoder, projection, state statistics, head) in one
graph, checked against torch; the exported policy acts like the torch one, through the same loader."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from embodia.core.errors import PolicyError
from embodia.core.policy import load_policy
from embodia.perception.encoders import ConvEncoder
from embodia.perception.pixel_observations import PixelObservationEncoder
from embodia.policies.networks import Actor
from embodia.policies.onnx_export import OPSET, export_onnx
from embodia.policies.onnx_pixel_policy import OnnxPixelPolicy
from embodia.policies.pixel_bc import PixelActor
from embodia.policies.pixel_policy import PixelActorPolicy, save_pixel_policy
from tests.conftest import run_cli

ATOL = 1e-5
SIZE = 32  # the encoder's image size: the images the exported graph takes


def pixel_folder(
    folder: Path,
    *,
    image_keys=("rgb", "goal_rgb"),
    state_sizes=(("arm", 2), ("gripper", 3)),
    horizon: int = 4,
    execute_steps: int | None = 2,
    seed: int = 0,
) -> Path:
    """A small untrained pixel policy folder (a few hundred kilobytes; exports in a few seconds)."""
    torch.manual_seed(seed)
    dim = sum(n for _, n in state_sizes)
    observations = PixelObservationEncoder(
        ConvEncoder(image_size=SIZE, dim=16, depth=2),
        list(image_keys),
        torch.randn(dim),
        torch.rand(dim) + 0.5,
        state_keys=[k for k, _ in state_sizes],
        token_channels=4,
    )
    actor = PixelActor(observations, Actor(observations.dim, 3, horizon, (32, 32)))
    settings = SimpleNamespace(hidden=(32, 32), execute_steps=execute_steps)
    save_pixel_policy(
        folder, actor, settings, meta={"method": "pixel_bc"}, state_sizes=[n for _, n in state_sizes]
    )
    return folder


def pixel_observations(count: int = 6, seed: int = 1) -> list[dict[str, np.ndarray]]:
    """Camera-like observations: uint8 images (noise and large uniform blocks) and float32 states."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        obs = {}
        for key in ("rgb", "goal_rgb"):
            if i % 2:
                obs[key] = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
            else:
                coarse = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
                obs[key] = np.ascontiguousarray(coarse.repeat(SIZE // 4, 0).repeat(SIZE // 4, 1))
        obs["arm"] = rng.normal(size=2).astype(np.float32)
        obs["gripper"] = rng.normal(size=3).astype(np.float32)
        out.append(obs)
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    folder = pixel_folder(tmp_path_factory.mktemp("pixel") / "policy")
    export_onnx(folder, atol=ATOL)
    return folder


def test_exported_pixel_policy_matches_torch(exported):
    record = json.loads((exported / "config.json").read_text())["onnx"]
    assert record["file"] == "model.onnx" and record["opset"] == OPSET
    assert 0 <= record["max_abs_diff"] <= ATOL
    assert record["inputs"] == {
        "rgb": {"shape": [SIZE, SIZE, 3], "dtype": "uint8"},
        "goal_rgb": {"shape": [SIZE, SIZE, 3], "dtype": "uint8"},
        "arm": {"shape": [2], "dtype": "float32"},
        "gripper": {"shape": [3], "dtype": "float32"},
    }
    torch_policy = load_policy(exported, runtime="torch")
    onnx_policy = load_policy(exported, runtime="onnx")
    assert isinstance(torch_policy, PixelActorPolicy) and isinstance(onnx_policy, OnnxPixelPolicy)
    assert isinstance(load_policy(exported), PixelActorPolicy)  # auto: torch is installed here
    assert onnx_policy.chunk_size == torch_policy.chunk_size == 4
    assert onnx_policy.execute_steps == torch_policy.execute_steps == 2
    assert onnx_policy.meta == torch_policy.meta and "onnx" not in onnx_policy.meta
    assert onnx_policy.image_size == (SIZE, SIZE)

    observations = pixel_observations()
    for obs in observations:
        want, got = torch_policy.act(obs), onnx_policy.act(obs)
        assert got.shape == want.shape == (4, 3) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)
    batch = {k: np.stack([obs[k] for obs in observations]) for k in observations[0]}
    want, got = torch_policy.act_batch(batch), onnx_policy.act_batch(batch)
    assert got.shape == want.shape == (len(observations), 4, 3)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)

    # the graph: uint8 images and float32 states, each with a dynamic batch axis
    inputs = [(i.name, i.shape[1:], i.type) for i in onnx_policy.session.get_inputs()]
    assert inputs == [
        ("rgb", [SIZE, SIZE, 3], "tensor(uint8)"),
        ("goal_rgb", [SIZE, SIZE, 3], "tensor(uint8)"),
        ("arm", [2], "tensor(float)"),
        ("gripper", [3], "tensor(float)"),
    ]


def test_single_actions_and_images_only(tmp_path):
    folder = pixel_folder(
        tmp_path / "policy", image_keys=("rgb",), state_sizes=(), horizon=1, execute_steps=None
    )
    export_onnx(folder)
    torch_policy, onnx_policy = (load_policy(folder, runtime=r) for r in ("torch", "onnx"))
    for obs in pixel_observations(3):
        got = onnx_policy.act({"rgb": obs["rgb"]})
        assert got.shape == (3,)
        np.testing.assert_allclose(got, torch_policy.act({"rgb": obs["rgb"]}), rtol=0, atol=ATOL)
    assert not hasattr(onnx_policy, "execute_steps")


def test_pixel_export_refusals_are_one_line(tmp_path):
    folder = pixel_folder(tmp_path / "policy")
    config = json.loads((folder / "config.json").read_text())
    del config["state_sizes"]  # a folder saved before the sizes were recorded, with two state keys
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(PolicyError) as error:
        export_onnx(folder)
    message = str(error.value)
    assert "\n" not in message and "does not record how many of its 5 state values" in message
    assert '"state_sizes": {"arm": N, "gripper": N}' in message
    assert not (folder / "model.onnx").exists()
    with pytest.raises(PolicyError, match=r"differs from torch by up to [0-9.e-]+ \(> atol 1e-15\)"):
        export_onnx(pixel_folder(tmp_path / "tight"), atol=1e-15)


def test_new_weights_remove_the_export_and_other_weights_are_refused(tmp_path):
    folder = pixel_folder(tmp_path / "policy")
    export_onnx(folder)
    other = pixel_folder(tmp_path / "other", seed=1)
    original = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())
    with pytest.raises(PolicyError, match="exported from other weights"):
        load_policy(folder, runtime="onnx")
    (folder / "model.safetensors").write_bytes(original)
    assert isinstance(load_policy(folder, runtime="onnx"), OnnxPixelPolicy)
    pixel_folder(folder, seed=2)  # saved again (a training checkpoint): the stale export goes
    assert not (folder / "model.onnx").exists()
    with pytest.raises(PolicyError, match="has no model.onnx"):
        load_policy(folder, runtime="onnx")


def test_cli_exports_a_pixel_folder(tmp_path):
    folder = pixel_folder(tmp_path / "policy", image_keys=("rgb",), state_sizes=(("arm", 2),))
    result = run_cli("export", str(folder), "--onnx", check=True)
    assert str(folder / "model.onnx") in result.stdout and "max |onnx - torch|" in result.stdout
    assert isinstance(load_policy(folder, runtime="onnx"), OnnxPixelPolicy)
