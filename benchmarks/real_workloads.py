"""Real workloads side by side: our runtime against Stable-Baselines3 and against minimal
CleanRL-style PyTorch loops (the limit: the same env and network with nothing around them), on
Atari pixels with the Nature CNN and on MuJoCo with [256, 256]-sized networks.

Rows (the settings of every side in ``workload_settings.py``):

- atari_ppo: PPO on Breakout with CleanRL's ``ppo_atari`` settings (8 envs x 128 steps, 4
  epochs of minibatches of 256, Nature CNN on 84x84x4 frames): ours (``rlconf_workloads.py``:
  ``PPOConfig`` with ``num_envs_per_worker=8``, ``rollout_fragment_length=128``, our DeepMind
  wrappers) and the same config with ``gym_env_vectorize_mode="vector_entry_point"`` (side
  ``rlconf_vec``: the 8 sub-envs as one ale-py ``AtariVectorEnv``, stepped in C++ threads with
  the same preprocessing) vs SB3's PPO ``CnnPolicy`` (``sb3_workloads.py``) vs a CleanRL-style
  loop over a gymnasium ``SyncVectorEnv`` of the same wrapped env (``cleanrl_ppo_atari.py``).
  Goal: >= 1.5x SB3, >= 0.8x the loop.
- sac_halfcheetah, td3_halfcheetah: SAC and TD3 on HalfCheetah-v5 with SB3's defaults (one
  gradient step per env step from step 100 on) vs SB3 vs CleanRL-style loops
  (``cleanrl_continuous.py``). Goal: >= 1.3x SB3, >= 0.9x the loop.
- ppo_halfcheetah_1env, ppo_halfcheetah_4envs (``--rows ppo_halfcheetah``: both): PPO on
  HalfCheetah-v5 with the RL Zoo's settings, 1 and 4 envs, vs SB3. Goal: >= 1.3x SB3.
- dqn_atari: DQN on Breakout (Nature CNN, a replay of 100k transitions of 84x84x4 frames) vs
  SB3's DQN with ``optimize_memory_usage=True``; also the bytes each replay buffer holds per
  stored transition at the end of the run (ours: ``ReplayBuffer.bytes_per_transition()``, the
  bytes its stored rows hold over their number; SB3's, whose arrays are allocated whole: their
  bytes over its size). Goal: bytes <= 1.2x SB3's.
- atari_async: our APPO and IMPALA on Breakout with 2 remote rollout workers (Ray actors, 4
  envs each: atari_ppo's 8 envs split 4+4; fragments of 32 steps, train batches of at least
  256 env steps, each learned on 4 times: every row goes through the learner 4 times, as
  through the sync PPO's 4 epochs, so the learner's work per env step is the same;
  ``workload_settings.AsyncAtariSettings``) vs our sync PPO of atari_ppo
  (``num_workers=0``), on the same machine. The worker process starts Ray for its run
  (``ray.init(num_cpus=3)``: the driver's CPU and one per rollout worker, on however many cores
  the machine has) and shuts it down. Env steps here are those trained (the window counts
  ``num_env_steps_trained``); the peak RSS is the largest single process's (Ray's workers are
  not summed). Goal: APPO and IMPALA each >= 1.3x the sync PPO.

What is measured: env steps per second (one step = one action of every sub-env, 4 frames on
Atari, the same count on every side) over a timed window after a warm-up (learning starts plus
a little, or a first iteration), each side timing its own loop (``workload_settings.Window``:
process start, imports and env creation excluded), and the peak RSS of each side's process.
Each run is a process of its own, running this script in worker mode
(``--worker ROW:SIDE``, one JSON line); the sides of a row take turns run by run (run 0: ours,
SB3, loop; run 1: SB3, loop, ours; ...) on the same seed, so that a busy machine slows all
alike. Then, per row, the medians and the ratios of our median env steps/s to each other
side's.

Every side builds the same Nature CNN ("valid" convolutions, 3,136 features over 84x84x4
frames: ours through 4-element ``conv_filters``): the params column is 1,686,693 on every
side of atari_ppo; on dqn_atari ours is 513 over SB3's Q-network (the catalog model's value
output, which DQN never runs).
Where the sides still differ, as no setting of ours can say otherwise: the zoo's HalfCheetah
PPO normalises rewards too (SB3's ``VecNormalize``), ours observations only
(``MeanStdFilter``), and its log-std starts at -2 where our free log-std starts at 0 (neither
changes the work per step). SB3's DQN skips the network on the epsilon share of its actions;
ours runs it every step.

Torch's threads: by default each side's own (SB3 and the loops: torch's default, every core;
ours: the runtime's learner thread policy); ``--threads 1`` or ``--threads all`` (the usable
cores) sets ``OMP_NUM_THREADS`` for every side. ``ATEN_CPU_CAPABILITY`` is passed on as set (the
header shows it and the kernels torch picked). The goals are meant to hold under 1 thread and
all cores, with the default kernels and with avx2.

SB3 is not a dependency: it is the benchmark-only ``sb3`` extra, or give an interpreter that
has it (with gymnasium, ale-py, mujoco and opencv) with --sb3-python (default: $SB3_PYTHON,
else /tmp/sb3venv/bin/python when it exists, else this interpreter when it can import
stable_baselines3; without one the SB3 side is left out and its goals are not met). Prints the
machine, a table per row, then one JSON object on its last line.

    python benchmarks/real_workloads.py [--rows atari_ppo sac_halfcheetah ...] [--runs 3]
        [--steps 1.0] [--threads 1|all] [--sb3-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from workload_settings import OUR_SIDES, ROW_GROUPS, ROWS, Row, Window

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
DEFAULT_SB3_PYTHON = Path("/tmp/sb3venv/bin/python")


# ------------------------------------------------------------------------------ worker mode


def worker(spec: str, seed: int, scale: float) -> None:
    """Run one side of one row and print its result as one JSON line."""
    name, side = spec.split(":")
    row = ROWS[name]
    if side not in row.sides:
        raise SystemExit(f"--worker {spec}: row {name} has the sides {list(row.sides)}")
    window = Window(row.warmup, round(row.window * scale))
    if side in OUR_SIDES:
        import rlconf_workloads

        result = rlconf_workloads.run(name, seed, window, side)
    elif side == "sb3":
        import sb3_workloads

        result = sb3_workloads.run(name, seed, window)
    elif name == "atari_ppo":
        import cleanrl_ppo_atari

        result = cleanrl_ppo_atari.run(seed, window)
    else:
        import cleanrl_continuous

        result = cleanrl_continuous.run(name, seed, window)
    import torch

    result |= {
        "row": name,
        "side": side,
        "seed": seed,
        "torch": torch.__version__,
        "kernels": torch.backends.cpu.get_cpu_capability(),
    }
    print(json.dumps(result), flush=True)


# ------------------------------------------------------------------------------ the parent


def run_side(
    python: str, name: str, side: str, seed: int, scale: float, env: dict[str, str], limit: float
) -> dict[str, Any]:
    """One worker process; its JSON line plus its peak RSS (``wait4``, that process and the
    processes it waited for)."""
    command = [python, str(SCRIPT), "--worker", f"{name}:{side}", "--seed", str(seed)]
    command += ["--steps", str(scale)]
    with tempfile.TemporaryFile(mode="w+") as errors:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=errors, text=True, cwd=ROOT, env=env
        )
        timer = threading.Timer(limit, process.kill)
        timer.start()
        try:
            assert process.stdout is not None
            output = process.stdout.read()
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        lines = [line for line in output.splitlines() if line.startswith("{")]
        if process.returncode != 0 or not lines:
            errors.seek(0)
            raise RuntimeError(
                f"{name}:{side} seed {seed}: exit {process.returncode} (killed after {limit} s "
                f"if -9)\n{output[-2000:]}{errors.read()[-4000:]}"
            )
    result: dict[str, Any] = json.loads(lines[-1])
    # ru_maxrss is in KiB on Linux
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    return result


def ratio_key(mine: str, side: str, measure: str = "ratio") -> str:
    """The summary key of ``mine``'s median over ``side``'s: ``ratio_vs_sb3`` for our usual
    side, ``ratio_appo_vs_sync_ppo`` for another."""
    return f"{measure}_vs_{side}" if mine == "rlconf" else f"{measure}_{mine}_vs_{side}"


def summarize(row: Row, runs: list[dict[str, Any]], sides: list[str]) -> dict[str, Any]:
    """Per side: the median env steps/s, the largest peak RSS, torch's threads (and the
    median bytes per stored transition); each of the row's ``ours`` over each other side's
    median, against the row's goals."""
    by_side = {side: [r for r in runs if r["side"] == side] for side in sides}
    summary: dict[str, Any] = {"title": row.title, "runs": runs}
    for side, results in by_side.items():
        summary[f"{side}_median_steps_per_s"] = statistics.median(
            r["env_steps_per_s"] for r in results
        )
        summary[f"{side}_max_peak_rss_mb"] = max(r["peak_rss_mb"] for r in results)
        summary[f"{side}_threads"] = sorted({int(r["threads"]) for r in results})
        if "bytes_per_transition" in results[0]:
            summary[f"{side}_bytes_per_transition"] = statistics.median(
                r["bytes_per_transition"] for r in results
            )
    passed = []
    for numerator in row.ours:
        ours = summary.get(f"{numerator}_median_steps_per_s")
        for side, goal in row.goals.items():
            theirs = summary.get(f"{side}_median_steps_per_s")
            ratio = round(ours / theirs, 3) if ours and theirs else None
            summary[ratio_key(numerator, side)] = ratio
            summary[f"goal_vs_{side}"] = goal
            passed.append(ratio is not None and ratio >= goal)
            rss = summary.get(f"{side}_max_peak_rss_mb")
            if rss and f"{numerator}_max_peak_rss_mb" in summary:
                rss_ratio = round(summary[f"{numerator}_max_peak_rss_mb"] / rss, 3)
                summary[ratio_key(numerator, side, "rss_ratio")] = rss_ratio
    if row.bytes_goal is not None:
        mine = summary.get("rlconf_bytes_per_transition")
        theirs = summary.get("sb3_bytes_per_transition")
        ratio = round(mine / theirs, 3) if mine and theirs else None
        summary["bytes_ratio_vs_sb3"] = ratio
        summary["bytes_goal"] = row.bytes_goal
        passed.append(ratio is not None and ratio <= row.bytes_goal)
    summary["pass"] = all(passed)
    return summary


