"""VER distillation: two different frozen teachers, the loss falls, MI is bounded, save/load round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from embodia.perception.encoders import ConvEncoder, prepare
from embodia.perception.ver import (
    DistillConfig,
    VERConfig,
    VERError,
    VisionExpertLibrary,
    distill,
    load_library,
    mutual_information,
    resize_tokens,
    save_library,
)

torch.set_num_threads(1)
# Until the lead adds the kind to encoder_io's built-in table:

TINY = VERConfig(image_size=32, patch=8, dim=32, depth=2, heads=2, moe_blocks=1, experts=4, expert_hidden=64)


def _frames(n: int = 64, size: int = 32) -> np.ndarray:
    """Simple synthetic scenes: a coloured square at a random place on a coloured background."""
    rng = np.random.default_rng(0)
    frames = np.empty((n, size, size, 3), dtype=np.uint8)
    for i in range(n):
        frames[i] = rng.integers(0, 255, 3)
        x, y, s = rng.integers(0, size - 8, 2).tolist() + [int(rng.integers(6, 14))]
        frames[i, y : y + s, x : x + s] = rng.integers(0, 255, 3)
    return frames


def _teachers() -> dict[str, ConvEncoder]:
    torch.manual_seed(10)
    a = ConvEncoder(image_size=32, dim=16, depth=2)  # 8x8 grid: resized down to the student's 4x4
    torch.manual_seed(11)
    b = ConvEncoder(image_size=32, dim=24, depth=3)  # 4x4 grid, another width
    return {"a": a.requires_grad_(False).eval(), "b": b.requires_grad_(False).eval()}


@pytest.fixture(scope="module")
def distilled():
    teachers = _teachers()
    config = DistillConfig(steps=60, batch_size=16, lr=3e-3, mi_weight=0.01, seed=0)
    library, history = distill(teachers, _frames(), TINY, config, log_every=1)
    return teachers, library, history


def test_distillation_loss_falls_and_logs_per_teacher(distilled):
    teachers, library, history = distilled
    assert len(history) == 60 and history[-1]["step"] == 59
    first = np.mean([h["loss"] for h in history[:5]])
    last = np.mean([h["loss"] for h in history[-5:]])
    assert last < 0.5 * first, (first, last)
    for name in teachers:
        assert np.mean([h[f"loss/{name}"] for h in history[-5:]]) < np.mean(
            [h[f"loss/{name}"] for h in history[:5]]
        )
    for h in history:
        assert 0.0 <= h["mi"] <= math.log(TINY.experts) + 1e-6
        assert 0.0 <= h["usage_entropy"] <= math.log(TINY.experts) + 1e-6
    assert library.router_names == ["a", "b"] and library.default_router == "a" and not library.training
    assert not any(p.requires_grad for t in teachers.values() for p in t.parameters())


def test_mutual_information_bounds():
    e = 4
    same = torch.full((2, e), 1.0 / e)
    assert float(mutual_information(same)) == pytest.approx(0.0, abs=1e-6)
    disjoint = torch.eye(e)  # each teacher its own expert: MI = log E
    assert float(mutual_information(disjoint)) == pytest.approx(math.log(e), abs=1e-5)
    random = torch.softmax(torch.randn(3, e), -1)
    assert 0.0 <= float(mutual_information(random)) <= math.log(e)


def test_resize_tokens_keeps_a_constant_map_and_checks_the_grid():
    tokens = torch.ones(2, 64, 5) * torch.arange(5.0)
    out = resize_tokens(tokens, 8, 4)
    assert out.shape == (2, 16, 5) and torch.allclose(out, torch.ones(2, 16, 5) * torch.arange(5.0))
    with pytest.raises(VERError):
        resize_tokens(tokens, 7, 4)


def test_save_load_round_trip_gives_identical_outputs(distilled, tmp_path):
    _, library, _ = distilled
    save_library(library, tmp_path / "lib")
    loaded = load_library(tmp_path / "lib")
    assert isinstance(loaded, VisionExpertLibrary) and loaded.router_names == ["a", "b"]
    images = prepare(_frames(4), library)
    for router in ("a", "b"):
        assert torch.equal(loaded(images, router=router).patches, library(images, router=router).patches)
    assert torch.equal(loaded(images).pooled, library(images).pooled)


def test_distill_rejects_bad_frames():
    with pytest.raises(VERError, match="uint8"):
        distill(_teachers(), np.zeros((4, 32, 32, 3), np.float32), TINY, DistillConfig(steps=1))
    with pytest.raises(VERError, match="teacher"):
        distill({}, _frames(4), TINY, DistillConfig(steps=1))
