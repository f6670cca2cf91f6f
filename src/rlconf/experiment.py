"""One training experiment as ``rlconf train`` runs it, from flags or from a YAML file in the
reference's tuned-example format::

    cartpole-ppo:
        run: PPO
        env: CartPole-v1
        stop: {episode_reward_mean: 450, timesteps_total: 100000}
        config: {lr: 0.001, num_workers: 0}

Every experiment of a file is validated (config, stop criteria, keys) before any is run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue
from rlconf.registry import get_config_class

#: Keys of one experiment in a YAML file, and what each holds.
EXPERIMENT_KEYS = {
    "run": "a registered algorithm, e.g. PPO",
    "env": "an environment id (or set config.env)",
    "stop": "a mapping of result key -> number",
    "config": "a mapping of config keys",
    "checkpoint_freq": "save a checkpoint every N iterations",
    "checkpoint_at_end": "save a checkpoint when done",
    "local_dir": "the folder the results directory is made in",
}


@dataclass
class Experiment:
    name: str
    run: str
    config: AlgorithmConfig
    stop: dict[str, float] = field(default_factory=dict)
    checkpoint_freq: int = 0
    checkpoint_at_end: bool = False
    local_dir: str | None = None


def make_experiment(
    name: str,
    run: str,
    overrides: Mapping[str, Any],
    stop: Mapping[str, Any],
    *,
    env: str | None = None,
    checkpoint_freq: int = 0,
    checkpoint_at_end: bool = False,
    local_dir: str | None = None,
    where: str | None = None,
    stop_prefix: str = "stop.",
) -> Experiment:
    """A validated experiment; a ConfigError from ``where`` (default: the name) names what is
    wrong."""
    where = where or name
    values = dict(overrides)
    if env is not None:
        values["env"] = env
    if local_dir is not None:
        values["logger_config"] = {
            **dict(values.get("logger_config") or {}),
            "local_dir": local_dir,
        }
    issues: list[FieldIssue] = []
    config: AlgorithmConfig | None = None
    try:
        config = get_config_class(run).from_dict(values).validate()
    except ConfigError as exc:
        issues += exc.issues
    issues += stop_issues(stop, stop_prefix)
    if (
        isinstance(checkpoint_freq, bool)
        or not isinstance(checkpoint_freq, int)
        or (checkpoint_freq < 0)
    ):
        issues.append(FieldIssue("checkpoint_freq", "must be an integer >= 0", checkpoint_freq))
    if issues or config is None:
        raise ConfigError(where, issues)
    return Experiment(
        name, run, config, dict(stop), checkpoint_freq, bool(checkpoint_at_end), local_dir
    )


def stop_issues(stop: Mapping[str, Any], prefix: str = "stop.") -> list[FieldIssue]:
    return [
        FieldIssue(
            f"{prefix}{key}",
            "must be a number (training stops once the result reaches it)",
            value,
        )
        for key, value in stop.items()
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value)
    ]


def load_experiments(path: str | Path) -> list[Experiment]:
    """The experiments of a YAML file, all validated."""
    import yaml

    where = f"rlconf train -f {path}"
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError.single(where, "file", f"can't be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError.single(where, "file", f"is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError.single(
            where,
            "file",
            "must map experiment names to experiments",
            allowed="name: {run: PPO, env: CartPole-v1, stop: {...}, config: {...}}",
        )
    experiments = []
    issues: list[FieldIssue] = []
    for name, spec in data.items():
        try:
            experiments.append(_experiment_from_spec(str(name), spec))
        except ConfigError as exc:
            issues.extend(
                FieldIssue(f"{name}.{i.field}", i.problem, i.value, i.has_value, i.allowed)
                for i in exc.issues
            )
    if issues:
        raise ConfigError(where, issues)
    return experiments


def _experiment_from_spec(name: str, spec: Any) -> Experiment:
    if not isinstance(spec, dict):
        raise ConfigError.single(
            name, "experiment", "must be a mapping", value=spec, has_value=True
        )
    unknown = [k for k in spec if k not in EXPERIMENT_KEYS]
    if unknown:
        raise ConfigError(
            name,
            [
                FieldIssue(
                    str(k),
                    "is not an experiment key",
                    spec[k],
                    allowed=", ".join(EXPERIMENT_KEYS),
                )
                for k in unknown
            ],
        )
    if "run" not in spec:
        raise ConfigError.single(name, "run", "is missing", allowed=EXPERIMENT_KEYS["run"])
    for key in ("stop", "config"):
        if not isinstance(spec.get(key) or {}, dict):
            raise ConfigError.single(
                name,
                key,
                "must be a mapping",
                value=spec[key],
                has_value=True,
                allowed=EXPERIMENT_KEYS[key],
            )
    return make_experiment(
        name,
        str(spec["run"]),
        spec.get("config") or {},
        spec.get("stop") or {},
        env=spec.get("env"),
        checkpoint_freq=spec.get("checkpoint_freq", 0),
        checkpoint_at_end=bool(spec.get("checkpoint_at_end", False)),
        local_dir=spec.get("local_dir"),
    )
