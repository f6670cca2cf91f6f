"""``StochasticSampling``: sample from the action distribution (uniformly random actions for
the first ``random_timesteps`` steps)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from runtime.core.distributions import ActionDistribution
from runtime.core.exploration.exploration import Exploration


class StochasticSampling(Exploration):
    def __init__(
        self, action_space: gym.Space[Any], *, random_timesteps: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(action_space, **kwargs)
        self.random_timesteps = int(random_timesteps or 0)

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        if not explore:
            return action_distribution.deterministic_sample()
        if timestep < self.random_timesteps:
            inputs = action_distribution.inputs
            return self.random_actions(len(inputs), inputs)
        return action_distribution.sample()
