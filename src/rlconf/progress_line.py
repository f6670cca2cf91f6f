"""One training iteration as the text ``rlconf train`` shows: a plain line (a pipe, a file, CI)
or the line of the live bar on a terminal.

Both follow the stop criterion projected to stop the run first (``stop_progress.nearest``): the
plain line ends with its time left and the part of it done, the live line starts with that part
as a percentage and a bar, then the criterion's name, value and target and the time left. The
live line fits the terminal's width: it shortens numbers (``1.23M``), leaves out the name of
the run, the time so far and the iteration, shortens names (``eval/reward``), then leaves out
the reward, the other criteria, the bar and the pace, part by part, never cutting one; those
left out come back where the shorter forms made room.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rlconf.stop_criteria import lookup
from rlconf.stop_progress import (
    BUDGET_KEYS,
    CriterionProgress,
    format_count,
    format_duration,
    format_number,
    nearest,
    steps_per_s,
)

REWARD = "episode_reward_mean"
EVALUATION_REWARD = "evaluation/episode_reward_mean"
#: Each reward under both its names (RLlib's new API stack's second): a criterion on either
#: shows it already.
REWARD_KEYS = (REWARD, "env_runners/episode_return_mean")
EVALUATION_REWARD_KEYS = (EVALUATION_REWARD, "evaluation/env_runners/episode_return_mean")
_STEPS, _ITERATION, _TIME = "timesteps_total", "training_iteration", "time_total_s"
_BLOCKS = " ▏▎▍▌▋▊▉"
_BAR_WIDTH, _NARROW_BAR = 10, 5


@dataclass(frozen=True)
class Iteration:
    """What one iteration's text is made of."""

    result: Mapping[str, Any]
    criteria: Sequence[CriterionProgress]
    #: Wall-clock seconds since the run started.
    elapsed_s: float
    #: The latest evaluation reward seen (evaluations don't run every iteration).
    evaluation_reward: float | None = None
    name: str = ""

    @property
    def targets(self) -> dict[str, float]:
        return {c.key: c.target for c in self.criteria}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def training_reward(result: Mapping[str, Any]) -> float | None:
    """The result's training reward, None where it has none (or NaN: no episode ended)."""
    return _number(result.get(REWARD))


def evaluation_reward(result: Mapping[str, Any]) -> float | None:
    """The result's evaluation reward, None where it has none (or NaN)."""
    return _number(lookup(result, EVALUATION_REWARD))


def shown_reward(it: Iteration) -> tuple[str, float | None] | None:
    """The reward to show beside the criteria, labelled: the training reward; where it is
    missing or NaN (an offline algorithm samples no episodes) the latest evaluation reward;
    None where a criterion already shows it."""
    targets = it.targets
    if not targets.keys().isdisjoint(REWARD_KEYS):
        return None
    train = training_reward(it.result)
    if train is not None:
        return ("reward", train)
    if not targets.keys().isdisjoint(EVALUATION_REWARD_KEYS):
        return None
    if it.evaluation_reward is not None:
        return ("eval reward", it.evaluation_reward)
    return ("reward", None)


def _of(target: float | None, unit: str = "") -> str:
    return "" if target is None else f"/{format_number(target)}{unit}"


def _percent(criterion: CriterionProgress) -> int:
    # Rounded down: 100% only once the target is reached.
    return 100 if criterion.reached else min(99, math.floor((criterion.fraction or 0.0) * 100))


def plain_line(it: Iteration) -> str:
    """``iter    5  steps    10240/100000  400 steps/s  evaluation/episode_reward_mean
    312.40/450  reward    25.00  time 27 s  ETA 3:44 (timesteps_total 10%)``."""
    targets = it.targets
    result = it.result
    parts = [f"iter {int(result.get(_ITERATION, 0)):4d}" + _of(targets.get(_ITERATION))]
    parts.append(f"steps {int(result.get(_STEPS, 0)):8d}" + _of(targets.get(_STEPS)))
    rate = steps_per_s(result)
    if rate is not None:
        parts.append(f"{rate:.0f} steps/s")
    parts += [
        f"{c.key} {format_number(c.value)}/{format_number(c.target)}"
        for c in it.criteria
        if c.key not in BUDGET_KEYS
    ]
    reward = shown_reward(it)
    if reward is not None:
        label, value = reward
        parts.append(f"{label} -" if value is None else f"{label} {value:8.2f}")
    parts.append(f"time {format_duration(it.elapsed_s)}" + _of(targets.get(_TIME), " s"))
    followed = nearest(it.criteria)
    if followed is not None and followed.seconds_left is not None:
        parts.append(
            f"ETA {format_duration(followed.seconds_left)} ({followed.key} {_percent(followed)}%)"
        )
    return "  ".join(parts)


@dataclass(frozen=True)
class _Layout:
    """Which parts the live line shows, and in which form."""

    short_numbers: bool = False
    short_labels: bool = False
    bar_width: int = _BAR_WIDTH
    dropped: frozenset[str] = field(default_factory=frozenset)


def _fewer(layout: _Layout, part: str) -> _Layout:
    return replace(layout, dropped=layout.dropped | {part})


