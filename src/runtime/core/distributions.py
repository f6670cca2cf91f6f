"""Action distributions over a model's outputs: Categorical, DiagGaussian, MultiCategorical, and
Deterministic for actors that output actions."""

from __future__ import annotations

import abc
import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class ActionDistribution(abc.ABC):
    """A batch of action distributions parameterised by ``inputs`` (one row per step)."""

    def __init__(self, inputs: torch.Tensor) -> None:
        self.inputs = inputs

    @abc.abstractmethod
    def sample(self) -> torch.Tensor: ...

    @abc.abstractmethod
    def deterministic_sample(self) -> torch.Tensor: ...

    @abc.abstractmethod
    def logp(self, actions: torch.Tensor) -> torch.Tensor: ...

    @abc.abstractmethod
    def entropy(self) -> torch.Tensor: ...

    @abc.abstractmethod
    def kl(self, other: ActionDistribution) -> torch.Tensor: ...


class Categorical(ActionDistribution):
    """A categorical over logits (Discrete actions)."""

    def __init__(self, inputs: torch.Tensor) -> None:
        super().__init__(inputs)
        self.log_probs = torch.log_softmax(inputs, dim=-1)

    def sample(self) -> torch.Tensor:
        # Gumbel-max: one kernel instead of multinomial's normalise-and-search.
        uniform = torch.rand_like(self.log_probs).clamp_(min=1e-20)
        return (self.log_probs - torch.log(-torch.log(uniform))).argmax(dim=-1)

    def deterministic_sample(self) -> torch.Tensor:
        return self.inputs.argmax(dim=-1)

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.log_probs.exp() * self.log_probs).sum(-1)

    def kl(self, other: ActionDistribution) -> torch.Tensor:
        assert isinstance(other, Categorical)
        return (self.log_probs.exp() * (self.log_probs - other.log_probs)).sum(-1)


class MultiCategorical(ActionDistribution):
    """Independent categoricals over consecutive slices of the inputs (MultiDiscrete)."""

    def __init__(self, inputs: torch.Tensor, input_lens: list[int]) -> None:
        super().__init__(inputs)
        self._parts = [Categorical(x) for x in torch.split(inputs, input_lens, dim=-1)]

    def sample(self) -> torch.Tensor:
        return torch.stack([p.sample() for p in self._parts], dim=-1)

    def deterministic_sample(self) -> torch.Tensor:
        return torch.stack([p.deterministic_sample() for p in self._parts], dim=-1)

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        columns = torch.unbind(actions, dim=-1)
        return torch.stack([p.logp(a) for p, a in zip(self._parts, columns, strict=True)]).sum(0)

    def entropy(self) -> torch.Tensor:
        return torch.stack([p.entropy() for p in self._parts]).sum(0)

    def kl(self, other: ActionDistribution) -> torch.Tensor:
        assert isinstance(other, MultiCategorical)
        pairs = zip(self._parts, other._parts, strict=True)
        return torch.stack([p.kl(q) for p, q in pairs]).sum(0)


class DiagGaussian(ActionDistribution):
    """A Gaussian with diagonal covariance; inputs are ``[mean, log_std]`` halves."""

    def __init__(self, inputs: torch.Tensor) -> None:
        super().__init__(inputs)
        self.mean, self.log_std = torch.chunk(inputs, 2, dim=-1)
        self.std = torch.exp(self.log_std)

    def sample(self) -> torch.Tensor:
        return self.mean + self.std * torch.randn_like(self.mean)

    def deterministic_sample(self) -> torch.Tensor:
        return self.mean

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        z = (actions - self.mean) / self.std
        return (-0.5 * z.pow(2) - self.log_std - _HALF_LOG_2PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (self.log_std + 0.5 + _HALF_LOG_2PI).sum(-1)

    def kl(self, other: ActionDistribution) -> torch.Tensor:
        assert isinstance(other, DiagGaussian)
        ratio = (self.std.pow(2) + (self.mean - other.mean).pow(2)) / (2 * other.std.pow(2))
        return (other.log_std - self.log_std + ratio - 0.5).sum(-1)


class Deterministic(ActionDistribution):
    """The distribution of a deterministic actor: all mass on ``inputs``, the actions (noise
    exploration adds to them)."""

    def sample(self) -> torch.Tensor:
        return self.inputs

    def deterministic_sample(self) -> torch.Tensor:
        return self.inputs

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(actions), device=actions.device)

    def entropy(self) -> torch.Tensor:
        return torch.zeros(len(self.inputs), device=self.inputs.device)

    def kl(self, other: ActionDistribution) -> torch.Tensor:
        return torch.zeros(len(self.inputs), device=self.inputs.device)


def distribution_for(action_space: gym.Space[Any]) -> tuple[Any, int]:
    """A factory ``inputs -> ActionDistribution`` for ``action_space`` and its input size."""
    if isinstance(action_space, gym.spaces.Discrete):
        return Categorical, int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        lens = [int(n) for n in np.asarray(action_space.nvec).ravel()]

        def multi(inputs: torch.Tensor) -> MultiCategorical:
            return MultiCategorical(inputs, lens)

        return multi, sum(lens)
    if isinstance(action_space, gym.spaces.Box):
        return DiagGaussian, 2 * int(np.prod(action_space.shape))
    raise ValueError(
        f"no action distribution for a {type(action_space).__name__} action space; "
        "supported: Discrete, MultiDiscrete, Box"
    )
