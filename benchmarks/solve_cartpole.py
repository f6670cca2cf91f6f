"""Wall time (from process start), env steps and peak RSS until PPO's mean return over the
last 100 episodes reaches 450 on CartPole-v1, with the tuned settings of
`examples/tuned_ppo_cartpole.py`, on the embedded default (one process, no Ray).

Target on the 2-core machine: under 10 s. Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from tuned_ppo_cartpole import tuned_config


def main() -> None:
    seed = int(os.environ.get("SEED", "0"))
    budget = int(os.environ.get("BUDGET_STEPS", "300000"))
    algo = tuned_config(seed).build()
    built = time.time() - psutil.Process().create_time()
    result = algo.train()
    while result["episode_reward_mean"] < 450 and result["timesteps_total"] < budget:
        result = algo.train()
    wall = time.time() - psutil.Process().create_time()
    algo.stop()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "solved": bool(result["episode_reward_mean"] >= 450),
                "wall_s": round(wall, 2),
                "startup_s": round(built, 2),
                "env_steps": int(result["timesteps_total"]),
                "iterations": int(result["training_iteration"]),
                "episode_reward_mean": round(float(result["episode_reward_mean"]), 1),
                "peak_rss_mb": round(peak_kb / 1024, 1),
                "seed": seed,
            }
        )
    )


if __name__ == "__main__":
    main()
