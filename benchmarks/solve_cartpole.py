"""The main job, timed as a user sees it: `rlconf train -f examples/tuned/cartpole-ppo.yaml`
(PPO on CartPole-v1 on the embedded default until the mean return over the last 100 episodes
reaches 450), one process per seed, seeds 0-2.

For each run: whole-process wall time (from starting the command to its exit, after the final
checkpoint), time to the first `train()` result (the first progress line), env steps, and the
process's peak RSS. Then the medians.

Targets (2-core machine): median wall <= 8 s, first result <= 2.5 s, peak RSS <= 330 MB, every
seed solved. Prints a table, then one JSON object on its last line.

    python benchmarks/solve_cartpole.py [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from typing import Any

from cli_runs import ROOT, train

MAIN_JOB = ROOT / "examples" / "tuned" / "cartpole-ppo.yaml"


def run(seed: int, local_dir: str) -> dict[str, Any]:
    r = train(MAIN_JOB, seed, local_dir)
    return {
        "seed": seed,
        "solved": r.reward >= 450,
        "wall_s": r.wall_s,
        "first_result_s": r.first_result_s,
        "env_steps": r.env_steps,
        "reward": r.reward,
        "peak_rss_mb": r.peak_rss_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlconf_solve_") as local_dir:
        runs = [run(seed, local_dir) for seed in args.seeds]
    print("seed  wall s  first s   steps  reward  RSS MB")
    for r in runs:
        print(
            f"{r['seed']:4d} {r['wall_s']:7.2f} {r['first_result_s']:8.2f} {r['env_steps']:7d} "
            f"{r['reward']:7.1f} {r['peak_rss_mb']:7.1f}"
        )
    summary = {
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_first_result_s": statistics.median(r["first_result_s"] for r in runs),
        "median_env_steps": statistics.median(r["env_steps"] for r in runs),
        "max_peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "all_solved": all(r["solved"] for r in runs),
        "runs": runs,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
