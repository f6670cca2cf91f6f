"""``DDPGModule``: DDPG's and TD3's networks. A deterministic actor (``actor_hiddens``, then a
``tanh`` onto the action bounds) and one or two critics (``twin_q``; ``critic_hiddens`` over
``concat(features, action)``, one value out).

With ``use_state_preprocessor`` the actor and every critic first run the observation through a
model of their own from the catalog (``model``: a conv net for images, a custom model); without
it the flat observation goes straight into their hidden layers. Each network has its own
preprocessor so that the actor's loss, which runs through a critic, never moves what the
critic sees.

The actor acts in the policy's coordinates: ``[-1, 1]`` under ``normalize_actions`` (the env's
action processing maps them onto its bounds), else the Box's own (finite) bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.errors import ConfigError
from rlconf.layer_init_keys import initializers_given
from runtime.core.distributions import distribution_for
from runtime.core.layer_calls import run_model
from runtime.core.model_catalog import ModelCatalog
from runtime.core.models import activation, linear
from runtime.core.module import RLModule, obs_input
from runtime.core.sample_batch import SampleBatch as SB
from runtime.core.settings import settings_of
from runtime.core.space_support import check_spaces
from runtime.core.view_requirements import ViewRequirements, model_view_requirements


@dataclass(frozen=True)
class DDPGModuleSettings:
    twin_q: bool
    use_state_preprocessor: bool
    actor_hiddens: list[int]
    actor_hidden_activation: str
    critic_hiddens: list[int]
    critic_hidden_activation: str
    normalize_actions: bool


def _layers(in_size: int, hiddens: list[int], act: str, out: int, gain: float) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hiddens:
        layers += [linear(in_size, size, float(np.sqrt(2))), *activation(act)]
        in_size = size
    layers.append(linear(in_size, out, gain))
    return nn.Sequential(*layers)


class _Actor(nn.Sequential):
    """The actor's layers (what users inspect as ``policy.model``), with the model interface
    the reference's tests read of it: no memory, and its view requirements."""

    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], *layers: nn.Module
    ) -> None:
        super().__init__(*layers)
        self.obs_space = observation_space
        self.action_space = action_space

    def get_initial_state(self) -> list[torch.Tensor]:
        return []

    @property
    def view_requirements(self) -> ViewRequirements:
        return model_view_requirements(self.obs_space, self.action_space)


