"""Torch models: the interface every policy model implements, and the built-in networks.

A model is called as ``model(input_dict, state, seq_lens) -> (outputs, state)`` where
``input_dict["obs"]`` holds the preprocessed (and filtered) observations, and
``model.value_function()`` returns the value predictions of the last forward pass, as in the
reference's ``TorchModelV2``; custom models subclass ``TorchModel``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from runtime.core.tanh import Tanh

_ACTIVATIONS: dict[str, type[nn.Module] | None] = {
    "tanh": Tanh,
    "relu": nn.ReLU,
    "swish": nn.SiLU,
    "silu": nn.SiLU,
    "elu": nn.ELU,
    "linear": None,
}


def activation(name: str) -> list[nn.Module]:
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation {name!r} is not supported; allowed: {sorted(_ACTIVATIONS)}")
    layer = _ACTIVATIONS[name]
    return [] if layer is None else [layer()]


def linear(in_size: int, out_size: int, gain: float) -> nn.Linear:
    """Orthogonal weights with ``gain``, zero bias: the initialisation that lets PPO learn fast."""
    layer = nn.Linear(in_size, out_size)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def mlp(in_size: int, hiddens: list[int], act: str) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for size in hiddens:
        layers += [linear(in_size, size, math.sqrt(2)), *activation(act)]
        in_size = size
    return nn.Sequential(*layers), in_size


class TorchModel(nn.Module):
    """Base class of policy models (built-in and custom)."""

    #: True when the value function is a network of its own, fed by the observations alone: the
    #: sampler then leaves it out of every step and computes the values of a whole fragment in
    #: one batch afterwards (the same numbers, a fraction of the cost).
    separate_value_network: bool = False

    def __init__(
        self,
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
    ) -> None:
        super().__init__()
        self.obs_space = obs_space
        self.action_space = action_space
        self.num_outputs = num_outputs
        self.model_config = model_config
        self.name = name

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def value_function(self) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement value_function()")

    def values(self, input_dict: dict[str, torch.Tensor]) -> torch.Tensor:
        """V(s) for a batch of observations (a forward pass, then ``value_function()``)."""
        self(input_dict, [], None)
        return self.value_function()


class _FreeLogStd(nn.Module):
    """Appends a learned, state-independent log-std to the mean outputs."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.log_std = nn.Parameter(torch.zeros(size))

    def forward(self, means: torch.Tensor) -> torch.Tensor:
        return torch.cat([means, self.log_std.expand_as(means)], dim=-1)


class FullyConnectedNetwork(TorchModel):
    """An MLP policy head and value head, sharing layers when ``vf_share_layers`` is set."""

    def __init__(
        self,
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
    ) -> None:
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        in_size = int(np.prod(obs_space.shape or (1,)))
        hiddens = list(model_config["fcnet_hiddens"]) + list(model_config["post_fcnet_hiddens"])
        act = model_config["fcnet_activation"]
        free_log_std = bool(model_config["free_log_std"])
        if free_log_std and num_outputs % 2:
            raise ValueError(
                f"model.free_log_std=True needs an even number of outputs, got {num_outputs}"
            )
        outputs = num_outputs // 2 if free_log_std else num_outputs
        if model_config["no_final_linear"] and hiddens:
            self.trunk, last = mlp(in_size, hiddens[:-1], act)
            self.trunk.append(linear(last, outputs, 0.01))
            self.trunk.extend(activation(act))
            self.logits: nn.Module = nn.Identity()
            last = outputs
        else:
            self.trunk, last = mlp(in_size, hiddens, act)
            self.logits = linear(last, outputs, 0.01)
        self.log_std: nn.Module = _FreeLogStd(outputs) if free_log_std else nn.Identity()
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        self.separate_value_network = not self.vf_share_layers
        if self.vf_share_layers:
            self.value_branch: nn.Module = linear(last, 1, 1.0)
        else:
            value_trunk, value_last = mlp(in_size, hiddens, act)
            self.value_branch = nn.Sequential(*value_trunk, linear(value_last, 1, 1.0))
        self._features: torch.Tensor | None = None

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        obs = input_dict["obs_flat"]
        features = self.trunk(obs)
        # Straight into __dict__: Module.__setattr__'s checks cost more than a small layer.
        self.__dict__["_features"] = features if self.vf_share_layers else obs
        return self.log_std(self.logits(features)), state

    def value_function(self) -> torch.Tensor:
        assert self._features is not None, "value_function() is called after forward()"
        out: torch.Tensor = self.value_branch(self._features)
        return out.squeeze(-1)

    def values(self, input_dict: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.vf_share_layers:
            return super().values(input_dict)
        out: torch.Tensor = self.value_branch(input_dict["obs_flat"])
        return out.squeeze(-1)


class VisionNetwork(TorchModel):
    """A conv stack over HxWxC image observations (``conv_filters``), then MLP heads."""

    def __init__(
        self,
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str,
    ) -> None:
        super().__init__(obs_space, action_space, num_outputs, model_config, name)
        shape = tuple(obs_space.shape or ())
        if len(shape) != 3:
            raise ValueError(f"model.conv_filters needs HxWxC image observations, got {shape}")
        self.trunk = self._conv_stack(shape)
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        with torch.no_grad():
            flat = self.trunk(torch.zeros(1, *shape)).shape[-1]
        head, last = mlp(
            flat, list(model_config["post_fcnet_hiddens"]), model_config["post_fcnet_activation"]
        )
        self.logits = nn.Sequential(*head, linear(last, num_outputs, 0.01))
        self.value_trunk = self.trunk if self.vf_share_layers else self._conv_stack(shape)
        self.value_branch = linear(flat, 1, 1.0)
        self._obs: torch.Tensor | None = None
        self._features: torch.Tensor | None = None

    def _conv_stack(self, shape: tuple[int, ...]) -> nn.Sequential:
        layers: list[nn.Module] = [_ChannelsFirst()]
        channels = int(shape[-1])
        for out_channels, kernel, stride in self.model_config["conv_filters"]:
            layers += [
                nn.Conv2d(channels, int(out_channels), kernel, stride),
                *activation(self.model_config["conv_activation"]),
            ]
            channels = int(out_channels)
        layers.append(nn.Flatten())
        return nn.Sequential(*layers)

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        self._obs = input_dict["obs"]
        self._features = self.trunk(self._obs)
        return self.logits(self._features), state

    def value_function(self) -> torch.Tensor:
        assert self._obs is not None and self._features is not None
        features = self._features if self.vf_share_layers else self.value_trunk(self._obs)
        out: torch.Tensor = self.value_branch(features)
        return out.squeeze(-1)


class _ChannelsFirst(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, 3, 1, 2)
