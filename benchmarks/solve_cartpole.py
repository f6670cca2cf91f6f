"""Wall time (from process start), env steps and peak RSS until PPO's mean return over the
last 100 episodes reaches 450 on CartPole-v1, with the tuned settings of
`examples/tuned_ppo_cartpole.py`, on the embedded default (one process, no Ray).

Target on the 2-core machine: under 10 s. Prints one JSON object on its last line.
"""

from __future__ import annotations

import time

_SCRIPT_START = time.time()

import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from tuned_ppo_cartpole import tuned_config  # noqa: E402


def process_age() -> float:
    """Seconds since this process started (from /proc; the script's start elsewhere)."""
    try:
        with open("/proc/self/stat") as stat:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            now = float(uptime.read().split()[0])
        return now - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time() - _SCRIPT_START


def main() -> None:
    seed = int(os.environ.get("SEED", "0"))
    budget = int(os.environ.get("BUDGET_STEPS", "300000"))
    algo = tuned_config(seed).build()
    built = process_age()
    result = algo.train()
    while result["episode_reward_mean"] < 450 and result["timesteps_total"] < budget:
        result = algo.train()
    wall = process_age()
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
