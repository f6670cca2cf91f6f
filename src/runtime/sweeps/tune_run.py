"""Running a checked ``SweepPlan`` as a Ray Tune experiment and summarising its trials.

Beside Tune's own JSON and CSV loggers, each trial's TensorBoard events are written with the
tags of a run outside Tune (``runtime.sweeps.tensorboard_logger``). Checkpoints are kept as
``keep_checkpoints_num`` and ``checkpoint_score_attr`` say (Tune's ``CheckpointConfig``,
ranking by the ``checkpoint_score`` each checkpoint's metrics carry, see
``runtime.training.checkpointing``), and renamed ``checkpoint_<iteration>`` once Tune is done
(``runtime.sweeps.checkpoint_names``).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ray import tune
from ray.tune.search import BasicVariantGenerator

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.checkpoint_keeper import ScoreOrder, as_score, parse_score_attr, rank
from rlconf.errors import ConfigError
from rlconf.registry import get_algorithm_class
from rlconf.search_space import to_tune_space
from rlconf.stop_criteria import StopCriteria, lookup
from rlconf.sweep_run import SweepPlan
from rlconf.sweep_summary import SweepError, SweepSummary, TrialStatus, TrialSummary
from runtime.cluster.ray_session import cluster_address, ensure_ray
from runtime.cluster.tune_support import enable_tune
from runtime.core.settings import settings_of
from runtime.results.result_logger import results_root
from runtime.sweeps.checkpoint_names import checkpoint_folders, name_by_iteration
from runtime.sweeps.tensorboard_logger import TrialEvents
from runtime.sweeps.tracker_callbacks import tracker_callbacks
from runtime.sweeps.trial_resources import (
    local_sweep_cpus,
    refuse_unplaceable_trials,
    sweep_trial_plans,
)
from runtime.sweeps.trial_table import TrialTable
from runtime.training.checkpointing import CHECKPOINT_SCORE_KEY
from runtime.training.config_resolution import split_tune_keys

logger = logging.getLogger(__name__)

_NEW_OUTPUT = "RAY_AIR_NEW_OUTPUT"
#: Tune warns when it saves the experiment state more often than every this many seconds,
#: which it does on every checkpoint that ``num_to_keep`` deletes; unset: 5.
_SNAPSHOT_WARNING = "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S"
_WHERE = "rlconf.sweep.run()"


def run_sweep(plan: SweepPlan) -> SweepSummary[Any]:
    """Run every trial of ``plan`` to its end and summarise them (see ``rlconf.sweep.run``).

    Before Tune starts, trials that no node set of the cluster can hold are refused
    (``refuse_unplaceable_trials``): on a Ray the sweep starts, or on a cluster without an
    autoscaler."""
    enable_tune()
    trials = sweep_trial_plans(plan.configs)
    own_ray = cluster_address(plan.address) is None
    started = ensure_ray(plan.base, num_cpus=local_sweep_cpus(trials), address=plan.address)
    try:
        refuse_unplaceable_trials(
            trials, str(plan.base.algo_name), _WHERE, own_ray=started and own_ray
        )
        return _run(plan)
    finally:
        if started:
            import ray

            ray.shutdown()


def _run(plan: SweepPlan) -> SweepSummary[Any]:
    algo_name = str(plan.base.algo_name)
    name = plan.name or _default_name(algo_name, plan.base["env"])
    storage = plan.local_dir or _local_dir(plan.base)
    table = TrialTable(name, plan.searched, plan.metric, enabled=plan.progress, stop=plan.stop)
    stopper = _Stopper(plan.stop, plan.base) if plan.stop else None
    scheduler_has_metric = getattr(plan.scheduler, "metric", None) is not None
    tune_config = tune.TuneConfig(
        num_samples=plan.num_samples,
        max_concurrent_trials=plan.max_concurrent,
        scheduler=plan.scheduler,
        search_alg=(
            BasicVariantGenerator(points_to_evaluate=[to_tune_space(p) for p in plan.points])
            if plan.points is not None
            else None
        ),
        # A scheduler given its own metric must not get a second one.
        metric=None if scheduler_has_metric else plan.metric,
        mode=None if scheduler_has_metric else plan.mode,
    )
    if plan.reuse_actors is not None:
        tune_config.reuse_actors = plan.reuse_actors
    score_order: ScoreOrder = "max"
    if plan.checkpoint_score_attr is not None:
        _, score_order = parse_score_attr(plan.checkpoint_score_attr)
    run_config = tune.RunConfig(
        name=name,
        storage_path=str(storage),
        stop=stopper,
        checkpoint_config=tune.CheckpointConfig(
            checkpoint_frequency=plan.checkpoint_freq,
            checkpoint_at_end=plan.checkpoint_at_end,
            num_to_keep=plan.keep_checkpoints_num,
            checkpoint_score_attribute=(
                CHECKPOINT_SCORE_KEY if plan.checkpoint_score_attr is not None else None
            ),
            checkpoint_score_order=score_order,
        ),
        callbacks=[table, TrialEvents(), *tracker_callbacks(plan.base, name)],
        verbose=0,
    )
    algo_class = get_algorithm_class(algo_name)
    trainable = _scoring_class(algo_class, plan.checkpoint_score_attr)
    tuner = tune.Tuner(
        trainable,
        param_space=to_tune_space(plan.param_space),
        tune_config=tune_config,
        run_config=run_config,
    )
    try:
        with _quiet_console():
            grid = tuner.fit()
    finally:
        if trainable is not algo_class:
            _register_again(algo_class)
    if stopper is not None and stopper.error is not None:
        raise stopper.error
    results = [grid[i] for i in range(len(grid))]
    errors = {r.path: r.error for r in results if r.error}
    best_checkpoints = {r.path: r.best_checkpoints for r in results}
    renamed: dict[str, str] = {}
    for trial in table.trials:
        for old, new in name_by_iteration(trial.path).items():
            renamed[os.path.normpath(old)] = new
    trials = [
        _summary(trial, plan, errors, best_checkpoints.get(trial.path) or [], renamed)
        for trial in table.trials
    ]
    return _best(trials, plan, str(Path(storage) / name))


def _scoring_class(algo_class: type[Any], score_attr: str | None) -> type[Any]:
    """The class a sweep trains: ``algo_class`` itself, or for a ``checkpoint_score_attr`` a
    subclass whose checkpoints carry their score for Tune to rank them by (a trial actor
    learns the attribute from its class). It keeps the algorithm's name (and so the trials'
    names); being defined here, it travels to the trial actors by value."""
    if score_attr is None:
        return algo_class
    namespace = {
        "checkpoint_score_attr": score_attr,
        "__module__": __name__,
        "__qualname__": f"_Scoring{algo_class.__name__}",
        "__doc__": algo_class.__doc__,
    }
    return type(algo_class.__name__, (algo_class,), namespace)


def _register_again(algo_class: type[Any]) -> None:
    """Tune registered the sweep's class under the algorithm's name: a later
    ``tune.Tuner("PPO")`` in this Ray session gets the algorithm itself again."""
    try:
        tune.register_trainable(algo_class.__name__, algo_class, warn=False)
    except Exception as exc:
        # Never in place of the error that ended the sweep (this runs in its `finally`).
        logger.warning("could not register %s with Tune again: %s", algo_class.__name__, exc)


@contextmanager
def _quiet_console() -> Iterator[None]:
    """The trial table alone on the console: Tune's newer console output prints a banner even
    with ``verbose=0`` (its legacy output is silent then), and Tune's warning about frequent
    experiment snapshots is off."""
    settings = {_NEW_OUTPUT: "0"}
    if _SNAPSHOT_WARNING not in os.environ:
        # Tune's advice to keep more checkpoints, repeated between the table's lines every few
        # seconds of a sweep that keeps few (threshold 0: never); one's own setting stands.
        settings[_SNAPSHOT_WARNING] = "0"
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _default_name(algo_name: str, env: Any) -> str:
    env_name = getattr(env, "__name__", None) or str(env).rsplit(":", 1)[-1]
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return f"{algo_name}_{env_name}_sweep_{stamp}"


@dataclass(frozen=True)
class _SweepFolderSettings:
    logger_config: Mapping[str, Any] | None


def _local_dir(config: AlgorithmConfig) -> Path:
    settings = settings_of(_SweepFolderSettings, config, "sweep")
    local_dir = dict(settings.logger_config or {}).get("local_dir")
    return (Path(local_dir).expanduser() if local_dir else results_root()).resolve()


class _Stopper(tune.Stopper):
    """The stop criteria of ``rlconf train``, one set per trial: a key missing from a trial's
    result stops the sweep with the ConfigError ``rlconf train`` would raise."""

    def __init__(self, stop: Mapping[str, float], config: AlgorithmConfig) -> None:
        self.stop = dict(stop)
        self.config = config
        self.error: ConfigError | None = None
        self._criteria: dict[str, StopCriteria] = {}

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        criteria = self._criteria.get(trial_id)
        if criteria is None:
            criteria = StopCriteria(self.stop, self.config, where="rlconf.sweep.run() stop")
            self._criteria[trial_id] = criteria
        try:
            return criteria.reached(result)
        except ConfigError as exc:
            self.error = self.error or exc
            return True

    def stop_all(self) -> bool:
        return self.error is not None


def _summary(
    trial: Any,
    plan: SweepPlan,
    errors: Mapping[str, Any],
    best_checkpoints: list[tuple[Any, dict[str, Any]]],
    renamed: Mapping[str, str],
) -> TrialSummary[Any]:
    metrics: dict[str, Any] = dict(trial.last_result or {})
    config_dict, _ = split_tune_keys(dict(trial.config or {}))
    status: TrialStatus = "ERROR" if trial.status == "ERROR" else "TERMINATED"
    error = errors.get(trial.path)
    if status == "ERROR" and error is None:
        error = trial.get_error()
    checkpoint = trial.checkpoint.path if trial.checkpoint is not None else None
    if plan.checkpoint_score_attr is not None and best_checkpoints:
        _, order = parse_score_attr(plan.checkpoint_score_attr)
        checkpoint = _best_checkpoint(best_checkpoints, order)
    return TrialSummary(
        name=str(trial),
        trial_id=str(trial.trial_id),
        status=status,
        config=plan.config_class.from_dict(dict(config_dict or {})),
        metrics=metrics,
        metric_value=_number(lookup(metrics, plan.metric)),
        path=str(trial.path),
        checkpoint=_renamed(checkpoint, renamed),
        error=None if error is None else f"{type(error).__name__}: {error}",
        checkpoints=tuple(checkpoint_folders(trial.path)),
    )


def _best_checkpoint(best_checkpoints: list[tuple[Any, dict[str, Any]]], order: ScoreOrder) -> str:
    """The path of the best of a trial's checkpoints (Tune's ``Result.best_checkpoints``:
    checkpoint and metrics) by their ``checkpoint_score``, by the keeper's rules (unscored
    last; on a tie the later)."""
    ranked = [
        (rank(as_score(metrics.get(CHECKPOINT_SCORE_KEY)), order, position), checkpoint.path)
        for position, (checkpoint, metrics) in enumerate(best_checkpoints)
    ]
    return str(max(ranked)[1])


def _renamed(path: str | None, renamed: Mapping[str, str]) -> str | None:
    """``path``'s name since the checkpoints were named by iteration."""
    if path is None:
        return None
    return renamed.get(os.path.normpath(path), path)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _best(trials: list[TrialSummary[Any]], plan: SweepPlan, path: str) -> SweepSummary[Any]:
    candidates = [t for t in trials if t.status != "ERROR" and t.metric_value is not None]
    if not candidates:
        failures = "; ".join(f"{t.name}: {t.error or 'no ' + plan.metric}" for t in trials)
        raise SweepError(
            f"rlconf.sweep.run(): no trial reported {plan.metric!r} ({len(trials)} trials: "
            f"{failures or 'none ran'}); the trials' folders are in {path}"
        )
    sign = 1.0 if plan.mode == "max" else -1.0
    best = max(candidates, key=lambda t: sign * float(t.metric_value or 0.0))
    return SweepSummary(
        metric=plan.metric, mode=plan.mode, best_trial=best, trials=trials, path=path
    )