def print_row(row: Row, summary: dict[str, Any], sides: list[str]) -> None:
    print(f"\n{row.name}: {row.title}")
    print("run  side      steps/s  timed steps  timed s  updates  threads   RSS MB  params")
    for r in summary["runs"]:
        print(
            f"{r['seed']:3d}  {r['side']:8s} {r['env_steps_per_s']:8.1f} {r['timed_steps']:12d} "
            f"{r['timed_s']:8.2f} {r['updates']:8d} {r['threads']:8d} {r['peak_rss_mb']:8.1f}  "
            f"{r.get('params', '')}"
        )
    medians = ", ".join(f"{s} {summary[f'{s}_median_steps_per_s']:.1f}" for s in sides)
    print(f"median env steps/s: {medians}")
    for mine in row.ours:
        for side, goal in row.goals.items():
            ratio = summary[ratio_key(mine, side)]
            verdict = (
                "n/a (side not run)" if ratio is None else ("pass" if ratio >= goal else "FAIL")
            )
            rss = summary.get(ratio_key(mine, side, "rss_ratio"))
            rss_text = f"; peak RSS (max) {rss:.2f}x" if rss is not None else ""
            print(f"{mine} / {side}: {ratio} (goal >= {goal}: {verdict}){rss_text}")
    if row.bytes_goal is not None:
        ratio = summary["bytes_ratio_vs_sb3"]
        measures = {r["side"]: r.get("bytes_measure") for r in summary["runs"]}
        per = ", ".join(
            f"{s} {summary[f'{s}_bytes_per_transition']:,.0f} ({measures[s]})"
            for s in sides
            if f"{s}_bytes_per_transition" in summary
        )
        verdict = "n/a" if ratio is None else ("pass" if ratio <= row.bytes_goal else "FAIL")
        print(f"bytes per stored transition: {per}")
        print(f"bytes rlconf / sb3: {ratio} (goal <= {row.bytes_goal}: {verdict})")


