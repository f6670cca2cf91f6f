"""What ``rlconf.sweep.run`` returns: every trial's config and final result, and the best."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from rlconf.algorithm_config import AlgorithmConfig

C = TypeVar("C", bound=AlgorithmConfig)

#: How a trial ended: it met a stop criterion or a scheduler stopped it early
#: (``"TERMINATED"``), or it raised (``"ERROR"``).
TrialStatus = Literal["TERMINATED", "ERROR"]


@dataclass(frozen=True)
class TrialSummary(Generic[C]):
    """One trial of a sweep."""

    #: Tune's trial name, e.g. ``PPO_CartPole-v1_1a2b3_00002``.
    name: str
    trial_id: str
    status: TrialStatus
    #: The trial's resolved config (every search space replaced by the value it drew).
    config: C
    #: The trial's last result (empty if it failed before reporting one).
    metrics: Mapping[str, Any]
    #: The value of the sweep's metric in the last result; None where it has none.
    metric_value: float | None
    #: The trial's results folder (params.json, result.json, progress.csv, TensorBoard
    #: events, checkpoints).
    path: str
    #: The trial's best checkpoint folder by the sweep's ``checkpoint_score_attr``, its latest
    #: without one; None if it saved none. Folders are named ``checkpoint_<iteration>``.
    checkpoint: str | None = None
    #: The error's text for a trial that failed.
    error: str | None = None
    #: Every checkpoint folder the trial kept (``keep_checkpoints_num``), by iteration.
    checkpoints: tuple[str, ...] = ()

    @property
    def iterations(self) -> int:
        return int(self.metrics.get("training_iteration", 0))


@dataclass(frozen=True)
class SweepSummary(Generic[C]):
    """The outcome of ``rlconf.sweep.run``: the best trial by ``metric``/``mode`` (over each
    trial's last result) and every trial, in the order Tune created them."""

    metric: str
    mode: Literal["max", "min"]
    best_trial: TrialSummary[C]
    trials: list[TrialSummary[C]] = field(default_factory=list)
    #: The experiment folder, ``<local_dir>/<name>``, holding one folder per trial.
    path: str = ""

    @property
    def best_config(self) -> C:
        return self.best_trial.config

    @property
    def best_result(self) -> Mapping[str, Any]:
        return self.best_trial.metrics

    @property
    def best_metric(self) -> float:
        value = self.best_trial.metric_value
        assert value is not None  # the best trial is chosen among those that have it
        return value

    @property
    def errors(self) -> list[TrialSummary[C]]:
        """The trials that failed."""
        return [t for t in self.trials if t.status == "ERROR"]


class SweepError(RuntimeError):
    """No trial of a sweep produced the metric (each trial's error is in the message)."""
