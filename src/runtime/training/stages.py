"""The stages a training step is composed of, one name each:

- ``sample_train_batch()``: at least ``train_batch_size`` env steps from the rollout workers
  (or the offline input), already postprocessed by the workers with the algorithm's steps,
  keyed by policy id;
- ``learn_on_batch(batch)``: one learner update per policy to train, on the local worker;
- ``sync_weights()``: the new weights (and the global timestep) to every rollout worker.

The step counters (env and agent steps, sampled and trained) are kept here too.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.sample_batch import SampleBatch
from runtime.env.episode import EpisodeMetrics
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.results.metrics_logger import LoggedKey, MetricsLogger
from runtime.training.algorithm_settings import AlgorithmSettings
from runtime.training.counters import Counters
from runtime.training.trainable import Trainable

logger = logging.getLogger(__name__)


class TrainingStages(Trainable):
    """The stages of a training step (mixed into ``Algorithm``)."""

    config: AlgorithmConfig
    settings: AlgorithmSettings
    workers: WorkerSet
    _counters: Counters
    _pending_episodes: list[EpisodeMetrics]
    _perf: list[dict[str, float]]
    #: Each batch read's off-policy estimates (``input_evaluation``) since the last result.
    _estimates: list[dict[str, dict[str, float]]]
    #: What the rollout workers' hooks logged (``env_runner.metrics``), for ``env_runners/``.
    _env_runner_metrics: MetricsLogger

    def sample_train_batch(self) -> MultiAgentBatch:
        """Sample rounds from the rollout workers until ``train_batch_size`` env steps (agent
        steps with ``count_steps_by="agent_steps"``) are in."""
        target = int(self.settings.train_batch_size)
        by_agent_steps = self.settings.count_steps_by == "agent_steps"
        batches: list[MultiAgentBatch] = []
        count = 0
        rounds = 0
        started = time.perf_counter()
        self.workers.local_worker().set_global_vars(
            {"timestep": self._counters["num_env_steps_sampled"]}
        )
        while count < target:
            rounds += 1
            for batch in self.sample_round():
                batches.append(batch)
                count += batch.agent_steps() if by_agent_steps else batch.env_steps()
        train_batch = MultiAgentBatch.concat_samples(batches)
        self._counters.count_sampled(train_batch)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: sampled a train batch of %d env steps (%d agent steps; train_batch_size "
                "%d) in %d round(s), %.3f s: %s",
                type(self).__name__,
                train_batch.env_steps(),
                train_batch.agent_steps(),
                target,
                rounds,
                time.perf_counter() - started,
                batch_shapes(train_batch),
            )
        return train_batch

    def sample_round(self) -> list[MultiAgentBatch]:
        """One ``sample()`` from every rollout worker (the local one when there are none), or
        one batch of the workers' input where it is not the sampler (``input``)."""
        started = time.perf_counter()
        workers = self.workers
        if workers.num_workers == 0:
            local = workers.local_worker()
            batch = local.sample()
            self._pending_episodes.extend(local.get_metrics())
            self._estimates.extend(local.pop_off_policy_estimates())
            self._env_runner_metrics.merge_logged([local.metrics.take_logged()])
            round_ = [MultiAgentBatch.wrap(batch)]
            _log_round(self, "sampled", round_, started)
            return round_
        results = workers.call_remote(sample_with_stats)
        if not results and workers.num_healthy_workers() > 0:
            # Every worker failed in this round and was recreated: sample from the new ones.
            results = workers.call_remote(sample_with_stats)
        if not results:
            raise RuntimeError(
                "all remote rollout workers have failed; none is left to sample from"
            )
        out = []
        for _, (sampled, episodes, perf, estimates, logged) in results:
            out.append(MultiAgentBatch.wrap(sampled))
            self._pending_episodes.extend(episodes)
            self._perf.append(perf)
            self._estimates.extend(estimates)
            self._env_runner_metrics.merge_logged([logged])
        _log_round(self, "sampled", out, started)
        return out

    def learn_on_batch(self, batch: SampleBatch | MultiAgentBatch) -> dict[str, Any]:
        """Update the learner of each policy to train in ``batch`` on its rows (on the local
        worker; the others' rows are dropped); returns the learner info per policy id."""
        batch = self.to_train(MultiAgentBatch.wrap(batch))
        started = time.perf_counter()
        info = self.workers.local_worker().learn_on_batch(batch)
        self._counters.count_trained(batch)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s: learned on %s in %.3f s",
                type(self).__name__,
                ", ".join(f"{pid}: {len(rows)} rows" for pid, rows in batch.items()) or "no rows",
                time.perf_counter() - started,
            )
        return info

    def to_train(self, batch: MultiAgentBatch) -> MultiAgentBatch:
        """The part of ``batch`` that belongs to policies to train (``policies_to_train``)."""
        worker = self.workers.local_worker()
        kept = {pid: b for pid, b in batch.items() if worker.is_policy_to_train(pid, b)}
        return (
            batch if len(kept) == len(batch.policy_batches) else MultiAgentBatch(kept, len(batch))
        )

    def sync_weights(self, policies: list[str] | None = None) -> None:
        """Send the weights of the policies to train (or of ``policies``) and the global
        timestep to the rollout workers: the others' weights do not change in training."""
        worker = self.workers.local_worker()
        worker.pull_learned_weights()
        if policies is None:
            policies = [pid for pid in worker.policy_map if worker.is_policy_to_train(pid)]
        self.workers.sync_weights(
            global_vars={"timestep": self._counters["num_env_steps_sampled"]}, policies=policies
        )


def sample_with_stats(
    worker: RolloutWorker,
) -> tuple[SampleBatch | MultiAgentBatch, list[EpisodeMetrics], Any, Any, list[LoggedKey]]:
    """What a remote worker sends back of one ``sample()``: the fragment, its finished
    episodes, perf stats, off-policy estimates and what its hooks logged."""
    batch = worker.sample()
    return (
        batch,
        worker.get_metrics(),
        worker.get_perf_stats(),
        worker.pop_off_policy_estimates(),
        worker.metrics.take_logged(),
    )


def batch_shapes(batch: MultiAgentBatch) -> str:
    """``default_policy: 200 rows {obs: (200, 4) float32, actions: (200,) int64, ...}``."""
    return "; ".join(
        f"{pid}: {len(rows)} rows {{"
        + ", ".join(
            f"{name}: {tuple(values.shape)} {values.dtype}" for name, values in rows.items()
        )
        + "}"
        for pid, rows in batch.items()
    )


def _log_round(
    algorithm: TrainingStages, verb: str, batches: list[MultiAgentBatch], started: float
) -> None:
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "%s: %s a round of %d env steps from %d batch(es) in %.3f s",
            type(algorithm).__name__,
            verb,
            sum(b.env_steps() for b in batches),
            len(batches),
            time.perf_counter() - started,
        )
