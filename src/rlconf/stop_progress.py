"""How far a run is from its stop criteria, from its results alone: each criterion's value
against its target, how much of the way to it is done, the run's speed, and when each criterion
will be met at its pace so far; the one projected to stop the run first is what a progress bar
follows.

Shared by ``rlconf train``'s progress lines and a sweep's trial table, so both show the same
numbers. Everything is computed from the result (``timesteps_total``, ``time_total_s``,
``training_iteration``), which Tune trials report too; nothing here imports the runtime.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlconf.stop_criteria import flat_stop, lookup

#: Stop keys that are budgets: they grow steadily with the run from 0, so the part used is
#: their value over the target and their pace is the run's.
BUDGET_KEYS = ("timesteps_total", "training_iteration", "time_total_s")
#: RLlib's new-stack counters, which grow with the run from 0 as the budgets do (paced the same
#: way, but shown as criteria of their own).
COUNTER_KEYS = (
    "num_env_steps_sampled_lifetime",
    "num_agent_steps_sampled_lifetime",
    "num_env_steps_trained_lifetime",
    "num_episodes_lifetime",
    "env_runners/num_env_steps_sampled_lifetime",
    "env_runners/num_agent_steps_sampled_lifetime",
    "env_runners/num_episodes_lifetime",
    "learners/__all_modules__/num_env_steps_trained_lifetime",
)
_TIME = "time_total_s"


@dataclass(frozen=True)
class CriterionProgress:
    """One stop criterion in one result."""

    key: str
    target: float
    #: The key's value in the result; for a key that only some results hold (an evaluation
    #: metric) the latest value seen, None before the first.
    value: float | None
    #: The part of the way to the target done, in [0, 1]: a budget's value over its target,
    #: another key's way from its first value seen to the target. None before a value.
    fraction: float | None = None
    #: Training seconds until the target is reached at the pace so far (0 once reached); None
    #: while the pace is unknown or does not lead there (a value not rising).
    seconds_left: float | None = None

    @property
    def reached(self) -> bool:
        return self.value is not None and self.value >= self.target


@dataclass
class _Seen:
    """A key's first and latest values, each with the training time it was seen at."""

    first: float
    first_s: float | None
    latest: float
    latest_s: float | None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


class StopProgress:
    """Follows one run's results against ``stop`` (``{result key: target}``)."""

    def __init__(self, stop: Mapping[str, Any]) -> None:
        self.stop = {k: float(v) for k, v in flat_stop(stop).items()}
        self._seen: dict[str, _Seen] = {}

    def update(self, result: Mapping[str, Any]) -> list[CriterionProgress]:
        """Each criterion in ``result``, in the order of ``stop``; remembers the values."""
        now = _number(result.get(_TIME))
        for key in self.stop:
            value = _number(lookup(result, key))
            if value is None:
                continue
            seen = self._seen.get(key)
            if seen is None:
                self._seen[key] = _Seen(value, now, value, now)
            else:
                seen.latest, seen.latest_s = value, now
        return [self._progress(k, t, now) for k, t in self.stop.items()]

    def _progress(self, key: str, target: float, now: float | None) -> CriterionProgress:
        seen = self._seen.get(key)
        if seen is None:
            return CriterionProgress(key, target, None)
        value = seen.latest
        if value >= target:
            return CriterionProgress(key, target, value, 1.0, 0.0)
        if key in BUDGET_KEYS or key in COUNTER_KEYS:
            fraction = value / target  # 0 <= value < target
            left = _budget_left(key, value, target, now)
            return CriterionProgress(key, target, value, fraction, left)
        # The way from the first value seen: a reward starts wherever the run starts (a first
        # value at the target that fell back below it leaves no way measured).
        span = target - seen.first
        fraction = max(0.0, (value - seen.first) / span) if span > 0 else 0.0
        left = None
        if seen.first_s is not None and seen.latest_s is not None and seen.latest_s > seen.first_s:
            pace = (value - seen.first) / (seen.latest_s - seen.first_s)
            if pace > 0:
                since = 0.0 if now is None else max(0.0, now - seen.latest_s)
                left = max(0.0, (target - value) / pace - since)
        return CriterionProgress(key, target, value, min(1.0, fraction), left)


def _budget_left(key: str, done: float, target: float, now: float | None) -> float | None:
    if key == _TIME:
        return target - done
    if now is None or done <= 0:
        return None
    return (target - done) * now / done


def nearest(criteria: Sequence[CriterionProgress]) -> CriterionProgress | None:
    """The criterion that stops the run, or is projected to stop it first: one reached, else
    the one of the fewest seconds left, else (no pace known yet) the one furthest along, else
    the first; None without criteria."""
    reached = [c for c in criteria if c.reached]
    if reached:
        return reached[0]
    timed = [c for c in criteria if c.seconds_left is not None]
    if timed:
        return min(timed, key=lambda c: (c.seconds_left, -(c.fraction or 0.0)))
    along = [c for c in criteria if c.fraction is not None]
    if along:
        return max(along, key=lambda c: c.fraction or 0.0)
    return criteria[0] if criteria else None


def steps_per_s(result: Mapping[str, Any]) -> float | None:
    """Env steps sampled per second of training so far."""
    steps = _number(result.get("timesteps_total"))
    seconds = _number(result.get("time_total_s"))
    if steps is None or not seconds:
        return None
    return steps / seconds


def format_number(value: float | None) -> str:
    """A value as the progress line shows it: integers plainly, others to 2 decimals (4
    significant digits when small)."""
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4g}"


def format_count(value: float) -> str:
    """A count in at most 3 significant digits and a suffix where it is 10000 or more:
    ``9876``, ``12.3k``, ``200k``, ``1.23M``."""
    if abs(value) < 10_000:
        return f"{value:.0f}"
    for scale, suffix in ((1e9, "G"), (1e6, "M")):
        # From 999.5k on, 3 digits of k would read 1e+03k: that is 1M.
        if abs(value) >= scale * 0.9995:
            return f"{value / scale:.3g}{suffix}"
    return f"{value / 1e3:.3g}k"


def format_duration(seconds: float) -> str:
    """``42 s``, ``3:07`` (min:s) or ``1:02:09`` (h:min:s)."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"
