"""Env steps sampled and trained per second: IMPALA (asynchronous) against synchronous PPO with
the same remote workers, on a local Ray with 1, 2 and 4 workers; with ``--cluster``, also on a
simulated 3-node cluster (``ray.cluster_utils.Cluster``, 2 logical CPUs a node).

Both algorithms get the same workers (8 CartPole-v1 sub-envs each, fragments of 50 steps,
the default [256, 256] model, 1 torch thread a worker) and train batches of 500 steps. PPO
trains each batch with 1 SGD pass of one minibatch, as IMPALA does (``num_sgd_iter=1``), so
that the difference is the pipeline: PPO's iteration waits for every worker and then for the
learner; IMPALA's workers keep sampling while its learner thread trains. Each measure is
``SECONDS`` of training after ``WARMUP_S`` seconds, timed by the env steps the counters moved;
each setup is measured ``--repeats`` times, IMPALA and PPO taking turns (a busy 2-core machine
shifts single measures by up to 20%), and the medians of the rates and of the per-pair ratios
are reported. IMPALA's row also shows its mean policy lag (learner updates behind the
fragments' weights).

Target: IMPALA trains >= 1.3x the env steps per second of synchronous PPO at 2 and 4 workers.

With ``--solve-seeds``, also the whole-process wall time to a mean return of 450 of the IMPALA
example (``rlconf train -f examples/tuned/cartpole-impala.yaml``) next to the PPO main job's
(``examples/tuned/cartpole-ppo.yaml``), one process per seed, alternating.
Prints a table, then one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from typing import Any

import ray
from cli_runs import ROOT, train
from machine import print_machine

from rlconf import IMPALAConfig, PPOConfig

ENV = "CartPole-v1"
WORKERS = (1, 2, 4)
WARMUP_S = 5.0
SECONDS = 10.0
REPEATS = 3
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


def _median_rates(measures: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(m[key] for m in measures) for key in measures[0]}


def run(label: str, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for workers in WORKERS:
        pairs = [(measure(_impala(workers)), measure(_ppo(workers))) for _ in range(repeats)]
        impala = _median_rates([i for i, _ in pairs])
        ppo = _median_rates([p for _, p in pairs])
        ratios = [i["trained_per_s"] / max(p["trained_per_s"], 1e-9) for i, p in pairs]
        ratio = statistics.median(ratios)
        rows.append(
            {
                "where": label,
                "workers": workers,
                "impala": impala,
                "ppo": ppo,
                "ratio": ratio,
                "ratios": ratios,
            }
        )
        print(
            f"{label:8s} {workers:3d}  IMPALA sampled {impala['sampled_per_s']:8.0f}/s "
            f"trained {impala['trained_per_s']:8.0f}/s lag {impala['policy_lag']:5.2f}  |  "
            f"PPO sampled {ppo['sampled_per_s']:8.0f}/s trained {ppo['trained_per_s']:8.0f}/s"
            f"  |  IMPALA/PPO trained {ratio:5.2f}x"
            f" ({' '.join(f'{r:.2f}' for r in ratios)})",
            flush=True,
        )
    return rows


#: The whole-process comparison of ``--solve-seeds``: label -> tuned file.
SOLVE_FILES = {
    "IMPALA": ROOT / "examples" / "tuned" / "cartpole-impala.yaml",
    "PPO": ROOT / "examples" / "tuned" / "cartpole-ppo.yaml",
}


def solve(seeds: list[int]) -> dict[str, Any]:
    """Each tuned file's whole-process wall time and env steps to its stop, per seed
    (alternating the two files), then the medians."""
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in SOLVE_FILES}
    with tempfile.TemporaryDirectory(prefix="rlconf_async_") as local_dir:
        for seed in seeds:
            for label, file in SOLVE_FILES.items():
                r = train(file, seed, local_dir)
                runs[label].append(
                    {"seed": seed, "wall_s": r.wall_s, "env_steps": r.env_steps, "reward": r.reward}
                )
                print(
                    f"{label:6s} seed {seed}  wall {r.wall_s:6.1f} s  env steps {r.env_steps:7d}"
                    f"  mean return {r.reward:6.1f}",
                    flush=True,
                )
    medians = {
        label: {
            "median_wall_s": statistics.median(r["wall_s"] for r in rows),
            "median_env_steps": statistics.median(r["env_steps"] for r in rows),
        }
        for label, rows in runs.items()
    }
    for label, m in medians.items():
        print(
            f"{label:6s} median wall {m['median_wall_s']:6.1f} s  "
            f"median env steps {m['median_env_steps']:8.0f}"
        )
    return {"runs": runs, "medians": medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", action="store_true", help="also on a simulated 3-node cluster")
    parser.add_argument(
        "--solve-seeds",
        type=int,
        nargs="*",
        default=[],
        help="also time the IMPALA example and the PPO main job to 450 with these seeds",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        help="measures of each setup, IMPALA and PPO taking turns (medians reported)",
    )
    parser.add_argument(
        "--skip-throughput", action="store_true", help="only the --solve-seeds comparison"
    )
    args = parser.parse_args()
    print_machine()
    solved = solve(args.solve_seeds) if args.solve_seeds else None
    if args.skip_throughput:
        print(json.dumps({"solve": solved}))
        return
    rows = []
    ray.init(num_cpus=8, include_dashboard=False, logging_level=logging.ERROR)
    try:
        rows += run("local", args.repeats)
    finally:
        ray.shutdown()
    if args.cluster:
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
        for _ in range(2):
            cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address, logging_level=logging.ERROR)
        try:
            rows += run("3 nodes", args.repeats)
        finally:
            ray.shutdown()
            cluster.shutdown()  # type: ignore[no-untyped-call]
    met = all(row["ratio"] >= TARGET for row in rows if row["workers"] >= 2)
    print(json.dumps({"rows": rows, "target": TARGET, "met": met, "solve": solved}))


if __name__ == "__main__":
    main()
