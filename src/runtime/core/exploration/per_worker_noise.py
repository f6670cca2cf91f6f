"""``PerWorkerGaussianNoise`` and ``PerWorkerOrnsteinUhlenbeckNoise``: Ape-X style fixed noise
scales, one per rollout worker (the epsilons of ``PerWorkerEpsilonGreedy``), so that the workers
together cover a range from much to almost no exploration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from runtime.core.exploration.gaussian_noise import GaussianNoise
from runtime.core.exploration.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise
from runtime.core.exploration.per_worker_epsilon_greedy import worker_epsilon


class PerWorkerGaussianNoise(GaussianNoise):
    """With more than one remote worker each worker keeps the scale ``worker_epsilon(k, n)``
    (the local worker, index 0, 0.0); with one or none it is plain ``GaussianNoise`` with its
    schedule. The random phase (``random_timesteps``) is the same for every worker."""

    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        num_workers: int = 0,
        worker_index: int = 0,
        **kwargs: Any,
    ) -> None:
        # Before super().__init__, which computes the first scale through scale_at.
        self.fixed_scale: float | None = (
            worker_epsilon(worker_index, num_workers) if num_workers > 1 else None
        )
        super().__init__(action_space, num_workers=num_workers, worker_index=worker_index, **kwargs)

    def scale_at(self, timestep: int) -> float:
        if self.fixed_scale is not None:
            return self.fixed_scale
        return super().scale_at(timestep)

    def set_state(self, state: Mapping[str, Any]) -> None:
        super().set_state(state)
        if self.fixed_scale is not None:
            # A checkpoint restored onto another worker layout keeps this worker's own scale.
            self.cur_scale = self.fixed_scale


class PerWorkerOrnsteinUhlenbeckNoise(PerWorkerGaussianNoise, OrnsteinUhlenbeckNoise):
    """``OrnsteinUhlenbeckNoise`` with ``PerWorkerGaussianNoise``'s fixed per-worker scales
    (the OU arguments pass on to ``OrnsteinUhlenbeckNoise``)."""
