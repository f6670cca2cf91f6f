"""Training iterations at one torch thread and at every core, by network size: the numbers
behind the learner's thread policy (``runtime.cluster.cpu_threads``: where
``num_cpus_for_driver`` is not set, one thread for small networks, every core for conv nets
and layers of 256x256 and up).

Each case builds one algorithm (``num_workers=0``: acting and learning in this process, as the
embedded default runs), trains one warm-up iteration, then ``--rounds`` pairs of iterations,
one at 1 thread and one at every usable core, the order alternating pair by pair (torch's and
NumPy's BLAS thread counts switched between iterations). The table shows each case's median
env steps per second at each count, their ratio (all cores / 1), and the count the policy picks
for it when the setting is unset.

- ``cartpole_ppo_64``: PPO on CartPole-v1, [64, 64] (the tuned file's size);
- ``cartpole_ppo_256``: PPO on CartPole-v1, the default model ([256, 256]);
- ``halfcheetah_sac``: SAC on HalfCheetah-v5, [256, 256] networks, one update of 256 rows per
  env step (SB3's defaults);
- ``breakout_ppo``: PPO on BreakoutNoFrameskip-v4 with the DeepMind wrappers, the Nature CNN,
  8 envs x 128 steps, 4 epochs of minibatches of 256 (CleanRL's ``ppo_atari`` settings).

Prints the machine, the table, then one JSON object on its last line.

    python benchmarks/learner_threads.py [--cases ...] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from machine import print_machine, usable_cores
from threadpoolctl import threadpool_limits

from rlconf import PPOConfig, SACConfig
from rlconf.algorithm_config import AlgorithmConfig
from runtime.cluster.cpu_threads import learner_threads


def cartpole_ppo(hiddens: list[int]) -> AlgorithmConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=250)
        .training(train_batch_size=2000, sgd_minibatch_size=128, num_sgd_iter=10)
        .training(model={"fcnet_hiddens": hiddens})
    )


def halfcheetah_sac() -> AlgorithmConfig:
    return (
        SACConfig()
        .environment("HalfCheetah-v5")
        .rollouts(num_workers=0, rollout_fragment_length=1)
        .training(
            train_batch_size=256,
            num_steps_sampled_before_learning_starts=256,
            q_model_config={"fcnet_hiddens": [256, 256]},
            policy_model_config={"fcnet_hiddens": [256, 256]},
        )
        .reporting(min_sample_timesteps_per_reporting=200, min_time_s_per_reporting=0)
    )


def breakout_ppo() -> AlgorithmConfig:
    return (
        PPOConfig()
        .environment("BreakoutNoFrameskip-v4")
        .rollouts(num_workers=0, num_envs_per_worker=8, rollout_fragment_length=128)
        .training(
            train_batch_size=1024,
            sgd_minibatch_size=256,
            num_sgd_iter=4,
            lr=2.5e-4,
            clip_param=0.1,
            entropy_coeff=0.01,
            vf_loss_coeff=0.5,
            grad_clip=0.5,
            lambda_=0.95,
            model={"vf_share_layers": True},
        )
    )


CASES: dict[str, Callable[[], AlgorithmConfig]] = {
    "cartpole_ppo_64": lambda: cartpole_ppo([64, 64]),
    "cartpole_ppo_256": lambda: cartpole_ppo([256, 256]),
    "halfcheetah_sac": halfcheetah_sac,
    "breakout_ppo": breakout_ppo,
}


def _steps(result: dict[str, Any]) -> int:
    return int(result["timesteps_this_iter"])


def run_case(name: str, rounds: int) -> dict[str, Any]:
    algo = CASES[name]().debugging(seed=0).build()
    try:
        local = algo.workers.local_worker()
        modules = [p.module for p in map(local.policy_map.peek, local.policy_map.in_memory()) if p]
        picked = learner_threads(None, modules)
        cores = usable_cores()
        rates: dict[int, list[float]] = {1: [], cores: []}
        algo.train()  # warm-up: first batches, lazily made learners, replay starts
        for index in range(rounds):
            order = [1, cores] if index % 2 == 0 else [cores, 1]
            for threads in order:
                torch.set_num_threads(threads)
                with threadpool_limits(limits=threads, user_api="blas"):
                    start = time.perf_counter()
                    result = algo.train()
                    rates[threads].append(_steps(result) / (time.perf_counter() - start))
    finally:
        algo.stop()
    one, many = statistics.median(rates[1]), statistics.median(rates[cores])
    return {
        "case": name,
        "steps_per_s_1_thread": one,
        f"steps_per_s_{cores}_threads": many,
        "ratio": many / one,
        "picked_threads": picked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if "OMP_NUM_THREADS" in os.environ:
        sys.exit("unset OMP_NUM_THREADS: this benchmark sets the threads itself")
    info = print_machine()
    cores = usable_cores()
    rows = [run_case(name, args.rounds) for name in args.cases]
    print(f"\n| case | env steps/s, 1 thread | {cores} threads | ratio | picked (unset) |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['case']} | {row['steps_per_s_1_thread']:.0f} | "
            f"{row[f'steps_per_s_{cores}_threads']:.0f} | {row['ratio']:.2f} x | "
            f"{row['picked_threads']} |"
        )
    print(json.dumps({"machine": info, "rows": rows}))


if __name__ == "__main__":
    main()
