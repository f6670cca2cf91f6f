"""``SoftQ``: Boltzmann exploration, sampling actions from ``softmax(Q / temperature)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import torch

from runtime.core.distributions import ActionDistribution, Categorical
from runtime.core.exploration.epsilon_greedy import require_discrete
from runtime.core.exploration.exploration import Exploration


class SoftQ(Exploration):
    """A higher ``temperature`` explores more (uniform in the limit); greedy when not exploring."""

    def __init__(
        self, action_space: gym.Space[Any], *, temperature: float = 1.0, **kwargs: Any
    ) -> None:
        super().__init__(action_space, **kwargs)
        require_discrete(action_space, type(self).__name__)
        self.temperature = float(temperature)
        self.last_timestep = 0

    def on_timestep(self, timestep: int) -> None:
        self.last_timestep = int(timestep)

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        q_values = action_distribution.inputs
        if not explore:
            return q_values.argmax(dim=-1)
        self.on_timestep(timestep)
        return Categorical(q_values / self.temperature).sample()

    def get_state(self) -> dict[str, Any]:
        return {"last_timestep": self.last_timestep}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.last_timestep = int(state.get("last_timestep", self.last_timestep))
