"""Evaluation beside training: with a slow env, an iteration takes about as long as the longer
of the two halves instead of their sum. ``weights_version`` says which iteration's weights
were evaluated (one behind, since evaluation starts with the weights from before the step).

Run: python examples/parallel_evaluation.py
"""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym

from rlconf import PPOConfig
from runtime import EnvContext, register_env

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 4))


class SlowCartPole(gym.Wrapper[Any, Any, Any, Any]):
    """CartPole whose steps take ``delay`` seconds, like a simulator."""

    def __init__(self, config: EnvContext) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.delay = float(config.get("delay", 0.002))

    def step(self, action: Any) -> Any:
        time.sleep(self.delay)
        return self.env.step(action)


register_env("slow_cartpole", SlowCartPole)


def build(parallel: bool) -> Any:
    return (
        PPOConfig()
        .environment("slow_cartpole", env_config={"delay": 0.002})
        .rollouts(num_workers=0, rollout_fragment_length=400)
        .training(train_batch_size=400, sgd_minibatch_size=100, num_sgd_iter=4)
        .resources(num_cpus_for_driver=0)
        .evaluation(
            evaluation_interval=1,
            evaluation_num_workers=1,
            evaluation_duration=400,
            evaluation_duration_unit="timesteps",
            evaluation_parallel_to_training=parallel,
        )
        .build()
    )


for parallel in (False, True):
    algo = build(parallel)
    for _ in range(ITERATIONS):
        result = algo.train()
    print(
        f"parallel={parallel!s:5}  iteration {result['time_this_iter_s']:.2f} s  "
        f"evaluated the weights of iteration {result['evaluation']['weights_version']} "
        f"in iteration {result['training_iteration']}"
    )
    algo.stop()
