"""RLlib's new-stack tuned examples (their settings as scripts of our own,
``tests/rllib_new_stack_examples/``), each run to its own stop criteria, seeds 0-2.

Each run is the script as RLlib's CI runs it (``--as-test``: it exits with an error unless its
success metric was reached), one process per seed, in the script's process (``--no-tune``;
``--tune`` runs each as a Tune trial instead) with the script's own settings, env runners
included (``--env-runners N`` sets ``--num-env-runners`` for every script, for a machine with
fewer cores than a script asks for). For each run: iterations, env steps sampled, the last
smoothed return, whether the success metric was reached, and the wall time; written as a
markdown table under the machine's lines to ``benchmarks/results/rllib_new_stack_examples.md``.

    python benchmarks/rllib_new_stack_examples.py [--examples ppo_cartpole ...] [--seeds 0 1 2]
        [--env-runners N] [--tune] [--stop-iters N] [--output PATH] [--results-dir PATH]

``--stop-iters`` caps every run's iterations (a check of the script itself; the runs then stop
short of their criteria and the table says so).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from machine import print_machine

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "tests" / "rllib_new_stack_examples"
RESULTS = ROOT / "benchmarks" / "results" / "rllib_new_stack_examples.md"
_PROGRESS = re.compile(r"^iter=(\d+) steps=(\d+) R=(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Run:
    example: str
    seed: int
    iterations: int
    env_steps: int
    last_return: float
    reached: bool
    wall_s: float
    error: str = ""


def examples() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.py") if p.stem != "__init__")


def run(example: str, seed: int, options: argparse.Namespace, results_dir: Path) -> Run:
    """One script, one seed, to its own stop criteria (``--as-test``)."""
    command = [sys.executable, str(EXAMPLES / f"{example}.py"), f"--seed={seed}", "--as-test"]
    if not options.tune:
        command.append("--no-tune")
    if options.env_runners is not None:
        command.append(f"--num-env-runners={options.env_runners}")
    if options.stop_iters is not None:
        command.append(f"--stop-iters={options.stop_iters}")
    env = {**os.environ, "RLCONF_RESULTS_DIR": str(results_dir), "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    progress = _PROGRESS.findall(done.stdout)
    iterations, steps, last = progress[-1] if progress else ("0", "0", "nan")
    error = ""
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        error = lines[-1] if lines else f"exit code {done.returncode}"
    return Run(
        example,
        seed,
        int(iterations),
        int(steps),
        float(last),
        done.returncode == 0 and "reached! ok" in done.stdout,
        wall,
        error,
    )


def table(runs: list[Run]) -> str:
    lines = [
        "| example | seed | iterations | env steps | last return | reached | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        reached = "yes" if r.reached else f"no ({r.error})" if r.error else "no"
        lines.append(
            f"| {r.example} | {r.seed} | {r.iterations} | {r.env_steps} | {r.last_return:.1f} | "
            f"{reached} | {r.wall_s:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", nargs="+", choices=examples(), default=examples())
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--env-runners", type=int, default=None)
    parser.add_argument("--tune", action="store_true")
    parser.add_argument("--stop-iters", type=int, default=None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=None,
        help="the runs' results folders (default: a temporary folder, removed at the end)",
    )
    options = parser.parse_args()
    print_machine()
    machine_lines = io.StringIO()
    print_machine(machine_lines)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        results_dir = options.results_dir or Path(scratch)
        for example in options.examples:
            for seed in options.seeds:
                done = run(example, seed, options, results_dir)
                runs.append(done)
                print(table([done]).splitlines()[-1], flush=True)
    command = " ".join(["python", "benchmarks/rllib_new_stack_examples.py", *sys.argv[1:]])
    text = (
        "# RLlib's new-stack tuned examples, to their own stop criteria\n\n"
        f"`{command}`\n\n"
        + "".join(f"    {line}\n" for line in machine_lines.getvalue().splitlines())
        + "\n"
        + table(runs)
        + "\n"
    )
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(text)
    print(f"written to {options.output}")


if __name__ == "__main__":
    main()
