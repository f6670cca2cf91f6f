"""The experiment tracker of a sweep: the ``logger_config`` tracker (``rlconf.logger_config``) as
one tracker run per trial, each result under the keys of ``progress.csv`` (flattened with ``/``).
MLflow through Tune's own ``MLflowLoggerCallback`` (a run per trial in ``experiment_name``,
default the sweep's name); W&B from each trial's actor (``ResultsFolder.log_to_trial_tracker``:
a run per trial in the trial's folder, grouped by the sweep's name unless ``group`` is set).

Tune names each trial's run after the trial, so ``name`` (W&B) and ``run_name`` (MLflow), which
would give every trial the same name, are refused for a sweep."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError
from rlconf.logger_config import TRACKER_KEYS, tracker_type
from runtime.core.settings import settings_of
from runtime.results.trackers import require

#: The key that names one run, which Tune sets per trial.
_RUN_NAME = {"wandb": "name", "mlflow": "run_name"}


@dataclass(frozen=True)
class _TrackerSettings:
    logger_config: Any


def tracker_callbacks(config: AlgorithmConfig, sweep_name: str) -> list[Any]:
    """Tune's callback for the tracker ``config``'s ``logger_config`` asks for (or none)."""
    settings = dict(settings_of(_TrackerSettings, config, "sweep").logger_config or {})
    kind = tracker_type(settings)
    if kind is None:
        return []
    run_name = _RUN_NAME[kind]
    if settings.get(run_name) is not None:
        raise ConfigError.single(
            "rlconf.sweep.run()",
            f"logger_config.{run_name}",
            "would give every trial's run the same name: Tune names each after its trial "
            "(set it for single runs; group or experiment_name gather a sweep's runs)",
            value=settings[run_name],
            has_value=True,
            allowed="None",
        )
    given = {k: settings[k] for k in TRACKER_KEYS[kind] if settings.get(k) is not None}
    if kind == "wandb":
        # Each trial logs its own W&B run from its actor (``ResultsFolder``): Tune's
        # WandbLoggerCallback runs W&B in a logging actor it kills as soon as the trial ends,
        # before W&B has written the run.
        require("wandb", "wandb")
        return []
    require("mlflow", "mlflow")
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    return [
        MLflowLoggerCallback(
            tracking_uri=given.get("tracking_uri"),
            experiment_name=given.get("experiment_name") or sweep_name,
            tags=given.get("tags"),
        )
    ]
