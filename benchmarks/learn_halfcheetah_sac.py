"""SAC on HalfCheetah-v5 learning beside Stable-Baselines3 in one run: for each seed,
`rlconf train -f examples/tuned/halfcheetah-sac.yaml` (SB3's SAC defaults, a greedy evaluation
of 5 episodes every 10k env steps) and `sb3_halfcheetah_sac.py` (SB3's SAC with the same
settings and SB3's own ``EvalCallback`` at the same env steps, deterministic, 5 episodes), each
its own process, the sides taking turns (seed 0: ours first; seed 1: SB3 first; ...) so that a
busy machine slows both alike.

Goal: the mean evaluation return at ``--steps`` (50k) over the seeds is at least SB3's.

Each run's results folder is ``<--out>/rlconf-sac-seed<N>`` or ``<--out>/sb3-sac-seed<N>``
(``result.json``, ``params.json``; ours also its checkpoint), written under ``<--out>/.partial/``
and moved there when the run is done, with ``benchmark_run.json`` (its wall time, peak RSS and
evaluations) written last: run again with the same ``--out`` and the finished runs are kept,
only the others run. Then it prints the machine, the evaluation return at ``--steps`` of each
side per seed and their means, the difference and ratio, the wall time of each run, the mean
of each side at every evaluation, draws both sides' curves with ``rlconf plot`` (the seeds of
a side as their mean with a min-max band: their ``params.json`` differ only in the seed) into
``--plot``, and prints one JSON object on its last line.

SB3 is not a dependency: give an interpreter that has it and ``mujoco`` with --sb3-python
(default: $SB3_PYTHON, else /tmp/sb3venv/bin/python when it exists, else this interpreter when
it can import stable_baselines3). ``--threads 1`` or ``all`` sets ``OMP_NUM_THREADS`` for both
sides; by default each side has its own (SB3: torch's, every core; ours: the runtime's learner
thread policy, every core for [256, 256] networks).

    python benchmarks/learn_halfcheetah_sac.py [--seeds 0 1 2] [--steps 50000]
        [--eval-every 10000] [--out DIR] [--plot FILE.png] [--threads 1|all]
        [--sb3-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_runs import ROOT, reference_python, reference_run, train

from rlconf.results_folders import read_run

JOB = ROOT / "examples" / "tuned" / "halfcheetah-sac.yaml"
SB3_SCRIPT = ROOT / "benchmarks" / "sb3_halfcheetah_sac.py"
DEFAULT_SB3_PYTHON = Path("/tmp/sb3venv/bin/python")
SIDES = ("rlconf", "sb3")
EVALUATION = "evaluation/episode_reward_mean"
TRAINING = "episode_reward_mean"
#: Env steps per result row (an iteration of ours), when the evaluation interval allows.
REPORT_EVERY = 1000
#: Written into a run's folder once the run is done: what a rerun keeps.
RUN_FILE = "benchmark_run.json"


def reporting(eval_every: int) -> tuple[int, int]:
    """Env steps per result row and the evaluation interval in rows: rows of 1,000 env steps
    where the evaluations fall on them, else one row per evaluation."""
    report_every = REPORT_EVERY if eval_every % REPORT_EVERY == 0 else eval_every
    return report_every, eval_every // report_every


def run_name(side: str, seed: int) -> str:
    return f"{side}-sac-seed{seed}"


def evaluations(folder: Path) -> list[list[int | float]]:
    """``[[env steps, evaluation mean], ...]`` of a results folder."""
    steps, values = read_run(folder).series(EVALUATION)
    return [[int(s), v] for s, v in zip(steps, values, strict=True)]


def run_side(side: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run: kept where ``benchmark_run.json`` says it is done with these settings, else
    run into ``.partial/`` and moved into place."""
    folder = args.out / run_name(side, seed)
    done = folder / RUN_FILE
    if done.is_file():
        kept: dict[str, Any] = json.loads(done.read_text())
        asked = {"steps": args.steps, "eval_every": args.eval_every}
        if {k: kept.get(k) for k in asked} != asked:
            raise SystemExit(
                f"{folder} holds a run of {kept.get('steps')} env steps evaluated every "
                f"{kept.get('eval_every')}, not {args.steps} and {args.eval_every}: give "
                "another --out (or remove that folder)"
            )
        print(f"seed {seed} {side}: kept {folder}", file=sys.stderr, flush=True)
        return kept
    # A folder without RUN_FILE, or a partial one, is what a crash left: run it again.
    partial = args.out / ".partial" / run_name(side, seed)
    for stale in (folder, partial):
        if stale.exists():
            shutil.rmtree(stale)
    partial.mkdir(parents=True)
    print(f"seed {seed} {side}: running into {partial}", file=sys.stderr, flush=True)
    report_every, interval = reporting(args.eval_every)
    if side == "rlconf":
        r = train(
            JOB,
            seed,
            str(partial),
            stop={"timesteps_total": args.steps},
            config={
                "min_sample_timesteps_per_reporting": report_every,
                "evaluation_interval": interval,
            },
        )
        r.logdir.rename(folder)
        partial.rmdir()
        wall_s, rss = r.wall_s, r.peak_rss_mb
    else:
        extra = ["--logdir", str(partial), "--steps", str(args.steps)]
        extra += ["--eval-every", str(args.eval_every), "--report-every", str(report_every)]
        result = reference_run(SB3_SCRIPT, seed, args.sb3_python, extra)
        partial.rename(folder)
        wall_s, rss = result["wall_s"], result["peak_rss_mb"]
    if not any(partial.parent.iterdir()):
        partial.parent.rmdir()
    curve = evaluations(folder)
    last_step, last_value = curve[-1] if curve else (None, None)
    run = {
        "side": side,
        "seed": seed,
        "steps": args.steps,
        "eval_every": args.eval_every,
        "folder": str(folder),
        "wall_s": wall_s,
        "peak_rss_mb": rss,
        "eval_step": last_step,
        "eval_return": last_value,
        "evaluations": curve,
    }
    done.write_text(json.dumps(run) + "\n")
    print(
        f"seed {seed} {side}: {wall_s:.0f} s, evaluation at {last_step}: {last_value}",
        file=sys.stderr,
        flush=True,
    )
    return run


