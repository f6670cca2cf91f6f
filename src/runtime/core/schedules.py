"""Piecewise-linear schedules over the global timestep (``lr_schedule``,
``entropy_coeff_schedule``)."""

from __future__ import annotations

from collections.abc import Sequence


class PiecewiseSchedule:
    """``[[t0, v0], [t1, v1], ...]``: linear between points, the last value after the end."""

    def __init__(self, points: Sequence[Sequence[float]]) -> None:
        self.points = sorted((float(t), float(v)) for t, v in points)
        if not self.points:
            raise ValueError("a schedule needs at least one [timestep, value] point")

    def value(self, t: float) -> float:
        first_t, first_v = self.points[0]
        if t <= first_t:
            return first_v
        for (t0, v0), (t1, v1) in zip(self.points, self.points[1:], strict=False):
            if t0 <= t < t1:
                return v0 + (t - t0) / (t1 - t0) * (v1 - v0)
        return self.points[-1][1]
