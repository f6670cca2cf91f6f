"""Reading results folders as ``rlconf plot`` needs them: a run's ``params.json`` and the
numeric keys of each row of its ``result.json``; a folder without ``result.json`` whose
sub-folders have one (a Tune sweep's ``<local_dir>/<name>/``) stands for those sub-folders.

Plain ``json`` and ``pathlib`` only: plotting a run imports neither torch nor Ray.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlconf.result_keys import twins

#: The file of one JSON object per training iteration that every results folder holds.
RESULT_FILE = "result.json"
#: The run's full config as JSON.
PARAMS_FILE = "params.json"
#: The result key of the x axis: env steps sampled so far.
STEPS_KEY = "timesteps_total"
#: The x axis of rows without ``STEPS_KEY`` (results of RLlib's new API stack).
NEW_STACK_STEPS_KEY = "num_env_steps_sampled_lifetime"
#: The x axis ``rlconf plot --x time`` draws over: the run's wall time in seconds.
TIME_KEY = "time_total_s"
#: What ``rlconf plot`` can draw over: env steps, or wall time.
X_AXES = ("steps", "time")


class ResultsFolderError(ValueError):
    """A folder given to ``rlconf plot`` is missing or holds no results; the message is one
    line naming the folder."""


@dataclass(frozen=True)
class RunResults:
    """One run's results folder, read once."""

    #: The folder's name: what the run is labelled with.
    name: str
    path: Path
    #: ``params.json``; None where it is missing or unreadable (the run then is in no seed
    #: group but its own).
    params: Mapping[str, Any] | None
    #: Every row of ``result.json`` flattened to ``{"a/b": number or None}``, leaving out
    #: what is no number (text, lists such as ``hist_stats``, flags).
    rows: tuple[Mapping[str, float | None], ...] = field(default=())

    def keys(self) -> set[str]:
        """The numeric keys the run reports (in any row, also as null)."""
        return {key for row in self.rows for key in row}

    def metric_key(self, key: str) -> str | None:
        """The name the run reports ``key`` under: ``key``, else its twin of the other API
        stack (``episode_reward_mean`` / ``env_runners/episode_return_mean``); None where the
        run reports neither."""
        keys = self.keys()
        return next((k for k in (key, *twins(key)) if k in keys), None)

    def series(self, key: str, x: str = "steps") -> tuple[list[float], list[float]]:
        """``(xs, values)`` of ``key`` (or its twin, ``metric_key``) over env steps (``x`` is
        ``"steps"``) or the run's wall time in seconds (``"time"``), in that order: rows where
        the key or the x value is null or missing are left out; where rows share an x value (a
        restored run logging again) the later one counts."""
        key = self.metric_key(key) or key
        by_step: dict[float, float] = {}
        for row in self.rows:
            step = (
                row.get(STEPS_KEY, row.get(NEW_STACK_STEPS_KEY))
                if x == "steps"
                else row.get(TIME_KEY)
            )
            value = row.get(key)
            if step is not None and value is not None:
                by_step[step] = value
        steps = sorted(by_step)
        return steps, [by_step[s] for s in steps]


def find_runs(run_dirs: Sequence[str | Path]) -> list[RunResults]:
    """The runs of ``run_dirs`` in the order given, each sweep's trials in name order."""
    runs: list[RunResults] = []
    for given in run_dirs:
        runs.extend(read_run(path) for path in _run_folders(Path(given).expanduser()))
    # Runs are told apart by name (legend labels, colours): where two folders share a name
    # (the same run name under two sweeps), their parent folder's name goes in front.
    names = Counter(run.name for run in runs)
    return [
        replace(run, name=f"{run.path.parent.name}/{run.name}") if names[run.name] > 1 else run
        for run in runs
    ]


def _run_folders(folder: Path) -> list[Path]:
    if not folder.exists():
        raise ResultsFolderError(f"{folder} does not exist")
    if not folder.is_dir():
        raise ResultsFolderError(f"{folder} is not a folder (give a results folder)")
    if (folder / RESULT_FILE).is_file():
        return [folder]
    trials = sorted(
        child for child in folder.iterdir() if child.is_dir() and (child / RESULT_FILE).is_file()
    )
    if not trials:
        raise ResultsFolderError(
            f"{folder} has no {RESULT_FILE}, nor sub-folders holding one: not a results folder "
            "of a run or of a sweep"
        )
    return trials


def read_run(folder: Path) -> RunResults:
    return RunResults(
        name=folder.name,
        path=folder,
        params=_read_params(folder / PARAMS_FILE),
        rows=tuple(_read_rows(folder / RESULT_FILE)),
    )


def _read_params(path: Path) -> Mapping[str, Any] | None:
    try:
        params = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return params if isinstance(params, dict) else None


def _read_rows(path: Path) -> Iterator[dict[str, float | None]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ResultsFolderError(f"{path} can't be read: {exc.strerror or exc}") from None
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            # The last line of a run still being written may be cut short; skip it (and any
            # other line that is not JSON) rather than lose the rest of the run.
            continue
        if isinstance(row, dict):
            yield dict(_numbers(row))


def _numbers(row: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, float | None]]:
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            # Tune puts the trial's config in every row; params.json holds it already.
            if name != "config":
                yield from _numbers(value, name + "/")
        elif value is None:
            yield name, None  # NaN is written as null: a number the run did report
        elif isinstance(value, int | float) and not isinstance(value, bool):
            # Tune's own JSON logger writes NaN and Infinity as they are.
            yield name, float(value) if math.isfinite(value) else None
