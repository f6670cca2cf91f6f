"""Our main jobs side by side with Stable-Baselines3 on CartPole-v1, in one process tree: each
run is a process of its own, ours and SB3's alternating seed by seed (ours seed 0, SB3 seed 0,
ours seed 1, ...), so that a busy machine slows both alike.

- ppo: `rlconf train -f examples/tuned/cartpole-ppo.yaml` (``solve_cartpole.py``: until the
  mean return over the last 100 episodes reaches 450) against SB3's PPO with the RL Zoo's
  CartPole-v1 settings, stopping the same way (``sb3_zoo_runs.py --algo ppo``).
- dqn: `rlconf train -f examples/tuned/cartpole-dqn.yaml` (``solve_cartpole_dqn.py``: until the
  greedy evaluation, 10 episodes after every 2,000 sampled steps, reaches 450) against SB3's DQN
  with the zoo's settings, evaluated and stopped the same way (``sb3_zoo_runs.py --algo dqn``).

For each run: whole-process wall time (from starting the command to its exit), env steps
sampled for training, the return that stopped it, and the process's peak RSS; then the medians
and the ratio of the median wall times (ours / SB3's). Torch runs one thread in every run
unless ``OMP_NUM_THREADS`` is set (``--threads`` sets it for every run).

Targets: wall-time ratio <= 0.35 for PPO and <= 0.2 for DQN, every seed of ours solved, on the
development machine under every ``ATEN_CPU_CAPABILITY`` and torch thread count (1, 2). SB3 is
not a dependency: it is the benchmark-only ``sb3`` extra (``pip install -e '.[sb3]'``), or give
an interpreter that has it with --sb3-python (default: $SB3_PYTHON, else /tmp/sb3env/bin/python
when it exists, else this interpreter when it can import stable_baselines3). Prints the machine,
a table per algorithm, then one JSON object on its last line.

    python benchmarks/vs_sb3.py [--seeds 0 1 2] [--algo ppo|dqn|both] [--sb3-python PATH]
        [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import solve_cartpole
import solve_cartpole_dqn
from cli_runs import ROOT, reference_python, reference_run
from machine import print_machine

SB3_SCRIPT = ROOT / "benchmarks" / "sb3_zoo_runs.py"
DEFAULT_SB3_PYTHON = Path("/tmp/sb3env/bin/python")
#: Per algorithm: our run (``run(seed, local_dir)`` of its solve benchmark), the key of the
#: return that stops it, our job file, and the wall-time target (ours / SB3's).
ALGOS: dict[str, tuple[Callable[[int, str], dict[str, Any]], str, Path, float]] = {
    "ppo": (solve_cartpole.run, "reward", solve_cartpole.MAIN_JOB, 0.35),
    "dqn": (solve_cartpole_dqn.run, "eval_reward", solve_cartpole_dqn.DQN_JOB, 0.2),
}


def sb3_run(algo: str, seed: int, python: str) -> dict[str, Any]:
    """``sb3_zoo_runs.py`` for one seed as its own process under ``python``."""
    return reference_run(SB3_SCRIPT, seed, python, ["--algo", algo])


def our_run(algo: str, seed: int, local_dir: str) -> dict[str, Any]:
    run, reward_key, _, _ = ALGOS[algo]
    r = run(seed, local_dir)
    return {
        "seed": seed,
        "env_steps": r["env_steps"],
        "reward": r[reward_key],
        "solved": r["solved"],
        "wall_s": r["wall_s"],
        "peak_rss_mb": r["peak_rss_mb"],
    }


def compare(algo: str, seeds: list[int], python: str, local_dir: str) -> dict[str, Any]:
    ours: list[dict[str, Any]] = []
    sb3: list[dict[str, Any]] = []
    for seed in seeds:
        ours.append(our_run(algo, seed, local_dir))
        sb3.append(sb3_run(algo, seed, python))
    _, _, job, target = ALGOS[algo]
    print(f"{algo.upper()} on CartPole-v1 to 450: rlconf ({job.relative_to(ROOT)}) vs SB3 (zoo)")
    print("side    seed  wall s   steps  return  RSS MB  solved")
    for mine, theirs in zip(ours, sb3, strict=True):
        for side, r in (("rlconf", mine), ("SB3", theirs)):
            print(
                f"{side:6s} {r['seed']:5d} {r['wall_s']:7.2f} {r['env_steps']:7d} "
                f"{r['reward']:7.1f} {r['peak_rss_mb']:7.1f}  {'yes' if r['solved'] else 'NO'}"
            )
    summary: dict[str, Any] = {}
    for side, runs in (("rlconf", ours), ("sb3", sb3)):
        summary[f"{side}_median_wall_s"] = statistics.median(r["wall_s"] for r in runs)
        summary[f"{side}_median_env_steps"] = statistics.median(r["env_steps"] for r in runs)
        summary[f"{side}_max_peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
        summary[f"{side}_all_solved"] = all(r["solved"] for r in runs)
    ratio = summary["rlconf_median_wall_s"] / summary["sb3_median_wall_s"]
    rss_ratio = summary["rlconf_max_peak_rss_mb"] / summary["sb3_max_peak_rss_mb"]
    passed = ratio <= target and summary["rlconf_all_solved"]
    summary["wall_ratio"] = round(ratio, 3)
    summary["rss_ratio"] = round(rss_ratio, 3)
    summary["target"] = target
    summary["pass"] = passed
    summary["sb3_threads"] = sorted({int(r["threads"]) for r in sb3})
    summary["rlconf_runs"] = ours
    summary["sb3_runs"] = sb3
    print(
        f"medians: rlconf {summary['rlconf_median_wall_s']:.2f} s, "
        f"{summary['rlconf_median_env_steps']:.0f} steps; "
        f"SB3 {summary['sb3_median_wall_s']:.2f} s, {summary['sb3_median_env_steps']:.0f} steps; "
        f"peak RSS (max) {rss_ratio:.2f}x SB3's"
    )
    unsolved = "" if summary["rlconf_all_solved"] else "; a seed of ours did not solve"
    print(
        f"wall-time ratio (rlconf / SB3, medians): {ratio:.2f} "
        f"(target <= {target}: {'pass' if passed else 'FAIL'}{unsolved})"
    )
    if not summary["sb3_all_solved"]:
        print("note: a seed of SB3 did not reach 450 within the zoo's step budget")
    return summary


def sb3_interpreter(given: str | None) -> str | None:
    if given:
        return given
    if DEFAULT_SB3_PYTHON.exists():
        return str(DEFAULT_SB3_PYTHON)
    return reference_python(None, "stable_baselines3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--algo", choices=["ppo", "dqn", "both"], default="both")
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON"))
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of every run")
    args = parser.parse_args()
    python = sb3_interpreter(args.sb3_python)
    if python is None:
        parser.error(
            "Stable-Baselines3 not found: install the benchmark-only extra "
            "(pip install -e '.[sb3]') or give an interpreter that has it with --sb3-python"
        )
    if args.threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    machine = print_machine()
    threads = os.environ.get("OMP_NUM_THREADS")
    print(
        f"runs: OMP_NUM_THREADS={threads or 'unset'} "
        f"({'torch threads as set' if threads else 'torch on 1 thread'} in every run); "
        f"SB3 under {python}"
    )
    algos = ["ppo", "dqn"] if args.algo == "both" else [args.algo]
    summary: dict[str, Any] = {"machine": machine, "omp_num_threads": threads}
    with tempfile.TemporaryDirectory(prefix="rlconf_vs_sb3_") as local_dir:
        for algo in algos:
            summary[algo] = compare(algo, args.seeds, python, local_dir)
    summary["all_pass"] = all(summary[algo]["pass"] for algo in algos)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
