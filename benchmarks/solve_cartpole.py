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

from typing import Any

from cli_runs import ROOT, solve_main, train
from machine import print_machine

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
    print_machine()
    solve_main(__doc__.split("\n\n")[0], run, "reward", "reward")


if __name__ == "__main__":
    main()
