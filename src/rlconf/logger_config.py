"""``debugging(logger_config=...)``: where a run's results go, checked when it is set.

Every run writes its results folder (``params.json``, ``result.json``, ``progress.csv``,
TensorBoard events). ``logger_config`` places that folder (``logdir``, ``local_dir``) and may add
an experiment tracker with ``type``:

- ``"wandb"``: Weights & Biases (``pip install "rlconf[wandb]"``), with ``project``, ``entity``,
  ``group``, ``name``, ``tags``, ``notes``, ``job_type`` and ``mode`` (``"online"``,
  ``"offline"``, ``"disabled"``; unset: W&B's own choice, ``WANDB_MODE`` included);
- ``"mlflow"``: MLflow (``pip install "rlconf[mlflow]"``), with ``tracking_uri`` (unset: MLflow's
  own, ``MLFLOW_TRACKING_URI`` included), ``experiment_name``, ``run_name`` and ``tags``;
- RLlib's default, ``"ray.tune.logger.UnifiedLogger"`` (or its short name): the results folder
  alone, which every run writes anyway.

Any other type or key is refused here, naming what is allowed: a tracker setting that did
nothing would lose a run's metrics without a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The keys every ``logger_config`` may hold, whatever its type.
FOLDER_KEYS = ("logdir", "local_dir", "type")

#: The keys of each tracker type, besides ``FOLDER_KEYS``.
TRACKER_KEYS: dict[str, tuple[str, ...]] = {
    "wandb": ("project", "entity", "group", "name", "tags", "notes", "job_type", "mode"),
    "mlflow": ("tracking_uri", "experiment_name", "run_name", "tags"),
}

#: RLlib's default logger (JSON, CSV and TensorBoard files): what every run writes here.
UNIFIED_LOGGER = ("ray.tune.logger.UnifiedLogger", "ray.tune.logger.unified.UnifiedLogger")

WANDB_MODES = ("online", "offline", "disabled")


def tracker_type(logger_config: Mapping[str, Any] | None) -> str | None:
    """``"wandb"``, ``"mlflow"`` or None (the results folder alone)."""
    kind = (logger_config or {}).get("type")
    return kind if kind in TRACKER_KEYS else None


def check_logger_config(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """``value`` when every key acts; a ``ValueError`` naming the first that would not."""
    if value is None:
        return None
    kind = value.get("type")
    if isinstance(kind, type):  # RLlib takes the logger class itself too
        kind = f"{kind.__module__}.{kind.__qualname__}"
        value = {**value, "type": kind}
    if kind is not None and not isinstance(kind, str):
        raise ValueError(f"type must be a string, not {type(kind).__name__} ({kind!r})")
    if kind in UNIFIED_LOGGER or kind == "UnifiedLogger":
        kind = None
    elif kind is not None and kind not in TRACKER_KEYS:
        raise ValueError(
            f"type {kind!r} is not a logger rlconf has; known types: "
            f"{', '.join(repr(k) for k in TRACKER_KEYS)} (a tracker beside the results folder), "
            f"or {UNIFIED_LOGGER[0]!r} / unset (the results folder alone: JSON, CSV, TensorBoard)"
        )
    allowed = (*FOLDER_KEYS, *TRACKER_KEYS.get(kind or "", ()))
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        where = f"with type {kind!r}" if kind else "without a tracker type"
        raise ValueError(
            f"unknown key(s) {', '.join(repr(k) for k in unknown)} {where}; the keys it takes: "
            f"{', '.join(allowed)}"
        )
    if kind == "wandb" and value.get("mode") not in (None, *WANDB_MODES):
        raise ValueError(
            f"mode {value['mode']!r} is not a W&B mode, one of: {', '.join(WANDB_MODES)}"
        )
    tags = value.get("tags")
    if kind == "wandb" and tags is not None and not _strings(tags):
        raise ValueError(f"tags must be a list of strings for W&B, not {tags!r}")
    if kind == "mlflow" and tags is not None and not isinstance(tags, Mapping):
        raise ValueError(f"tags must be a dict of tag names to values for MLflow, not {tags!r}")
    return value


def _strings(values: Any) -> bool:
    return isinstance(values, list | tuple) and all(isinstance(v, str) for v in values)
