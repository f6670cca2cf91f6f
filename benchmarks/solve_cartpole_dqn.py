"""The DQN main job, timed as a user sees it: `rlconf train -f examples/tuned/cartpole-dqn.yaml`
(DQN on CartPole-v1 on the embedded default until the greedy evaluation, 10 episodes after every
2000 sampled steps, has a mean return of at least 450), one process per seed, seeds 0-2.

For each run: whole-process wall time (from starting the command to its exit, after the final
checkpoint), time to the first `train()` result, env steps sampled for training (the greedy
evaluation episodes are not counted), the final evaluation mean, and the process's peak RSS.
Then the medians.

Target: median wall <= 37 s (half of Stable-Baselines3's DQN zoo run on CartPole-v1, measured
the same way on the project's 2-core machine: 73.5 s), every seed solved. Prints a table, then
one JSON object on its last line.

    python benchmarks/solve_cartpole_dqn.py [--seeds 0 1 2]
"""

from __future__ import annotations

from typing import Any

from cli_runs import ROOT, solve_main, train
from machine import print_machine

DQN_JOB = ROOT / "examples" / "tuned" / "cartpole-dqn.yaml"
TARGET = 450.0


def run(seed: int, local_dir: str) -> dict[str, Any]:
    r = train(DQN_JOB, seed, local_dir)
    evaluation = r.last_result().get("evaluation")
    if not isinstance(evaluation, dict) or "episode_reward_mean" not in evaluation:
        raise RuntimeError(f"seed {seed}: no evaluation in the last result of {r.logdir}")
    eval_reward = float(evaluation["episode_reward_mean"])
    return {
        "seed": seed,
        "solved": eval_reward >= TARGET,
        "wall_s": r.wall_s,
        "first_result_s": r.first_result_s,
        "env_steps": r.env_steps,
        "eval_reward": eval_reward,
        "train_reward": r.reward,
        "peak_rss_mb": r.peak_rss_mb,
    }


def main() -> None:
    print_machine()
    solve_main(__doc__.split("\n\n")[0], run, "eval_reward", "eval reward")


if __name__ == "__main__":
    main()
