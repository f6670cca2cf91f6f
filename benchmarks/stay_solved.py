"""Do the tuned off-policy runs stay solved? A user who trains for a fixed budget should keep
what was learnt: for each tuned file and seed, train for the whole budget (100k env steps on
CartPole, 20k on Pendulum) with the file's greedy evaluation after every iteration, and report
where the evaluation first reached the file's target (the issue's: 450 on CartPole, -250 on
Pendulum; `pendulum-sac.yaml` stops at -200, above it), the lowest evaluation from there to the
end, and every evaluation that fell below the target after the first solve. A run stays solved
when there is none.

With `--sb3-python`, Stable-Baselines3 runs side by side with its zoo settings, evaluated the
same way and for the same budget: DQN on CartPole-v1 (`sb3_zoo_runs.py --trace`, target 450)
and SAC on Pendulum-v1 (`sb3_pendulum_sac.py --trace`, target -250).

Each run is a process of its own, `--jobs` at a time (env steps and evaluations do not depend
on it, wall times do). Prints the machine, a table, then one JSON object on its last line.

    python benchmarks/stay_solved.py [--files cartpole-dqn pendulum-sac] [--seeds 0 1 2 3 4]
        [--jobs 2] [--sb3-python PATH] [--config '{"lr": 0.001}'] [--budget 40000]

`--config` overrides settings of every file run (to try others); `--budget` replaces every
file's budget (a shorter screen of settings that tend to fall back early).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cli_runs import ROOT, reference_python, reference_run
from machine import print_machine

#: The tuned files and their budgets (env steps), as the off-policy learning issue sets them.
BUDGETS = {
    "cartpole-dqn": 100_000,
    "pendulum-sac": 20_000,
    "pendulum-td3": 20_000,
    "pendulum-ddpg": 20_000,
}
#: The reference of each file that has one: (script, extra arguments).
REFERENCES = {
    "cartpole-dqn": ("sb3_zoo_runs.py", ["--algo", "dqn"]),
    "pendulum-sac": ("sb3_pendulum_sac.py", []),
}

# One run in a child process: the file's experiment with the seed and overrides, trained to
# the budget, printing its (env steps, greedy evaluation mean) curve as one JSON line.
_RUN = """
import json
from rlconf.experiment import load_experiments
(experiment,) = load_experiments({file!r})
config = experiment.config.copy().update_from_dict(json.loads({overrides!r}))
algo = config.debugging(seed={seed}).build()
curve = []
try:
    while not curve or curve[-1][0] < {budget}:
        result = algo.train()
        curve.append([int(result["timesteps_total"]),
                      round(float(result["evaluation"]["episode_reward_mean"]), 1)])
finally:
    algo.stop()
print(json.dumps(curve))
"""


#: The greedy evaluation mean each file must reach and keep, as the off-policy learning issue
#: sets them (a file may stop above its target: pendulum-sac.yaml does, for its checkpoint).
TARGETS = {
    "cartpole-dqn": 450.0,
    "pendulum-sac": -250.0,
    "pendulum-td3": -250.0,
    "pendulum-ddpg": -250.0,
}


def verdict(curve: list[list[float]], target: float) -> dict[str, Any]:
    """Where ``curve`` (``[env steps, evaluation]`` pairs) first reached ``target``, its lowest
    evaluation from there on, and the evaluations below ``target`` after that."""
    first = next((i for i, (_, score) in enumerate(curve) if score >= target), None)
    if first is None:
        return {"solved_at": None, "lowest_after": None, "below_after": [], "stays": False}
    after = curve[first:]
    below = [[int(steps), score] for steps, score in after if score < target]
    return {
        "solved_at": int(curve[first][0]),
        "lowest_after": min(score for _, score in after),
        "below_after": below,
        "stays": not below,
    }


def ours(name: str, seed: int, budget: int, overrides: str) -> dict[str, Any]:
    file = ROOT / "examples" / "tuned" / f"{name}.yaml"
    code = _RUN.format(file=str(file), overrides=overrides, seed=seed, budget=budget)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{name} seed {seed}: exit {done.returncode}\n{done.stderr[-2000:]}")
    curve = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "file": name,
        "side": "rlconf",
        "seed": seed,
        **verdict(curve, TARGETS[name]),
        "curve": curve,
    }


def reference(name: str, seed: int, budget: int, python: str) -> dict[str, Any]:
    script, extra = REFERENCES[name]
    result = reference_run(
        ROOT / "benchmarks" / script, seed, python, [*extra, "--trace", str(budget)]
    )
    curve = result["trace"]
    target = float(result["target"])
    return {"file": name, "side": "SB3", "seed": seed, **verdict(curve, target), "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", choices=sorted(BUDGETS), default=list(BUDGETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sb3-python", default=None)
    parser.add_argument("--config", default="{}", help="JSON overrides of every file run")
    parser.add_argument("--budget", type=int, default=None, help="env steps of every run")
    args = parser.parse_args()
    print_machine()
    sb3 = reference_python(args.sb3_python, "stable_baselines3")

    jobs: list[Any] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for name in args.files:
            for seed in args.seeds:
                budget = args.budget or BUDGETS[name]
                jobs.append(pool.submit(ours, name, seed, budget, args.config))
                if sb3 is not None and name in REFERENCES:
                    jobs.append(pool.submit(reference, name, seed, budget, sb3))
        runs = [job.result() for job in jobs]

    print(f"{'file':14} {'side':6} seed  solved at  lowest after  below the target after it")
    for r in runs:
        solved = "-" if r["solved_at"] is None else str(r["solved_at"])
        lowest = "-" if r["lowest_after"] is None else f"{r['lowest_after']:.1f}"
        below = ", ".join(f"{s:.0f} at {n}" for n, s in r["below_after"]) or "none"
        print(f"{r['file']:14} {r['side']:6} {r['seed']:4d} {solved:>10} {lowest:>13}  {below}")
    summary: dict[str, Any] = {}
    for name in args.files:
        for side in ("rlconf", "SB3"):
            mine = [r for r in runs if r["file"] == name and r["side"] == side]
            if mine:
                summary[f"{name} {side}"] = f"{sum(r['stays'] for r in mine)}/{len(mine)} stay"
                print(f"{name} {side}: {summary[f'{name} {side}']}")
    print(json.dumps({"summary": summary, "runs": runs}))


if __name__ == "__main__":
    main()
