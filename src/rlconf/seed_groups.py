"""What ``rlconf plot`` draws for one metric: runs whose configs differ only in their seed form a
group, drawn as the mean over the runs with a min-max band; any other run is a line of its own.

Pure data (numpy, no matplotlib), so the grouping and the bands can be tested and reused
without a plotting library.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconf.results_folders import RunResults

#: Config keys that don't change what a run learns, left out when comparing configs: the seed
#: (what a group varies) and the settings that only say where results, traces and videos go
#: (each run has its own folder).
IGNORED_KEYS = frozenset({"seed", "logger_config", "output", "record_env", "policy_map_cache"})


@dataclass(frozen=True)
class Curve:
    """One run's values of the metric by env step."""

    label: str
    steps: Sequence[float]
    values: Sequence[float]


@dataclass(frozen=True)
class Band:
    """A seed group: the mean of its runs and the min and max over them, on the steps that
    every run of the group covers."""

    label: str
    steps: Sequence[float]
    mean: Sequence[float]
    low: Sequence[float]
    high: Sequence[float]


@dataclass(frozen=True)
class Panel:
    """One subplot: every curve and band of one metric."""

    metric: str
    lines: Sequence[Curve | Band]
    #: What the lines are drawn over: ``"steps"`` (env steps) or ``"time"`` (seconds).
    x: str = "steps"


def seed_groups(runs: Sequence[RunResults]) -> list[list[RunResults]]:
    """The runs grouped by their config without ``IGNORED_KEYS``, groups in the order of
    their first run. A run without a readable params.json is a group of its own."""
    groups: dict[str, list[RunResults]] = {}
    for index, run in enumerate(runs):
        key = _config_key(run.params) if run.params is not None else f"#{index}"
        groups.setdefault(key, []).append(run)
    return list(groups.values())


def _config_key(params: Mapping[str, Any]) -> str:
    return json.dumps(_without_ignored(params), sort_keys=True, default=repr)


def _without_ignored(value: Any) -> Any:
    # Nested too: a seed in env_config or evaluation_config varies with the run's seed.
    if isinstance(value, Mapping):
        return {k: _without_ignored(v) for k, v in value.items() if k not in IGNORED_KEYS}
    if isinstance(value, list):
        return [_without_ignored(v) for v in value]
    return value


def panel(metric: str, groups: Sequence[Sequence[RunResults]], x: str = "steps") -> Panel:
    """The lines of ``metric`` over ``x`` (env steps or wall time): a ``Band`` for each group
    of 2+ runs that have values and overlap on that axis, a ``Curve`` for every other run that
    has values."""
    lines: list[Curve | Band] = []
    for group in groups:
        drawn = [(run, _curve(run, metric, x)) for run in group]
        drawn = [(run, curve) for run, curve in drawn if curve.steps]
        band = _band(drawn) if len(drawn) > 1 else None
        if band is not None:
            lines.append(band)
        else:
            lines.extend(curve for _, curve in drawn)
    return Panel(metric, lines, x)


def _curve(run: RunResults, metric: str, x: str) -> Curve:
    steps, values = run.series(metric, x)
    return Curve(run.name, steps, values)


def _band(drawn: Sequence[tuple[RunResults, Curve]]) -> Band | None:
    curves = [curve for _, curve in drawn]
    start = max(c.steps[0] for c in curves)
    end = min(c.steps[-1] for c in curves)
    if start > end:
        return None  # no step that every run reached: each is drawn on its own
    # The steps of every run within the common range: where runs log at the same steps (the
    # usual case for seeds of one config) no value is interpolated at all.
    grid = np.unique(np.concatenate([np.asarray(c.steps, dtype=float) for c in curves]))
    grid = grid[(grid >= start) & (grid <= end)]
    stacked = np.stack([np.interp(grid, c.steps, c.values) for c in curves])
    return Band(
        label=_group_label([run for run, _ in drawn]),
        steps=grid.tolist(),
        mean=stacked.mean(axis=0).tolist(),
        low=stacked.min(axis=0).tolist(),
        high=stacked.max(axis=0).tolist(),
    )


def _group_label(runs: Sequence[RunResults]) -> str:
    """``<first run> +<others> (seeds 1, 2, 3)``."""
    seeds = [run.params.get("seed") if run.params is not None else None for run in runs]
    if all(seed is None for seed in seeds):
        # Tune's num_samples without a seed: the runs differ by chance alone.
        seeds_text = f"{len(runs)} runs, seed unset"
    else:
        seeds_text = "seeds " + ", ".join("unset" if s is None else str(s) for s in seeds)
    return f"{runs[0].name} +{len(runs) - 1} ({seeds_text})"
