"""``PerWorkerEpsilonGreedy``: Ape-X style fixed epsilons, one per rollout worker, so that the
workers together cover a range from much to almost no exploration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from runtime.core.exploration.epsilon_greedy import EpsilonGreedy

#: Ape-X's base epsilon and exponent range: worker k of n explores with
#: ``BASE ** (1 + SPREAD * (k - 1) / (n - 1))``.
BASE_EPSILON = 0.4
SPREAD = 7.0


def worker_epsilon(worker_index: int, num_workers: int) -> float:
    """The fixed epsilon of worker ``worker_index`` (1..n) of ``num_workers`` > 1; 0.0 for the
    local worker (index 0), which only learns."""
    if worker_index == 0:
        return 0.0
    return float(BASE_EPSILON ** (1.0 + SPREAD * (worker_index - 1) / (num_workers - 1)))


class PerWorkerEpsilonGreedy(EpsilonGreedy):
    """With more than one remote worker each worker keeps its ``worker_epsilon``; with one or
    none it is plain ``EpsilonGreedy`` with its schedule."""

    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        num_workers: int = 0,
        worker_index: int = 0,
        **kwargs: Any,
    ) -> None:
        # Before super().__init__, which computes the first epsilon through epsilon_at.
        self.fixed_epsilon: float | None = (
            worker_epsilon(worker_index, num_workers) if num_workers > 1 else None
        )
        super().__init__(action_space, num_workers=num_workers, worker_index=worker_index, **kwargs)

    def epsilon_at(self, timestep: int) -> float:
        if self.fixed_epsilon is not None:
            return self.fixed_epsilon
        return super().epsilon_at(timestep)

    def set_state(self, state: Mapping[str, Any]) -> None:
        super().set_state(state)
        if self.fixed_epsilon is not None:
            # A checkpoint restored onto another worker layout keeps this worker's own epsilon.
            self.cur_epsilon = self.fixed_epsilon
