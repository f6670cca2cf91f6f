"""``Random``: uniformly random actions while exploring, greedy ones otherwise."""

from __future__ import annotations

import torch

from runtime.core.distributions import ActionDistribution
from runtime.core.exploration.exploration import Exploration


class Random(Exploration):
    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        if not explore:
            return action_distribution.deterministic_sample()
        inputs = action_distribution.inputs
        return self.random_actions(len(inputs), inputs)
