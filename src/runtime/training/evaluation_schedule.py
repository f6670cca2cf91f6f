"""When and on what an ``Algorithm`` evaluates: every ``evaluation_interval`` iterations, after
the training step on the new weights, or beside it in a thread
(``evaluation_parallel_to_training``) on the weights from before it; ``evaluate()`` by hand;
the evaluation WorkerSet and keeping its weights and filters in step with the rollout workers.

How one evaluation runs (episodes or timesteps over the workers) is in
``runtime.training.evaluation``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.metrics import ENV_RUNNER_RESULTS
from runtime.callbacks import DefaultCallbacks
from runtime.callbacks_setup import workers_recreated
from runtime.cluster.resources import Role
from runtime.core.policy import PolicyBuilder
from runtime.core.settings import settings_of
from runtime.env.env_preparation import prepared_creator
from runtime.env.env_registry import EnvCreator
from runtime.env.recording import video_folder
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.hook_calls import call_hook
from runtime.results.metrics_logger import LoggedKey, MetricsLogger, merge_into
from runtime.results.new_stack_layout import evaluation_env_runners
from runtime.training.algorithm_settings import AlgorithmSettings
from runtime.training.counters import Counters
from runtime.training.evaluation import (
    DurationFn,
    accepts_train_future,
    duration_fn_for,
    evaluation_metrics,
    finished_future,
    placeholder_metrics,
    run_evaluation,
)
from runtime.training.evaluation_config import (
    EvaluationDurationSettings,
    evaluation_config,
    evaluation_configured,
)
from runtime.training.trainable import Trainable

_T = TypeVar("_T")
logger = logging.getLogger(__name__)


class EvaluationSchedule(Trainable):
    """The evaluation part of ``Algorithm`` (mixed into it)."""

    config: AlgorithmConfig
    settings: AlgorithmSettings
    policy_class: ClassVar[PolicyBuilder]
    callbacks: DefaultCallbacks
    env_creator: EnvCreator | None
    device: str
    workers: WorkerSet
    _counters: Counters
    #: None until evaluation is configured or ``evaluate()`` is first called.
    evaluation_workers: WorkerSet | None
    #: ``{"evaluation": metrics}`` of the last evaluation; ``{}`` before the first.
    evaluation_metrics: dict[str, Any]
    metrics: MetricsLogger
    _evaluation_runner_metrics: MetricsLogger

    if TYPE_CHECKING:
        # Provided by Algorithm: the actor options for the role's placement group bundles.
        def _actor_options(self, role: Role) -> Callable[[int], dict[str, Any]]: ...

        # Provided by ResultsFolder: the results folder, created if it is not there yet.
        def _claim_logdir(self) -> Path: ...

    def _start_evaluation(self) -> None:
        """No evaluation yet; the evaluation workers when evaluation is configured."""
        self.evaluation_workers = None
        self.evaluation_metrics = {}
        if evaluation_configured(self.config):
            self.evaluation_workers = self._make_evaluation_workers()

    def _train_and_evaluate(self, train_step: Callable[[], _T]) -> tuple[_T, bool]:
        """``train_step()``, with an evaluation when one is due this iteration: beside it
        (``evaluation_parallel_to_training``, on the weights from before it), or after it.
        Returns what ``train_step()`` returned and whether an evaluation ran."""
        settings = self.settings
        interval = settings.evaluation_interval
        evaluate_now = bool(interval) and (self._iteration + 1) % int(interval or 1) == 0
        if evaluate_now and settings.evaluation_parallel_to_training:
            self._sync_evaluation_workers()
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlconf-train") as pool:
                train_future = pool.submit(train_step)
                try:
                    self._evaluate(train_future, self._iteration, sync=False)
                finally:
                    outcome = train_future.result()
            return outcome, True
        outcome = train_step()
        if evaluate_now:
            self._evaluate(finished_future(), self._iteration + 1, sync=True)
        return outcome, evaluate_now

    def _attach_evaluation_results(self, result: dict[str, Any], evaluated: bool) -> None:
        """Add this iteration's evaluation to ``result``; with
        ``always_attach_evaluation_results`` the last one (nan metrics before the first)."""
        if evaluated:
            result.update(self.evaluation_metrics)
            return
        always = self.settings.always_attach_evaluation_results
        if always and self.evaluation_workers is not None:
            result.update(self.evaluation_metrics or {"evaluation": placeholder_metrics()})

    def evaluate(self, duration_fn: DurationFn | None = None) -> dict[str, Any]:
        """Evaluate the current weights now; returns ``{"evaluation": metrics}``.

        ``duration_fn(units_done) -> units_left`` overrides ``evaluation_duration``. Without
        evaluation configured, a local evaluation worker is made on the first call.
        """
        return self._evaluate(
            finished_future(), self._iteration, sync=True, duration_fn=duration_fn
        )

    def _sync_evaluation_workers(self) -> None:
        if self.evaluation_workers is None:
            self.evaluation_workers = self._make_evaluation_workers()
        timestep = {"timestep": self._counters["num_env_steps_sampled"]}
        self.evaluation_workers.sync_policy_setup()
        self.evaluation_workers.sync_weights(global_vars=timestep)
        self.evaluation_workers.sync_filter_states()

    def _evaluate(
        self,
        train_future: Future[Any],
        weights_version: int,
        *,
        sync: bool,
        duration_fn: DurationFn | None = None,
    ) -> dict[str, Any]:
        call_hook(self.callbacks, "on_evaluate_start", algorithm=self, metrics_logger=self.metrics)
        started = time.perf_counter()
        if sync or self.evaluation_workers is None:
            self._sync_evaluation_workers()
        workers = self.evaluation_workers
        assert workers is not None
        custom = self.settings.custom_eval_function
        if custom is not None:
            args: tuple[Any, ...] = (self, workers)
            if accepts_train_future(custom):
                args += (train_future,)
            metrics = custom(*args)
            if not isinstance(metrics, Mapping):
                raise TypeError(
                    f"custom_eval_function {getattr(custom, '__qualname__', custom)!r} returned "
                    f"{type(metrics).__name__} {metrics!r:.100}; it must return a dict of metrics"
                )
            metrics = dict(metrics)
            metrics.setdefault("weights_version", weights_version)
            # The new stack's layout of the 2.x episode keys the function returned.
            block = evaluation_env_runners(metrics, None)
            if block and ENV_RUNNER_RESULTS not in metrics:
                metrics[ENV_RUNNER_RESULTS] = block
        else:
            eval_config = workers.config
            unit = settings_of(EvaluationDurationSettings, eval_config, "evaluation")
            by_episodes = unit.evaluation_duration_unit == "episodes"
            duration_fn = duration_fn or duration_fn_for(
                eval_config, workers.num_workers, train_future
            )
            episodes, steps = run_evaluation(workers, by_episodes, duration_fn)
            metrics = evaluation_metrics(episodes, steps, workers, weights_version)
        self._add_evaluation_logged(workers, metrics)
        self.evaluation_metrics = {"evaluation": metrics}
        logger.info(
            "%s: evaluation on the weights of iteration %d: %s episodes, %s env steps, "
            "episode_reward_mean %s (%.2f s on %d remote evaluation worker(s))",
            type(self).__name__,
            weights_version,
            metrics.get("episodes_this_iter", "?"),
            metrics.get("timesteps_this_iter", "?"),
            metrics.get("episode_reward_mean", "?"),
            time.perf_counter() - started,
            workers.num_workers,
        )
        call_hook(
            self.callbacks,
            "on_evaluate_end",
            algorithm=self,
            metrics_logger=self.metrics,
            evaluation_metrics=self.evaluation_metrics,
        )
        return self.evaluation_metrics

    def _add_evaluation_logged(self, workers: WorkerSet, metrics: dict[str, Any]) -> None:
        """What the evaluation workers' hooks logged (``env_runner.metrics``), fetched once the
        evaluation is done, into ``metrics["env_runners"]``."""
        logger = self._evaluation_runner_metrics
        logger.merge_logged(workers.foreach_worker(_take_logged))
        logged = logger.reduce()
        if logged:
            block = metrics.get(ENV_RUNNER_RESULTS)
            if not isinstance(block, dict):
                block = metrics[ENV_RUNNER_RESULTS] = {}
            merge_into(block, logged)

    def _make_evaluation_workers(self) -> WorkerSet:
        """The evaluation WorkerSet: its local worker when evaluation_num_workers=0, otherwise
        that many remote workers, all running the evaluation config."""
        num_workers = int(self.settings.evaluation_num_workers)
        eval_config = evaluation_config(self.config)
        creator = self.env_creator
        if creator is not None:
            # Its envs prepared as the evaluation config asks (preprocessor_pref, model keys).
            creator = prepared_creator(creator, eval_config, type(self).__name__)
        workers = WorkerSet(
            env_creator=creator,
            config=eval_config,
            policy_class=self.policy_class,
            num_workers=num_workers,
            local_worker=num_workers == 0,
            local_has_env=True,
            remote_options=self._actor_options("evaluation"),
            device=self.device,
            name="evaluation_workers",
            video_dir=video_folder(eval_config, self._claim_logdir, type(self).__name__),
        )
        workers.source_worker = self.workers.local_worker()

        def recreated(indices: list[int]) -> None:
            workers_recreated(self, workers, indices, is_evaluation=True)

        workers.on_recreated = recreated
        return workers


def _take_logged(worker: RolloutWorker) -> list[LoggedKey]:
    return worker.metrics.take_logged()
