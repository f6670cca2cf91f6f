"""The TensorBoard events of a sweep's trials, with the tags ``rlconf train`` writes outside
Tune (``episode_reward_mean``, ``evaluation/episode_reward_mean``, stepped by
``timesteps_total``) instead of the ``ray/tune/...`` tags of Tune's own ``TBXLoggerCallback``.

``TrialEvents`` is a ``TBXLoggerCallback`` so that Tune, which adds its default loggers only
where none of their kind is given, adds no second TensorBoard logger beside it; its JSON and
CSV loggers (result.json, progress.csv) are still added as always. When a trial ends, its
searched values and last scalars are written as TensorBoard hparams (the HParams dashboard
compares the trials), as Tune's logger writes them, with the plain tags.
"""

from __future__ import annotations

import logging
from typing import Any

from ray.tune.logger import TBXLoggerCallback

from runtime.results.result_logger import result_step, scalars
from runtime.results.tensorboard_events import EventFile

logger = logging.getLogger(__name__)

#: The hyperparameter values TensorBoard's hparams take.
_HPARAM_TYPES = (str, bool, int, float)


class TrialEvents(TBXLoggerCallback):
    """Writes each trial's results into an event file in its folder, as ``ResultLogger``
    does outside Tune."""

    def __init__(self) -> None:
        # Not TBXLoggerCallback.__init__, which raises without tensorboardX: EventFile notes
        # its absence instead (the JSON and CSV files are written either way), and the
        # parent's per-trial state is replaced by this class's own.
        self._files: dict[Any, EventFile] = {}
        self._last: dict[Any, dict[str, float]] = {}

    def log_trial_start(self, trial: Any) -> None:
        # A trial starts again after a pause or a restore: a new file, as Tune's logger makes.
        if trial in self._files:
            self._files[trial].close()
        self._files[trial] = EventFile(trial.local_path)
        self._last[trial] = {}

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        if trial not in self._files:
            self.log_trial_start(trial)
        values = scalars(result)
        self._files[trial].write(values, result_step(result))
        self._files[trial].flush()  # a trial's curves show while it runs, as with Tune's
        self._last[trial] = values

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        events = self._files.pop(trial, None)
        last = self._last.pop(trial, {})
        if events is None:
            return
        params = _hparams(getattr(trial, "evaluated_params", None) or {})
        if params and last:
            _write_hparams(events, params, last)
        events.close()

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        for trial in list(self._files):
            self.log_trial_end(trial)


def _hparams(evaluated: dict[str, Any]) -> dict[str, Any]:
    """The trial's searched values TensorBoard can show (Tune's are keyed by their path)."""
    params: dict[str, Any] = {}
    for key, value in evaluated.items():
        plain = value.tolist() if hasattr(value, "tolist") else value
        if isinstance(plain, _HPARAM_TYPES):
            params[str(key)] = plain
    return params


def _write_hparams(events: EventFile, params: dict[str, Any], last: dict[str, float]) -> None:
    try:
        from tensorboardX.summary import hparams
    except ImportError:
        return  # no tensorboardX: no event file either
    try:
        for summary in hparams(hparam_dict=params, metric_dict=last):
            events.add_summary(summary)
    except Exception:
        # The trial's scalars are written already; the hparams view is a convenience.
        logger.exception("could not write the trial's hparams to TensorBoard")
