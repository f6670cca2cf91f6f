"""Sampling throughput with 1, 2 and 4 remote rollout workers on a local Ray.

Each worker steps 64 CartPole-v1 sub-envs with PPO's default model ([256, 256], separate
value network) and 1 CPU (``num_cpus_per_worker=1``, so Ray gives its torch 1 thread). The
three algorithms are built side by side on one Ray with a logical CPU per worker (7), so that
their timed blocks can take turns: a burst of other work on the machine then slows every
worker count alike instead of one. Idle workers use no CPU; 4 workers share a 2-core machine.

Two measures per worker count, after ``WARMUP`` rounds (actor start, env resets, torch's first
kernels):

- ``round``: the algorithm's ``sample_round()`` stage: every worker samples one fragment in
  parallel and the driver receives the batches, episodes and perf stats (what a training step
  waits for);
- ``sample_only``: ``sample()`` on every worker in parallel, only the row counts sent back: the
  workers' own rate, without moving batches to the driver.

Each is timed in ``REPEATS`` blocks of ``ROUNDS`` rounds per worker count; the table shows the
best block (the rate with the least interference from other processes) and the median, in env
steps per second and as a ratio to one worker. Beside them, from the processes' CPU times over
the ``round`` blocks: the cores the workers and the driver kept busy, and env steps per
CPU-second of the workers (which would drop if workers slowed each other down, e.g. with too
many torch threads). The free cores are probed before and after (two busy-looping processes
for a second): on a shared machine the ratio can't exceed them. Last, ``plain x 2`` is what the
machine itself gives: the same kind of work (a [256, 256] forward pass on 64 observations, then
a step of 64 CartPole envs, in a loop) in 2 plain processes beside 1, without Ray.

Target: best ``round`` >= 1.8 x at 2 workers on 2 free cores (the limit is 2 x), and no lower
at 4 workers.
Prints a table, then one JSON object on its last line.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from machine import print_machine

from rlconf import PPOConfig
from runtime.algorithms.ppo import PPO

ENV = "CartPole-v1"
WORKERS = (1, 2, 4)
NUM_ENVS = 64
#: Steps per sub-env per sample(): 64 x 64 = 4096 env steps per worker and round (as in
#: benchmarks/sampling_throughput.py).
FRAGMENT = 64
WARMUP = 3
ROUNDS = 8
REPEATS = 5
TARGET_AT_2 = 1.8


def build(num_workers: int) -> PPO:
    config = (
        PPOConfig()
        .environment(ENV)
        .rollouts(
            num_workers=num_workers, num_envs_per_worker=NUM_ENVS, rollout_fragment_length=FRAGMENT
        )
        .resources(num_cpus_per_worker=1)
        .training(train_batch_size=NUM_ENVS * FRAGMENT * num_workers)
        .debugging(seed=0)
    )
    return PPO(config=config)


def _busy_loop(seconds: float) -> float:
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        pass
    return time.process_time() - cpu


def free_cores(processes: int = 2, seconds: float = 1.0) -> float:
    """How many cores ``processes`` busy-looping processes got: 2.0 on an idle 2-core
    machine, less when others are busy."""
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return sum(pool.map(_busy_loop, [seconds] * processes)) / seconds


def _plain_loop(seconds: float) -> float:
    """Loops per second of policy-like work: a forward pass for 64 observations, then a step
    of each of 64 CartPole envs."""
    import gymnasium as gym
    import torch

    torch.set_num_threads(1)
    net = torch.nn.Sequential(
        torch.nn.Linear(4, 256), torch.nn.Tanh(), torch.nn.Linear(256, 256), torch.nn.Tanh()
    )
    envs = [gym.make(ENV) for _ in range(NUM_ENVS)]
    observations = torch.stack([torch.as_tensor(env.reset(seed=0)[0]) for env in envs])
    loops, start = 0, time.perf_counter()
    with torch.no_grad():
        while time.perf_counter() - start < seconds:
            net(observations)
            for env in envs:
                _, _, terminated, truncated, _ = env.step(0)
                if terminated or truncated:
                    env.reset()
            loops += 1
    return loops / (time.perf_counter() - start)


def plain_scaling(seconds: float = 2.0, repeats: int = 2) -> float:
    """Total loops/s of ``_plain_loop`` in 2 processes over 1 process, the best of
    ``repeats`` turns each."""
    context = multiprocessing.get_context("spawn")
    rates: dict[int, list[float]] = {1: [], 2: []}
    with context.Pool(2) as pool:
        for _ in range(repeats):
            for processes in rates:
                rates[processes].append(sum(pool.map(_plain_loop, [seconds] * processes)))
    return max(rates[2]) / max(rates[1])


def _cpu_time(_worker: Any = None) -> float:
    return time.process_time()


def _torch_threads(_worker: Any = None) -> int:
    import torch

    return torch.get_num_threads()


@dataclass
class Blocks:
    """The timed blocks of one measure for one worker count."""

    rates: list[float] = field(default_factory=list)
    steps: int = 0
    wall: float = 0.0
    worker_cpu: float = 0.0
    driver_cpu: float = 0.0

    def time(self, algo: PPO, one_round: Callable[[], int]) -> None:
        workers_before = sum(algo.workers.foreach_worker(_cpu_time, local=False))
        driver_before = time.process_time()
        steps, start = 0, time.perf_counter()
        for _ in range(ROUNDS):
            steps += one_round()
        elapsed = time.perf_counter() - start
        self.driver_cpu += time.process_time() - driver_before
        self.worker_cpu += sum(algo.workers.foreach_worker(_cpu_time, local=False)) - workers_before
        self.rates.append(steps / elapsed)
        self.steps += steps
        self.wall += elapsed


def stage_round(algo: PPO) -> Callable[[], int]:
    def one_round() -> int:
        batches = algo.sample_round()
        algo._pending_episodes.clear()  # not training: nothing reports them
        algo._perf.clear()
        return sum(batch.env_steps() for batch in batches)

    return one_round


def sample_only(algo: PPO) -> Callable[[], int]:
    def one_round() -> int:
        sizes = algo.workers.call_remote(lambda w: len(w.sample()))
        return sum(size for _, size in sizes)

    return one_round


def measure() -> tuple[dict[int, Blocks], dict[int, Blocks], dict[int, list[int]]]:
    algos = {n: build(n) for n in WORKERS}
    try:
        for algo in algos.values():
            for _ in range(WARMUP):
                stage_round(algo)()
        rounds = {n: Blocks() for n in WORKERS}
        only = {n: Blocks() for n in WORKERS}
        for _ in range(REPEATS):
            for n, algo in algos.items():
                rounds[n].time(algo, stage_round(algo))
                only[n].time(algo, sample_only(algo))
        threads = {
            n: sorted(set(algo.workers.foreach_worker(_torch_threads, local=False)))
            for n, algo in algos.items()
        }
        return rounds, only, threads
    finally:
        for algo in algos.values():
            algo.stop()


def main() -> None:
    print_machine()
    free_before = free_cores()
    ray.init(
        address="local",  # a Ray of its own, never a cluster running on this machine
        num_cpus=sum(WORKERS),
        include_dashboard=False,
        logging_level=logging.ERROR,
    )
    try:
        rounds, only, threads = measure()
    finally:
        ray.shutdown()
    free_after = free_cores()
    plain = plain_scaling()
    one = WORKERS[0]
    results: dict[str, Any] = {
        "env": ENV,
        "num_envs_per_worker": NUM_ENVS,
        "cores": os.cpu_count(),
        "free_cores_before": round(free_before, 2),
        "free_cores_after": round(free_after, 2),
        "plain_processes_2_over_1": round(plain, 2),
    }
    print(
        f"cores {os.cpu_count()}, free before the run {free_before:.2f}, after "
        f"{free_after:.2f}; plain x 2: {plain:.2f}"
    )
    print(
        f"{'workers':>7} {'round best':>10} {'x 1':>5} {'median':>7} {'x 1':>5} "
        f"{'sample-only best':>16} {'x 1':>5} {'worker cores':>12} {'driver cores':>12} "
        f"{'steps/worker-cpu-s':>18} {'threads':>7}"
    )
    for n in WORKERS:
        r, o = rounds[n], only[n]
        best, median = max(r.rates), statistics.median(r.rates)
        ratio = best / max(rounds[one].rates)
        median_ratio = median / statistics.median(rounds[one].rates)
        only_ratio = max(o.rates) / max(only[one].rates)
        worker_cores, driver_cores = r.worker_cpu / r.wall, r.driver_cpu / r.wall
        per_cpu = r.steps / r.worker_cpu
        print(
            f"{n:>7} {best:>10.0f} {ratio:>5.2f} {median:>7.0f} {median_ratio:>5.2f} "
            f"{max(o.rates):>16.0f} {only_ratio:>5.2f} {worker_cores:>12.2f} "
            f"{driver_cores:>12.2f} {per_cpu:>18.0f} {threads[n]!s:>7}"
        )
        results[f"workers{n}_round_best_steps_per_s"] = round(best)
        results[f"workers{n}_round_best_ratio"] = round(ratio, 2)
        results[f"workers{n}_round_median_steps_per_s"] = round(median)
        results[f"workers{n}_round_median_ratio"] = round(median_ratio, 2)
        results[f"workers{n}_sample_only_best_steps_per_s"] = round(max(o.rates))
        results[f"workers{n}_sample_only_best_ratio"] = round(only_ratio, 2)
        results[f"workers{n}_worker_cores"] = round(worker_cores, 2)
        results[f"workers{n}_driver_cores"] = round(driver_cores, 2)
        results[f"workers{n}_steps_per_worker_cpu_s"] = round(per_cpu)
        results[f"workers{n}_torch_threads"] = threads[n]
    results["target_at_2"] = TARGET_AT_2
    print(json.dumps(results))


if __name__ == "__main__":
    main()
