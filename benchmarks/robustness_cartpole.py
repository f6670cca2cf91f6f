"""Is the tuned PPO robust? Env steps until the mean return over the last 100 episodes reaches
450 on CartPole-v1, with the settings of `examples/tuned_ppo_cartpole.py` on the embedded
default, for seeds 0-4 under each of torch's CPU kernel sets (`ATEN_CPU_CAPABILITY` default,
avx2, avx512: each changes the floating-point results, and so the trajectory).

Target: every run within 100k env steps, the median at most 80k (the tuned file trades env
steps for time: 6 passes over each batch at a rate of 3e-3 instead of 10 at 2e-3).
Prints a table, then one JSON object on its last line.

    python benchmarks/robustness_cartpole.py [--seeds 0 1 2 3 4] [--capabilities default avx2]
        [--budget 150000] [--jobs 2] [--config '{"lr": 0.002}']

`--config` overrides tuned settings (to try others); each run is a fresh process, `--jobs` of
them at a time (steps do not depend on it, wall times do).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from machine import print_machine

EXAMPLES = str(Path(__file__).resolve().parents[1] / "examples")
TARGET = 450.0

_RUN = """
import json, sys, time
sys.path.insert(0, {examples!r})
from tuned_ppo_cartpole import tuned_config
config = tuned_config({seed}).update_from_dict(json.loads({overrides!r}))
algo = config.build()
start = time.perf_counter()
result = algo.train()
while result["episode_reward_mean"] < {target} and result["timesteps_total"] < {budget}:
    result = algo.train()
algo.stop()
import torch
print(json.dumps({{
    "steps": int(result["timesteps_total"]),
    "solved": bool(result["episode_reward_mean"] >= {target}),
    "reward": round(float(result["episode_reward_mean"]), 1),
    "train_s": round(time.perf_counter() - start, 2),
    "kernels": torch.backends.cpu.get_cpu_capability(),
}}))
"""


def run(seed: int, capability: str, budget: int, overrides: dict[str, Any]) -> dict[str, Any]:
    code = _RUN.format(
        examples=EXAMPLES,
        seed=seed,
        overrides=json.dumps(overrides),
        target=TARGET,
        budget=budget,
    )
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    env.setdefault("RLCONF_RESULTS_DIR", "/tmp/rlconf_robustness")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"seed {seed} {capability}: {out.stderr[-2000:]}")
    return {"seed": seed, "capability": capability, **json.loads(out.stdout.splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--capabilities", nargs="+", default=["default", "avx2", "avx512"], metavar="CAP"
    )
    parser.add_argument("--budget", type=int, default=150_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--config", default="{}", help="JSON object of settings to override")
    args = parser.parse_args()
    print_machine()
    overrides = json.loads(args.config)
    cases = [(s, c) for c in args.capabilities for s in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(lambda case: run(case[0], case[1], args.budget, overrides), cases))
    print(f"{'capability':10s} {'kernels':8s} {'seed':>4s} {'steps':>8s} {'reward':>7s} train s")
    for r in runs:
        mark = "" if r["solved"] else "  NOT SOLVED"
        print(
            f"{r['capability']:10s} {r['kernels']:8s} {r['seed']:4d} {r['steps']:8d} "
            f"{r['reward']:7.1f} {r['train_s']:8.2f}{mark}"
        )
    steps = [r["steps"] if r["solved"] else args.budget * 10 for r in runs]
    summary = {
        "runs": len(runs),
        "solved": sum(r["solved"] for r in runs),
        "median_steps": statistics.median(steps),
        "max_steps": max(steps),
        "all_within_100k": all(r["solved"] and r["steps"] <= 100_000 for r in runs),
        "overrides": overrides,
        "steps": {f"{r['capability']}/{r['seed']}": r["steps"] for r in runs},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
