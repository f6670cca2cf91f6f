"""Module-level classes and functions that configs refer to by import path in the tests."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from runtime import Exploration
from runtime.core.distributions import ActionDistribution


class MyCallbacks:
    pass


class MyEnv:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config


def curriculum(train_result: dict[str, Any], env: Any, ctx: Any) -> int:
    return 1


def mapping(agent_id: str, *args: Any, **kwargs: Any) -> str:
    return "p0" if agent_id.endswith("0") else "p1"


def custom_eval(algorithm: Any, eval_workers: Any) -> dict[str, float]:
    return {"score": 1.0}


class FixedActionExploration(Exploration):
    """An exploration strategy named by import path in the tests: always ``action`` while
    exploring, greedy otherwise."""

    def __init__(self, action_space: gym.Space[Any], *, action: int = 0, **kwargs: Any) -> None:
        super().__init__(action_space, **kwargs)
        self.action = int(action)

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        if not explore:
            return action_distribution.deterministic_sample()
        rows = len(action_distribution.inputs)
        return torch.full((rows,), self.action, dtype=torch.long)
