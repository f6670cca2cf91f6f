"""``RunnerMetrics``: what every env runner hands its worker besides batches: the episodes it
finished and the timers of its steps (``mean_<timer>_ms`` per step)."""

from __future__ import annotations

from collections import defaultdict

from runtime.env.episode import EpisodeMetrics


class RunnerMetrics:
    def __init__(self) -> None:
        self.finished: list[EpisodeMetrics] = []
        self.perf: dict[str, float] = defaultdict(float)
        self.perf_steps = 0

    def pop_metrics(self) -> list[EpisodeMetrics]:
        out, self.finished = self.finished, []
        return out

    def pop_perf(self) -> dict[str, float]:
        steps = max(1, self.perf_steps)
        out = {f"mean_{k}_ms": 1000.0 * v / steps for k, v in self.perf.items()}
        self.perf = defaultdict(float)
        self.perf_steps = 0
        return out
