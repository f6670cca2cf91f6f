"""Global coordination through a named Ray actor: every env, in every rollout worker process,
adds its steps to one counter that the driver reads.

Run: python examples/global_coordination.py
"""

from __future__ import annotations

import logging
import os
from typing import Any

import gymnasium as gym
import ray

from rlconf import PPOConfig
from runtime import EnvContext, register_env

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 3))


@ray.remote
class Counter:
    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int) -> None:
        self.count += n

    def get(self) -> int:
        return self.count


class CountingCartPole(gym.Wrapper[Any, Any, Any, Any]):
    """CartPole that reports its steps to the "global_counter" actor at each episode's end."""

    def __init__(self, config: EnvContext) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.counter: Any = ray.get_actor("global_counter")
        self.steps = 0

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if terminated or truncated:
            self.counter.inc.remote(self.steps)  # fire and forget
            self.steps = 0
        return obs, reward, terminated, truncated, info


ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
counter = Counter.options(name="global_counter").remote()  # type: ignore[attr-defined]
register_env("counting_cartpole", CountingCartPole)
config = (
    PPOConfig()
    .environment("counting_cartpole")
    .rollouts(num_workers=2, rollout_fragment_length=250)
    .training(train_batch_size=500, sgd_minibatch_size=250, num_sgd_iter=2)
    .resources(num_cpus_for_driver=0)
)
algo = config.build()
for _ in range(ITERATIONS):
    result = algo.train()
    print(
        f"iter {result['training_iteration']}: sampled {result['timesteps_total']} steps; the "
        f"envs counted {ray.get(counter.get.remote())} steps of finished episodes"
    )
algo.stop()
ray.shutdown()
