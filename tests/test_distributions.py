"""Action distributions: sampling, log-likelihoods, entropies and KL behave as the maths says."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from runtime.core.distributions import Categorical, DiagGaussian, MultiCategorical, distribution_for


def test_categorical() -> None:
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1]]))
    dist = Categorical(logits)
    assert dist.deterministic_sample().tolist() == [0]
    assert dist.logp(torch.tensor([1])).item() == pytest.approx(math.log(0.2), rel=1e-5)
    expected = -sum(p * math.log(p) for p in (0.7, 0.2, 0.1))
    assert dist.entropy().item() == pytest.approx(expected, rel=1e-5)
    assert dist.kl(dist).item() == pytest.approx(0.0, abs=1e-6)
    torch.manual_seed(0)
    draws = Categorical(logits.expand(20000, 3)).sample()
    assert torch.bincount(draws, minlength=3).float().div(20000).tolist() == pytest.approx(
        [0.7, 0.2, 0.1], abs=0.02
    )


def test_multi_categorical_sums_over_components() -> None:
    inputs = torch.zeros(4, 5)  # nvec (2, 3): uniform components
    dist = MultiCategorical(inputs, [2, 3])
    actions = dist.sample()
    assert actions.shape == (4, 2)
    assert dist.logp(actions)[0].item() == pytest.approx(math.log(1 / 6), rel=1e-5)
    assert dist.entropy()[0].item() == pytest.approx(math.log(6), rel=1e-5)


def test_diag_gaussian() -> None:
    inputs = torch.tensor([[1.0, -1.0, 0.0, math.log(2.0)]])  # means (1, -1), stds (1, 2)
    dist = DiagGaussian(inputs)
    assert dist.deterministic_sample().tolist() == [[1.0, -1.0]]
    expected = sum(
        -0.5 * ((x - m) / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)
        for x, m, s in ((0.0, 1.0, 1.0), (0.0, -1.0, 2.0))
    )
    assert dist.logp(torch.tensor([[0.0, 0.0]])).item() == pytest.approx(expected, rel=1e-5)
    other = DiagGaussian(torch.tensor([[0.0, -1.0, 0.0, math.log(2.0)]]))
    assert dist.kl(other).item() == pytest.approx(0.5, rel=1e-5)


def test_distribution_for_spaces() -> None:
    assert distribution_for(gym.spaces.Discrete(4)) == (Categorical, 4)
    factory, size = distribution_for(gym.spaces.MultiDiscrete([2, 3]))
    assert size == 5 and isinstance(factory(torch.zeros(1, 5)), MultiCategorical)
    assert distribution_for(gym.spaces.Box(-1, 1, shape=(3,), dtype=np.float32)) == (
        DiagGaussian,
        6,
    )
    with pytest.raises(ValueError, match="supported: Discrete"):
        distribution_for(gym.spaces.Text(5))
