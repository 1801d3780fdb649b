"""The networks' speed options: bfloat16 matrix products (mixed precision) and fused Adam."""

from __future__ import annotations

import copy

import numpy as np
import torch

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.deas import DEAS, DEASConfig
from embodia.policies.networks import ObsNormalizer, mlp, set_matmul_dtype
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
    config = DEASConfig(horizon=4, gamma2=0.95, bins=21, hidden=(32, 32))

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