def at_budget(run: dict[str, Any], steps: int) -> float | None:
    """The run's evaluation return at ``steps`` env steps; None where it has none there."""
    value = run["eval_return"]
    return float(value) if run["eval_step"] == steps and value is not None else None


def summarize(runs: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """Per side the mean evaluation return at ``steps`` and the median wall time; ours minus
    SB3's, ours over SB3's (where SB3's is positive), and the goal."""
    summary: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        returns = [at_budget(r, steps) for r in mine]
        complete = [v for v in returns if v is not None]
        summary[f"{side}_mean_return"] = (
            statistics.fmean(complete) if complete and len(complete) == len(returns) else None
        )
        summary[f"{side}_median_wall_s"] = statistics.median(r["wall_s"] for r in mine)
    ours, theirs = summary["rlconf_mean_return"], summary["sb3_mean_return"]
    both = ours is not None and theirs is not None
    summary["difference"] = round(ours - theirs, 1) if both else None
    summary["ratio"] = round(ours / theirs, 3) if both and theirs > 0 else None
    summary["pass"] = both and ours >= theirs
    return summary


def print_tables(runs: list[dict[str, Any]], summary: dict[str, Any], steps: int) -> None:
    seeds = sorted({r["seed"] for r in runs})
    by = {(r["side"], r["seed"]): r for r in runs}
    print(f"\nevaluation return at {steps} env steps (greedy, 5 episodes), and wall time")
    print("seed   rlconf      SB3  rlconf-SB3   rlconf wall s   SB3 wall s")
    for seed in seeds:
        ours, theirs = by["rlconf", seed], by["sb3", seed]
        a, b = at_budget(ours, steps), at_budget(theirs, steps)
        diff = f"{a - b:11.1f}" if a is not None and b is not None else f"{'n/a':>11}"
        print(
            f"{seed:4d} {_number(a)} {_number(b)} {diff} {ours['wall_s']:15.1f} "
            f"{theirs['wall_s']:12.1f}"
        )
    a, b = summary["rlconf_mean_return"], summary["sb3_mean_return"]
    difference = summary["difference"]
    print(f"mean {_number(a)} {_number(b)} {_number(difference, 11)}")
    print(
        f"median wall s: rlconf {summary['rlconf_median_wall_s']:.1f}, "
        f"SB3 {summary['sb3_median_wall_s']:.1f}"
    )
    print(
        f"rlconf / SB3: {summary['ratio']} (difference {difference}); goal: rlconf's mean "
        f">= SB3's: {'pass' if summary['pass'] else 'FAIL'}"
    )
    print("\nmean evaluation return over the seeds at each evaluation")
    print(" env steps   rlconf      SB3")
    points = sorted({int(s) for r in runs for s, _ in r["evaluations"]})
    for point in points:
        means = []
        for side in SIDES:
            mine = [r for r in runs if r["side"] == side]
            values = [v for r in mine for s, v in r["evaluations"] if s == point]
            means.append(statistics.fmean(values) if len(values) == len(seeds) else None)
        print(f"{point:10d} {_number(means[0])} {_number(means[1])}")


def _number(value: float | None, width: int = 8) -> str:
    return f"{value:{width}.1f}" if value is not None else f"{'n/a':>{width}}"


def plot(folders: list[Path], out: Path) -> None:
    """Both sides' curves with ``rlconf plot``: the evaluation return, and the training
    return where a run has finished an episode."""
    metrics = [EVALUATION]
    if any(read_run(folder).series(TRAINING)[0] for folder in folders):
        metrics.append(TRAINING)
    command = [sys.executable, "-m", "rlconf.cli", "plot", *map(str, folders), "--out", str(out)]
    for metric in metrics:
        command += ["--metric", metric]
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(command, check=True, cwd=ROOT)


def sb3_interpreter(given: str | None) -> str | None:
    if given:
        return given
    if DEFAULT_SB3_PYTHON.exists():
        return str(DEFAULT_SB3_PYTHON)
    return reference_python(None, "stable_baselines3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=50_000, help="env steps of each run")
    parser.add_argument("--eval-every", type=int, default=10_000, help="env steps")
    parser.add_argument("--out", type=Path, default=None, help="folder of the runs' folders")
    parser.add_argument("--plot", type=Path, default=None, help="the figure to write")
    parser.add_argument("--threads", choices=["1", "all"], default=None)
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON"))
    args = parser.parse_args()
    if args.eval_every <= 0 or args.steps % args.eval_every:
        parser.error(
            f"--steps {args.steps} must be a multiple of --eval-every {args.eval_every} "
            "(an evaluation at the budget is what is compared)"
        )
    args.sb3_python = sb3_interpreter(args.sb3_python)
    if args.sb3_python is None:
        parser.error(
            "no interpreter with stable_baselines3: give one that has it and mujoco with "
            "--sb3-python (or $SB3_PYTHON)"
        )
    budget = f"{args.steps // 1000}k" if args.steps % 1000 == 0 else str(args.steps)
    if args.out is None:
        args.out = Path.home() / "rlconf_results" / f"learn_halfcheetah_sac_{budget}"
    if args.plot is None:
        args.plot = ROOT / "benchmarks" / "results" / f"halfcheetah-sac-{budget}.png"
    args.out = args.out.expanduser().resolve()
    if args.threads is not None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        threads = (cores or os.cpu_count() or 1) if args.threads == "all" else 1
        # Set before torch is imported here too, so that the header shows the sides' count.
        os.environ["OMP_NUM_THREADS"] = str(threads)
    from machine import print_machine

    machine = print_machine()
    print(
        f"seeds {args.seeds}, {args.steps} env steps each, evaluated every {args.eval_every}; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} "
        f"({'for both sides' if args.threads else 'each side its own default'}); SB3 under "
        f"{args.sb3_python}; runs in {args.out}"
    )
    runs = []
    for turn, seed in enumerate(args.seeds):
        for side in SIDES if turn % 2 == 0 else SIDES[::-1]:
            runs.append(run_side(side, seed, args))
    summary = summarize(runs, args.steps)
    print_tables(runs, summary, args.steps)
    folders = [args.out / run_name(side, seed) for side in SIDES for seed in args.seeds]
    plot(folders, args.plot)
    print(
        json.dumps(
            {
                "machine": machine,
                "steps": args.steps,
                "eval_every": args.eval_every,
                "seeds": args.seeds,
                "threads": args.threads or "default",
                "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                "sb3_python": args.sb3_python,
                "plot": str(args.plot),
                **summary,
                "runs": runs,
            }
        )
    )


if __name__ == "__main__":
    main()
