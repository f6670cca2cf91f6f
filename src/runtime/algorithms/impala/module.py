"""``IMPALAModule``: the policy-gradient family's module with its critic always on: V-trace
needs the value of every state (IMPALA's config has no ``use_critic``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from runtime.core.module import ActorCriticModule


class IMPALAModule(ActorCriticModule):
    def __init__(
        self, observation_space: gym.Space[Any], action_space: gym.Space[Any], config: Any
    ) -> None:
        super().__init__(observation_space, action_space, config)
        self.has_critic = True
        self.separate_value_network = not self.is_recurrent and bool(
            getattr(self.model, "separate_value_network", False)
        )
