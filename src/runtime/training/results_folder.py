"""The folder an ``Algorithm`` writes its results and checkpoints to outside a Tune trial:
chosen when the algorithm is made, created on first use (or when the algorithm is built),
removed again when building fails and nothing but params.json went into it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.logger_config import tracker_type
from runtime.core.settings import settings_of
from runtime.results.result_logger import (
    ResultLogger,
    claim_logdir,
    params_json,
    planned_logdir,
    progress_columns,
)
from runtime.results.trackers import Tracker, WandbTracker
from runtime.training.trainable import Trainable


@dataclass(frozen=True)
class ResultsFolderSettings:
    logger_config: Mapping[str, Any] | None
    env: Any


class ResultsFolder(Trainable):
    """The results folder part of ``Algorithm`` (mixed into it)."""

    config: AlgorithmConfig
    #: The config, before ``setup()`` makes it ``config``.
    _algo_config: AlgorithmConfig
    #: Create the folder only when the first result or checkpoint is written into it.
    _lazy_logdir: bool
    #: Whether the folder has been created (outside Tune).
    _logdir_claimed: bool
    #: Whether the folder was given (``logger_config["logdir"]``) rather than made up.
    _logdir_fixed: bool
    _result_logger: ResultLogger | None
    #: A Tune trial's own W&B run (``log_to_trial_tracker``).
    _trial_tracker: Tracker | None = None
    #: Whether this trial's config asks for no W&B run (found at its first result).
    _no_trial_tracker: bool = False

    def _setup_logdir(self) -> None:
        """Outside Tune the results go to ``logger_config["logdir"]`` when given, otherwise to a
        new ``<local_dir>/<ALGO>_<ENV>_<timestamp>`` folder (``local_dir`` from
        ``logger_config``, ``$RLCONF_RESULTS_DIR`` or ``~/rlconf_results``). Under Tune the
        trial's folder is used."""
        if self._storage is not None:
            super()._setup_logdir()
            return
        folder = settings_of(ResultsFolderSettings, self._algo_config, type(self).__name__)
        settings = dict(folder.logger_config or {})
        self._logdir_fixed = bool(settings.get("logdir"))
        if self._logdir_fixed:
            path = Path(str(settings["logdir"])).expanduser()
        else:
            name = self._algo_config.algo_name or type(self).__name__
            path = planned_logdir(name, folder.env, settings.get("local_dir"))
        self._logdir = str(path)

    def _claim_logdir(self) -> Path:
        """Create the results folder (outside Tune) if it is not there yet."""
        path = Path(self.logdir)
        if self._storage is None and not self._logdir_claimed:
            if self._logdir_fixed:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path = claim_logdir(path)
                self._logdir = str(path)
            self._logdir_claimed = True
        return path

    def log_to_trial_tracker(self, result: Mapping[str, Any]) -> None:
        """In a Tune trial, a W&B ``logger_config``: the result to the trial's own W&B run (in
        the trial's folder, named after the trial, grouped and by default filed under the
        sweep's name), opened at the first result. MLflow is Tune's callback's
        (``runtime.sweeps.tracker_callbacks``); without a tracker, nothing."""
        if self._no_trial_tracker:
            return
        if self._trial_tracker is None:
            folder = settings_of(ResultsFolderSettings, self._algo_config, type(self).__name__)
            settings = dict(folder.logger_config or {})
            if tracker_type(settings) != "wandb":
                self._no_trial_tracker = True
                return
            trial_dir = Path(self._storage.trial_fs_path)
            sweep = trial_dir.parent.name
            settings.update(
                name=trial_dir.name,
                group=settings.get("group") or sweep,
                project=settings.get("project") or sweep,
            )
            trial_dir.mkdir(parents=True, exist_ok=True)
            params = json.loads(params_json(self.config))
            self._trial_tracker = WandbTracker(settings, trial_dir, params)
        step = int(result.get("training_iteration") or 0)
        self._trial_tracker.log(progress_columns(result), step)

    def _close_trial_tracker(self) -> None:
        # A reset_config builds afresh, maybe with another logger_config.
        self._no_trial_tracker = False
        tracker, self._trial_tracker = self._trial_tracker, None
        if tracker is not None:
            tracker.close()

    def _open_results(self) -> ResultLogger:
        """The results directory's writer (params.json first), made on first use."""
        if self._result_logger is None:
            folder = settings_of(ResultsFolderSettings, self._algo_config, type(self).__name__)
            self._result_logger = ResultLogger(
                self._claim_logdir(), self.config, folder.logger_config
            )
        return self._result_logger


def remove_if_unused(logdir: Path) -> None:
    """Remove a results folder that holds nothing but its params.json."""
    if logdir.is_dir() and {p.name for p in logdir.iterdir()} <= {"params.json"}:
        for file in logdir.iterdir():
            file.unlink()
        logdir.rmdir()
