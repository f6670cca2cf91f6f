"""The learner on a GPU against the learner on the CPU: PPO and DQN on CartPole-v1 on the
embedded default (``num_workers=0``: the driver samples and learns; no Ray needed), with
``.resources(num_gpus=1)`` (the learner on ``cuda:0``, the acting copy of the module on the
CPU) and with ``num_gpus=0`` (both on the CPU).

For each algorithm and device: learner updates per second (gradient steps: the learner's
``num_grad_updates`` over the wall time spent in ``train()``), env steps sampled per second over
the same time, the learner devices (``algo.learner_group.devices``) and the acting device (where
``algo.get_policy().module``'s parameters are). A first ``train()`` is not timed (CUDA context,
kernels loaded on first use). Without CUDA only the CPU rows run, and the output says so.
Prints the machine, a table, then one JSON object on its last line.

    python benchmarks/gpu_learner.py [--iterations 5] [--algos PPO DQN] [--devices cuda cpu]

Needs torch, gymnasium, pydantic, numpy and typing-extensions, not Ray or tensorboardX (with
the package not installed: ``PYTHONPATH=src python benchmarks/gpu_learner.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any

from machine import print_machine

from rlconf import AlgorithmConfig, DQNConfig, PPOConfig

CONFIGS: dict[str, type[AlgorithmConfig]] = {"PPO": PPOConfig, "DQN": DQNConfig}


def config_for(algo: str, device: str, seed: int) -> AlgorithmConfig:
    return (
        CONFIGS[algo]()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .resources(num_gpus=1 if device == "cuda" else 0)
        .debugging(seed=seed)
    )


def env_steps(result: dict[str, Any]) -> int:
    return int(result["timesteps_total"])


def run(algo_name: str, device: str, iterations: int, seed: int) -> dict[str, Any]:
    algo = config_for(algo_name, device, seed).build()
    try:
        policy = algo.get_policy()
        learner = policy.learner
        result = algo.train()  # warm-up, not timed
        updates, steps = learner.num_grad_updates, env_steps(result)
        wall = 0.0
        for _ in range(iterations):
            start = time.perf_counter()
            result = algo.train()
            wall += time.perf_counter() - start
        updates = learner.num_grad_updates - updates
        steps = env_steps(result) - steps
        return {
            "algo": algo_name,
            "device": device,
            "iterations": iterations,
            "train_s": round(wall, 3),
            "grad_updates": updates,
            "updates_per_s": round(updates / wall, 1),
            "env_steps": steps,
            "env_steps_per_s": round(steps / wall, 1),
            "learner_devices": list(algo.learner_group.devices),
            "learner_module_device": str(next(learner.module.parameters()).device),
            "acting_device": str(next(policy.module.parameters()).device),
            "reward_mean": round(float(result["episode_reward_mean"]), 1),
        }
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed train() calls")
    parser.add_argument("--algos", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--devices", nargs="+", default=["cuda", "cpu"], choices=["cuda", "cpu"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("RLCONF_RESULTS_DIR", tempfile.mkdtemp(prefix="rlconf_gpu_learner_"))

    info = print_machine()
    devices = list(args.devices)
    if "cuda" in devices and not info["cuda_available"]:
        print("CUDA is absent: only the CPU rows run")
        devices.remove("cuda")
    gpu = info["gpus"][0] if info["gpus"] else None
    print()
    print(
        f"{'algo':4s} {'device':6s} {'learner':9s} {'acting':6s} {'updates/s':>10s} "
        f"{'env steps/s':>11s} {'updates':>8s} {'steps':>7s} {'train s':>8s} {'reward':>7s}"
    )
    rows = []
    for algo_name in args.algos:
        for device in devices:
            r = run(algo_name, device, args.iterations, args.seed)
            rows.append(r)
            print(
                f"{r['algo']:4s} {r['device']:6s} {','.join(r['learner_devices']):9s} "
                f"{r['acting_device']:6s} {r['updates_per_s']:10.1f} {r['env_steps_per_s']:11.1f} "
                f"{r['grad_updates']:8d} {r['env_steps']:7d} {r['train_s']:8.2f} "
                f"{r['reward_mean']:7.1f}",
                flush=True,
            )
    if gpu:
        print(f"GPU: {gpu}")
    print(
        json.dumps(
            {
                "machine": info,
                "gpu": gpu,
                "cuda_absent": not info["cuda_available"],
                "rows": rows,
            }
        )
    )


if __name__ == "__main__":
    main()