class _Features(nn.Module):
    """The observation as the hidden layers see it: the catalog's model's output with
    ``use_state_preprocessor``, else the flat observation."""

    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        model_config: dict[str, Any],
        preprocess: bool,
        name: str,
    ) -> None:
        super().__init__()
        self.model: nn.Module | None = None
        if preprocess:
            hiddens = list(model_config["fcnet_hiddens"])
            self.size = int(hiddens[-1]) if hiddens else 256
            self.model = ModelCatalog.get_model(
                observation_space, action_space, self.size, model_config, name=name
            )
        else:
            self.size = int(np.prod(observation_space.shape or (1,)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.model is None:
            # (uint8 image rows become the float32 values the linear layers take.)
            return obs.reshape(len(obs), -1).to(torch.float32)
        features: torch.Tensor = run_model(self.model, obs_input(obs), [], None)[0]
        return features


class DDPGModule(RLModule):
    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        super().__init__(observation_space, action_space, config)
        settings = settings_of(DDPGModuleSettings, config, type(self).__name__)
        box = _box(action_space)
        self.action_dim = int(np.prod(box.shape))
        if settings.normalize_actions:
            low, high = -np.ones(self.action_dim), np.ones(self.action_dim)
        else:
            low, high = _finite_bounds(box)
        # Buffers: they move with the module and are no parameters.
        self.action_low: torch.Tensor
        self.action_high: torch.Tensor
        self.register_buffer("action_low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("action_high", torch.as_tensor(high, dtype=torch.float32))
        # Read through the catalog, where a custom_action_dist replaces the default.
        chosen, _ = ModelCatalog.get_action_dist(action_space, self.model_config)
        if chosen is not distribution_for(action_space)[0]:
            raise ConfigError.single(
                "DDPG (build)",
                "model.custom_action_dist",
                "is not supported by DDPG/TD3: their actor outputs actions, not a distribution "
                "(exploration noise is set with exploration_config)",
                value=getattr(chosen, "__name__", chosen),
                has_value=True,
                allowed="None",
            )
        preprocess = bool(settings.use_state_preprocessor)
        if not preprocess:
            refuse_unused_model_keys(self.model_config)
        refuse_head_keys(self.model_config)

        def features(name: str) -> _Features:
            return _Features(observation_space, action_space, self.model_config, preprocess, name)

        actor_features = features("actor_preprocessor")
        #: The actor (users inspect it as ``policy.model``): features -> hiddens -> tanh.
        self.model = _Actor(
            observation_space,
            action_space,
            actor_features,
            _layers(
                actor_features.size,
                list(settings.actor_hiddens),
                str(settings.actor_hidden_activation),
                self.action_dim,
                0.01,
            ),
        )
        critics = []
        for i in range(2 if settings.twin_q else 1):
            critic_features = features(f"critic_{i}_preprocessor")
            head = _layers(
                critic_features.size + self.action_dim,
                list(settings.critic_hiddens),
                str(settings.critic_hidden_activation),
                1,
                1.0,
            )
            critics.append(nn.ModuleDict({"features": critic_features, "head": head}))
        self.q_nets = nn.ModuleList(critics)

    # ------------------------------------------------------------------ parameters by optimizer

    def policy_parameters(self) -> list[nn.Parameter]:
        return list(self.model.parameters())

    def q_parameters(self) -> list[nn.Parameter]:
        return list(self.q_nets.parameters())

    # ------------------------------------------------------------------ forward passes

    def actions(self, obs: torch.Tensor) -> torch.Tensor:
        """The actor's actions, within the policy's bounds."""
        squashed = torch.tanh(self.model(obs))
        low, high = self.action_low, self.action_high
        return low + (squashed + 1.0) * 0.5 * (high - low)

    def clip_actions(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(actions, self.action_high), self.action_low)

    def q_values(
        self, obs: torch.Tensor, actions: torch.Tensor, first_only: bool = False
    ) -> torch.Tensor:
        """Each critic's value of ``actions`` in ``obs``, stacked: ``(num_q, B)`` (``(1, B)``
        with ``first_only``)."""
        flat_actions = actions.reshape(len(obs), -1)
        values = []
        critics = list(self.q_nets)
        for critic in critics[:1] if first_only else critics:
            assert isinstance(critic, nn.ModuleDict)
            inputs = torch.cat([critic["features"](obs), flat_actions], dim=-1)
            values.append(critic["head"](inputs).squeeze(-1))
        return torch.stack(values)

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {SB.ACTIONS: self.actions(batch[SB.OBS])}


def _box(space: gym.Space[Any]) -> gym.spaces.Box:
    # DDPG and TD3 declare Box action spaces only (checked where their policies are made, with
    # the reason; here for a module made directly).
    check_spaces("DDPG", space, space, (), (gym.spaces.Box,))
    assert isinstance(space, gym.spaces.Box)
    return space


def _finite_bounds(box: gym.spaces.Box) -> tuple[np.ndarray, np.ndarray]:
    low = np.asarray(box.low, dtype=np.float64).reshape(-1)
    high = np.asarray(box.high, dtype=np.float64).reshape(-1)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ConfigError.single(
            "DDPG (build)",
            "normalize_actions",
            "must be True for a Box action space with infinite bounds (the actor's tanh output "
            "needs finite bounds to be mapped onto)",
            value=False,
            has_value=True,
            allowed="True",
        )
    return low, high


def refuse_unused_model_keys(model: dict[str, Any]) -> None:
    """Without ``use_state_preprocessor`` no network is built from ``model``: a key set to
    anything but its default would act nowhere, so it is refused rather than ignored."""
    from rlconf.model_config import MODEL_DEFAULTS, PREPROCESSING_DEFAULTS

    defaults: dict[str, Any] = dict(MODEL_DEFAULTS)
    set_keys = {key: model[key] for key in sorted(model) if key in defaults}
    set_keys.update(initializers_given(model))
    for key, value in set_keys.items():
        # These act on the env's observations, whatever the networks.
        if key in PREPROCESSING_DEFAULTS:
            continue
        default = defaults.get(key)
        if value != default:
            raise ConfigError.single(
                "DDPG (build)",
                f"model.{key}",
                "has no effect while use_state_preprocessor is False (the actor and critics are "
                "built from actor_hiddens and critic_hiddens); set those, or "
                "use_state_preprocessor=True to run observations through the model first",
                value=value,
                has_value=True,
                allowed=repr(default),
            )


def refuse_head_keys(model: dict[str, Any]) -> None:
    """DDPG's and TD3's heads are the layers of ``actor_hiddens`` and ``critic_hiddens`` (after
    the state preprocessor, if any): the model dict's head layers and their initializers would
    act nowhere, so they are refused rather than ignored."""
    heads = {"head_fcnet_hiddens": model.get("head_fcnet_hiddens") or None}
    heads.update(
        (key, value) for key, value in initializers_given(model).items() if key.startswith("head_")
    )
    for key, value in heads.items():
        if value is None:
            continue
        raise ConfigError.single(
            "DDPG (build)",
            f"model.{key}",
            "has no effect under DDPG and TD3, whose heads are the layers of actor_hiddens and "
            "critic_hiddens (orthogonally initialised); set those",
            value=value,
            has_value=True,
            allowed="[]" if key == "head_fcnet_hiddens" else "None",
        )
