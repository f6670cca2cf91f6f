"""PPO with an LSTM on CartPole without velocities, timed as a user sees it and side by side
with sb3-contrib's RecurrentPPO: `rlconf train -f examples/tuned/stateless-cartpole-ppo-lstm.yaml`
(until the mean training return over the last 100 episodes reaches 450, or its step budget),
one process per seed; then, on the same machine in the same run, `sb3_stateless_cartpole.py`
(RecurrentPPO with the RL Zoo's CartPoleNoVel-v1 settings, stopped the same way), one process
per seed.

For each run: whole-process wall time, env steps and the mean return reached; then the medians
and the ratio of the median wall times (ours / SB3's). Target: wall-time ratio <= 0.5.
sb3-contrib is not a dependency: give an interpreter that has it with --sb3-python (default:
this one, when it can import sb3_contrib; otherwise only our side runs). Prints the machine, a
table, then one JSON object on its last line.

    python benchmarks/solve_stateless_cartpole.py [--seeds 0 1 2] [--sb3-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from typing import Any

from cli_runs import ROOT, add_reference, reference_python, reference_run, train
from machine import print_machine

JOB = ROOT / "examples" / "tuned" / "stateless-cartpole-ppo-lstm.yaml"
SB3_SCRIPT = ROOT / "benchmarks" / "sb3_stateless_cartpole.py"
TARGET = 450.0


def ours(seed: int, local_dir: str) -> dict[str, Any]:
    r = train(JOB, seed, local_dir)
    return {
        "seed": seed,
        "solved": r.reward >= TARGET,
        "wall_s": r.wall_s,
        "env_steps": r.env_steps,
        "reward": r.reward,
        "peak_rss_mb": r.peak_rss_mb,
    }


def sb3(seed: int, python: str) -> dict[str, Any]:
    result = reference_run(SB3_SCRIPT, seed, python)
    result["solved"] = result["reward"] >= TARGET
    return result


def _table(title: str, runs: list[dict[str, Any]]) -> None:
    print(title)
    print("seed  wall s   steps  reward")
    for r in runs:
        print(f"{r['seed']:4d} {r['wall_s']:7.2f} {r['env_steps']:7d} {r['reward']:7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON"))
    args = parser.parse_args()
    machine = print_machine()
    with tempfile.TemporaryDirectory(prefix="rlconf_solve_") as local_dir:
        runs = [ours(seed, local_dir) for seed in args.seeds]
    python = reference_python(args.sb3_python, "sb3_contrib")
    references = [sb3(seed, python) for seed in args.seeds] if python else []
    _table(f"rlconf PPO + LSTM ({JOB.relative_to(ROOT)})", runs)
    summary: dict[str, Any] = {
        "machine": machine,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_env_steps": statistics.median(r["env_steps"] for r in runs),
        "median_reward": statistics.median(r["reward"] for r in runs),
        "all_solved": all(r["solved"] for r in runs),
        "runs": runs,
    }
    if references:
        _table("sb3-contrib RecurrentPPO (zoo settings)", references)
        add_reference(summary, references)
        summary["sb3_median_reward"] = statistics.median(r["reward"] for r in references)
    else:
        print("sb3-contrib not found (give --sb3-python): no reference run, no ratio")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
