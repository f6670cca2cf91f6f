"""``AlgorithmSettings``: what the ``Algorithm`` itself (its training loop, stages, results,
acting and evaluation schedule) reads of its config, built once at build."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.core.settings import setting


@dataclass(frozen=True)
class AlgorithmSettings:
    # Building
    env: Any
    num_cpus_for_driver: float | None
    num_workers: int
    output: Any
    num_learner_workers: int
    num_cpus_per_learner_worker: float
    num_gpus_per_learner_worker: float
    # The training iteration
    env_task_fn: Any
    min_time_s_per_reporting: float | None
    min_sample_timesteps_per_reporting: int | None
    min_train_timesteps_per_reporting: int | None
    train_batch_size: int
    count_steps_by: str
    # Results
    metrics_num_episodes_for_smoothing: int
    log_sys_usage: bool
    # Acting
    normalize_actions: bool
    clip_actions: bool
    # Evaluation
    evaluation_interval: int | None
    evaluation_parallel_to_training: bool
    always_attach_evaluation_results: bool
    custom_eval_function: Any
    evaluation_num_workers: int
    # Last: a renamed key reads as a default to type checkers.
    fake_gpus: bool = setting("_fake_gpus")
