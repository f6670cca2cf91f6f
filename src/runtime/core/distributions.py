"""Action distributions over a model's outputs: Categorical, DiagGaussian, MultiCategorical,
SquashedGaussian (SAC's tanh-squashed Gaussian on a bounded Box), and Deterministic for actors
that output actions."""

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


#: The bounds of a squashed Gaussian's log-std (the reference's).
SQUASHED_LOG_STD_MIN, SQUASHED_LOG_STD_MAX = -20.0, 2.0
#: Keeps actions off the bounds when they are unsquashed (atanh of +-1 is infinite).
_SQUASH_EPS = 1e-6


class SquashedGaussian(ActionDistribution):
    """A Gaussian over ``u`` (inputs ``[mean, log_std]``, log-std clamped to [-20, 2]) squashed
    into ``[low, high]``: ``a = low + (tanh(u) + 1) / 2 * (high - low)``. ``logp`` includes the
    change of variables, ``log N(u) - sum log(1 - tanh(u)^2) - sum log((high - low) / 2)``;
    ``sample_logp`` draws a reparameterised sample (gradients flow into the inputs) with its
    logp computed from ``u``, without unsquashing."""

    def __init__(self, inputs: torch.Tensor, low: float = -1.0, high: float = 1.0) -> None:
        super().__init__(inputs)
        self.mean, log_std = torch.chunk(inputs, 2, dim=-1)
        self.log_std = log_std.clamp(SQUASHED_LOG_STD_MIN, SQUASHED_LOG_STD_MAX)
        self.std = torch.exp(self.log_std)
        self.low, self.high = float(low), float(high)
        self._log_scale = math.log((self.high - self.low) / 2.0)

    def _squash(self, u: torch.Tensor) -> torch.Tensor:
        return self.low + (torch.tanh(u) + 1.0) * 0.5 * (self.high - self.low)

    def _unsquash(self, actions: torch.Tensor) -> torch.Tensor:
        unit = (actions - self.low) / (self.high - self.low) * 2.0 - 1.0
        return torch.atanh(unit.clamp(-1.0 + _SQUASH_EPS, 1.0 - _SQUASH_EPS))

    def _logp_of_u(self, u: torch.Tensor) -> torch.Tensor:
        z = (u - self.mean) / self.std
        gaussian = (-0.5 * z.pow(2) - self.log_std - _HALF_LOG_2PI).sum(-1)
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|.
        log_det = (2.0 * (math.log(2.0) - u - torch.nn.functional.softplus(-2.0 * u))).sum(-1)
        return gaussian - log_det - self._log_scale * u.shape[-1]

    def sample(self) -> torch.Tensor:
        with torch.no_grad():
            return self._squash(self.mean + self.std * torch.randn_like(self.mean))

    def sample_logp(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised sample and its logp."""
        u = self.mean + self.std * torch.randn_like(self.mean)
        return self._squash(u), self._logp_of_u(u)

    def deterministic_sample(self) -> torch.Tensor:
        return self._squash(self.mean)

    def deterministic_logp(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The deterministic action and its logp (``_deterministic_loss``)."""
        return self._squash(self.mean), self._logp_of_u(self.mean)

    def logp(self, actions: torch.Tensor) -> torch.Tensor:
        return self._logp_of_u(self._unsquash(actions))

    def entropy(self) -> torch.Tensor:
        """A one-sample estimate (the squashed Gaussian has no closed-form entropy)."""
        _, logp = self.sample_logp()
        return -logp

    def kl(self, other: ActionDistribution) -> torch.Tensor:
        raise NotImplementedError("SquashedGaussian has no closed-form KL divergence")


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
