"""Env steps per second of `RolloutWorker.sample()` with the policy in the loop, for
num_envs_per_worker 1, 8, 64 and num_workers 0 and 2, beside raw gymnasium stepping of the same
env (random actions, no policy) in the same run.

Target: at 64 envs per worker the local worker keeps at least half the raw single-env rate.
Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import gymnasium as gym
import ray

from rlconf import PPOConfig
from runtime.algorithms.ppo import PPOTorchPolicy
from runtime.env_registry import env_creator_for
from runtime.worker_set import WorkerSet

ENV = "CartPole-v1"
STEPS = 40_000


def raw_rate(steps: int = STEPS) -> float:
    env = gym.make(ENV)
    env.reset(seed=0)
    actions = [env.action_space.sample() for _ in range(1000)]
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[i % 1000])
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def worker_set(num_workers: int, num_envs: int) -> WorkerSet:
    config = (
        PPOConfig()
        .environment(ENV)
        .rollouts(
            num_workers=num_workers,
            num_envs_per_worker=num_envs,
            rollout_fragment_length=max(1, 4096 // num_envs),
        )
        .resources(num_cpus_per_worker=1)
        .training(train_batch_size=4096, model={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
        .freeze()
    )
    return WorkerSet(
        env_creator=env_creator_for(ENV),
        config=config,
        policy_class=PPOTorchPolicy,
        num_workers=num_workers,
    )


def sample_rate(num_workers: int, num_envs: int) -> float:
    workers = worker_set(num_workers, num_envs)

    def one_round() -> int:
        if num_workers == 0:
            return len(workers.local_worker().sample())
        sizes = workers.call_remote(lambda w: len(w.sample()))
        return sum(size for _, size in sizes)

    one_round()  # warm-up: env resets, torch kernels, actor start
    steps, start = 0, time.perf_counter()
    while steps < STEPS:
        steps += one_round()
    rate = steps / (time.perf_counter() - start)
    workers.stop()
    return rate


def main() -> None:
    results: dict[str, Any] = {"env": ENV, "raw_env_steps_per_s": round(raw_rate())}
    for num_envs in (1, 8, 64):
        results[f"local_envs{num_envs}_steps_per_s"] = round(sample_rate(0, num_envs))
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    try:
        for num_envs in (1, 8, 64):
            results[f"remote2_envs{num_envs}_steps_per_s"] = round(sample_rate(2, num_envs))
    finally:
        ray.shutdown()
    results["local64_over_raw"] = round(
        results["local_envs64_steps_per_s"] / results["raw_env_steps_per_s"], 2
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
