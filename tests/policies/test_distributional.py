"""HL-Gauss targets, expected values and value ranges against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch

from embodia.policies.distributional import Support, cross_entropy, expected_value, hl_gauss, value_range


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_hl_gauss_matches_gaussian_bin_integrals():
    support = Support(0.0, 4.0, bins=4, sigma_ratio=0.5)  # edges 0,1,2,3,4; sigma = 0.5
    probs = hl_gauss(torch.tensor([1.5]), support)[0]
    edges = [0, 1, 2, 3, 4]
    raw = [phi((edges[i + 1] - 1.5) / 0.5) - phi((edges[i] - 1.5) / 0.5) for i in range(4)]
    expected = [r / sum(raw) for r in raw]
    assert probs.tolist() == pytest.approx(expected, abs=1e-6)
    # 1.5 is the centre of bin 1: its neighbours get equal mass, and bin 1 the most
    assert float(probs[0]) == pytest.approx(float(probs[2]), abs=1e-6) and int(probs.argmax()) == 1
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-6)


def test_expected_value_of_target_distribution_recovers_the_target():
    support = Support(-10.0, 10.0, bins=101)
    targets = torch.tensor([-7.3, -0.1, 0.0, 4.2, 9.0])
    logits = torch.log(hl_gauss(targets, support).clamp_min(1e-12))
    assert expected_value(logits, support).tolist() == pytest.approx(targets.tolist(), abs=0.02)
    # targets outside the support are clipped to its ends
    clipped = expected_value(torch.log(hl_gauss(torch.tensor([50.0]), support).clamp_min(1e-12)), support)
    assert 9.5 < float(clipped) <= 10.0


def test_cross_entropy_is_smallest_at_the_target():
    support = Support(0.0, 10.0, bins=21)
    target = hl_gauss(torch.tensor([3.0]), support)
    right = torch.log(target.clamp_min(1e-12))
    wrong = torch.log(hl_gauss(torch.tensor([6.0]), support).clamp_min(1e-12))
    assert float(cross_entropy(right, target)) < float(cross_entropy(wrong, target))


def test_value_range_is_the_fixed_point_bound():
    low, high = value_range(-1.0, 0.0, horizon=2, gamma1=0.5, gamma2=0.9)
    # per option: -(1 + 0.5) ; geometric over options with 0.9^2 = 0.81
    assert low == pytest.approx(-1.5 / (1 - 0.81)) and high == 0.0


def test_rewards_that_are_all_zero_still_give_bins_of_some_width():
    # demonstrations that never reach the reward (a kitchen store of failures): every value is 0
    assert value_range(0.0, 0.0, horizon=4, gamma1=0.9, gamma2=0.999) == (-1.0, 1.0)
    with pytest.raises(ValueError, match="v_max > v_min"):
        Support(0.0, 0.0)
