"""``MARWILModule``: the policy-gradient family's module (the catalog's model and its action
distribution) with a value function exactly when MARWIL trains one, ``beta != 0``: behaviour
cloning (``beta=0.0``) neither trains nor evaluates it, as the reference's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError
from runtime.core.distributions import DiagGaussian
from runtime.core.module import ActorCriticModule
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class MARWILModuleSettings:
    beta: float
    bc_logstd_coeff: float


class MARWILModule(ActorCriticModule):
    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
    ) -> None:
        super().__init__(observation_space, action_space, config)
        settings = settings_of(MARWILModuleSettings, config, type(self).__name__)
        # MARWIL has no use_critic key: its critic is what beta weighs the actions with.
        self.has_critic = float(settings.beta) != 0.0
        self.separate_value_network = (
            self.has_critic
            and not self.is_recurrent
            and bool(getattr(self.model, "separate_value_network", False))
        )
        coeff = float(settings.bc_logstd_coeff)
        gaussian = isinstance(self.dist_class, type) and issubclass(self.dist_class, DiagGaussian)
        if coeff > 0.0 and not gaussian:
            # The bonus is on the Gaussian's log-std; other distributions have none.
            raise ConfigError.single(
                type(self).__name__,
                "bc_logstd_coeff",
                "needs a Gaussian policy (a Box action space without custom_action_dist), "
                f"whose log-std it raises; this policy's action space is {action_space}",
                value=coeff,
                has_value=True,
                allowed="0.0 for Discrete and MultiDiscrete action spaces",
            )
