"""The networks' speed options: bfloat16 matrix products (mixed precision) and fused Adam."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies import networks
from embodia.policies.deas import DEAS, DEASConfig
from embodia.policies.networks import ObsNormalizer, cpu_has_bfloat16, mlp, set_matmul_dtype
from tests.policies.test_deas import chain_dataset


def test_bfloat16_matmuls_keep_float32_weights_gradients_and_outputs():
    torch.manual_seed(0)
    net = mlp(6, (32, 32), 3)
    reference = copy.deepcopy(net)
    set_matmul_dtype(net, torch.bfloat16)
    seen: list[torch.dtype] = []
    net[0].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    x = torch.randn(64, 6)
    out, expected = net(x), reference(x)
    assert seen == [torch.bfloat16]  # the first linear layer ran in bfloat16
    assert out.dtype == torch.float32 and not torch.equal(out, expected)
    torch.testing.assert_close(out, expected, rtol=0.05, atol=0.05)  # bfloat16's ~3 significant digits
    out.square().sum().backward()
    expected.square().sum().backward()
    for p, q in zip(net.parameters(), reference.parameters()):
        assert p.dtype == p.grad.dtype == torch.float32
        assert torch.nn.functional.cosine_similarity(p.grad.flatten(), q.grad.flatten(), dim=0) > 0.99
    assert list(net.state_dict()) == list(reference.state_dict())  # checkpoints and policy folders unchanged
    set_matmul_dtype(net, None)
    assert torch.equal(net(x), reference(x))


def test_fused_adam_gives_the_same_updates_as_the_per_parameter_loop():
    arrays, ends, _ = chain_dataset()
    normalizer = ObsNormalizer.fit(["state"], arrays)
    config = DEASConfig(horizon=4, gamma2=0.95, bins=21, hidden=(32, 32), extraction="ddpg_bc", alpha=1.0)

    class Unfused(DEAS):
        fused_adam = False

    learners = [cls(config, normalizer, 1, (-1.0, 0.0), seed=0) for cls in (DEAS, Unfused)]
    assert learners[0].critic_opt.defaults["fused"] and not learners[1].critic_opt.defaults["fused"]
    sampler = WindowSampler(arrays, horizon=4, episode_ends=ends, seed=0)
    for _ in range(20):
        batch = to_torch(sampler.sample(64))
        for learner in learners:
            learner.update(batch)
    for name, module in learners[0].modules().items():
        other = learners[1].modules()[name]
        for p, q in zip(module.parameters(), other.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_cpu_bfloat16_support_is_read_from_the_cpu_flags():
    epyc_avx2 = "processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma\n"
    sapphire_rapids = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16\n"
    assert cpu_has_bfloat16(epyc_avx2) is False
    assert cpu_has_bfloat16(sapphire_rapids) is True
    assert cpu_has_bfloat16("no flags line here") is None  # cannot tell: no warning either way


@pytest.mark.parametrize("has_bfloat16", [False, True, None])
def test_bfloat16_training_warns_only_on_a_cpu_that_would_emulate_it(monkeypatch, has_bfloat16):
    arrays, _, _ = chain_dataset()
    normalizer = ObsNormalizer.fit(["state"], arrays)
    monkeypatch.setattr(networks, "cpu_has_bfloat16", lambda cpuinfo=None: has_bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DEAS({"horizon": 2, "hidden": [16], "matmul_precision": "bfloat16"}, normalizer, action_dim=1)
        DEAS({"horizon": 2, "hidden": [16]}, normalizer, action_dim=1)  # float32: never a warning
    slow = [w for w in caught if "without bfloat16 instructions" in str(w.message)]
    assert len(slow) == (1 if has_bfloat16 is False else 0)
    if slow:
        assert slow[0].category is RuntimeWarning and "use 'float32'" in str(slow[0].message)
