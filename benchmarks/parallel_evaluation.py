"""Iteration time with evaluation after the training step vs beside it, for a slow env.

Training samples 400 steps of an env that sleeps 2 ms per step (in the driver) and learns on
them; evaluation runs 400 steps of the same env on one remote evaluation worker, so the two
halves take about the same time. Target: parallel <= 0.6 x sequential.
Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from typing import Any

import gymnasium as gym
import ray
from machine import print_machine

from rlconf import PPOConfig
from runtime import register_env

DELAY_S = 0.002
STEPS = 400
ITERATIONS = 5


class SlowCartPole(gym.Wrapper[Any, Any, Any, Any]):
    """CartPole whose every step takes ``delay`` seconds, like a simulator would."""

    def __init__(self, delay: float) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.delay = delay

    def step(self, action: Any) -> Any:
        time.sleep(self.delay)
        return self.env.step(action)


def config(parallel: bool) -> PPOConfig:
    return (
        PPOConfig()
        .environment("slow_cartpole", env_config={"delay": DELAY_S})
        .rollouts(num_workers=0, rollout_fragment_length=STEPS)
        .training(train_batch_size=STEPS, sgd_minibatch_size=STEPS // 4, num_sgd_iter=4)
        .evaluation(
            evaluation_interval=1,
            evaluation_num_workers=1,
            evaluation_duration=STEPS,
            evaluation_duration_unit="timesteps",
            evaluation_parallel_to_training=parallel,
        )
        .debugging(seed=0)
    )


def iteration_time(parallel: bool) -> float:
    """Median ``time_this_iter_s`` over ``ITERATIONS`` iterations after one warm-up."""
    algo = config(parallel).build()
    try:
        algo.train()
        times = [algo.train()["time_this_iter_s"] for _ in range(ITERATIONS)]
    finally:
        algo.stop()
    return float(statistics.median(times))


def main() -> None:
    print_machine()
    register_env("slow_cartpole", lambda ctx: SlowCartPole(float(ctx["delay"])))
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    try:
        sequential = iteration_time(parallel=False)
        parallel = iteration_time(parallel=True)
    finally:
        ray.shutdown()
    ratio = parallel / sequential
    print(f"sequential iteration: {sequential:.3f} s")
    print(f"parallel iteration:   {parallel:.3f} s")
    print(f"parallel / sequential: {ratio:.2f} (target <= 0.6)")
    print(
        json.dumps(
            {
                "sequential_s": round(sequential, 3),
                "parallel_s": round(parallel, 3),
                "ratio": round(ratio, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
