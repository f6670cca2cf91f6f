"""``rlconf plot RUN_DIR...``: learning curves of results folders, as a PNG (matplotlib, the
``plot`` extra) or as sparklines in the terminal.

Every mistake (a missing folder, a folder without results, a metric no run has) is one line on
stderr and exit code 2, never a traceback. Neither torch nor Ray is imported: plotting works
while the runs train, and on a machine that only holds their folders.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rlconf.results_folders import (
    RESULT_FILE,
    X_AXES,
    ResultsFolderError,
    RunResults,
    find_runs,
)
from rlconf.seed_groups import Panel, panel, seed_groups
from rlconf.sparkline import describe_curve
from rlconf.unknown_keys import did_you_mean

#: Drawn when no ``--metric`` is given: the training reward, and the evaluation reward where
#: any run evaluated.
DEFAULT_METRIC = "episode_reward_mean"
EVALUATION_METRIC = "evaluation/episode_reward_mean"
#: Where the figure goes without ``--out``: this file in the first RUN_DIR.
DEFAULT_OUT_NAME = "curves.png"
#: The note printed with the sparklines when matplotlib is missing.
INSTALL_HINT = "pip install 'rlconf[plot]' gives PNG plots"

_MAX_LISTED = 12
#: Run names up to this long share the line with their sparkline; longer ones (Tune's trial
#: names) get a line of their own, so that a line fits a terminal.
_INLINE_NAME = 24


class PlotError(ValueError):
    """A mistake in what ``rlconf plot`` was asked; the message is one line."""


def run_plot(
    run_dirs: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    out: str | None = None,
    terminal: bool = False,
    x: str = "steps",
) -> int:
    """Draw the curves of ``run_dirs`` over ``x`` (``"steps"``: env steps, ``"time"``: wall
    time) into ``out`` (default ``<first RUN_DIR>/curves.png``; its suffix gives the format:
    ``.png``, ``.svg``, ``.pdf``), or print sparklines with ``terminal`` or without matplotlib;
    the exit code."""
    try:
        runs = find_runs(run_dirs)
        chosen = choose_metrics(runs, metrics)
        if not terminal:
            try:
                from rlconf.curve_figure import build_figure, write_figure
            except ImportError:
                print(f"matplotlib is not installed, so sparklines instead: {INSTALL_HINT}")
            else:
                path = out_path(out, run_dirs[0])
                figure = build_figure(panels(runs, chosen, x))
                try:
                    write_figure(figure, path)
                except (OSError, ValueError) as exc:
                    raise PlotError(f"can't write {path}: {_reason(exc)}") from None
                print(f"wrote {path}")
                return 0
        print_sparklines(runs, chosen)
    except (PlotError, ResultsFolderError) as exc:
        print(f"error: rlconf plot: {exc}", file=sys.stderr)
        return 2
    return 0


def load_panels(
    run_dirs: Sequence[str | Path], metrics: Sequence[str] | None = None, x: str = "steps"
) -> list[Panel]:
    """The subplots ``rlconf plot`` draws for ``run_dirs`` (``curve_figure.build_figure``
    makes the figure of them); raises ``PlotError`` or ``ResultsFolderError``."""
    runs = find_runs(run_dirs)
    return panels(runs, choose_metrics(runs, metrics), x)


def panels(runs: Sequence[RunResults], metrics: Sequence[str], x: str = "steps") -> list[Panel]:
    if x not in X_AXES:
        raise PlotError(f"x={x!r} is no axis to draw over; allowed: {', '.join(X_AXES)}")
    groups = seed_groups(runs)
    return [panel(metric, groups, x) for metric in metrics]


def choose_metrics(runs: Sequence[RunResults], asked: Sequence[str] | None) -> list[str]:
    """``asked`` (in order, once each) or the default metrics; every one must be reported by
    some run."""
    if not any(run.rows for run in runs):
        names = ", ".join(str(run.path / RESULT_FILE) for run in runs[:3])
        more = f" and {len(runs) - 3} more" if len(runs) > 3 else ""
        raise PlotError(f"no results yet: {names}{more} holds no complete line")
    have = set().union(*(run.keys() for run in runs))
    if asked:
        chosen = list(dict.fromkeys(asked))
    else:
        evaluated = any(run.metric_key(EVALUATION_METRIC) for run in runs)
        chosen = [DEFAULT_METRIC] + ([EVALUATION_METRIC] if evaluated else [])
    for key in chosen:
        # Either API stack's name of a metric reads the runs that report the other.
        if not any(run.metric_key(key) for run in runs):
            raise PlotError(_unknown_metric(key, have, given=bool(asked)))
    return chosen


def _unknown_metric(key: str, have: set[str], *, given: bool) -> str:
    hint = did_you_mean(key, have)
    parent = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
    level = _next_parts(have, parent) or _next_parts(have, "")
    where = f"under {parent}" if _next_parts(have, parent) and parent else "at the top level"
    listed = ", ".join(level[:_MAX_LISTED]) + (", ..." if len(level) > _MAX_LISTED else "")
    text = f"no run has the metric {key!r}" + (f" ({hint})" if hint else "")
    text += f"; the runs have {where}: {listed}"
    if not given:
        text += " (choose one with --metric KEY, nested keys joined with '/')"
    return text


def _next_parts(keys: Iterable[str], parent: str) -> list[str]:
    """The keys under ``parent`` one level down, a deeper sub-tree shown as ``name/...``."""
    parts = set()
    for key in keys:
        if key.startswith(parent):
            head, deeper, _ = key[len(parent) :].partition("/")
            parts.add(parent + head + ("/..." if deeper else ""))
    return sorted(parts)


def out_path(out: str | None, first_run_dir: str) -> Path:
    """``--out`` (a folder: ``curves.png`` in it; no suffix: ``.png`` added), or
    ``<first RUN_DIR>/curves.png``."""
    if out is None:
        return Path(first_run_dir).expanduser() / DEFAULT_OUT_NAME
    path = Path(out).expanduser()
    if path.is_dir():
        return path / DEFAULT_OUT_NAME
    return path if path.suffix else path.with_suffix(".png")


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def print_sparklines(runs: Sequence[RunResults], metrics: Sequence[str]) -> None:
    """For each metric, a line per run: its sparkline over env steps and its numbers."""
    inline = max(len(run.name) for run in runs) <= _INLINE_NAME
    width = max(len(run.name) for run in runs)
    for metric in metrics:
        print(metric)
        for run in runs:
            steps, values = run.series(metric)
            text = describe_curve(steps, values)
            if inline:
                print(f"  {run.name:{width}}  {text}")
            else:
                print(f"  {run.name}\n    {text}")