#: From the fullest line to the leanest, each step keeping the ones before.
_STEPS_TO_FIT: tuple[Callable[[_Layout], _Layout], ...] = (
    lambda lay: replace(lay, short_numbers=True),
    lambda lay: _fewer(lay, "name"),
    lambda lay: _fewer(lay, "time"),
    lambda lay: _fewer(lay, "iter"),
    lambda lay: replace(lay, short_labels=True),
    lambda lay: _fewer(lay, "reward"),
    lambda lay: replace(lay, bar_width=_NARROW_BAR),
    lambda lay: _fewer(lay, "others"),
    lambda lay: replace(lay, bar_width=0),
    lambda lay: _fewer(lay, "rate"),
    lambda lay: _fewer(lay, "steps"),
)


_DROP_ORDER = ("name", "time", "iter", "reward", "others", "rate", "steps")


def live_line(it: Iteration, width: int, *, unicode: bool = True) -> str:
    """The live bar's line, at most ``width`` characters (see the module docstring); the bar
    in block characters, or ``#`` where the terminal can't show them."""
    layout = _Layout()
    steps = iter(_STEPS_TO_FIT)
    while len(_render(it, layout, unicode)) > width:
        step = next(steps, None)
        if step is None:
            return _render(it, layout, unicode)[:width]
        layout = step(layout)
    # Parts left out on the way that fit again beside the shorter forms come back, the more
    # important first, up to the first that doesn't fit: never one less important instead.
    for part in _DROP_ORDER[::-1]:
        if part in layout.dropped:
            fuller = replace(layout, dropped=layout.dropped - {part})
            if len(_render(it, fuller, unicode)) > width:
                break
            layout = fuller
    return _render(it, layout, unicode)


def _short_label(key: str) -> str:
    for long, short in (
        ("evaluation/", "eval/"),
        ("sampler_results/", ""),
        ("env_runners/", ""),
        ("episode_reward_mean", "reward"),
        ("episode_return_mean", "reward"),
        ("policy_reward_mean", "reward"),
        ("module_episode_returns_mean", "reward"),
        ("num_env_steps_sampled_lifetime", "steps"),
        (_STEPS, "steps"),
        (_ITERATION, "iter"),
        (_TIME, "time"),
    ):
        key = key.replace(long, short)
    return key


def _value(key: str, value: float | None, short: bool) -> str:
    if value is None or not short or key not in BUDGET_KEYS:
        return format_number(value)
    return format_duration(value) if key == _TIME else format_count(value)


def _criterion(c: CriterionProgress, layout: _Layout) -> str:
    label = _short_label(c.key) if layout.short_labels else c.key
    short = layout.short_numbers
    return f"{label} {_value(c.key, c.value, short)}/{_value(c.key, c.target, short)}"


def _bar(fraction: float, width: int, unicode: bool) -> str:
    if not unicode:
        return ("#" * math.floor(fraction * width)).ljust(width)
    full, eighths = divmod(math.floor(fraction * width * 8), 8)
    return ("█" * full + (_BLOCKS[eighths] if eighths else "")).ljust(width)[:width]


def _render(it: Iteration, layout: _Layout, unicode: bool) -> str:
    result, targets, drop = it.result, it.targets, layout.dropped
    followed = nearest(it.criteria)
    count = format_count if layout.short_numbers else format_number
    parts: list[str] = []
    if followed is not None:
        head = f"{_percent(followed):3d}%"
        if layout.bar_width:
            fraction = 1.0 if followed.reached else (followed.fraction or 0.0)
            head += f"|{_bar(fraction, layout.bar_width, unicode)}|"
        parts.append(f"{head} {_criterion(followed, layout)}")
        if followed.seconds_left is not None:
            parts.append(f"ETA {format_duration(followed.seconds_left)}")
    key = None if followed is None else followed.key
    if key != _STEPS and "steps" not in drop:
        steps = float(result.get(_STEPS, 0))
        budget = targets.get(_STEPS)
        parts.append(count(steps) + ("" if budget is None else f"/{count(budget)}") + " steps")
    rate = steps_per_s(result)
    if rate is not None and "rate" not in drop:
        parts.append(f"{format_count(rate)}/s" if layout.short_numbers else f"{rate:.0f} steps/s")
    if "others" not in drop:
        parts += [_criterion(c, layout) for c in it.criteria if c.key not in (*BUDGET_KEYS, key)]
    reward = shown_reward(it)
    if reward is not None and "reward" not in drop:
        parts.append(f"{reward[0]} {format_number(reward[1])}")
    if key != _ITERATION and "iter" not in drop:
        parts.append(f"iter {int(result.get(_ITERATION, 0))}" + _of(targets.get(_ITERATION)))
    if key != _TIME and "time" not in drop:
        time_budget = targets.get(_TIME)
        of = "" if time_budget is None else f"/{format_duration(time_budget)}"
        parts.append(f"time {format_duration(it.elapsed_s)}{of}")
    line = "  ".join(parts)
    return f"{it.name} {line}" if it.name and "name" not in drop else line
