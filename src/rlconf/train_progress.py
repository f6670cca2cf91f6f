"""What ``rlconf train`` prints while it trains and when it ends.

Each iteration (``progress_line``) shows the env steps, their rate, every stop criterion against
its target (the evaluation reward a DQN run stops on, a multi-agent run's per-policy key), the
training reward when it is not one of them (the evaluation reward where there is none, as in
offline training), the time so far, and the time left to the criterion projected to stop the
run first. On a terminal this is one live progress bar (tqdm) over that criterion, fitted to the
terminal's width; otherwise (a pipe, a file, CI) one plain line per iteration. The last lines
say which criterion stopped the run and at what value, where the results and checkpoints are,
and the commands to look at them.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rlconf.progress_line import (
    EVALUATION_REWARD_KEYS,
    REWARD_KEYS,
    Iteration,
    evaluation_reward,
    live_line,
    plain_line,
    training_reward,
)
from rlconf.stop_progress import (
    BUDGET_KEYS,
    CriterionProgress,
    StopProgress,
    format_duration,
    format_number,
)


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
    keys = {c.key for c in end.criteria}
    train, evaluation = training_reward(result), evaluation_reward(result)
    shown = not keys.isdisjoint(REWARD_KEYS)
    if not shown and train is not None:
        lines.append(f"  training reward: {train:.2f}")
    elif not shown and keys.isdisjoint(EVALUATION_REWARD_KEYS) and evaluation is not None:
        lines.append(f"  evaluation reward: {evaluation:.2f}")
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
        self._evaluation_reward: float | None = None

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def result(self, result: Mapping[str, Any]) -> None:
        self.last = self.criteria.update(result)
        latest = evaluation_reward(result)
        if latest is not None:  # evaluations don't run every iteration: keep the last
            self._evaluation_reward = latest
        if self.quiet:
            return
        it = Iteration(result, self.last, self.elapsed_s, self._evaluation_reward, self.name)
        if not self.live:
            print(plain_line(it), file=self.out, flush=True)
            return
        # The width now: the terminal may have been resized since the last line.
        size = shutil.get_terminal_size()
        bar = self._live_bar(size)
        bar.ncols = size.columns
        bar.set_description_str(live_line(it, size.columns, unicode=self._unicode), refresh=False)
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

    @property
    def _unicode(self) -> bool:
        """Whether ``out`` can show the bar's block characters."""
        encoding = getattr(self.out, "encoding", None) or "utf-8"
        try:
            "█▏".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return False
        return True

    def _live_bar(self, size: os.terminal_size) -> Any:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                desc=self.name,
                file=self.out,
                # The whole line is ours (``live_line``, fitted to the width); tqdm redraws it
                # and keeps it below the lines ``write`` prints.
                bar_format="{desc}",
                # Not tqdm's own size probe, which finds no room for a bar on a pty of
                # unset size (`script`, some CI runners); shutil falls back to 80x24.
                ncols=size.columns,
                nrows=size.lines,
                leave=True,
            )
        return self._bar
