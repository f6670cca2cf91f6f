"""How far a run is from its stop criteria, from its results alone: each criterion's value
against its target, the run's speed and an estimate of the time left.

Shared by ``rlconf train``'s progress lines and a sweep's trial table, so both show the same
numbers. Everything is computed from the result (``timesteps_total``, ``time_total_s``,
``training_iteration``), which Tune trials report too; nothing here imports the runtime.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlconf.stop_criteria import lookup

#: Stop keys that are budgets: they grow steadily with the run, so the time they leave can be
#: estimated (the run may still end sooner, on another criterion).
BUDGET_KEYS = ("timesteps_total", "training_iteration", "time_total_s")


@dataclass(frozen=True)
class CriterionProgress:
    """One stop criterion in one result."""

    key: str
    target: float
    #: The key's value in the result; for a key that only some results hold (an evaluation
    #: metric) the latest value seen, None before the first.
    value: float | None

    @property
    def reached(self) -> bool:
        return self.value is not None and self.value >= self.target


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


class StopProgress:
    """Follows one run's results against ``stop`` (``{result key: target}``)."""

    def __init__(self, stop: Mapping[str, float]) -> None:
        self.stop = {str(k): float(v) for k, v in stop.items()}
        self._latest: dict[str, float] = {}

    def update(self, result: Mapping[str, Any]) -> list[CriterionProgress]:
        """Each criterion in ``result``, in the order of ``stop``; remembers the values."""
        for key in self.stop:
            value = _number(lookup(result, key))
            if value is not None:
                self._latest[key] = value
        return [CriterionProgress(k, t, self._latest.get(k)) for k, t in self.stop.items()]


def steps_per_s(result: Mapping[str, Any]) -> float | None:
    """Env steps sampled per second of training so far."""
    steps = _number(result.get("timesteps_total"))
    seconds = _number(result.get("time_total_s"))
    if steps is None or not seconds:
        return None
    return steps / seconds


def seconds_left(result: Mapping[str, Any], stop: Mapping[str, float]) -> float | None:
    """The training time left until the first budget criterion of ``stop`` is reached, at the
    run's pace so far; None without a budget criterion (or before the pace is known)."""
    seconds = _number(result.get("time_total_s"))
    if seconds is None:
        return None
    estimates: list[float] = []
    for key, target in stop.items():
        if key not in BUDGET_KEYS:
            continue
        done = _number(result.get(key))
        if done is None:
            continue
        if key == "time_total_s":
            estimates.append(max(0.0, float(target) - done))
        elif done > 0:
            estimates.append(max(0.0, (float(target) - done) * seconds / done))
    return min(estimates) if estimates else None


def budget_fraction(result: Mapping[str, Any], stop: Mapping[str, float]) -> float | None:
    """How much of the nearest budget criterion is used, in [0, 1]; None without one."""
    fractions = []
    for key, target in stop.items():
        done = _number(result.get(key))
        if key in BUDGET_KEYS and done is not None and target > 0:
            fractions.append(min(1.0, done / float(target)))
    return max(fractions) if fractions else None


def format_number(value: float | None) -> str:
    """A value as the progress line shows it: integers plainly, others to 2 decimals (4
    significant digits when small)."""
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4g}"


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


def format_criteria(criteria: list[CriterionProgress]) -> str:
    """``evaluation/episode_reward_mean 312.40/450  timesteps_total 24000/100000``."""
    return "  ".join(
        f"{c.key} {format_number(c.value)}/{format_number(c.target)}" for c in criteria
    )
