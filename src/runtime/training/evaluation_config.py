"""The config evaluation workers run with: the algorithm's config merged with the validated
``evaluation_config`` overrides, with ``in_evaluation=True``."""

from __future__ import annotations

from rlconf.algorithm_config import AlgorithmConfig


def evaluation_configured(config: AlgorithmConfig) -> bool:
    """Evaluation is configured when it runs every N iterations or has workers of its own."""
    return bool(config["evaluation_interval"]) or int(config["evaluation_num_workers"]) > 0


def evaluation_config(config: AlgorithmConfig) -> AlgorithmConfig:
    merged = config.copy()
    merged.update_from_dict(dict(config["evaluation_config"]))
    merged.update_from_dict({"in_evaluation": True, "evaluation_config": {}})
    return merged.freeze()
