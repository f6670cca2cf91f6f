"""Experiment trackers beside a run's results folder: Weights & Biases and MLflow, chosen by
``debugging(logger_config={"type": "wandb" | "mlflow", ...})`` (``rlconf.logger_config`` checks
the keys). A single run's ``ResultLogger`` hands each tracker every result as it writes its
``progress.csv`` row, under the same column names (``info/learner/default_policy/...``), with the
iteration as the step; the config goes in as the run's config (W&B) or parameters (MLflow).
Sweeps log through Tune's own callbacks instead (``runtime.sweeps.tracker_callbacks``).

Both packages are optional extras, imported when a run asks for one: a run that asks for a
tracker that is not installed fails as it opens its results folder (when it is built), saying
what to install."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from rlconf.logger_config import tracker_type
from runtime.results.flat_keys import flatten


class Tracker(Protocol):
    def log(self, row: Mapping[str, Any], step: int) -> None:
        """One result: its ``progress.csv`` columns and values."""

    def close(self) -> None:
        """The run is over."""


def require(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError as error:
        raise ImportError(
            f"logger_config type {extra!r} needs the {module} package: "
            f'pip install "rlconf[{extra}]" (or pip install {module})'
        ) from error


class WandbTracker:
    """One W&B run per algorithm (``reinit="create_new"``: several algorithms in one process
    each get theirs), its files under the results folder."""

    def __init__(self, settings: Mapping[str, Any], logdir: Path, params: Mapping[str, Any]):
        wandb = require("wandb", "wandb")
        keys = ("project", "entity", "group", "name", "tags", "notes", "job_type", "mode")
        self.run = wandb.init(
            **{k: settings[k] for k in keys if settings.get(k) is not None},
            dir=str(logdir),
            config=dict(params),
            reinit="create_new",
        )

    def log(self, row: Mapping[str, Any], step: int) -> None:
        self.run.log(dict(row), step=step)

    def close(self) -> None:
        self.run.finish()


#: What MLflow takes in a metric or parameter name (letters, digits, _ - . space / :).
_MLFLOW_UNSAFE = re.compile(r"[^\w\-. /:]")


class MlflowTracker:
    """One MLflow run per algorithm through its client (no process-wide active run), in
    ``experiment_name`` (created when missing; default: MLflow's default experiment)."""

    def __init__(self, settings: Mapping[str, Any], logdir: Path, params: Mapping[str, Any]):
        require("mlflow", "mlflow")
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=settings.get("tracking_uri"))
        experiment_id = "0"
        if settings.get("experiment_name"):
            name = str(settings["experiment_name"])
            found = self.client.get_experiment_by_name(name)
            experiment_id = (
                found.experiment_id if found is not None else self.client.create_experiment(name)
            )
        tags = {str(k): str(v) for k, v in dict(settings.get("tags") or {}).items()}
        self.run_id = self.client.create_run(
            experiment_id,
            run_name=settings.get("run_name") or logdir.name,
            tags={**tags, "rlconf.logdir": str(logdir)},
        ).info.run_id
        entries = [Param(_name(k), _param_value(v)) for k, v in flatten(params)]
        # MLflow takes at most 100 parameters per call.
        for start in range(0, len(entries), 100):
            self.client.log_batch(self.run_id, params=entries[start : start + 100])

    def log(self, row: Mapping[str, Any], step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        metrics = [
            Metric(_name(key), float(value), stamp, step)
            for key, value in row.items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        ]
        # MLflow takes at most 1000 metrics per call.
        for start in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[start : start + 1000])

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


def _name(key: str) -> str:
    """A ``progress.csv`` column as an MLflow name: the same, but for characters MLflow refuses
    (as ``_``)."""
    return _MLFLOW_UNSAFE.sub("_", key)


def _param_value(value: Any) -> str:
    # MLflow's limit on a parameter's value.
    return str(value)[:6000]


TRACKERS: dict[str, type[WandbTracker] | type[MlflowTracker]] = {
    "wandb": WandbTracker,
    "mlflow": MlflowTracker,
}


def open_tracker(
    logger_config: Mapping[str, Any] | None, logdir: Path, params: Mapping[str, Any]
) -> Tracker | None:
    """The tracker ``logger_config`` asks for (started), or None."""
    kind = tracker_type(logger_config)
    if kind is None:
        return None
    tracker: Tracker = TRACKERS[kind](dict(logger_config or {}), logdir, params)
    return tracker
