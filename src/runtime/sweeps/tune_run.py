"""Running a checked ``SweepPlan`` as a Ray Tune experiment and summarising its trials."""

from __future__ import annotations

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
from runtime.sweeps.trial_resources import (
    local_sweep_cpus,
    refuse_unplaceable_trials,
    sweep_trial_plans,
)
from runtime.sweeps.trial_table import TrialTable
from runtime.training.config_resolution import split_tune_keys

_NEW_OUTPUT = "RAY_AIR_NEW_OUTPUT"
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
    table = TrialTable(name, plan.searched, plan.metric, enabled=plan.progress)
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
    run_config = tune.RunConfig(
        name=name,
        storage_path=str(storage),
        stop=stopper,
        checkpoint_config=tune.CheckpointConfig(
            checkpoint_frequency=plan.checkpoint_freq,
            checkpoint_at_end=plan.checkpoint_at_end,
        ),
        callbacks=[table],
        verbose=0,
    )
    tuner = tune.Tuner(
        get_algorithm_class(algo_name),
        param_space=to_tune_space(plan.param_space),
        tune_config=tune_config,
        run_config=run_config,
    )
    with _legacy_output():
        grid = tuner.fit()
    if stopper is not None and stopper.error is not None:
        raise stopper.error
    errors = {r.path: r.error for r in (grid[i] for i in range(len(grid))) if r.error}
    trials = [_summary(trial, plan, errors) for trial in table.trials]
    return _best(trials, plan, str(Path(storage) / name))


@contextmanager
def _legacy_output() -> Iterator[None]:
    """Tune's newer console output prints a banner even with ``verbose=0``; its legacy output
    is silent then, leaving the trial table alone on the console."""
    previous = os.environ.get(_NEW_OUTPUT)
    os.environ[_NEW_OUTPUT] = "0"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(_NEW_OUTPUT, None)
        else:
            os.environ[_NEW_OUTPUT] = previous


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


def _summary(trial: Any, plan: SweepPlan, errors: Mapping[str, Any]) -> TrialSummary[Any]:
    metrics: dict[str, Any] = dict(trial.last_result or {})
    config_dict, _ = split_tune_keys(dict(trial.config or {}))
    status: TrialStatus = "ERROR" if trial.status == "ERROR" else "TERMINATED"
    error = errors.get(trial.path)
    if status == "ERROR" and error is None:
        error = trial.get_error()
    checkpoint = trial.checkpoint
    return TrialSummary(
        name=str(trial),
        trial_id=str(trial.trial_id),
        status=status,
        config=plan.config_class.from_dict(dict(config_dict or {})),
        metrics=metrics,
        metric_value=_number(lookup(metrics, plan.metric)),
        path=str(trial.path),
        checkpoint=checkpoint.path if checkpoint is not None else None,
        error=None if error is None else f"{type(error).__name__}: {error}",
    )


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
