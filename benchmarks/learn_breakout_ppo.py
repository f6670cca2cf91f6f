"""PPO on Breakout learning beside Stable-Baselines3 in one run: for each seed,
`rlconf train -f examples/tuned/breakout-ppo.yaml` (CleanRL's ppo_atari settings) and
`sb3_breakout_ppo.py` (SB3's PPO CnnPolicy with the same settings over ``make_atari_env`` and
``VecFrameStack``), each its own process, the sides taking turns (seed 0: ours first; seed 1:
SB3 first; ...) so that a busy machine slows both alike. The learning rate decays linearly to 0
over ``--steps`` on both sides (on ours through ``lr_schedule``).

Goal: the mean training return at ``--steps`` (200k agent steps) over the seeds is at least
SB3's.

What return: whole games, in game points, the mean of the last 100. Both sides learn on lives
(a lost life ends the episode for the value targets) and on rewards clipped to their sign, but
they report differently: SB3's ``Monitor`` sits under its ``AtariWrapper``, so its
``ep_info_buffer`` holds whole games with the game's own points, while our episode metrics
count each life as an episode (``episode_reward_mean`` is the mean of the last 100 lives, in
game points: the runner sums the env's rewards before ``clip_rewards``). So our side runs with
``atari_game_returns.WholeGameReturns`` as its callbacks, which adds up each sub-env's lives
into games and reports ``game_reward_mean`` (the last 100 games) and ``games_total``; SB3's
side writes the same keys from its ``ep_info_buffer``. Comparing the per-life mean with SB3's
per-game mean would favour SB3 by about the lives per game (5 in Breakout). Our table shows
the per-life ``episode_reward_mean`` too.

The returns are read at the last result row, which both sides write after the rollout that
reaches ``--steps`` (1,024 env steps a rollout: 200,704 for 200k).

Each run's results folder is ``<--out>/rlconf-ppo-seed<N>`` or ``<--out>/sb3-ppo-seed<N>``
(``result.json``, ``params.json``; ours also its checkpoint), written under ``<--out>/.partial/``
and moved there when the run is done, with ``benchmark_run.json`` (its wall time, peak RSS and
final returns) written last: run again with the same ``--out`` and the finished runs are kept,
only the others run. Then it prints the machine, a table per seed (each side's return at the
budget, games, wall time, env steps/s), the means and the verdict, draws both sides'
``game_reward_mean`` with ``rlconf plot`` (the seeds of a side as their mean with a min-max
band: their ``params.json`` differ only in the seed) into ``--plot``, and prints one JSON
object on its last line.

SB3 is not a dependency: give an interpreter that has it, ale-py and opencv with --sb3-python
(default: $SB3_PYTHON, else /tmp/sb3venv/bin/python when it exists, else this interpreter when
it can import stable_baselines3). ``--threads 1`` or ``all`` sets ``OMP_NUM_THREADS`` for both
sides; by default each side has its own (SB3: torch's, every core; ours: the runtime's learner
thread policy, every core for a conv net).

    python benchmarks/learn_breakout_ppo.py [--seeds 0 1] [--steps 200000] [--out DIR]
        [--plot FILE.png] [--threads 1|all] [--sb3-python PATH]
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
from workload_settings import ATARI_PPO

from rlconf.results_folders import read_run

JOB = ROOT / "examples" / "tuned" / "breakout-ppo.yaml"
SB3_SCRIPT = ROOT / "benchmarks" / "sb3_breakout_ppo.py"
DEFAULT_SB3_PYTHON = Path("/tmp/sb3venv/bin/python")
SIDES = ("rlconf", "sb3")
#: Our callbacks: whole games from the lives the DeepMind wrappers make episodes of.
CALLBACKS = "benchmarks.atari_game_returns:WholeGameReturns"
GAMES = "game_reward_mean"
LIVES = "episode_reward_mean"
#: Written into a run's folder once the run is done: what a rerun keeps.
RUN_FILE = "benchmark_run.json"


def run_name(side: str, seed: int) -> str:
    return f"{side}-ppo-seed{seed}"


def last_values(folder: Path) -> dict[str, Any]:
    """The last result row's env steps, whole-game mean and games (and, where the run has it,
    the per-life mean)."""
    run = read_run(folder)
    if not run.rows:
        raise RuntimeError(f"{folder}: result.json holds no row")
    last = run.rows[-1]
    return {
        "env_steps": int(last.get("timesteps_total") or 0),
        "game_return": last.get(GAMES),
        "games": int(last.get("games_total") or 0),
        "life_return": last.get(LIVES),
    }


def run_side(side: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run: kept where ``benchmark_run.json`` says it is done with these settings, else
    run into ``.partial/`` and moved into place."""
    folder = args.out / run_name(side, seed)
    done = folder / RUN_FILE
    if done.is_file():
        kept: dict[str, Any] = json.loads(done.read_text())
        if kept.get("steps") != args.steps:
            raise SystemExit(
                f"{folder} holds a run of {kept.get('steps')} env steps, not {args.steps}: "
                "give another --out (or remove that folder)"
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
    if side == "rlconf":
        # The file's schedule ends at its 200k stop; another budget gets its own.
        schedule = [[0, ATARI_PPO.lr], [args.steps, 0.0]]
        r = train(
            JOB,
            seed,
            str(partial),
            stop={"timesteps_total": args.steps},
            config={"callbacks": CALLBACKS, "lr_schedule": schedule},
        )
        r.logdir.rename(folder)
        partial.rmdir()
        wall_s, rss = r.wall_s, r.peak_rss_mb
    else:
        extra = ["--logdir", str(partial), "--steps", str(args.steps)]
        result = reference_run(SB3_SCRIPT, seed, args.sb3_python, extra)
        partial.rename(folder)
        wall_s, rss = result["wall_s"], result["peak_rss_mb"]
    if not any(partial.parent.iterdir()):
        partial.parent.rmdir()
    values = last_values(folder)
    run = {
        "side": side,
        "seed": seed,
        "steps": args.steps,
        "folder": str(folder),
        "wall_s": wall_s,
        "peak_rss_mb": rss,
        "env_steps_per_s": round(values["env_steps"] / wall_s, 1),
        **values,
    }
    done.write_text(json.dumps(run) + "\n")
    print(
        f"seed {seed} {side}: {wall_s:.0f} s, {GAMES} at {values['env_steps']}: "
        f"{values['game_return']}",
        file=sys.stderr,
        flush=True,
    )
    return run


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per side the mean whole-game return at the budget over the seeds and the median wall
    time; ours minus SB3's, ours over SB3's (where SB3's is positive), and the goal."""
    summary: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in runs if r["side"] == side]
        returns = [r["game_return"] for r in mine]
        complete = [float(v) for v in returns if v is not None]
        summary[f"{side}_mean_return"] = (
            statistics.fmean(complete) if complete and len(complete) == len(returns) else None
        )
        summary[f"{side}_median_wall_s"] = statistics.median(r["wall_s"] for r in mine)
    ours, theirs = summary["rlconf_mean_return"], summary["sb3_mean_return"]
    both = ours is not None and theirs is not None
    summary["difference"] = round(ours - theirs, 2) if both else None
    summary["ratio"] = round(ours / theirs, 3) if both and theirs > 0 else None
    summary["pass"] = both and ours >= theirs
    return summary


def print_table(runs: list[dict[str, Any]], summary: dict[str, Any], steps: int) -> None:
    print(
        f"\nmean return of the last 100 whole games (game points) at {steps} env steps, and "
        "wall time"
    )
    print("seed  side     env steps  games/100  games  per life   wall s  steps/s  RSS MB")
    for seed in sorted({r["seed"] for r in runs}):
        for r in [r for r in runs if r["seed"] == seed]:
            print(
                f"{seed:4d}  {r['side']:7s} {r['env_steps']:9d} {_number(r['game_return'], 10)} "
                f"{r['games']:6d} {_number(r['life_return'], 9)} {r['wall_s']:8.1f} "
                f"{r['env_steps_per_s']:8.1f} {r['peak_rss_mb']:7.1f}"
            )
    ours, theirs = summary["rlconf_mean_return"], summary["sb3_mean_return"]
    print(f"mean over the seeds: rlconf {_number(ours, 0)}, SB3 {_number(theirs, 0)}")
    print(
        f"median wall s: rlconf {summary['rlconf_median_wall_s']:.1f}, "
        f"SB3 {summary['sb3_median_wall_s']:.1f}"
    )
    print(
        f"rlconf / SB3: {summary['ratio']} (difference {summary['difference']}); goal: "
        f"rlconf's mean >= SB3's: {'pass' if summary['pass'] else 'FAIL'}"
    )


def _number(value: float | None, width: int) -> str:
    return f"{value:{width}.2f}" if value is not None else f"{'n/a':>{width}}"


def plot(folders: list[Path], out: Path) -> None:
    """Both sides' whole-game returns with ``rlconf plot``."""
    command = [sys.executable, "-m", "rlconf.cli", "plot", *map(str, folders), "--out", str(out)]
    command += ["--metric", GAMES]
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
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=200_000, help="agent (env) steps a run")
    parser.add_argument("--out", type=Path, default=None, help="folder of the runs' folders")
    parser.add_argument("--plot", type=Path, default=None, help="the figure to write")
    parser.add_argument("--threads", choices=["1", "all"], default=None)
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON"))
    args = parser.parse_args()
    if args.steps <= 0:
        parser.error(f"--steps {args.steps}: give a positive number of env steps")
    args.sb3_python = sb3_interpreter(args.sb3_python)
    if args.sb3_python is None:
        parser.error(
            "no interpreter with stable_baselines3: give one that has it, ale-py and opencv "
            "with --sb3-python (or $SB3_PYTHON)"
        )
    budget = f"{args.steps // 1000}k" if args.steps % 1000 == 0 else str(args.steps)
    if args.out is None:
        args.out = Path.home() / "rlconf_results" / f"learn_breakout_ppo_{budget}"
    if args.plot is None:
        args.plot = ROOT / "benchmarks" / "results" / f"breakout-ppo-{budget}.png"
    args.out = args.out.expanduser().resolve()
    if args.threads is not None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        threads = (cores or os.cpu_count() or 1) if args.threads == "all" else 1
        # Set before torch is imported here too, so that the header shows the sides' count.
        os.environ["OMP_NUM_THREADS"] = str(threads)
    from machine import print_machine

    machine = print_machine()
    print(
        f"seeds {args.seeds}, {args.steps} env steps each; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} "
        f"({'for both sides' if args.threads else 'each side its own default'}); SB3 under "
        f"{args.sb3_python}; runs in {args.out}"
    )
    runs = []
    for turn, seed in enumerate(args.seeds):
        for side in SIDES if turn % 2 == 0 else SIDES[::-1]:
            runs.append(run_side(side, seed, args))
    summary = summarize(runs)
    print_table(runs, summary, args.steps)
    folders = [args.out / run_name(side, seed) for side in SIDES for seed in args.seeds]
    plot(folders, args.plot)
    print(
        json.dumps(
            {
                "machine": machine,
                "steps": args.steps,
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
