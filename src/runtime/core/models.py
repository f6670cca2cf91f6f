"""Torch models: the interface every policy model implements, and the fully connected network
(the vision network of image observations: ``runtime.core.vision_network``).

A model is called as ``model(input_dict, state, seq_lens) -> (outputs, state)`` where
``input_dict["obs"]`` holds the preprocessed (and filtered) observations, and
``model.value_function()`` returns the value predictions of the last forward pass, as in the
reference's ``TorchModelV2``; custom models subclass ``TorchModel``.

A model with memory (the LSTM and attention networks, or a custom one) returns its state's
initial value from ``get_initial_state()`` (tensors without a batch dimension) and is then
called, as the reference's ``RecurrentNetwork``, with the rows of ``B`` zero-padded sequences
of ``T = rows // B`` steps (``input_dict["obs"]`` of ``B*T`` rows; one step each while acting),
``state`` as ``B`` rows of each state tensor at the sequences' starts, and ``seq_lens`` (``B``
ints); it returns ``B*T`` output rows and the state after the last step. ``input_dict`` then
also holds ``prev_actions`` (the raw actions: ints of a ``Discrete`` space) and
``prev_rewards`` when the model asks for them (``uses_prev_actions``, ``uses_prev_rewards``):
those of the step before each row, zero at an episode's start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.errors import ConfigError
from runtime.core.layer_calls import call_layers, no_global_hooks, run_layers
from runtime.core.layer_init import DEFAULT_INIT, LayerInit, LayerInits, layer_inits
from runtime.core.tanh import Tanh
from runtime.core.view_requirements import ViewRequirements, model_view_requirements

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


def linear(in_size: int, out_size: int, gain: float, init: LayerInit = DEFAULT_INIT) -> nn.Linear:
    """Orthogonal weights with ``gain``, zero bias: the initialisation that lets PPO learn fast
    (``init``: the model dict's initializers in their place, ``runtime.core.layer_init``)."""
    layer = nn.Linear(in_size, out_size)
    init.start(layer, gain)
    return layer


def mlp(
    in_size: int,
    hiddens: list[int],
    act: str,
    layernorm: bool = False,
    init: LayerInit = DEFAULT_INIT,
) -> tuple[nn.Sequential, int]:
    """Linear layers of ``hiddens`` sizes, each followed by ``act`` (with ``layernorm``, by a
    LayerNorm first)."""
    layers: list[nn.Module] = []
    for size in hiddens:
        norm = [nn.LayerNorm(size)] if layernorm else []
        layers += [linear(in_size, size, math.sqrt(2), init), *norm, *activation(act)]
        in_size = size
    return nn.Sequential(*layers), in_size


@dataclass(frozen=True)
class Heads:
    """The output heads of a built-in network (RLlib's new API stack's heads): before each
    output layer (policy, value, Q), layers of ``head_fcnet_hiddens`` sizes with
    ``head_fcnet_activation``; with none, each output is one linear layer on the network's
    features. ``inits``: the initializers of all the network's layers."""

    hiddens: tuple[int, ...]
    activation: str
    inits: LayerInits

    def layers(self, in_size: int, out_size: int, gain: float) -> list[nn.Module]:
        """One output's layers: the head's hidden layers, then the output layer (``gain``)."""
        hidden, last = mlp(in_size, list(self.hiddens), self.activation, init=self.inits.head)
        return [*hidden, linear(last, out_size, gain, self.inits.head)]

    def output(self, in_size: int, out_size: int, gain: float) -> nn.Module:
        """One output's layers as one module: a bare ``nn.Linear`` without head layers (so
        the parameters keep their names), else a ``Sequential``."""
        layers = self.layers(in_size, out_size, gain)
        return layers[0] if len(layers) == 1 else nn.Sequential(*layers)

    def refuse_with_no_final_linear(self, model_config: dict[str, Any]) -> None:
        """``no_final_linear`` makes the network's last hidden layer the policy's output, which
        leaves no output layer for head layers to go before."""
        if self.hiddens and model_config.get("no_final_linear"):
            raise ConfigError.single(
                "ModelCatalog.get_model()",
                "model.head_fcnet_hiddens",
                "adds layers before each output layer, and no_final_linear=True makes the "
                "network's last hidden layer the policy's output",
                value=list(self.hiddens),
                has_value=True,
                allowed="[] with no_final_linear=True, or no_final_linear=False",
            )


def heads_of(model_config: Mapping[str, Any]) -> Heads:
    """The heads the model dict asks for (a dict without the keys: none; the activation
    RLlib's default, ReLU; None: linear), with the initializers of its layers."""
    act = model_config.get("head_fcnet_activation", "relu")
    return Heads(
        tuple(int(size) for size in model_config.get("head_fcnet_hiddens") or ()),
        "linear" if act is None else str(act),
        layer_inits(model_config),
    )


def uses_layernorm(model_config: dict[str, Any], images: bool = False) -> bool:
    """``fcnet_use_layernorm`` (a model dict written before the key existed has none); on
    image observations (``images``), which go through conv layers instead, True is refused."""
    norm = bool(model_config.get("fcnet_use_layernorm", False))
    if norm and images:
        raise ConfigError.single(
            "ModelCatalog.get_model()",
            "model.fcnet_use_layernorm",
            "adds LayerNorms to the MLP over flat observations, and image observations go "
            "through conv layers (conv_filters) instead",
            value=True,
            has_value=True,
            allowed="False for HxWxC image observations",
        )
    return norm


class TorchModel(nn.Module):
    """Base class of policy models (built-in and custom)."""

    #: True when the value function is a network of its own, fed by the observations alone: the
    #: sampler then leaves it out of every step and computes the values of a whole fragment in
    #: one batch afterwards (the same numbers, a fraction of the cost).
    separate_value_network: bool = False
    #: The model reads ``input_dict["prev_actions"]`` / ``["prev_rewards"]``.
    uses_prev_actions: bool = False
    uses_prev_rewards: bool = False

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

    def get_initial_state(self) -> list[torch.Tensor]:
        """The state a sequence starts from (empty: a model without memory)."""
        return []

    @property
    def view_requirements(self) -> ViewRequirements:
        """The columns the model reads and writes, with their spaces (the reference's
        ``ModelV2.view_requirements``; read-only: ``runtime.core.view_requirements``)."""
        return model_view_requirements(
            self.obs_space,
            self.action_space,
            self.get_initial_state(),
            self.uses_prev_actions,
            self.uses_prev_rewards,
        )

    def values(self, input_dict: dict[str, torch.Tensor]) -> torch.Tensor:
        """V(s) for a batch of observations (a forward pass, then ``value_function()``)."""
        self(input_dict, [], None)
        return self.value_function()


class FreeLogStd(nn.Module):
    """Appends a learned, state-independent log-std to the mean outputs."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.log_std = nn.Parameter(torch.zeros(size))

    def forward(self, means: torch.Tensor) -> torch.Tensor:
        return torch.cat([means, self.log_std.expand_as(means)], dim=-1)


def policy_outputs(num_outputs: int, model_config: dict[str, Any]) -> tuple[int, nn.Module]:
    """``(outputs, log_std)``: how many outputs the network's policy layer computes, and what
    turns them into the distribution's inputs - with ``free_log_std`` half of them and a learned
    log-std appended, else all of them as they are."""
    if not model_config["free_log_std"]:
        return num_outputs, nn.Identity()
    if num_outputs % 2:
        raise ValueError(
            f"model.free_log_std=True needs an even number of outputs, got {num_outputs}"
        )
    return num_outputs // 2, FreeLogStd(num_outputs // 2)


class TrunkModel(TorchModel):
    """A trunk, a policy output (``logits`` then ``log_std``) and a value branch that reads the
    trunk's features (``vf_share_layers``) or the observation itself: what the built-in
    networks share. Subclasses build the parts; ``obs_key`` is the input column they read."""

    #: ``obs_flat`` for an MLP, ``obs`` for a conv stack over images.
    obs_key: ClassVar[str] = "obs_flat"
    trunk: nn.Sequential
    logits: nn.Module
    log_std: nn.Module
    value_branch: nn.Module
    vf_share_layers: bool
    _features: torch.Tensor | None

    def forward(
        self, input_dict: dict[str, torch.Tensor], state: list[torch.Tensor], seq_lens: Any
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        obs = input_dict[self.obs_key]
        # The layers' forward called directly where nothing is hooked (runtime.core.layer_calls).
        if no_global_hooks():
            features = run_layers(self.trunk, obs)
            outputs = run_layers(self.log_std, run_layers(self.logits, features))
        else:
            features = self.trunk(obs)
            outputs = self.log_std(self.logits(features))
        # Straight into __dict__: Module.__setattr__'s checks cost more than a small layer.
        self.__dict__["_features"] = features if self.vf_share_layers else obs
        return outputs, state

    def value_function(self) -> torch.Tensor:
        assert self._features is not None, "value_function() is called after forward()"
        return self._value_branch(self._features)

    def values(self, input_dict: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.vf_share_layers:
            return super().values(input_dict)
        return self._value_branch(input_dict[self.obs_key])

    def _value_branch(self, x: torch.Tensor) -> torch.Tensor:
        return call_layers(self.value_branch, x).squeeze(-1)


class FullyConnectedNetwork(TrunkModel):
    """An MLP trunk with a policy output and a value output (each after the layers of its
    head, ``head_fcnet_hiddens``), the value sharing the trunk when ``vf_share_layers`` is set
    and having one of its own otherwise."""

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
        outputs, log_std = policy_outputs(num_outputs, model_config)
        norm = uses_layernorm(model_config)
        heads = heads_of(model_config)
        heads.refuse_with_no_final_linear(model_config)
        body = heads.inits.fcnet
        if model_config["no_final_linear"] and hiddens:
            self.trunk, last = mlp(in_size, hiddens[:-1], act, norm, body)
            self.trunk.append(linear(last, outputs, 0.01, body))
            self.trunk.extend(activation(act))
            self.logits: nn.Module = nn.Identity()
            last = outputs
        else:
            self.trunk, last = mlp(in_size, hiddens, act, norm, body)
            self.logits = heads.output(last, outputs, 0.01)
        self.log_std: nn.Module = log_std
        self.vf_share_layers = bool(model_config["vf_share_layers"])
        self.separate_value_network = not self.vf_share_layers
        if self.vf_share_layers:
            self.value_branch: nn.Module = heads.output(last, 1, 1.0)
        else:
            value_trunk, value_last = mlp(in_size, hiddens, act, norm, body)
            self.value_branch = nn.Sequential(*value_trunk, *heads.layers(value_last, 1, 1.0))
        self._features: torch.Tensor | None = None