def sb3_interpreter(given: str | None) -> str | None:
    if given:
        return given
    if DEFAULT_SB3_PYTHON.exists():
        return str(DEFAULT_SB3_PYTHON)
    import importlib.util

    return sys.executable if importlib.util.find_spec("stable_baselines3") else None


def selected_rows(names: list[str]) -> list[str]:
    rows: list[str] = []
    for name in names:
        for row in ROW_GROUPS.get(name, (name,)):
            if row not in rows:
                rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", nargs="+", default=list(ROWS), choices=[*ROWS, *ROW_GROUPS], metavar="ROW"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per side, alternating")
    parser.add_argument("--steps", type=float, default=1.0, help="scale of the timed windows")
    parser.add_argument("--threads", choices=["1", "all"], default=None)
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON"))
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.seed, args.steps)
        return

    if args.threads is not None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        threads = (cores or os.cpu_count() or 1) if args.threads == "all" else 1
        # Set before torch is imported here too, so that the header shows the sides' count.
        os.environ["OMP_NUM_THREADS"] = str(threads)
    env = dict(os.environ)
    from machine import print_machine

    machine = print_machine()
    sb3_python = sb3_interpreter(args.sb3_python)
    print(
        f"runs: {args.runs} per side, taking turns, seeds 0-{args.runs - 1}; timed windows "
        f"x{args.steps}; OMP_NUM_THREADS={env.get('OMP_NUM_THREADS', 'unset')} "
        f"({'for every side' if args.threads else 'each side its own default'}); SB3 under "
        f"{sb3_python or 'nothing: the SB3 side is left out'}"
    )
    pythons = {side: sys.executable for side in (*OUR_SIDES, "loop")}
    if sb3_python is not None:
        pythons["sb3"] = sb3_python
    summary: dict[str, Any] = {
        "machine": machine,
        "threads": args.threads or "default",
        "omp_num_threads": env.get("OMP_NUM_THREADS"),
        "runs": args.runs,
        "steps_scale": args.steps,
        "sb3_python": sb3_python,
        "rows": {},
    }
    for name in selected_rows(args.rows):
        row = ROWS[name]
        sides = [side for side in row.sides if side in pythons]
        runs = []
        for run in range(args.runs):
            turn = run % len(sides)
            for side in sides[turn:] + sides[:turn]:
                r = run_side(pythons[side], name, side, run, args.steps, env, args.timeout)
                runs.append(r)
                # Progress on stderr; the table follows on stdout once the row is done.
                print(
                    f"{name} run {run} {side}: {r['env_steps_per_s']} env steps/s", file=sys.stderr
                )
        summary["rows"][name] = summarize(row, runs, sides)
        print_row(row, summary["rows"][name], sides)
    summary["all_pass"] = all(r["pass"] for r in summary["rows"].values())
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
