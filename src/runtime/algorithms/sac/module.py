"""``SACModule``: SAC's networks. A policy network (the catalog's model from ``model`` updated by
``policy_model_config``), one or two Q-networks (``twin_q``; ``model`` updated by
``q_model_config``) and ``log_alpha``, the log of the entropy coefficient (a parameter of its
own optimizer, saved and synced with the weights).

Box actions: a ``SquashedGaussian`` policy over ``[-1, 1]`` (``normalize_actions``: the env
maps them onto its bounds) or over the space's bounds; each Q-network takes
``concat(obs, action)`` and outputs one value. Discrete(n) actions: a ``Categorical`` policy and
Q-networks that output one value per action."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.errors import ConfigError
from runtime.core.distributions import (
    ActionDistribution,
    Categorical,
    SquashedGaussian,
    distribution_for,
)
from runtime.core.layer_calls import run_model
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import TorchModel
from runtime.core.module import RLModule, obs_input
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of
from runtime.core.space_support import check_spaces


@dataclass(frozen=True)
class SACModuleSettings:
    twin_q: bool
    q_model_config: Any
    policy_model_config: Any
    initial_alpha: float
    normalize_actions: bool


def _refuse_shadowed_model_keys(model: Any, policy: Any, q: Any) -> None:
    """A ``model`` key that ``policy_model_config`` and ``q_model_config`` both set acts
    nowhere: set to anything but its default, it is refused rather than ignored, unless both
    set it to the same value (RLlib's new API stack gives SAC's networks ``model_config``
    alone: ``fcnet_hiddens=[256, 256]`` there is what the two configs hold by default)."""
    from rlconf.layer_init_keys import HEAD_AND_INIT_DEFAULTS
    from rlconf.model_config import MODEL_DEFAULTS

    defaults: dict[str, Any] = {**MODEL_DEFAULTS, **HEAD_AND_INIT_DEFAULTS}
    for key in sorted(set(policy) & set(q)):
        if (
            key in model
            and key in defaults
            and model[key] != defaults[key]
            and not model[key] == policy[key] == q[key]
        ):
            raise ConfigError.single(
                "SAC (build)",
                f"model.{key}",
                "has no effect under SAC, whose networks take it from policy_model_config "
                "and q_model_config; set it there",
                value=model[key],
                has_value=True,
                allowed=repr(defaults[key]),
            )


class SACModule(RLModule):
    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        super().__init__(observation_space, action_space, config)
        settings = settings_of(SACModuleSettings, config, type(self).__name__)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        _refuse_shadowed_model_keys(
            self.model_config, settings.policy_model_config, settings.q_model_config
        )
        policy_config = {**self.model_config, **dict(settings.policy_model_config)}
        q_config = {**self.model_config, **dict(settings.q_model_config)}
        # Read through the catalog (a custom_action_dist replaces the default there).
        chosen, _ = ModelCatalog.get_action_dist(action_space, policy_config)
        if chosen is not distribution_for(action_space)[0]:
            raise ConfigError.single(
                "SAC (build)",
                "model.custom_action_dist",
                "is not supported by SAC: its policy is a squashed Gaussian (Box actions) or a "
                "categorical (Discrete actions), whose log-probabilities its losses need",
                value=getattr(chosen, "__name__", chosen),
                has_value=True,
                allowed="None",
            )
        obs_size = int(np.prod(observation_space.shape or (1,)))
        if self.discrete:
            assert isinstance(action_space, gym.spaces.Discrete)
            self.action_dim = int(action_space.n)
            self.dist_class: Any = Categorical
            policy_outputs = q_outputs = self.action_dim
            q_space: gym.Space[Any] = observation_space
        else:
            box = _bounded_box(action_space)
            self.action_dim = int(np.prod(box.shape))
            low, high = (-1.0, 1.0) if settings.normalize_actions else _scalar_bounds(box)
            self.dist_class = functools.partial(SquashedGaussian, low=low, high=high)
            policy_outputs, q_outputs = 2 * self.action_dim, 1
            q_space = gym.spaces.Box(-np.inf, np.inf, (obs_size + self.action_dim,), np.float32)
        #: The policy network (users inspect it as ``policy.model``).
        self.model: TorchModel = ModelCatalog.get_model(
            observation_space, action_space, policy_outputs, policy_config, name="policy_model"
        )
        self.q_nets = nn.ModuleList(
            ModelCatalog.get_model(q_space, action_space, q_outputs, q_config, name=f"q_{i}")
            for i in range(2 if settings.twin_q else 1)
        )
        self.log_alpha = nn.Parameter(torch.tensor(float(np.log(settings.initial_alpha))))

    # ------------------------------------------------------------------ parameters by optimizer

    def policy_parameters(self) -> list[nn.Parameter]:
        return list(self.model.parameters())

    def q_parameters(self) -> list[nn.Parameter]:
        return list(self.q_nets.parameters())

    # ------------------------------------------------------------------ forward passes

    def policy_inputs(self, obs: torch.Tensor) -> torch.Tensor:
        inputs: torch.Tensor = run_model(self.model, obs_input(obs), [], None)[0]
        return inputs

    def action_distribution(self, obs: torch.Tensor) -> ActionDistribution:
        dist: ActionDistribution = self.dist_class(self.policy_inputs(obs))
        return dist

    def q_values(self, obs: torch.Tensor, actions: torch.Tensor | None = None) -> torch.Tensor:
        """Each Q-network's values stacked on dim 0: ``(num_q, B)`` of the given Box
        ``actions``, or ``(num_q, B, n)`` for all Discrete actions (``actions`` None)."""
        if self.discrete:
            inputs = obs_input(obs)
        else:
            assert actions is not None
            # (uint8 image rows become the float32 values the linear layers take.)
            flat_obs = obs.reshape(len(obs), -1).to(torch.float32)
            flat = torch.cat([flat_obs, actions.reshape(len(obs), -1)], dim=-1)
            inputs = obs_input(flat)
        outs = [run_model(q, inputs, [], None)[0] for q in self.q_nets]
        values = torch.stack(outs)
        return values if self.discrete else values.squeeze(-1)

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {SB.ACTION_DIST_INPUTS: self.policy_inputs(batch[SB.OBS])}


def _bounded_box(space: gym.Space[Any]) -> gym.spaces.Box:
    # SAC declares Box and Discrete action spaces (checked where its policies are made).
    check_spaces("SAC", space, space, (), (gym.spaces.Box,))
    assert isinstance(space, gym.spaces.Box)
    return space


def _scalar_bounds(box: gym.spaces.Box) -> tuple[float, float]:
    """The bounds the policy's actions are squashed into without ``normalize_actions``: the
    space's, which must be finite and the same on every dimension."""
    low, high = np.unique(box.low), np.unique(box.high)
    if len(low) != 1 or len(high) != 1 or not np.all(np.isfinite([low[0], high[0]])):
        raise ConfigError.single(
            "SAC (build)",
            "normalize_actions",
            "must be True for a Box action space with infinite or per-dimension bounds "
            "(the squashed Gaussian then acts in [-1, 1] and the env maps it onto the bounds)",
            value=False,
            has_value=True,
            allowed="True",
        )
    return float(low[0]), float(high[0])
