"""Env steps per second of `RolloutWorker.sample()` with the policy in the loop, beside raw
gymnasium stepping of the same env (random actions, no policy), on CartPole-v1.

Two models: PPO's default (`fcnet_hiddens` [256, 256], separate value network) and the tuned
example's [64, 64]; 1, 8 and 64 sub-envs on the local worker, and 2 remote workers with the
default model. Raw stepping is measured right before each local measurement and the ratio taken
against that, so that a busy machine shifts both alike.

Target: at 64 envs per worker with the default model, >= 0.6 x raw env stepping.
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
from runtime.algorithms.ppo import PPO
from runtime.env.env_registry import env_creator_for
from runtime.env.worker_set import WorkerSet

ENV = "CartPole-v1"
STEPS = 40_000
MODELS = {"default": [256, 256], "small": [64, 64]}


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


def worker_set(num_workers: int, num_envs: int, hiddens: list[int]) -> WorkerSet:
    config = (
        PPOConfig()
        .environment(ENV)
        .rollouts(
            num_workers=num_workers,
            num_envs_per_worker=num_envs,
            rollout_fragment_length=max(1, 4096 // num_envs),
        )
        .resources(num_cpus_per_worker=1)
        .training(train_batch_size=4096, model={"fcnet_hiddens": hiddens})
        .debugging(seed=0)
        .freeze()
    )
    return WorkerSet(
        env_creator=env_creator_for(ENV),
        config=config,
        policy_class=PPO.policy_class,
        num_workers=num_workers,
    )


def sample_rate(num_workers: int, num_envs: int, hiddens: list[int]) -> float:
    workers = worker_set(num_workers, num_envs, hiddens)

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
    print_machine()
    results: dict[str, Any] = {"env": ENV}
    raws = []
    for model, hiddens in MODELS.items():
        for num_envs in (1, 8, 64):
            raw = raw_rate()
            raws.append(raw)
            rate = sample_rate(0, num_envs, hiddens)
            results[f"{model}_local_envs{num_envs}_steps_per_s"] = round(rate)
            results[f"{model}_local_envs{num_envs}_over_raw"] = round(rate / raw, 2)
    results["raw_env_steps_per_s"] = round(statistics.median(raws))
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    try:
        for num_envs in (1, 8, 64):
            rate = sample_rate(2, num_envs, MODELS["default"])
            results[f"default_remote2_envs{num_envs}_steps_per_s"] = round(rate)
    finally:
        ray.shutdown()
    for key, value in results.items():
        if key.endswith("over_raw"):
            print(f"{key:36s} {value}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
