"""Env steps sampled and trained per second: IMPALA (asynchronous) against synchronous PPO with
the same remote workers, on a local Ray with 1, 2 and 4 workers; with ``--cluster``, also on a
simulated 3-node cluster (``ray.cluster_utils.Cluster``, 2 logical CPUs a node).

Both algorithms get the same workers (8 CartPole-v1 sub-envs each, fragments of 50 steps,
the default [256, 256] model, 1 torch thread a worker) and train batches of 500 steps. PPO
trains each batch with 1 SGD pass of one minibatch, as IMPALA does (``num_sgd_iter=1``), so
that the difference is the pipeline: PPO's iteration waits for every worker and then for the
learner; IMPALA's workers keep sampling while its learner thread trains. Each measure is
``SECONDS`` of training after ``WARMUP_S`` seconds, timed by the env steps the counters moved.
IMPALA's row also shows its mean policy lag (learner updates behind the fragments' weights).

Target: IMPALA trains >= 1.3x the env steps per second of synchronous PPO at 2 and 4 workers.
Prints a table, then one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

import ray
from machine import print_machine

from rlconf import IMPALAConfig, PPOConfig

ENV = "CartPole-v1"
WORKERS = (1, 2, 4)
WARMUP_S = 5.0
SECONDS = 15.0
TARGET = 1.3


def _impala(workers: int) -> IMPALAConfig:
    return (
        IMPALAConfig()
        .environment(ENV)
        .rollouts(num_workers=workers, num_envs_per_worker=8, rollout_fragment_length=50)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(train_batch_size=500)
        .reporting(min_time_s_per_reporting=1.0)
        .debugging(seed=0, log_level="ERROR")
    )


def _ppo(workers: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment(ENV)
        .rollouts(num_workers=workers, num_envs_per_worker=8, rollout_fragment_length=50)
        .resources(num_cpus_per_worker=0.5, num_cpus_for_driver=0)
        .training(train_batch_size=500, sgd_minibatch_size=500, num_sgd_iter=1)
        .reporting(min_time_s_per_reporting=1.0)
        .debugging(seed=0, log_level="ERROR")
    )


def measure(config: Any) -> dict[str, float]:
    """Env steps sampled and trained per second over ``SECONDS`` after the warm-up."""
    algo = config.build()
    try:
        started = time.perf_counter()
        while time.perf_counter() - started < WARMUP_S:
            result = algo.train()
        sampled0 = result["info"]["num_env_steps_sampled"]
        trained0 = result["info"]["num_env_steps_trained"]
        started = time.perf_counter()
        lags = []
        while time.perf_counter() - started < SECONDS:
            result = algo.train()
            lags.append(float(result["info"].get("policy_lag_mean", 0.0)))
        elapsed = time.perf_counter() - started
        return {
            "sampled_per_s": (result["info"]["num_env_steps_sampled"] - sampled0) / elapsed,
            "trained_per_s": (result["info"]["num_env_steps_trained"] - trained0) / elapsed,
            "policy_lag": sum(lags) / len(lags) if lags else 0.0,
        }
    finally:
        algo.stop()


def run(label: str) -> list[dict[str, Any]]:
    rows = []
    for workers in WORKERS:
        impala = measure(_impala(workers))
        ppo = measure(_ppo(workers))
        ratio = impala["trained_per_s"] / max(ppo["trained_per_s"], 1e-9)
        rows.append(
            {"where": label, "workers": workers, "impala": impala, "ppo": ppo, "ratio": ratio}
        )
        print(
            f"{label:8s} {workers:3d}  IMPALA sampled {impala['sampled_per_s']:8.0f}/s "
            f"trained {impala['trained_per_s']:8.0f}/s lag {impala['policy_lag']:5.2f}  |  "
            f"PPO sampled {ppo['sampled_per_s']:8.0f}/s trained {ppo['trained_per_s']:8.0f}/s"
            f"  |  IMPALA/PPO trained {ratio:5.2f}x",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", action="store_true", help="also on a simulated 3-node cluster")
    args = parser.parse_args()
    print_machine()
    rows = []
    ray.init(num_cpus=8, include_dashboard=False, logging_level=logging.ERROR)
    try:
        rows += run("local")
    finally:
        ray.shutdown()
    if args.cluster:
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
        for _ in range(2):
            cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address, logging_level=logging.ERROR)
        try:
            rows += run("3 nodes")
        finally:
            ray.shutdown()
            cluster.shutdown()  # type: ignore[no-untyped-call]
    met = all(row["ratio"] >= TARGET for row in rows if row["workers"] >= 2)
    print(json.dumps({"rows": rows, "target": TARGET, "met": met}))


if __name__ == "__main__":
    main()
