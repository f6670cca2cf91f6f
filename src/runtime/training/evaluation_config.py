"""The config evaluation workers run with: the algorithm's config merged with the validated
``evaluation_config`` overrides, with ``in_evaluation=True``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from runtime.core.settings import settings_of


@dataclass(frozen=True)
class EvaluationSettings:
    evaluation_interval: int | None
    evaluation_num_workers: int
    evaluation_config: Mapping[str, Any]


@dataclass(frozen=True)
class EvaluationDurationSettings:
    """How long one evaluation runs (read from the evaluation config)."""

    evaluation_duration: int | str
    evaluation_duration_unit: str
    num_envs_per_worker: int


def evaluation_configured(config: AlgorithmConfig) -> bool:
    """Evaluation is configured when it runs every N iterations or has workers of its own."""
    settings = settings_of(EvaluationSettings, config, "evaluation")
    return bool(settings.evaluation_interval) or int(settings.evaluation_num_workers) > 0


def evaluation_config(config: AlgorithmConfig) -> AlgorithmConfig:
    settings = settings_of(EvaluationSettings, config, "evaluation")
    merged = config.copy()
    merged.update_from_dict(dict(settings.evaluation_config))
    merged.update_from_dict({"in_evaluation": True, "evaluation_config": {}})
    return merged.freeze()
