"""Learning curves as one line of text: what ``rlconf plot`` prints without matplotlib, or with
``--terminal``."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

#: Eight heights, lowest first.
BLOCKS = "▁▂▃▄▅▆▇█"
#: Columns of a sparkline: a run of more iterations is averaged down to this many.
WIDTH = 60


def resample(values: Sequence[float], width: int = WIDTH) -> list[float]:
    """``values`` as at most ``width`` numbers: consecutive values averaged in equal shares
    (averages, not picks, so that one noisy iteration doesn't stand for its neighbours)."""
    if len(values) <= width:
        return list(values)
    bounds = [round(i * len(values) / width) for i in range(width + 1)]
    return [sum(values[lo:hi]) / (hi - lo) for lo, hi in pairwise(bounds)]


def sparkline(values: Sequence[float], width: int = WIDTH) -> str:
    """One block character per column, scaled from the lowest to the highest value."""
    columns = resample(values, width)
    if not columns:
        return ""
    low, high = min(columns), max(columns)
    if high == low:
        return BLOCKS[len(BLOCKS) // 2 - 1] * len(columns)  # flat: a level line mid-height
    top = len(BLOCKS) - 1
    return "".join(BLOCKS[round((v - low) / (high - low) * top)] for v in columns)


def _number(value: float) -> str:
    return f"{value:.4g}"


def describe_curve(steps: Sequence[float], values: Sequence[float], width: int = WIDTH) -> str:
    """The sparkline followed by the first, last, lowest and highest value and the steps
    covered: ``▁▃▅█  first 9.5  last 180  min 9.5  max 180  steps 1000..40000 (40 points)``."""
    if not values:
        return "(no values yet)"
    return (
        f"{sparkline(values, width)}  first {_number(values[0])}  last {_number(values[-1])}  "
        f"min {_number(min(values))}  max {_number(max(values))}  "
        f"steps {steps[0]:.0f}..{steps[-1]:.0f} ({len(values)} point"
        f"{'s' if len(values) != 1 else ''})"
    )
