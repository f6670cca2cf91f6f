"""Fractional GPUs: four algorithms whose rollout worker each asks for a quarter of a GPU share
one GPU. Here Ray is told there is one (logical) GPU, so this runs on any machine; torch sees
no CUDA device, so the workers infer on CPU and say so. On a real GPU they use CUDA.

Every bundle (driver, worker) is reserved in a placement group exactly as
``PPO.default_resource_request(config)`` gives it to Tune.

Run: python examples/fractional_gpus.py
"""

from __future__ import annotations

import logging
import os

import ray

from rlconf import PPOConfig
from runtime import PPO, Algorithm

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 3))


def quarter_gpu_config() -> PPOConfig:
    """One remote worker with a quarter of the GPU; a quarter of a CPU for each part."""
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=1, rollout_fragment_length=100)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=2)
        .resources(num_gpus_per_worker=0.25, num_cpus_per_worker=0.25, num_cpus_for_driver=0.25)
    )


def train_four(iterations: int) -> list[Algorithm]:
    """Build four algorithms on the one GPU and train each ``iterations`` times; they are
    returned running (still holding their shares)."""
    config = quarter_gpu_config()
    print("bundles per algorithm:", PPO.default_resource_request(config).bundles)
    algorithms = [config.build() for _ in range(4)]
    free = ray.available_resources()  # type: ignore[no-untyped-call]
    print("free GPU with four algorithms running:", free.get("GPU", 0.0))
    for _ in range(iterations):
        returns = [algo.train()["episode_reward_mean"] for algo in algorithms]
        print("mean returns:", " ".join(f"{r:6.1f}" for r in returns))
    return algorithms


def main() -> None:
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, logging_level=logging.ERROR)
    try:
        for algo in train_four(ITERATIONS):
            algo.stop()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
