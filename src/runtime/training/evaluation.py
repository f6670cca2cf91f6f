"""The default evaluation: exactly ``evaluation_duration`` episodes or timesteps on the
evaluation WorkerSet, or - with ``"auto"`` - rounds for as long as the training step runs.

Episodes are spread over the workers as the reference describes (the first ``N % n`` workers
run one more); timesteps are rounded up to a multiple of the worker count. A worker that fails
mid-round is handled by the WorkerSet's fault-tolerance settings and its share is run again on
the healthy workers, so the count stays exact.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.metrics import ENV_RUNNER_RESULTS
from runtime.core.settings import settings_of
from runtime.env.episode import EpisodeMetrics
from runtime.env.episode_runner import split_evenly
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.results.metrics import summarize_episodes
from runtime.results.new_stack_layout import evaluation_env_runners
from runtime.training.evaluation_config import EvaluationDurationSettings

DurationFn = Callable[[int], int]


def finished_future() -> Future[Any]:
    """A training future that is already done (sequential evaluation, ``evaluate()`` by hand)."""
    future: Future[Any] = Future()
    future.set_result(None)
    return future


def duration_fn_for(
    config: AlgorithmConfig, num_workers: int, train_future: Future[Any]
) -> DurationFn:
    """Units left to run, given the units done so far in this evaluation (``config``: the
    evaluation config)."""
    settings = settings_of(EvaluationDurationSettings, config, "evaluation")
    duration = settings.evaluation_duration
    if duration != "auto":
        return lambda done: int(duration) - done
    per_worker = 1
    if settings.evaluation_duration_unit == "timesteps":
        per_worker = config.get_rollout_fragment_length() * int(settings.num_envs_per_worker)
    per_round = max(1, num_workers) * per_worker

    def auto(done: int) -> int:
        # At least one round; then more only while the training step is still running.
        return 0 if done > 0 and train_future.done() else per_round

    return auto


def run_evaluation(
    workers: WorkerSet, by_episodes: bool, duration_fn: DurationFn
) -> tuple[list[EpisodeMetrics], int]:
    """Run rounds until ``duration_fn`` says nothing is left; returns episodes and steps."""
    episodes: list[EpisodeMetrics] = []
    steps = 0
    started: set[int] = set()
    # (Faulty episodes, cut off by a failed sub-env, come along but are not evaluated ones.)
    while (left := duration_fn(_evaluated(episodes) if by_episodes else steps)) > 0:
        if workers.num_workers == 0:
            found, taken = _evaluate(workers.local_worker(), left, by_episodes, 0 not in started)
            started.add(0)
            episodes += found
            steps += taken
            continue
        ids = workers.remote_worker_ids()
        if not ids:
            raise RuntimeError("all evaluation workers have failed; none is left to evaluate on")
        if by_episodes:
            shares = dict(zip(ids, split_evenly(left, len(ids)), strict=True))
        else:
            shares = dict.fromkeys(ids, math.ceil(left / len(ids)))
        fresh = {i: i not in started for i in ids}

        def work(
            worker: RolloutWorker, shares: dict[int, int] = shares, fresh: dict[int, bool] = fresh
        ) -> tuple[list[EpisodeMetrics], int]:
            index = worker.worker_index
            return _evaluate(worker, shares[index], by_episodes, fresh[index])

        busy = [i for i in ids if shares[i] > 0]
        for index, (found, taken) in workers.call_remote(work, indices=busy):
            started.add(index)
            episodes += found
            steps += taken
    return episodes, steps


def _evaluated(episodes: list[EpisodeMetrics]) -> int:
    return sum(not e.faulty for e in episodes)


def _evaluate(
    worker: RolloutWorker, amount: int, by_episodes: bool, reset: bool
) -> tuple[list[EpisodeMetrics], int]:
    if amount <= 0:
        return [], 0
    if by_episodes:
        return worker.evaluate(episodes=amount)
    return worker.evaluate(timesteps=amount, reset=reset)


def evaluation_metrics(
    episodes: list[EpisodeMetrics], steps: int, workers: WorkerSet, weights_version: int
) -> dict[str, Any]:
    metrics = summarize_episodes(episodes)
    metrics.update(
        {
            "timesteps_this_iter": steps,
            "num_healthy_workers": workers.num_healthy_workers(),
            "num_recreated_workers": workers.num_recreated,
            "weights_version": weights_version,
        }
    )
    evaluated = [e for e in episodes if not e.faulty]
    metrics[ENV_RUNNER_RESULTS] = evaluation_env_runners(metrics, evaluated)
    return metrics


def placeholder_metrics() -> dict[str, Any]:
    """What ``result["evaluation"]`` holds before the first evaluation: nan everywhere."""
    metrics = summarize_episodes([])
    metrics.update({"timesteps_this_iter": 0, "weights_version": -1})
    metrics[ENV_RUNNER_RESULTS] = evaluation_env_runners(metrics, [])
    return metrics


def accepts_train_future(func: Callable[..., Any]) -> bool:
    """Whether a custom evaluation function takes a third argument (the training future)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = 0
    for p in parameters:
        if p.name == "train_future" or p.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 3
