"""VEREncoder: only the downstream router trains, Top-K annealing, expert usage, save/load through encoder_io."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from embodia.perception.encoder_io import load_encoder, save_encoder
from embodia.perception.encoders import prepare
from embodia.perception.ver import DOWNSTREAM, VERConfig, VEREncoder, VisionExpertLibrary, save_library

torch.set_num_threads(1)
# Until the lead adds the kinds to encoder_io's built-in table:

TINY = VERConfig(image_size=32, patch=8, dim=32, depth=3, heads=2, moe_blocks=2, experts=4, expert_hidden=48)


def _library() -> VisionExpertLibrary:
    torch.manual_seed(0)
    return VisionExpertLibrary(TINY, router_names=["a", "b"])


def _images(n: int = 8) -> torch.Tensor:
    frames = np.random.default_rng(1).integers(0, 255, (n, 32, 32, 3), dtype=np.uint8)
    return prepare(frames, _library())


def test_only_the_downstream_router_learns():
    library = _library()
    encoder = VEREncoder(library, router_k_min=1, anneal_steps=10).train()
    assert DOWNSTREAM not in library.router_names  # the given library is not modified
    before = {n: p.detach().clone() for n, p in encoder.named_parameters()}
    trainable = {n for n, p in encoder.named_parameters() if p.requires_grad}
    assert trainable and all(f"routers.{DOWNSTREAM}." in n for n in trainable)
    head = torch.nn.Linear(encoder.dim, 3)
    optimiser = torch.optim.Adam([*encoder.trainable_parameters(), *head.parameters()], lr=1e-2)
    out = encoder(_images())
    loss = (head(out.pooled) - 1.0).pow(2).mean() + out.patches.pow(3).mean()
    loss.backward()
    optimiser.step()
    for name, param in encoder.named_parameters():
        if name in trainable:
            assert not torch.equal(param, before[name]), name
        else:
            assert torch.equal(param, before[name]), name
            assert param.grad is None, name


def test_frozen_layers_stay_in_eval_and_noise_only_in_training():
    quiet = VEREncoder(_library(), anneal=False, router_k_min=2)  # the default: a deterministic router
    quiet.train()
    torch.nn.init.normal_(quiet.routers[0].noise_proj.weight, std=1.0)
    with torch.no_grad():
        assert torch.equal(quiet(_images(2)).patches, quiet(_images(2)).patches)
    encoder = VEREncoder(_library(), anneal=False, router_k_min=2, router_noise=1.0)
    encoder.train()
    assert encoder.training and not encoder.library.blocks[0].training
    assert all(r.training for r in encoder.routers)
    assert not any(m.routers["a"].training for m in encoder.library.moe_layers())
    images = _images(2)
    torch.nn.init.normal_(encoder.routers[0].noise_proj.weight, std=1.0)
    with torch.no_grad():
        assert not torch.equal(encoder(images).patches, encoder(images).patches)
        encoder.eval()
        assert not any(r.training for r in encoder.routers)
        assert torch.equal(encoder(images).patches, encoder(images).patches)


def test_trainable_share_of_the_default_config_is_small():
    encoder = VEREncoder(VisionExpertLibrary(VERConfig(), router_names=["dino", "clip", "vit"]))
    share = encoder.trainable_share()
    print(f"VEREncoder default config: trainable share {100 * share:.3f} %")
    assert 0 < share < 0.05
    assert share == pytest.approx(2 * 96 * 6 / sum(p.numel() for p in encoder.parameters()))  # 2 MoE layers
    noisy = VEREncoder(
        VisionExpertLibrary(VERConfig(), router_names=["dino", "clip", "vit"]), router_noise=1.0
    )
    assert noisy.trainable_share() == pytest.approx(2 * share)  # the noise projection trains too


def test_top_k_anneals_from_all_experts_to_k_min():
    encoder = VEREncoder(_library(), router_k_min=1, anneal_steps=6)
    ks = [encoder.k]
    for _ in range(8):
        ks.append(encoder.advance())
    assert ks[0] == TINY.experts and ks[-1] == 1 and ks[6] == 1
    assert all(a >= b for a, b in zip(ks, ks[1:]))
    assert int(encoder.step_count) == 8 and "step_count" in encoder.state_dict()
    with torch.no_grad():
        encoder.eval()(_images(2))
    assert all(((r["gates"] > 0).sum(-1) == 1).all() for r in encoder.routing())
    fixed = VEREncoder(_library(), router_k_min=2, anneal=False)
    assert fixed.k == 2 and fixed.advance(100) == 2


def test_usage_sums_to_one_and_entropy_is_bounded():
    encoder = VEREncoder(_library(), router_k_min=1, anneal_steps=0).eval()
    with torch.no_grad():
        encoder(_images(4))
        encoder(_images(3))
    usage = encoder.usage()
    assert usage.shape == (TINY.experts,) and float(usage.sum()) == pytest.approx(1.0)
    assert 0.0 <= encoder.usage_entropy() <= math.log(TINY.experts) + 1e-9
    encoder.reset_usage()
    assert encoder.usage_entropy() == pytest.approx(math.log(TINY.experts))  # uniform before any forward


def test_save_load_round_trip_through_encoder_io(tmp_path):
    encoder = VEREncoder(_library(), router_k_min=2, anneal_steps=20)
    torch.nn.init.normal_(encoder.routers[1].gate.weight, std=0.3)  # a "trained" router
    encoder.advance(7)
    save_encoder(encoder, tmp_path / "enc")
    loaded = load_encoder(tmp_path / "enc")
    assert isinstance(loaded, VEREncoder) and int(loaded.step_count) == 7 and loaded.k == encoder.k
    assert loaded.anneal_steps == 20 and loaded.router_k_min == 2
    assert sum(p.numel() for p in loaded.trainable_parameters()) == sum(
        p.numel() for p in encoder.trainable_parameters()
    )
    images = _images(3)
    with torch.no_grad():
        assert torch.equal(loaded(images).patches, encoder.eval()(images).patches)


def test_from_library_folder(tmp_path):
    library = _library()
    save_library(library, tmp_path / "lib")
    encoder = VEREncoder.from_library_folder(tmp_path / "lib", router_k_min=1, anneal_steps=5)
    assert encoder.teacher_routers == ["a", "b"] and encoder.k == TINY.experts
    images = _images(2)
    with torch.no_grad():  # the teachers' routers are the library's
        assert torch.equal(
            encoder.library(images, router="a").patches, library.eval()(images, router="a").patches
        )
