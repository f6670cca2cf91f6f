"""Soak runs: PPO, DQN, SAC and APPO/IMPALA with 2 remote rollout workers on the envs of RLlib's
memory-leak files (``RandomLargeObsSpaceEnv``: 5,000-float observations, the same sample every
step; its continuous-action twin for SAC), for a budget of env steps or minutes each, sampling
after every iteration the driver's and each remote worker's RSS, open file descriptors and
threads, the bytes of Ray's object store (``/dev/shm``) and, for the off-policy algorithms, the
replay buffer's bytes.

The settings are those of RLlib's ``memory-leak-test-{ppo,dqn,sac,appo}.yaml`` files (their env
by its RLlib path, ``static_samples``, PPO's batch and passes, the replay capacity of 500 that
makes a leak show before a full buffer hides it, APPO's fragments of 20), with 2 remote workers
instead of 4 on 2 cores.

Goal: after the first 10% of a run, RSS grows by at most 5% (the replay buffer's bytes
reported on their own), descriptors and threads flat. Prints the machine, a line per algorithm
and one JSON object on its last line; ``--csv DIR`` writes each run's samples.

Run: python benchmarks/soak.py [--algos ppo dqn sac appo] [--minutes 30] [--steps 1000000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from machine import print_machine

from rlconf import APPOConfig, DQNConfig, IMPALAConfig, PPOConfig, SACConfig
from rlconf.algorithm_config import AlgorithmConfig

RANDOM_ENV = "ray.rllib.examples.env.random_env.RandomLargeObsSpaceEnv"
RANDOM_ENV_CONT = "ray.rllib.examples.env.random_env.RandomLargeObsSpaceEnvContActions"
STATIC = {"static_samples": True}
WORKERS = 2


def configs() -> dict[str, AlgorithmConfig]:
    """RLlib's memory-leak files' settings, 2 remote workers each."""
    return {
        "ppo": PPOConfig()
        .environment(RANDOM_ENV, env_config=STATIC)
        .rollouts(num_workers=WORKERS, num_envs_per_worker=5, rollout_fragment_length="auto")
        .training(train_batch_size=1000, sgd_minibatch_size=256, num_sgd_iter=7),
        "dqn": DQNConfig()
        .environment(RANDOM_ENV, env_config=STATIC)
        .rollouts(num_workers=WORKERS)
        .training(replay_buffer_config={"capacity": 500}),
        "sac": SACConfig()
        .environment(RANDOM_ENV_CONT, env_config=STATIC)
        .rollouts(num_workers=WORKERS)
        .training(replay_buffer_config={"capacity": 500}),
        "appo": APPOConfig()
        .environment(RANDOM_ENV, env_config=STATIC)
        .rollouts(num_workers=WORKERS, num_envs_per_worker=5, rollout_fragment_length=20),
        "impala": IMPALAConfig()
        .environment(RANDOM_ENV, env_config=STATIC)
        .rollouts(num_workers=WORKERS, num_envs_per_worker=5, rollout_fragment_length=20),
    }


def _status(pid: int) -> dict[str, int]:
    """RSS in bytes and threads of a process of this machine, from /proc."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                fields["rss"] = int(value.split()[0]) * 1024
            elif key == "Threads":
                fields["threads"] = int(value)
    fields["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return fields


def _replay_bytes(algo: Any) -> int:
    buffers = getattr(algo, "replay_buffers", None) or {}
    return sum(int(buffer.stored_bytes()) for buffer in buffers.values())


def sample(algo: Any, pids: list[int], result: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "iteration": result["training_iteration"],
        "env_steps": result["timesteps_total"],
        "time_s": round(result["time_total_s"], 1),
        "object_store_bytes": shutil.disk_usage("/dev/shm").used,
        "replay_bytes": _replay_bytes(algo),
    }
    names = ["driver", *(f"worker{i}" for i in range(1, len(pids)))]
    for name, pid in zip(names, pids, strict=True):
        for key, value in _status(pid).items():
            row[f"{name}_{key}"] = value
    return row


def growth(rows: list[dict[str, Any]], key: str) -> float:
    """The relative growth of ``key`` after the run's first 10%: the median of its last tenth
    over the median of its second tenth (medians: the allocator's ups and downs of tens of MB
    between iterations are no growth)."""
    tenth = max(1, len(rows) // 10)
    start = statistics.median(float(r[key]) for r in rows[tenth : 2 * tenth])
    end = statistics.median(float(r[key]) for r in rows[-tenth:])
    return end / start - 1.0 if start else 0.0


def soak(name: str, config: AlgorithmConfig, steps: int, minutes: float) -> list[dict[str, Any]]:
    algo = config.build()
    try:
        pids = [os.getpid(), *algo.workers.foreach_worker(lambda w: os.getpid(), local=False)]
        rows: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60 * minutes
        while True:
            result = algo.train()
            rows.append(sample(algo, pids, result))
            if result["timesteps_total"] >= steps or time.monotonic() > deadline:
                return rows
    finally:
        algo.stop()


def summary(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    processes = [k.removesuffix("_rss") for k in rows[0] if k.endswith("_rss")]
    out: dict[str, Any] = {
        "algo": name,
        "iterations": len(rows),
        "env_steps": rows[-1]["env_steps"],
        "minutes": round(rows[-1]["time_s"] / 60, 1),
        "replay_bytes_end": rows[-1]["replay_bytes"],
        "object_store_growth": round(growth(rows, "object_store_bytes"), 4),
    }
    after = rows[len(rows) // 10 :]
    for process in processes:
        out[f"{process}_rss_mb_end"] = round(rows[-1][f"{process}_rss"] / 2**20, 1)
        out[f"{process}_rss_growth"] = round(growth(rows, f"{process}_rss"), 4)
        for key in ("fds", "threads"):
            values = [row[f"{process}_{key}"] for row in after]
            out[f"{process}_{key}_range"] = [min(values), max(values)]
    worst = max(out[f"{p}_rss_growth"] for p in processes)
    flat = all(len(set(out[f"{p}_{k}_range"])) == 1 for p in processes for k in ("fds", "threads"))
    out["rss_growth_worst"] = worst
    out["flat"] = flat
    out["goal_met"] = worst <= 0.05 and flat
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algos", nargs="+", default=["ppo", "dqn", "sac", "appo"])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--csv", type=Path, help="a folder for each run's samples")
    parser.add_argument(
        "--summarize",
        type=Path,
        metavar="DIR",
        help="print the summaries of the samples a run wrote to DIR (--csv) instead of running",
    )
    args = parser.parse_args()
    if args.summarize is not None:
        for path in sorted(args.summarize.glob("soak-*.csv")):
            with open(path, newline="", encoding="utf-8") as handle:
                rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(handle)]
            print(_line(summary(path.stem.removeprefix("soak-"), rows)))
        return
    print_machine()
    available = configs()
    results = []
    for name in args.algos:
        rows = soak(name, available[name], args.steps, args.minutes)
        if args.csv is not None:
            args.csv.mkdir(parents=True, exist_ok=True)
            with open(args.csv / f"soak-{name}.csv", "w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        result = summary(name, rows)
        results.append(result)
        print(_line(result), flush=True)
    print(json.dumps(results))


def _line(result: dict[str, Any]) -> str:
    processes = [k.removesuffix("_rss_growth") for k in result if k.endswith("_rss_growth")]
    rss = ", ".join(
        f"{p} {result[f'{p}_rss_mb_end']:.0f} MB {100 * result[f'{p}_rss_growth']:+.1f}%"
        for p in processes
    )
    return (
        f"{result['algo']}: {int(result['env_steps'])} env steps, {result['iterations']} "
        f"iterations in {result['minutes']} min; RSS at the end and its growth after the first "
        f"10%: {rss}; fds and threads {'flat' if result['flat'] else 'not flat'}; replay "
        f"{int(result['replay_bytes_end'])} bytes; goal {'met' if result['goal_met'] else 'missed'}"
    )


if __name__ == "__main__":
    main()
