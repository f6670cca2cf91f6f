"""The results directory of a run: ``params.json``, ``result.json`` (one JSON object per
iteration), ``progress.csv`` and TensorBoard event files (tensorboardX), beside the
``checkpoint_<iteration>`` folders. Without tensorboardX installed the event files are skipped
(a note is logged once) and the JSON and CSV files are written as always.

Every file is valid for the tool that reads it: non-finite numbers are written as JSON ``null``
and as empty CSV cells, and a config holding objects that can't be written as JSON is still
written, with those values as their ``repr``.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from runtime.results.flat_keys import flatten as flatten
from runtime.results.tensorboard_events import EventFile
from runtime.results.trackers import open_tracker

#: Parent folder of the results directories unless the config or the CLI says otherwise.
RESULTS_ROOT_ENV = "RLCONF_RESULTS_DIR"
DEFAULT_RESULTS_ROOT = "~/rlconf_results"

logger = logging.getLogger(__name__)


def results_root() -> Path:
    return Path(os.environ.get(RESULTS_ROOT_ENV) or DEFAULT_RESULTS_ROOT).expanduser()


def planned_logdir(algorithm: str, env: Any, root: str | os.PathLike[str] | None = None) -> Path:
    """``<root>/<ALGO>_<ENV>_<timestamp>``: a name no folder has yet (not created)."""
    parent = Path(root).expanduser() if root is not None else results_root()
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return _free_name(parent / f"{algorithm}_{_env_name(env)}_{stamp}")


def claim_logdir(planned: Path) -> Path:
    """Create ``planned``, or, when another run took that name meanwhile, the next free
    ``<name>_2``, ``<name>_3``...; returns the folder created."""
    planned.parent.mkdir(parents=True, exist_ok=True)
    path = planned
    while True:
        try:
            path.mkdir()
        except FileExistsError:
            path = _free_name(planned)
            continue
        return path


def _free_name(base: Path) -> Path:
    for attempt in range(1, 10_000):
        path = base if attempt == 1 else base.with_name(f"{base.name}_{attempt}")
        if not path.exists():
            return path
    raise FileExistsError(f"no free results folder name under {base.parent} for {base.name}")


def _env_name(env: Any) -> str:
    if env is None:
        return "noenv"
    name = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-") or "env"


def params_json(config: AlgorithmConfig) -> str:
    """The full config as JSON; values that can't be named (a lambda) are written as repr."""
    try:
        return config.to_json()
    except ConfigError:
        return json.dumps(config.to_dict(), indent=2, default=repr, allow_nan=False)


def _jsonable(value: Any) -> Any:
    """Plain JSON values: numpy scalars and arrays unpacked, nan/inf as None, others as repr."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _jsonable(value.tolist())
    return repr(value)


def _numbers(leaves: Iterable[tuple[str, Any]]) -> dict[str, float]:
    """The numeric ones of a result's leaves (already plain JSON values): what TensorBoard
    plots."""
    return {name: float(value) for name, value in leaves if isinstance(value, int | float)}


def scalars(result: Mapping[str, Any]) -> dict[str, float]:
    """What TensorBoard plots of a result: every numeric leaf by its flattened key (the
    ``config``, which params.json holds, left out)."""
    return _numbers(flatten(_jsonable({k: v for k, v in result.items() if k != "config"})))


def progress_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result as its ``progress.csv`` row: every leaf but lists, by its flattened key (the
    ``config`` left out)."""
    row = _jsonable({k: v for k, v in result.items() if k != "config"})
    return {k: v for k, v in flatten(row) if not isinstance(v, list)}


def result_step(result: Mapping[str, Any]) -> int:
    """Where a result is plotted on TensorBoard's x axis: its env steps, else its iteration."""
    return int(result.get("timesteps_total") or result.get("training_iteration") or 0)


def _csv_header(path: Path) -> list[str]:
    """The columns of an existing ``progress.csv`` (none where there is no such file)."""
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as existing:
        return next(csv.reader(existing), [])


class ResultLogger:
    """Writes one run's results directory as the run goes."""

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        config: AlgorithmConfig,
        logger_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        params = params_json(config)
        write_text_atomic(self.logdir / "params.json", params)
        # A run resumed in its folder goes on with the rows (and columns) written before.
        self._columns: list[str] = _csv_header(self.logdir / "progress.csv")
        self._events = EventFile(self.logdir)
        # The experiment tracker logger_config asks for (W&B, MLflow), given every row.
        self._tracker = open_tracker(logger_config, self.logdir, json.loads(params))

    def on_result(self, result: Mapping[str, Any]) -> None:
        # Tune adds the config object to every result; params.json already holds it.
        result = {k: v for k, v in result.items() if k != "config"}
        row = _jsonable(result)
        with open(self.logdir / "result.json", "a", encoding="utf-8") as out:
            out.write(json.dumps(row, allow_nan=False) + "\n")
        leaves = list(flatten(row))
        columns = {k: v for k, v in leaves if not isinstance(v, list)}
        self._append_csv(columns)
        if self._tracker is not None:
            self._tracker.log(columns, int(result.get("training_iteration") or 0))
        # scalars(result), from the leaves converted once already.
        self._events.write(_numbers(leaves), result_step(result))

    def _append_csv(self, flat: dict[str, Any]) -> None:
        path = self.logdir / "progress.csv"
        new = [k for k in flat if k not in self._columns]
        if new and self._columns:
            # A key that appears later (evaluation every N iterations): rewrite with the wider
            # header so that every row keeps its columns.
            with open(path, newline="", encoding="utf-8") as existing:
                rows = list(csv.DictReader(existing))
            self._columns += new
            with open(path, "w", newline="", encoding="utf-8") as out:
                writer = csv.DictWriter(out, self._columns)
                writer.writeheader()
                writer.writerows(rows)
        elif new:
            self._columns = new
            with open(path, "w", newline="", encoding="utf-8") as out:
                csv.DictWriter(out, self._columns).writeheader()
        with open(path, "a", newline="", encoding="utf-8") as out:
            cells = {k: ("" if v is None else v) for k, v in flat.items()}
            csv.DictWriter(out, self._columns).writerow(cells)

    def close(self) -> None:
        self._events.close()
        if self._tracker is not None:
            tracker, self._tracker = self._tracker, None
            tracker.close()


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary file, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(path)
