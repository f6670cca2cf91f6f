"""Curriculum learning with ``env_task_fn``: after every iteration the algorithm asks the
function for each sub-env's next task and sets it when it changed.

Run: python examples/curriculum.py
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf import PPOConfig
from runtime import EnvContext, TaskSettableEnv

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 12))


class LevelledCorridor(TaskSettableEnv):
    """A corridor whose length is ``3 * level``; the task is the level."""

    def __init__(self, config: EnvContext) -> None:
        self.level = 1
        self.position = 0
        self.observation_space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def get_task(self) -> int:
        return self.level

    def set_task(self, task: Any) -> None:
        self.level = int(task)

    def _obs(self) -> np.ndarray:
        return np.array([self.position, 3 * self.level], np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.position = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position >= 3 * self.level
        return self._obs(), 1.0 if done else -0.05, done, False, {}


def next_task(result: dict[str, Any], env: LevelledCorridor, ctx: EnvContext) -> int:
    """One level up once episodes end quickly at the current level, at most level 5."""
    level = env.get_task()
    if result["episode_len_mean"] < 4 * 3 * level:
        return min(5, level + 1)
    return level


config = (
    PPOConfig()
    .environment(LevelledCorridor, env_task_fn=next_task)
    .rollouts(num_workers=0, num_envs_per_worker=4, horizon=200)
    .training(lr=1e-3, train_batch_size=800, sgd_minibatch_size=200, num_sgd_iter=10)
    .debugging(seed=0)
)
algo = config.build()
for _ in range(ITERATIONS):
    result = algo.train()
    levels = algo.workers.local_worker().foreach_env(lambda env: env.get_task())
    print(
        f"iter {result['training_iteration']:3d}  levels {levels}  "
        f"mean steps {result['episode_len_mean']:6.1f}"
    )
algo.stop()
