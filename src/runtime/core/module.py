"""``RLModule``: a policy's networks and their forward passes, and ``ActorCriticModule``, the
module of the policy-gradient family built from ``config["model"]`` by the ``ModelCatalog``.

A module answers three questions, each with a dict keyed by sample-batch column names:
``forward_inference`` (acting greedily), ``forward_exploration`` (acting while exploring) and
``forward_train`` (what a loss needs). Action-distribution modules return
``action_dist_inputs``; a Q-network returns ``q_values`` (and its ``action_dist_inputs`` are the
Q-values, so greedy, epsilon-greedy and Boltzmann exploration read the same key); a
deterministic actor returns ``actions``. Critics add ``vf_preds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from runtime.core.layer_calls import run_model
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import TorchModel
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of
from runtime.core.view_requirements import ViewRequirements, model_view_requirements

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class ModuleSettings:
    """What every module reads: the model dict."""

    model: Any


@dataclass(frozen=True)
class ActorCriticSettings:
    """``use_critic``: a config without the key has no critic."""

    use_critic: bool = False


class RLModule(nn.Module):
    """Base of all modules. Subclasses build their networks in ``__init__`` and implement
    ``forward_train`` (and ``forward_exploration``/``forward_inference`` where acting differs
    from training)."""

    #: Builds ``inputs -> ActionDistribution``; None for modules that output ``actions``
    #: directly (the policy then acts on a ``Deterministic`` distribution over them).
    dist_class: Any = None

    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
    ) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.model_config: dict[str, Any] = dict(
            settings_of(ModuleSettings, config, type(self).__name__).model
        )

    #: True when the module has a value function (``vf_preds``, ``compute_values``).
    has_critic: bool = False

    #: True for a module with memory: it acts from a state (``get_initial_state()``, the
    #: ``state_in_k`` inputs and ``state_out_k`` outputs) and trains on sequence batches
    #: (``runtime.core.sequences``).
    is_recurrent: bool = False

    def get_initial_state(self) -> list[torch.Tensor]:
        """The state an episode starts from (tensors without a batch dimension)."""
        return []

    @property
    def view_requirements(self) -> ViewRequirements:
        """The columns the module reads and writes, with their spaces (read-only)."""
        return model_view_requirements(
            self.observation_space, self.action_space, self.get_initial_state()
        )

    #: True when the value function is a network of its own, fed by observations alone: the
    #: sampler then leaves it out of every step and evaluates a whole fragment in one batch.
    separate_value_network: bool = False

    def forward_train(self, batch: Tensors) -> Tensors:
        raise NotImplementedError(f"{type(self).__name__} must implement forward_train()")

    def forward_exploration(self, batch: Tensors) -> Tensors:
        """The outputs to act on while exploring (the exploration strategy picks the action)."""
        return self.forward_train(batch)

    def forward_inference(self, batch: Tensors) -> Tensors:
        """The outputs to act on greedily (``explore=False``)."""
        return self.forward_exploration(batch)

    def compute_values(self, batch: Tensors) -> torch.Tensor:
        """V(s) for a batch of observations."""
        raise NotImplementedError(f"{type(self).__name__} has no value function")


def obs_input(obs: torch.Tensor) -> Tensors:
    """The input dict a ``TorchModel`` is called with."""
    return {SB.OBS: obs, "obs_flat": obs.reshape(len(obs), -1)}


class ActorCriticModule(RLModule):
    """The catalog's model (``config["model"]``, custom models included) and its action
    distribution; a critic when ``use_critic`` is set."""

    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
    ) -> None:
        super().__init__(observation_space, action_space, config)
        self.dist_class, num_outputs = ModelCatalog.get_action_dist(action_space, self.model_config)
        #: The network users inspect as ``policy.model``.
        self.model: TorchModel = ModelCatalog.get_model(
            observation_space, action_space, num_outputs, self.model_config
        )
        settings = settings_of(ActorCriticSettings, config, type(self).__name__)
        self.has_critic = bool(settings.use_critic)
        #: The model's memory (``get_initial_state()``); empty for a model without one.
        self.state_size = len(self.model.get_initial_state())
        self.is_recurrent = self.state_size > 0
        # A model with memory computes its values from it: never a network of its own.
        self.separate_value_network = (
            self.has_critic
            and not self.is_recurrent
            and bool(getattr(self.model, "separate_value_network", False))
        )

    def get_initial_state(self) -> list[torch.Tensor]:
        return list(self.model.get_initial_state())

    def _forward(self, batch: Tensors, values: bool) -> Tensors:
        if self.is_recurrent:
            return self._forward_memory(batch, values)
        inputs, _ = run_model(self.model, obs_input(batch[SB.OBS]), [], None)
        out = {SB.ACTION_DIST_INPUTS: inputs}
        if values:
            out[SB.VF_PREDS] = self.model.value_function()
        return out

    def _forward_memory(self, batch: Tensors, values: bool) -> Tensors:
        """A model with memory: over a sequence batch (``seq_lens`` given: ``(S, T, ...)``
        inputs, outputs for the valid steps only, sequence after sequence), or one step per
        row from each row's ``state_in_k`` (acting: the outputs add ``state_out_k``)."""
        obs = batch[SB.OBS]
        seq_lens = batch.get(SB.SEQ_LENS)
        padded = seq_lens is not None
        if seq_lens is None:
            steps = 1
            seq_lens = torch.ones(len(obs), dtype=torch.int64, device=obs.device)
        else:
            steps = obs.shape[1]
            obs = obs.reshape(-1, *obs.shape[2:])
        inputs = obs_input(obs)
        for key in (SB.PREV_ACTIONS, SB.PREV_REWARDS):
            if key in batch:
                column = batch[key]
                inputs[key] = column.reshape(len(obs), *column.shape[2 if padded else 1 :])
        state = [batch[SB.state_in(k)] for k in range(self.state_size)]
        dist_inputs, state_out = self.model(inputs, state, seq_lens)
        out = {SB.ACTION_DIST_INPUTS: dist_inputs}
        if values:
            out[SB.VF_PREDS] = self.model.value_function()
        if padded:
            valid = (torch.arange(steps, device=obs.device)[None, :] < seq_lens[:, None]).reshape(
                -1
            )
            return {k: v[valid] for k, v in out.items()}
        out.update({SB.state_out(k): s for k, s in enumerate(state_out)})
        return out

    def forward_train(self, batch: Tensors) -> Tensors:
        return self._forward(batch, self.has_critic)

    def forward_exploration(self, batch: Tensors) -> Tensors:
        # Values that come out of the same pass are kept for the sampler; a separate value
        # network is evaluated once per fragment instead (``compute_values``).
        return self._forward(batch, self.has_critic and not self.separate_value_network)

    def forward_inference(self, batch: Tensors) -> Tensors:
        return self._forward(batch, False)

    def compute_values(self, batch: Tensors) -> torch.Tensor:
        if self.is_recurrent:
            return self._forward_memory(batch, True)[SB.VF_PREDS]
        return self.model.values(obs_input(batch[SB.OBS]))
