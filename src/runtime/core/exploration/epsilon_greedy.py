"""``EpsilonGreedy``: with probability epsilon a uniformly random action, else the argmax of the
Q-values (the action distribution's inputs); epsilon follows a schedule on the global timestep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import torch

from rlconf.errors import ConfigError
from runtime.core.distributions import ActionDistribution
from runtime.core.exploration.exploration import Exploration
from runtime.core.schedules import PiecewiseSchedule


def require_discrete(action_space: gym.Space[Any], strategy: str) -> None:
    """A ConfigError unless ``action_space`` is Discrete (Q-value strategies need one Q-value per
    action)."""
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ConfigError.single(
            f"{strategy} (build)",
            "exploration_config.type",
            f"acts on one Q-value per action and needs a Discrete action space, not {action_space}",
            value=strategy,
            has_value=True,
        )


def epsilon_points(epsilon: Any) -> list[tuple[float, float]]:
    """DQN's ``epsilon`` (a number, or ``[[timestep, value], ...]``) as schedule points."""
    if isinstance(epsilon, int | float):
        return [(0.0, float(epsilon))]
    return [(float(t), float(v)) for t, v in epsilon]


class EpsilonGreedy(Exploration):
    """Epsilon is ``initial_epsilon`` until ``warmup_timesteps``, then moves linearly to
    ``final_epsilon`` over ``epsilon_timesteps``, then stays there; or, with
    ``epsilon_schedule`` (``[(timestep, epsilon), ...]``, from DQN's ``epsilon``), linear
    between its points and the last value after them."""

    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        initial_epsilon: float = 1.0,
        final_epsilon: float = 0.05,
        warmup_timesteps: int = 0,
        epsilon_timesteps: int = int(1e5),
        epsilon_schedule: Sequence[Sequence[float]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(action_space, **kwargs)
        require_discrete(action_space, type(self).__name__)
        self.initial_epsilon = float(initial_epsilon)
        self.final_epsilon = float(final_epsilon)
        self.warmup_timesteps = int(warmup_timesteps)
        self.epsilon_timesteps = int(epsilon_timesteps)
        self.schedule = None if epsilon_schedule is None else PiecewiseSchedule(epsilon_schedule)
        self.last_timestep = 0
        self.cur_epsilon = self.epsilon_at(0)

    def epsilon_at(self, timestep: int) -> float:
        """The scheduled epsilon at global ``timestep``."""
        if self.schedule is not None:
            return self.schedule.value(timestep)
        if timestep < self.warmup_timesteps:
            return self.initial_epsilon
        progress = min(1.0, (timestep - self.warmup_timesteps) / max(1, self.epsilon_timesteps))
        return self.initial_epsilon + progress * (self.final_epsilon - self.initial_epsilon)

    def on_timestep(self, timestep: int) -> None:
        self.last_timestep = int(timestep)
        self.cur_epsilon = self.epsilon_at(self.last_timestep)

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        q_values = action_distribution.inputs
        greedy = q_values.argmax(dim=-1)
        if not explore:
            return greedy
        self.on_timestep(timestep)
        random_rows = torch.rand(len(q_values), device=q_values.device) < self.cur_epsilon
        count = int(random_rows.sum())
        if count == 0:
            return greedy
        # Draw only for the rows that explore: at a small epsilon that is a handful per step.
        greedy[random_rows] = self.random_actions(count, greedy).to(greedy.dtype)
        return greedy

    def get_state(self) -> dict[str, Any]:
        return {"cur_epsilon": self.cur_epsilon, "last_timestep": self.last_timestep}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.last_timestep = int(state.get("last_timestep", self.last_timestep))
        self.cur_epsilon = float(state.get("cur_epsilon", self.epsilon_at(self.last_timestep)))

    def stats(self) -> dict[str, float]:
        return {"cur_epsilon": self.cur_epsilon}
