"""Shared by the whole-process benchmarks (solve_cartpole.py, solve_cartpole_dqn.py): run
`rlconf train -f <tuned file>` for one seed as its own process, as a user would, and measure it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The final line of a run that met a stop criterion.
_DONE = re.compile(r"^done\b", re.M)
_RESULTS_IN = re.compile(r"^\S+: results in (.+)$")


@dataclass(frozen=True)
class TrainRun:
    """One finished `rlconf train` process."""

    seed: int
    # From starting the command to its exit (after the final checkpoint).
    wall_s: float
    # To the first progress line (the first `train()` result); the wall time if none came.
    first_result_s: float
    # `timesteps_total` and `episode_reward_mean` of the last result (in result.json).
    env_steps: int
    reward: float
    peak_rss_mb: float
    # The run's results directory (result.json, progress.csv, checkpoints).
    logdir: Path

    def last_result(self) -> dict[str, object]:
        """The last line of the run's result.json."""
        lines = (self.logdir / "result.json").read_text().splitlines()
        result: dict[str, object] = json.loads(lines[-1])
        return result


def train(
    job: Path,
    seed: int,
    local_dir: str,
    stop: dict[str, float] | None = None,
    config: dict[str, Any] | None = None,
) -> TrainRun:
    """Run `rlconf train -f job` with the seed (and, with ``config``, those keys) overridden
    through `--config` (and, with ``stop``, those stop criteria merged over the file's through
    `--stop`)."""
    command = [
        sys.executable,
        "-m",
        "rlconf.cli",
        "train",
        "-f",
        str(job),
        "--config",
        json.dumps({**(config or {}), "seed": seed}),
        "--local-dir",
        local_dir,
    ]
    if stop is not None:
        command += ["--stop", json.dumps(stop)]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    first_result = None
    output = []
    for line in process.stdout:
        output.append(line)
        if first_result is None and line.startswith("iter "):
            first_result = time.perf_counter() - start
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"seed {seed}: exit {process.returncode}\n{''.join(output[-20:])}")
    if _DONE.search("".join(output[-10:])) is None:
        raise RuntimeError(f"seed {seed}: no final line\n{''.join(output[-20:])}")
    results_in = next((m for line in output if (m := _RESULTS_IN.match(line.rstrip()))), None)
    if results_in is None:
        raise RuntimeError(f"seed {seed}: no results directory\n{''.join(output[:5])}")
    logdir = Path(results_in.group(1))
    last = json.loads((logdir / "result.json").read_text().splitlines()[-1])
    # null before any episode has ended
    reward = last["episode_reward_mean"]
    return TrainRun(
        seed=seed,
        wall_s=round(wall, 2),
        first_result_s=round(first_result or wall, 2),
        env_steps=int(last["timesteps_total"]),
        reward=float("nan") if reward is None else float(reward),
        # ru_maxrss is in KiB on Linux
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),
        logdir=logdir,
    )


def solve_main(
    description: str, run: Callable[[int, str], dict[str, Any]], reward_key: str, reward_title: str
) -> None:
    """The command line of a solve benchmark: run each seed of ``--seeds`` (``run(seed,
    local_dir)``), print a table (the reward column is ``reward_key``), then the summary as
    one JSON line."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlconf_solve_") as local_dir:
        runs = [run(seed, local_dir) for seed in args.seeds]
    width = max(7, len(reward_title))
    print(f"seed  wall s  first s   steps {reward_title:>{width}}  RSS MB")
    for r in runs:
        print(
            f"{r['seed']:4d} {r['wall_s']:7.2f} {r['first_result_s']:8.2f} {r['env_steps']:7d} "
            f"{r[reward_key]:{width}.1f} {r['peak_rss_mb']:7.1f}"
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


def reference_run(
    script: Path, seed: int, python: str, extra: Sequence[str] = ()
) -> dict[str, Any]:
    """Run a reference script (``sb3_*.py``) for one seed under ``python`` (with ``extra``
    arguments), as its own process: its last stdout line (JSON) plus the whole-process
    ``wall_s`` and ``peak_rss_mb`` (of that process alone, from ``wait4``)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [python, str(script), *extra, "--seed", str(seed)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(
            f"{script.name} seed {seed}: exit {process.returncode}\n{output[-2000:]}"
        )
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    result["wall_s"] = round(wall, 2)
    # ru_maxrss is in KiB on Linux
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    return result


def reference_python(given: str | None, module: str) -> str | None:
    """The interpreter of the reference runs: the one given, else this one when it can import
    ``module``; None when neither (only our side runs)."""
    if given:
        return given
    if importlib.util.find_spec(module) is not None:
        return sys.executable
    return None


def add_reference(summary: dict[str, Any], references: list[dict[str, Any]]) -> None:
    """The reference runs' medians in ``summary`` (``sb3_*``) and the ratio of the median wall
    times (ours / the reference's), printed with the env steps of both."""
    sb3_wall = statistics.median(r["wall_s"] for r in references)
    summary["sb3_median_wall_s"] = sb3_wall
    summary["sb3_median_env_steps"] = statistics.median(r["env_steps"] for r in references)
    summary["sb3_all_solved"] = all(r["solved"] for r in references)
    summary["sb3_runs"] = references
    summary["wall_ratio"] = round(summary["median_wall_s"] / sb3_wall, 3)
    print(
        f"wall-time ratio (rlconf / SB3, medians): {summary['wall_ratio']:.2f}; env steps "
        f"{summary['median_env_steps']:.0f} vs {summary['sb3_median_env_steps']:.0f}"
    )
