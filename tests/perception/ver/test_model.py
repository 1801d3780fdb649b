"""The VER expert library: noisy top-K gates, the Top-K curriculum, the MoE layer and the library's shapes."""

from __future__ import annotations

import math

import pytest
import torch

from embodia.perception.encoders import prepare
from embodia.perception.ver import (
    MoEMLP,
    NoisyTopKRouter,
    VERConfig,
    VERError,
    VisionExpertLibrary,
    curriculum_top_k,
)

torch.set_num_threads(1)

TINY = VERConfig(image_size=32, patch=8, dim=32, depth=3, heads=2, moe_blocks=2, experts=5, expert_hidden=48)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("training", [False, True])
def test_router_keeps_exactly_k_gates_per_token_summing_to_one(k, training):
    torch.manual_seed(k)
    router = NoisyTopKRouter(16, 6, noise=1.0).train(training)
    torch.nn.init.normal_(router.noise_proj.weight, std=0.5)
    x = torch.randn(200, 16)
    gates, probs = router(x, k)
    assert gates.shape == probs.shape == (200, 6)
    assert ((gates > 0).sum(-1) == k).all()
    assert torch.allclose(gates.sum(-1), torch.ones(200), atol=1e-5)
    assert torch.allclose(probs.sum(-1), torch.ones(200), atol=1e-5) and (probs > 0).all()
    if not training:  # without noise the kept experts are the K largest probabilities
        assert torch.equal((gates > 0), probs >= probs.topk(k, -1).values[:, -1:])


def test_router_noise_only_in_training_and_k_is_checked():
    torch.manual_seed(0)
    router = NoisyTopKRouter(16, 6, noise=1.0)
    torch.nn.init.normal_(router.noise_proj.weight, std=0.5)
    x = torch.randn(50, 16)
    router.eval()
    assert torch.equal(router(x, 2)[0], router(x, 2)[0])
    assert torch.equal(router.logits(x), router.gate(x))
    router.train()
    assert not torch.equal(router.logits(x), router.logits(x))
    assert not torch.equal(router(x, 2)[0], router(x, 2)[0])
    with pytest.raises(VERError):
        router(x, 0)
    with pytest.raises(VERError):
        router(x, 7)


def test_curriculum_top_k_goes_from_all_experts_to_k_min_monotonically():
    e, k_min, s = 6, 1, 100
    assert curriculum_top_k(0, e, k_min, s) == 6
    assert curriculum_top_k(s // 2, e, k_min, s) == 4  # 6 - 2.5 = 3.5, rounded half up
    assert curriculum_top_k(s, e, k_min, s) == 1
    assert curriculum_top_k(2 * s, e, k_min, s) == 1
    values = [curriculum_top_k(step, e, k_min, s) for step in range(0, 3 * s)]
    assert all(a >= b for a, b in zip(values, values[1:])) and set(values) == {1, 2, 3, 4, 5, 6}
    assert curriculum_top_k(0, 8, 2, 10) == 8 and curriculum_top_k(5, 8, 2, 10) == 5
    assert curriculum_top_k(0, 6, 3, 0) == 3  # no annealing window: K_min at once
    with pytest.raises(VERError):
        curriculum_top_k(0, 6, 0, 10)


def test_moe_layer_mixes_the_chosen_experts_with_their_gates():
    torch.manual_seed(1)
    layer = MoEMLP(16, 24, 4, ["a", "b"], noise=0.0).eval()
    x = torch.randn(3, 7, 16)
    y = layer(x, "a", 2)
    gates = layer.last_gates
    assert y.shape == x.shape and gates.shape == (3, 7, 4)
    expected = sum(gates[..., e, None] * layer.experts[e](x) for e in range(4))
    assert torch.allclose(y, expected, atol=1e-5)
    assert not torch.equal(layer(x, "b", 2), y)  # another router, other gates
    layer.add_router("downstream")
    assert list(layer.routers) == ["a", "b", "downstream"]
    with pytest.raises(VERError):
        layer.add_router("a")
    with pytest.raises(VERError):
        layer(x, "missing", 2)


def test_library_shapes_routing_and_default_router():
    torch.manual_seed(2)
    library = VisionExpertLibrary(TINY, router_names=["dino", "clip"]).eval()
    assert library.kind == "ver-library" and library.grid == 4 and library.dim == 32
    frames = torch.randint(0, 255, (2, 40, 40, 3), dtype=torch.uint8).numpy()
    images = prepare(frames, library)
    out = library(images, router="clip", k=3)
    assert out.patches.shape == (2, 16, 32) and out.pooled.shape == (2, 32)
    assert torch.allclose(out.pooled, out.patches.mean(1))
    routing = library.routing()
    assert len(routing) == 2
    for layer in routing:
        assert layer["probs"].shape == layer["gates"].shape == (2, 16, 5)
        assert ((layer["gates"] > 0).sum(-1) == 3).all()
    default = library(images)  # ImageEncoder use: the first router, K = top_k
    assert torch.equal(default.patches, library(images, router="dino", k=TINY.top_k).patches)
    assert ((library.routing()[0]["gates"] > 0).sum(-1) == TINY.top_k).all()
    config = library.encoder_config()
    assert config["router_names"] == ["dino", "clip"] and config["default_router"] == "dino"
    rebuilt = VisionExpertLibrary(**config)
    rebuilt.load_state_dict(library.state_dict())
    assert torch.equal(rebuilt.eval()(images).pooled, default.pooled)
    with pytest.raises(VERError):
        library(images, router="sam")


def test_config_is_validated():
    with pytest.raises(VERError, match="patch"):
        VERConfig(image_size=30, patch=8)
    with pytest.raises(VERError, match="top_k"):
        VERConfig(experts=2, top_k=3)
    assert VERConfig(mean=[0.1, 0.2, 0.3]).mean == (0.1, 0.2, 0.3)
    assert math.isclose(VERConfig().to_dict()["router_noise"], 1.0)
