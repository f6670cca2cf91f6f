"""What an ``Algorithm`` reports: the step counters, the sampler perf stats and the episode
history it keeps between iterations, and the result dict it compiles from them each
iteration (the sampler metrics at the top level and, as RLlib 2.x has them, under
``sampler_results``; RLlib's new API stack layout beside them: ``env_runners``, ``learners``
and the lifetime counters, ``runtime.results.new_stack_layout``)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.metrics import ENV_RUNNER_RESULTS
from runtime.env.episode import EpisodeMetrics
from runtime.env.worker_set import WorkerSet
from runtime.results.metrics import EpisodeHistory, summarize_episodes
from runtime.results.metrics_logger import MetricsLogger, merge_into
from runtime.results.new_stack_layout import add_training_layout
from runtime.results.system_usage import SystemUsage
from runtime.training.algorithm_settings import AlgorithmSettings
from runtime.training.counters import Counters
from runtime.training.trainable import Trainable


class ResultBookkeeping(Trainable):
    """The counters and result compilation part of ``Algorithm`` (mixed into it)."""

    config: AlgorithmConfig
    settings: AlgorithmSettings
    workers: WorkerSet
    #: The step counters (``runtime.training.counters``).
    _counters: Counters
    _num_episodes: int
    #: The last ``metrics_num_episodes_for_smoothing`` episodes, for the smoothed metrics.
    _history: EpisodeHistory
    #: Episodes finished since the last result.
    _pending_episodes: list[EpisodeMetrics]
    #: Perf stats of the remote workers' samples since the last result.
    _perf: list[dict[str, float]]
    #: Each batch read's off-policy estimates since the last result (``input_evaluation``).
    _estimates: list[dict[str, dict[str, float]]]
    _system_usage: SystemUsage | None
    #: RLlib's ``Algorithm.metrics``: what the algorithm's hooks log (``on_train_result``,
    #: ``on_algorithm_init``, ``on_evaluate_end``, ...), at the top level of each result.
    metrics: MetricsLogger
    #: What the rollout workers' hooks logged, merged worker by worker (``env_runners/``).
    _env_runner_metrics: MetricsLogger
    #: What the evaluation workers' hooks logged (``evaluation/env_runners/``).
    _evaluation_runner_metrics: MetricsLogger

    def _start_bookkeeping(self) -> None:
        """Counters at zero, no episodes yet."""
        settings = self.settings
        self._counters = Counters()
        self._num_episodes = 0
        self._history = EpisodeHistory(int(settings.metrics_num_episodes_for_smoothing))
        self._pending_episodes = []
        self._perf = []
        self._estimates = []
        self._system_usage = SystemUsage() if settings.log_sys_usage else None
        self.metrics = MetricsLogger()
        self._env_runner_metrics = MetricsLogger()
        self._evaluation_runner_metrics = MetricsLogger()

    def _compile_results(self, step_results: dict[str, Any], sampled: int) -> dict[str, Any]:
        """The result of an iteration: episode metrics (smoothed over the history), counters,
        sampler perf stats and system usage, then the training step's own results (its
        ``info`` merged with the counters), and the new API stack's layout of them."""
        new = self._pending_episodes
        self._pending_episodes = []
        # Faulty episodes (cut off by a failed sub-env) are this iteration's count only: they
        # are neither finished episodes nor part of the smoothing window.
        faulty = sum(e.faulty for e in new)
        if faulty:
            new = [e for e in new if not e.faulty]
        self._num_episodes += len(new)
        window = self._history.smoothed(new)
        result = summarize_episodes(window, new_episodes=len(new), num_faulty=faulty)
        counters = self._counters.step_counts()
        info = dict(step_results.get("info", {}))
        info.update(counters)
        if self.workers.num_workers == 0:
            perf = self.workers.local_worker().get_perf_stats()
        else:
            perf = mean_dicts(self._perf)
            self._perf = []
        result.update(
            {
                "episodes_total": self._num_episodes,
                "timesteps_total": counters.get(
                    "num_agent_steps_sampled"
                    if self.settings.count_steps_by == "agent_steps"
                    else "num_env_steps_sampled",
                    0,
                ),
                "timesteps_this_iter": sampled,
                "agent_timesteps_total": counters.get("num_agent_steps_sampled", 0),
                "num_env_steps_sampled": counters.get("num_env_steps_sampled", 0),
                "num_env_steps_trained": counters.get("num_env_steps_trained", 0),
                "num_agent_steps_sampled": counters.get("num_agent_steps_sampled", 0),
                "num_agent_steps_trained": counters.get("num_agent_steps_trained", 0),
                "num_healthy_workers": self.workers.num_healthy_workers(),
                "num_recreated_workers": self.workers.num_recreated,
                "sampler_perf": perf,
                "info": info,
            }
        )
        # RLlib 2.x's place of the sampler metrics (sampler_results/episode_reward_mean, ...):
        # the same values, so that stop keys and Tune metrics written for it work.
        result["sampler_results"] = sampler_results(result)
        if self._estimates:
            names = sorted({name for estimate in self._estimates for name in estimate})
            result["off_policy_estimation"] = {
                name: mean_dicts([e[name] for e in self._estimates if name in e]) for name in names
            }
            self._estimates = []
        if self._system_usage is not None:
            result["perf"] = self._system_usage.sample()
        for key, value in step_results.items():
            if key != "info":
                result[key] = value
        add_training_layout(result, window, self._counters)
        merge_into(result[ENV_RUNNER_RESULTS], self._env_runner_metrics.reduce())
        self._counters.result_compiled()
        return result

    def _add_logged_metrics(self, result: dict[str, Any]) -> None:
        """What the algorithm's hooks logged since the last result, at ``result``'s top
        level (after ``on_train_result``, so what it logs lands in its own result)."""
        merge_into(result, self.metrics.reduce())


#: The keys of a result that RLlib 2.x also nests under ``sampler_results``: the episode
#: metrics (``summarize_episodes``) and the sampler's perf stats.
SAMPLER_RESULT_KEYS = (
    "episode_reward_max",
    "episode_reward_min",
    "episode_reward_mean",
    "episode_len_mean",
    "episodes_this_iter",
    "policy_reward_min",
    "policy_reward_max",
    "policy_reward_mean",
    "custom_metrics",
    "hist_stats",
    "sampler_perf",
    "num_faulty_episodes",
)


def sampler_results(result: dict[str, Any]) -> dict[str, Any]:
    """The ``sampler_results`` block of ``result``: copies of its sampler metrics."""
    return {key: copy.deepcopy(result[key]) for key in SAMPLER_RESULT_KEYS if key in result}


def mean_dicts(dicts: list[dict[str, float]]) -> dict[str, float]:
    """Key-wise means over the dicts that have the key (keys sorted)."""
    keys = {k for d in dicts for k in d}
    return {k: float(np.mean([d[k] for d in dicts if k in d])) for k in sorted(keys)}
