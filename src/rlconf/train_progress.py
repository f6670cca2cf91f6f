"""What ``rlconf train`` prints while it trains and when it ends.

Each iteration shows the env steps, their rate, every stop criterion against its target (the
evaluation reward a DQN run stops on, a multi-agent run's per-policy key), the training reward
when it is not one of them, the time so far and, where a step, iteration or time budget is set,
an estimate of the time left. On a terminal this is one live progress bar (tqdm) over the
budget; otherwise (a pipe, a file, CI) one plain line per iteration. The last lines say which
criterion stopped the run and at what value, where the results and checkpoints are, and the
commands to look at them.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rlconf.stop_progress import (
    BUDGET_KEYS,
    CriterionProgress,
    StopProgress,
    budget_fraction,
    format_duration,
    format_number,
    seconds_left,
    steps_per_s,
)

_REWARD = "episode_reward_mean"
#: Resolution of the live bar over the budget.
_BAR_TOTAL = 1000


def progress_text(
    result: Mapping[str, Any],
    criteria: Sequence[CriterionProgress],
    elapsed_s: float,
    stop: Mapping[str, float],
    *,
    compact: bool = False,
) -> str:
    """One iteration as text: ``iter    5  steps    10240/100000  1812 steps/s
    evaluation/episode_reward_mean 467.70/450  reward    68.31  time 12 s  ETA 48 s``;
    ``compact`` (the live bar, where the width is the terminal's) leaves out the padding and
    puts the criteria first."""
    targets = {c.key: c.target for c in criteria}
    iteration = int(result.get("training_iteration", 0))
    steps = int(result.get("timesteps_total", 0))
    rate = steps_per_s(result)
    reward = result.get(_REWARD)
    shown = [
        f"{c.key} {format_number(c.value)}/{format_number(c.target)}"
        for c in criteria
        if c.key not in BUDGET_KEYS
    ]
    if _REWARD not in targets:
        shown.append(
            ("reward {:.2f}" if compact else "reward {:8.2f}").format(reward)
            if isinstance(reward, int | float)
            else "reward -"
        )
    left = seconds_left(result, stop)
    eta = [] if left is None else [f"ETA {format_duration(left)}"]
    if compact:
        head = [f"iter {iteration}" + _of(targets.get("training_iteration"))]
        pace = f"{steps}" + _of(targets.get("timesteps_total")) + " steps"
        if rate is not None:
            pace += f" ({rate:.0f}/s)"
        return "  ".join([*head, *shown, *eta, pace])
    parts = [f"iter {iteration:4d}" + _of(targets.get("training_iteration"))]
    parts.append(f"steps {steps:8d}" + _of(targets.get("timesteps_total")))
    if rate is not None:
        parts.append(f"{rate:.0f} steps/s")
    parts += shown
    parts.append(f"time {format_duration(elapsed_s)}" + _of(targets.get("time_total_s"), " s"))
    return "  ".join(parts + eta)


def _of(target: float | None, unit: str = "") -> str:
    return "" if target is None else f"/{format_number(target)}{unit}"


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, for its last lines."""

    result: Mapping[str, Any]
    criteria: Sequence[CriterionProgress]
    elapsed_s: float
    logdir: str
    #: The checkpoint written last (at the end or on interruption), if any.
    checkpoint: str | None = None
    #: The best checkpoint kept by ``checkpoint_score_attr``, with its score.
    best_checkpoint: str | None = None
    best_score: float | None = None
    score_attr: str | None = None
    #: The signal's name (``SIGINT``) when a signal stopped the run.
    signal: str | None = None


def final_lines(end: RunEnd) -> list[str]:
    """The lines that close a run (see the module docstring)."""
    result = end.result
    where = (
        f"at iteration {int(result.get('training_iteration', 0))}, "
        f"{int(result.get('timesteps_total', 0))} env steps, {format_duration(end.elapsed_s)}"
    )
    reached = [c for c in end.criteria if c.reached]
    # A budget not used up is no news once another criterion stopped the run.
    others = [
        c for c in end.criteria if not c.reached and (not reached or c.key not in BUDGET_KEYS)
    ]
    if end.signal is not None:
        head = f"stopped by {end.signal} {where}"
    elif reached:
        what = ", ".join(
            f"{c.key} reached {format_number(c.value)} (target {format_number(c.target)})"
            for c in reached
        )
        head = f"done: {what} {where}"
    else:
        head = f"done {where}"
    lines = [head]
    if others:
        lines.append(
            "  not reached: "
            + ", ".join(
                f"{c.key} {format_number(c.value)}/{format_number(c.target)}" for c in others
            )
        )
    if _REWARD not in {c.key for c in end.criteria} and isinstance(
        result.get(_REWARD), int | float
    ):
        lines.append(f"  training reward: {result[_REWARD]:.2f}")
    lines.append(f"  results:    {end.logdir}")
    if end.checkpoint is not None:
        lines.append(f"  checkpoint: {end.checkpoint}")
    if end.best_checkpoint is not None:
        score = (
            "" if end.best_score is None else f" ({end.score_attr} {format_number(end.best_score)})"
        )
        lines.append(f"  best:       {end.best_checkpoint}{score}")
    lines.append(f"  look at it: rlconf plot {end.logdir}")
    to_evaluate = end.best_checkpoint or end.checkpoint
    if to_evaluate is not None:
        lines.append(f"              rlconf evaluate {to_evaluate} --episodes 10 --no-explore")
    return lines


class TrainProgress:
    """Shows one run's progress on ``out``: a live bar when ``out`` is a terminal (or ``live``
    says so), plain lines otherwise. ``write`` prints other lines (checkpoints) without
    breaking the bar."""

    def __init__(
        self,
        name: str,
        stop: Mapping[str, float],
        *,
        out: TextIO | None = None,
        live: bool | None = None,
        quiet: bool = False,
    ) -> None:
        self.name = name
        self.stop = dict(stop)
        self.out = out or sys.stdout
        self.quiet = quiet
        self.live = (not quiet) and (self.out.isatty() if live is None else live)
        self.criteria = StopProgress(self.stop)
        self.started = time.perf_counter()
        self.last: list[CriterionProgress] = self.criteria.update({})
        self._bar: Any = None

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def result(self, result: Mapping[str, Any]) -> None:
        self.last = self.criteria.update(result)
        if self.quiet:
            return
        if not self.live:
            text = progress_text(result, self.last, self.elapsed_s, self.stop)
            print(text, file=self.out, flush=True)
            return
        text = progress_text(result, self.last, self.elapsed_s, self.stop, compact=True)
        fraction = budget_fraction(result, self.stop)
        bar = self._live_bar(has_total=fraction is not None)
        if fraction is not None:
            bar.n = int(fraction * _BAR_TOTAL)
        bar.set_description_str(f"{self.name} {text}", refresh=False)
        bar.refresh()

    def write(self, line: str, *, always: bool = False) -> None:
        """Print ``line`` (unless quiet, or ``always``) above the live bar."""
        if self.quiet and not always:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.out)
        else:
            print(line, file=self.out, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _live_bar(self, *, has_total: bool) -> Any:
        if self._bar is None:
            from tqdm import tqdm

            size = shutil.get_terminal_size()
            self._bar = tqdm(
                total=_BAR_TOTAL if has_total else None,
                desc=self.name,
                file=self.out,
                # The iteration's text as the description, after the bar: tqdm puts ", "
                # before a postfix.
                bar_format="{percentage:3.0f}%|{bar:12}| {desc}" if has_total else "{desc}",
                # Not tqdm's own size probe, which finds no room for a bar on a pty of
                # unset size (`script`, some CI runners); shutil falls back to 80x24.
                ncols=size.columns,
                nrows=size.lines,
                leave=True,
            )
        return self._bar
