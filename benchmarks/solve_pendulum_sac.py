"""The SAC main job, timed as a user sees it and side by side with Stable-Baselines3:
`rlconf train -f examples/tuned/pendulum-sac.yaml --stop '{"evaluation/episode_reward_mean": -250}'`
(SAC on Pendulum-v1 on the embedded default until the greedy evaluation, 10 episodes after
every 1,000 sampled steps, has a mean return of at least -250: the target both sides are timed
to; the file itself trains on to -200, so that the checkpoint it ends with re-evaluates at -250
or better), one process per seed; then, on the same machine in the same run,
`sb3_pendulum_sac.py` (Stable-Baselines3's SAC with its zoo settings, evaluated the same way),
one process per seed.

For each run: whole-process wall time (from starting the command to its exit), env steps
sampled for training when the target was first reached, the final greedy evaluation mean,
gradient updates per second of training time (ours) and the process's peak RSS. Then the
medians and the ratio of the median wall times (ours / SB3's).

Target: wall-time ratio <= 0.5 at no more env steps than SB3 needs. SB3 is not a dependency:
give an interpreter that has it with --sb3-python (default: this one, when it can import
stable_baselines3; otherwise only our side runs). Prints the machine, a table, then one JSON
object on its last line.

    python benchmarks/solve_pendulum_sac.py [--seeds 0 1 2] [--sb3-python PATH]
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

SAC_JOB = ROOT / "examples" / "tuned" / "pendulum-sac.yaml"
SB3_SCRIPT = ROOT / "benchmarks" / "sb3_pendulum_sac.py"
TARGET = -250.0


def ours(seed: int, local_dir: str) -> dict[str, Any]:
    r = train(SAC_JOB, seed, local_dir, stop={"evaluation/episode_reward_mean": TARGET})
    last = r.last_result()
    evaluation = last.get("evaluation")
    if not isinstance(evaluation, dict) or "episode_reward_mean" not in evaluation:
        raise RuntimeError(f"seed {seed}: no evaluation in the last result of {r.logdir}")
    info: Any = last.get("info", {})
    learner = info.get("learner", {}).get("default_policy", {})
    updates = int(learner.get("num_grad_updates", 0))
    train_s = float(last.get("time_total_s", 0.0))  # type: ignore[arg-type]
    eval_reward = float(evaluation["episode_reward_mean"])
    return {
        "seed": seed,
        "solved": eval_reward >= TARGET,
        "wall_s": r.wall_s,
        "env_steps": r.env_steps,
        "eval_reward": eval_reward,
        "grad_updates": updates,
        "updates_per_s": round(updates / train_s, 1) if train_s else None,
        "peak_rss_mb": r.peak_rss_mb,
    }


def sb3(seed: int, python: str) -> dict[str, Any]:
    result = reference_run(SB3_SCRIPT, seed, python)
    result["solved"] = result["eval_reward"] >= TARGET
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON"))
    args = parser.parse_args()
    machine = print_machine()
    with tempfile.TemporaryDirectory(prefix="rlconf_solve_") as local_dir:
        runs = [ours(seed, local_dir) for seed in args.seeds]
    python = reference_python(args.sb3_python, "stable_baselines3")
    references = [sb3(seed, python) for seed in args.seeds] if python else []
    print("rlconf SAC (examples/tuned/pendulum-sac.yaml)")
    print("seed  wall s   steps  eval mean  updates/s  RSS MB")
    for r in runs:
        print(
            f"{r['seed']:4d} {r['wall_s']:7.2f} {r['env_steps']:7d} {r['eval_reward']:10.1f} "
            f"{r['updates_per_s'] or 0:10.1f} {r['peak_rss_mb']:7.1f}"
        )
    summary: dict[str, Any] = {
        "machine": machine,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_env_steps": statistics.median(r["env_steps"] for r in runs),
        "median_updates_per_s": statistics.median(r["updates_per_s"] or 0 for r in runs),
        "max_peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "all_solved": all(r["solved"] for r in runs),
        "runs": runs,
    }
    if references:
        print("Stable-Baselines3 SAC (zoo settings)")
        print("seed  wall s   steps  eval mean")
        for r in references:
            print(f"{r['seed']:4d} {r['wall_s']:7.2f} {r['env_steps']:7d} {r['eval_reward']:10.1f}")
        add_reference(summary, references)
    else:
        print("Stable-Baselines3 not found (give --sb3-python): no reference run, no ratio")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
