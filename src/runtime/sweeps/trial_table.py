"""The live table of a sweep's trials: name, status, the searched values, iteration, steps,
steps/s, each stop criterion's value (the header gives its target), the reward when it is not
one of them, the sweep's metric when it is another key, and the time each trial has left to the
stop criterion projected to stop it first - what ``rlconf train`` shows for one run.

A Tune callback in the driver prints it when trials start, report or end - at most once every
``interval_s`` seconds, and always once at the end - instead of Tune's own console output.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ray.tune import Callback

from rlconf.progress_line import REWARD_KEYS
from rlconf.stop_criteria import lookup
from rlconf.stop_progress import (
    StopProgress,
    format_duration,
    format_number,
    nearest,
    steps_per_s,
)

_ITERATION = "training_iteration"
_STEPS = "timesteps_total"
_REWARD = "episode_reward_mean"


class TrialTable(Callback):
    """Prints the trial table (see the module docstring); also keeps the list of trials."""

    def __init__(
        self,
        title: str,
        searched: Sequence[str],
        metric: str,
        *,
        enabled: bool = True,
        interval_s: float = 5.0,
        out: TextIO | None = None,
        stop: Mapping[str, float] | None = None,
    ) -> None:
        self.title = title
        self.searched = list(searched)
        self.metric = metric
        self.stop = {str(k): float(v) for k, v in (stop or {}).items()}
        #: Per trial: the latest value of each stop key (evaluation keys are not in every
        #: result).
        self._progress: dict[str, StopProgress] = {}
        self.enabled = enabled
        self.interval_s = interval_s
        self.out = out
        self.trials: list[Any] = []
        self._started = time.monotonic()
        self._printed_at = -math.inf
        self._pending = False

    # ------------------------------------------------------------------ Tune's hooks

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._changed(trials)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        self._stop_progress(trial).update(result)
        self._changed(trials)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._changed(trials)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._changed(trials)

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        # Changes that came in too soon after the last table are shown once the interval is up.
        self.trials = list(trials)
        if self._pending and time.monotonic() - self._printed_at >= self.interval_s:
            self._print()

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        self.trials = list(trials)
        self._print()

    # ------------------------------------------------------------------ the table

    def _changed(self, trials: list[Any]) -> None:
        self.trials = list(trials)
        self._pending = True
        if time.monotonic() - self._printed_at >= self.interval_s:
            self._print()

    def _print(self) -> None:
        self._pending = False
        self._printed_at = time.monotonic()
        if self.enabled and self.trials:
            out = self.out or sys.stdout
            print(self.render(), file=out, flush=True)

    def render(self) -> str:
        """The table of ``self.trials`` as text."""
        counts: dict[str, int] = {}
        for trial in self.trials:
            counts[trial.status] = counts.get(trial.status, 0) + 1
        elapsed = time.monotonic() - self._started
        states = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        head = f"== {self.title}: {len(self.trials)} trials ({states}), {elapsed:.0f} s =="
        columns = ["trial", "status", *self.searched, "iter", "steps", "steps/s"]
        columns += [f"{key}>={format_number(target)}" for key, target in self._criteria]
        if self.stop.keys().isdisjoint(REWARD_KEYS):
            columns.append("reward")
        if self._metric_column:
            columns.append(self.metric)
        if self.stop:
            columns.append("ETA")
        rows = [columns] + [self._row(trial) for trial in self.trials]
        widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
        lines = [head]
        for row in rows:
            cells = [
                cell.ljust(width) if i < 2 else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    @property
    def _metric_column(self) -> bool:
        return self.metric not in (_ITERATION, _STEPS, *REWARD_KEYS, *self.stop)

    @property
    def _criteria(self) -> list[tuple[str, float]]:
        """The stop criteria shown in columns of their own (budgets are in iter and steps)."""
        return [(k, t) for k, t in self.stop.items() if k not in (_ITERATION, _STEPS)]

    def _stop_progress(self, trial: Any) -> StopProgress:
        key = str(getattr(trial, "trial_id", id(trial)))
        if key not in self._progress:
            self._progress[key] = StopProgress(self.stop)
        return self._progress[key]

    def _row(self, trial: Any) -> list[str]:
        result: Mapping[str, Any] = trial.last_result or {}
        config: Mapping[str, Any] = trial.config or {}
        row = [str(trial), str(trial.status)]
        row += [_cell(_at_path(config, key)) for key in self.searched]
        row += [_cell(result.get(_ITERATION)), _cell(result.get(_STEPS))]
        rate = steps_per_s(result)
        row.append("-" if rate is None else f"{rate:.0f}")
        criteria = self._stop_progress(trial).update(result)
        latest = {c.key: c.value for c in criteria}
        row += [_cell(latest.get(key)) for key, _ in self._criteria]
        if self.stop.keys().isdisjoint(REWARD_KEYS):
            row.append(_cell(result.get(_REWARD)))
        if self._metric_column:
            row.append(_cell(lookup(result, self.metric)))
        if self.stop:
            first = nearest(criteria) if result else None
            left = None if first is None else first.seconds_left
            running = str(getattr(trial, "status", "")) in ("RUNNING", "PENDING", "PAUSED")
            row.append(format_duration(left) if left is not None and running else "-")
        return row


def _at_path(config: Mapping[str, Any], dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4g}"
    if isinstance(value, type):
        return value.__name__
    text = str(value)
    return text if len(text) <= 24 else text[:21] + "..."
