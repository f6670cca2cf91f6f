"""``QModule``: Q(s, .) for a Discrete action space: the catalog's model (``config["model"]``,
custom models included) with as many outputs as its last hidden layer, then the Q head
(``hiddens``, or ``model.head_fcnet_hiddens``, RLlib's new API stack's name), either one
advantage stream or, with ``dueling``, a state-value and an advantage stream combined as
``V(s) + A(s, a) - mean_a A(s, a)``.

With ``num_atoms > 1`` (distributional, C51) the head puts out, per action, logits over
``num_atoms`` returns evenly spaced on ``[v_min, v_max]`` (dueling combines the logits the same
way); Q(s, a) is the expected return under their softmax."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.errors import ConfigError
from rlconf.layer_init_keys import given, initializer_key
from runtime.core.layer_calls import call_layers, run_model
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import Heads, TorchModel, heads_of
from runtime.core.module import RLModule, obs_input
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of

#: The module's output besides ``action_dist_inputs`` (the same tensor: epsilon-greedy and
#: Boltzmann exploration read the Q-values through the action distribution).
Q_VALUES = "q_values"


def require_discrete_action_space(action_space: gym.Space[Any]) -> gym.spaces.Discrete:
    """``action_space`` when it is Discrete (one Q-value per action), else a ConfigError."""
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ConfigError.single(
            "DQN (build)",
            "action_space",
            "DQN needs a Discrete action space",
            value=type(action_space).__name__,
            has_value=True,
            allowed="Discrete",
        )
    return action_space


@dataclass(frozen=True)
class QModuleSettings:
    hiddens: list[int]
    dueling: bool
    num_atoms: int
    v_min: float
    v_max: float


def q_heads(model_config: dict[str, Any], hiddens: list[int]) -> Heads:
    """The Q head's layers (of the advantage stream, and of the value stream with dueling):
    ``model.head_fcnet_hiddens`` where set (RLlib's new API stack's name of ``hiddens``;
    ``rlconf.algorithms.dqn`` refuses the two set differently), else ``hiddens``, with
    ``head_fcnet_activation`` (ReLU by default) and the ``head_fcnet`` initializers."""
    heads = heads_of(model_config)
    if model_config.get("head_fcnet_hiddens") is None:
        heads = dataclasses.replace(heads, hiddens=tuple(int(size) for size in hiddens))
    return heads


def body_config(model_config: dict[str, Any]) -> dict[str, Any]:
    """The model dict of the network below the Q head: its head keys are the Q head's, so it
    has no head layers, and its own output layer starts as its other layers (``fcnet_*``)."""
    body = {**model_config, "head_fcnet_hiddens": []}
    for part in ("kernel", "bias"):
        key, head_key = initializer_key("fcnet", part), initializer_key("head_fcnet", part)
        body[head_key] = given(model_config, key)
        body[f"{head_key}_kwargs"] = given(model_config, f"{key}_kwargs")
    return body


class QModule(RLModule):
    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        super().__init__(observation_space, action_space, config)
        num_actions = int(require_discrete_action_space(action_space).n)
        # Over the Q-values: what StochasticSampling samples and greedy acting takes the argmax
        # of (a custom_action_dist replaces the Categorical).
        self.dist_class, _ = ModelCatalog.get_action_dist(action_space, self.model_config)
        hiddens = list(self.model_config["fcnet_hiddens"])
        last = int(hiddens[-1]) if hiddens else int(np.prod(observation_space.shape or (1,)))
        settings = settings_of(QModuleSettings, config, type(self).__name__)
        heads = q_heads(self.model_config, list(settings.hiddens))
        #: The network users inspect as ``policy.model``.
        self.model: TorchModel = ModelCatalog.get_model(
            observation_space, action_space, last, body_config(self.model_config), name="q_model"
        )
        self.num_actions = num_actions
        self.num_atoms = int(settings.num_atoms)
        #: The returns the atoms stand for (distributional only): a buffer, so that it moves
        #: with the module to the learner's device.
        self.support: torch.Tensor
        self.register_buffer(
            "support",
            torch.linspace(float(settings.v_min), float(settings.v_max), self.num_atoms),
            persistent=False,
        )
        self.advantage = nn.Sequential(*heads.layers(last, num_actions * self.num_atoms, 0.01))
        self.dueling = bool(settings.dueling)
        self.value: nn.Module | None = None
        if self.dueling:
            self.value = nn.Sequential(*heads.layers(last, self.num_atoms, 1.0))

    def _head(self, obs: torch.Tensor) -> torch.Tensor:
        """Per action: its Q-value ``[B, A]``, or its atoms' logits ``[B, A, num_atoms]``."""
        features, _ = run_model(self.model, obs_input(obs), [], None)
        advantages = call_layers(self.advantage, features)
        if self.num_atoms > 1:
            advantages = advantages.reshape(
                *advantages.shape[:-1], self.num_actions, self.num_atoms
            )
        if self.value is None:
            return advantages
        state_value = call_layers(self.value, features)
        if self.num_atoms > 1:
            state_value = state_value.unsqueeze(-2)
        return (
            state_value
            + advantages
            - advantages.mean(dim=-2 if self.num_atoms > 1 else -1, keepdim=True)
        )

    def atom_logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Distributional only: per action, the logits over the atoms, ``[B, A, num_atoms]``."""
        assert self.num_atoms > 1, "atom_logits needs num_atoms > 1"
        return self._head(obs)

    def expected_q(self, logits: torch.Tensor) -> torch.Tensor:
        """The expected return of atom logits (``[..., num_atoms]`` -> ``[...]``)."""
        return (torch.softmax(logits, dim=-1) * self.support).sum(dim=-1)

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        head = self._head(obs)
        return self.expected_q(head) if self.num_atoms > 1 else head

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        q = self.q_values(batch[SB.OBS])
        return {Q_VALUES: q, SB.ACTION_DIST_INPUTS: q}
