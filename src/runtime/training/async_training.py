"""``AsyncAlgorithm``: the training step of IMPALA and APPO. Sampling never waits for
learning, and learning never waits for the slowest worker:

1. every remote rollout worker has ``max_sample_requests_in_flight_per_worker`` sample requests
   in flight (Ray futures, gathered with ``ray.wait``); a finished one is taken and the worker
   gets a new request at once. Without remote workers the local worker samples one fragment
   per step (holding the learner's lock: it acts with the learner's policy);
2. fragments are concatenated until ``train_batch_size`` env steps are in, then go to the
   ``LearnerThread`` through its bounded queue, with ``replay_proportion`` replayed batches
   (a ring of the last ``replay_buffer_num_slots`` train batches) mixed in;
3. the learner's updates come back: the batch counts as trained once it has been used
   ``num_sgd_iter`` times;
4. after every ``broadcast_interval`` learner updates, the weights go to the workers whose
   fragments were consumed since the last broadcast (the others keep sampling with theirs).

Each fragment carries the weights version it was sampled with; ``info["policy_lag"]`` is how
many learner updates behind it was when it was queued, ``info["learner_queue"]`` the queue's
size and wait times. A worker that fails drops its requests and is replaced or left out as the
fault-tolerance settings say.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconf.errors import ConfigError, FieldIssue
from runtime.algorithm import Algorithm
from runtime.core.multi_agent_batch import MultiAgentBatch
from runtime.core.settings import setting, settings_of
from runtime.env.rollout_worker import RolloutWorker
from runtime.training.learner_thread import LearnerThread
from runtime.training.stages import sample_with_stats

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AsyncSettings:
    """What the asynchronous training step reads (IMPALA's config and those extending it)."""

    train_batch_size: int
    max_sample_requests_in_flight_per_worker: int
    learner_queue_size: int
    learner_queue_timeout: float
    broadcast_interval: int
    num_sgd_iter: int
    minibatch_buffer_size: int
    replay_proportion: float
    replay_buffer_num_slots: int
    seed: int | None
    num_gpus: float
    num_learner_workers: int
    after_train_step: Any
    separate_vf_optimizer: bool = setting("_separate_vf_optimizer")


def _refuse_split_learners(settings: AsyncSettings, name: str) -> None:
    """V-trace runs along each lane of a batch (a sub-env's fragment): towers and learner
    workers split batches by rows, which would cut lanes apart; and there is one optimizer."""
    issues: list[tuple[str, Any, str]] = []
    if int(settings.num_learner_workers) > 1:
        issues.append(("num_learner_workers", settings.num_learner_workers, "0 or 1"))
    if float(settings.num_gpus) > 1:
        issues.append(("num_gpus", settings.num_gpus, "at most 1 (one learner device)"))
    why = (
        "is not supported by the runtime for V-trace learners: a train batch is learned on "
        "whole on one device (splitting it over towers or learner workers would cut its "
        "fragments apart)"
    )
    found = [FieldIssue(key, why, value, True, allowed) for key, value, allowed in issues]
    if settings.separate_vf_optimizer:
        found.append(
            FieldIssue(
                "_separate_vf_optimizer",
                "is not supported by the runtime: the policy and the value function share one "
                "optimizer and one loss",
                True,
                True,
                "False",
            )
        )
    if found:
        raise ConfigError(f"{name}(config=...)", found)


def _sample_with_version(worker: RolloutWorker) -> tuple[Any, Any, Any, Any, Any, int]:
    """``sample_with_stats`` and the weights version the fragment was sampled with."""
    version = int(getattr(worker, "weights_version", 0))
    return (*sample_with_stats(worker), version)


def _set_version(version: int) -> Any:
    def set_version(worker: RolloutWorker) -> None:
        worker.weights_version = version

    return set_version


class AsyncAlgorithm(Algorithm):
    _learner_thread: LearnerThread

    def _build(self) -> None:
        self.async_settings = settings = settings_of(
            AsyncSettings, self.config, type(self).__name__
        )
        _refuse_split_learners(settings, type(self).__name__)
        super()._build()
        self._learner_thread = LearnerThread(
            self.workers.local_worker(),
            queue_size=int(settings.learner_queue_size),
            queue_timeout=float(settings.learner_queue_timeout),
            num_sgd_iter=int(settings.num_sgd_iter),
            minibatch_buffer_size=int(settings.minibatch_buffer_size),
        )
        self._learner_thread.start()
        #: In-flight sample requests: Ray future -> remote worker index.
        self._requests: dict[Any, int] = {}
        #: The actor each request went to (a replaced worker's requests are dropped).
        self._request_actors: dict[Any, Any] = {}
        self._pending: list[MultiAgentBatch] = []
        self._pending_steps = 0
        #: Workers whose fragments went to the learner since the last broadcast.
        self._consumed: set[int] = set()
        self._updates_since_broadcast = 0
        self._lags: list[int] = []
        self._replay: list[MultiAgentBatch] = []
        self._replay_rng = np.random.default_rng(settings.seed)
        self._last_info: dict[str, Any] = {}
        self._num_broadcasts = 0

    # ------------------------------------------------------------------ the step

    def training_step(self) -> dict[str, Any]:
        thread = self._learner_thread
        thread.check()
        for batch, index, version in self._collect_fragments():
            self._lags.append(thread.version - version)
            if index is not None:
                self._consumed.add(index)
            self._pending.append(batch)
            self._pending_steps += batch.env_steps()
        if self._pending_steps >= int(self.async_settings.train_batch_size):
            train_batch = MultiAgentBatch.concat_samples(self._pending)
            self._pending, self._pending_steps = [], 0
            for batch in self._with_replay(self.to_train(train_batch)):
                thread.put(batch)
        self._take_learner_updates()
        self._maybe_broadcast()
        info: dict[str, Any] = {
            "learner": self._last_info,
            "learner_queue": thread.stats.pop(),
            "policy_lag_mean": float(np.mean(self._lags)) if self._lags else 0.0,
            "policy_lag_max": float(max(self._lags, default=0)),
            "num_weight_broadcasts": self._num_broadcasts,
            "learner_weights_version": thread.version,
        }
        self._lags = []
        step_results = {"info": info}
        if self.async_settings.after_train_step is not None:
            # The reference's hook: the step's results, e.g. to update something each step.
            self.async_settings.after_train_step(step_results)
        return step_results

    def _collect_fragments(self) -> list[tuple[MultiAgentBatch, int | None, int]]:
        """The fragments sampled since the last step: ``(batch, worker index or None for the
        local worker, weights version)``, counted as sampled."""
        workers = self.workers
        out: list[tuple[MultiAgentBatch, int | None, int]] = []
        if workers.num_workers == 0 or workers.num_healthy_workers() == 0:
            if workers.num_workers > 0:
                raise RuntimeError(
                    "all remote rollout workers have failed; none is left to sample from"
                )
            local = workers.local_worker()
            with self._learner_thread.lock:
                local.set_global_vars({"timestep": self._counters["num_env_steps_sampled"]})
                batch = MultiAgentBatch.wrap(local.sample())
            self._pending_episodes.extend(local.get_metrics())
            self._estimates.extend(local.pop_off_policy_estimates())
            self._env_runner_metrics.merge_logged([local.metrics.take_logged()])
            self._counters.count_sampled(batch)
            return [(batch, None, self._learner_thread.version)]
        import ray

        self._fill_requests()
        refs = list(self._requests)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        if not ready:
            ready, _ = ray.wait(refs, num_returns=1)
        for ref in ready:
            found = self._requests.pop(ref, None)
            if found is None:
                continue  # a request of a worker that failed earlier in this loop
            index = found
            ok, result = workers.take_result(index, ref, self._request_actors.pop(ref, None))
            if not ok:
                self._forget_worker(index)
                continue
            sampled, episodes, perf, estimates, logged, version = result
            batch = MultiAgentBatch.wrap(sampled)
            self._pending_episodes.extend(episodes)
            self._perf.append(perf)
            self._estimates.extend(estimates)
            self._env_runner_metrics.merge_logged([logged])
            self._counters.count_sampled(batch)
            out.append((batch, index, version))
        self._fill_requests()
        return out

    def _fill_requests(self) -> None:
        """Top every healthy remote worker up to its requests in flight (dropping those of
        actors replaced meanwhile, e.g. by a failed weight broadcast)."""
        current = {
            index: self.workers.remote_actor(index) for index in self.workers.remote_worker_ids()
        }
        stale = [
            ref
            for ref, index in self._requests.items()
            if current.get(index) is not self._request_actors.get(ref)
        ]
        for ref in stale:
            del self._requests[ref]
            self._request_actors.pop(ref, None)
        per_worker = int(self.async_settings.max_sample_requests_in_flight_per_worker)
        in_flight: dict[int, int] = {}
        for index in self._requests.values():
            in_flight[index] = in_flight.get(index, 0) + 1
        for index in self.workers.remote_worker_ids():
            for _ in range(per_worker - in_flight.get(index, 0)):
                ref, actor = self.workers.submit(index, _sample_with_version)
                self._requests[ref] = index
                self._request_actors[ref] = actor

    def _forget_worker(self, index: int) -> None:
        """Drop the other requests of a failed worker: they were made of the actor that
        failed (a replacement under the same index gets new ones after this)."""
        dropped = [ref for ref, i in self._requests.items() if i == index]
        for ref in dropped:
            del self._requests[ref]
            self._request_actors.pop(ref, None)
        self._consumed.discard(index)

    def _with_replay(self, batch: MultiAgentBatch) -> list[MultiAgentBatch]:
        """``batch`` and, with ``replay_proportion``, that many earlier train batches on
        average (the whole part, plus one more with the fractional part's probability)."""
        settings = self.async_settings
        slots = int(settings.replay_buffer_num_slots)
        proportion = float(settings.replay_proportion)
        out = [batch]
        if proportion > 0 and self._replay:
            count = math.floor(proportion)
            count += int(self._replay_rng.random() < proportion - count)
            picks = self._replay_rng.integers(len(self._replay), size=count)
            out += [self._replay[int(i)] for i in picks]
        if slots > 0:
            self._replay.append(batch)
            if len(self._replay) > slots:
                self._replay.pop(0)
        return out

    def _take_learner_updates(self) -> None:
        thread = self._learner_thread
        while True:
            try:
                update = thread.results.get_nowait()
            except Exception:  # queue.Empty
                break
            self._updates_since_broadcast += 1
            self._last_info = update.info
            if update.released:
                self._counters.count_trained(update.batch)

    def _maybe_broadcast(self) -> None:
        if self._updates_since_broadcast < int(self.async_settings.broadcast_interval):
            return
        thread = self._learner_thread
        with thread.lock:
            version = thread.version
            worker = self.workers.local_worker()
            worker.pull_learned_weights()
            targets = sorted(self._consumed & set(self.workers.remote_worker_ids()))
            global_vars = {"timestep": self._counters["num_env_steps_sampled"]}
            if targets:
                self.workers.sync_weights(global_vars=global_vars, indices=targets)
                self.workers.call_remote(_set_version(version), indices=targets)
            worker.set_global_vars(global_vars)
        self._consumed.clear()
        self._updates_since_broadcast = 0
        self._num_broadcasts += 1

    def _between_updates(self) -> AbstractContextManager[Any]:
        """The learner thread's lock (held during each update): whatever reads or writes the
        learner's weights and optimizer state from the driver's thread holds it. Nothing
        before the thread is made."""
        thread = getattr(self, "_learner_thread", None)
        return nullcontext() if thread is None else thread.lock

    def sync_weights(self, policies: list[str] | None = None) -> None:
        """Weights to every rollout worker, between two learner updates."""
        with self._between_updates():
            super().sync_weights(policies)

    def _sync_evaluation_workers(self) -> None:
        """The evaluation workers get the learner's weights between two updates."""
        with self._between_updates():
            super()._sync_evaluation_workers()

    def get_weights(self, policies: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """The learner's weights between two updates (never half of one)."""
        with self._between_updates():
            return super().get_weights(policies)

    def set_weights(self, weights: Mapping[str, Mapping[str, Any]]) -> None:
        with self._between_updates():
            super().set_weights(weights)

    # A checkpoint is of the learner between two updates, never of half a step: Tune's hooks
    # and save()/restore() outside Tune (which do not go through them). The lock is an RLock:
    # Tune's save()/restore() calling its hooks take it again.

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        with self._between_updates():
            super().save_checkpoint(checkpoint_dir)

    def load_checkpoint(self, checkpoint: Any) -> None:
        with self._between_updates():
            super().load_checkpoint(checkpoint)

    def save(self, checkpoint_dir: str | None = None) -> Any:
        with self._between_updates():
            return super().save(checkpoint_dir)

    def restore(self, checkpoint_path: Any) -> None:
        with self._between_updates():
            super().restore(checkpoint_path)

    def cleanup(self) -> None:
        thread = getattr(self, "_learner_thread", None)
        if thread is not None:
            thread.stop()
        super().cleanup()
