"""A custom gymnasium env configured through ``env_config``.

Each worker builds its envs with an ``EnvContext``: the ``env_config`` dict plus the worker and
sub-env index, so sub-envs can differ (here: seeds and corridor lengths).

Run: python examples/custom_env.py
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf import PPOConfig
from runtime import EnvContext

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 15))


class Corridor(gym.Env[Any, Any]):
    """Walk right to the end of a corridor of ``corridor_length`` cells; -0.1 per step."""

    def __init__(self, config: EnvContext) -> None:
        # Longer corridors on higher sub-env indices: one env class, several difficulties.
        self.length = int(config["corridor_length"]) + config.vector_index
        self.position = 0
        self.observation_space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.position = 0
        return np.array([self.position], np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position >= self.length
        return np.array([self.position], np.float32), 1.0 if done else -0.1, done, False, {}


config = (
    PPOConfig()
    # An env class (or a name given to runtime.register_env) and its settings.
    .environment(Corridor, env_config={"corridor_length": 5})
    .rollouts(num_workers=0, num_envs_per_worker=4, horizon=100)
    .training(lr=1e-3, train_batch_size=800, sgd_minibatch_size=200, num_sgd_iter=10)
    .debugging(seed=0)
)
algo = config.build()
for _ in range(ITERATIONS):
    result = algo.train()
    print(f"iter {result['training_iteration']:3d}  mean steps {result['episode_len_mean']:6.1f}")
algo.stop()
