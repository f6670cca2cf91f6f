"""One training experiment as ``rlconf train`` runs it, from flags or from a YAML file in the
reference's tuned-example format::

    cartpole-ppo:
        run: PPO
        env: CartPole-v1
        stop: {episode_reward_mean: 450, timesteps_total: 100000}
        config: {lr: 0.001, num_workers: 0}

The command line's flags (``Overrides``) apply on top of every experiment of a file: ``--config``
is applied over the experiment's config key by key (as ``config.update_from_dict()``: a partial
``model`` dict keeps the file's other model keys), ``--stop`` is merged over its stop criteria,
and ``--env``, ``--framework``, ``--local-dir``, ``--checkpoint-freq``, ``--checkpoint-at-end``,
``--keep-checkpoints-num`` and ``--checkpoint-score-attr`` replace its values. Every experiment
is validated (config, env, stop criteria, keys, the checkpoint score key as a stop key is)
before any is run, and every mistake of every experiment is reported at once, each at the line
of the file that gives it (``experiments.yaml:7: cartpole-ppo.lr=...``); an env named by import
path is imported to check it, as the config's callables are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.checkpoint_keeper import keep_num_issues, score_attr_issues, unsaved_score_issues
from rlconf.env_ids import env_import_issue, env_issue
from rlconf.errors import ConfigError, FieldIssue
from rlconf.registry import algorithm_issue, get_config_class
from rlconf.search_space import search_space_paths
from rlconf.stop_criteria import flat_stop, stop_issues
from rlconf.yaml_lines import KeyLines, read_yaml

#: Keys of one experiment in a YAML file, and what each holds.
EXPERIMENT_KEYS = {
    "run": "a registered algorithm, e.g. PPO",
    "env": "an environment id (or set config.env)",
    "stop": "a mapping of result key -> number",
    "config": "a mapping of config keys",
    "checkpoint_freq": "save a checkpoint every N iterations",
    "checkpoint_at_end": "save a checkpoint when done",
    "keep_checkpoints_num": "keep only the best N checkpoints by checkpoint_score_attr (else the "
    "newest N), and the latest",
    "checkpoint_score_attr": "the numeric result key that ranks checkpoints, nested keys joined "
    "with '/' (min-KEY: lower is better)",
    "local_dir": "the folder the results directory is made in",
    "num_samples": "run as a Tune sweep: trials per grid point or per sample of the search "
    "spaces in config",
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
    #: Set (in the file or by ``--num-samples``) to run as a Tune sweep even without search
    #: spaces.
    num_samples: int | None = None
    #: Keep only this many checkpoints (and the latest); None: all (``rlconf.checkpoint_keeper``).
    keep_checkpoints_num: int | None = None
    #: The result key that ranks checkpoints (``min-KEY``: lower is better); None: recency.
    checkpoint_score_attr: str | None = None
    #: The lines of the file's keys, for errors met while it runs (None: not from a file).
    key_lines: KeyLines | None = None

    @property
    def is_sweep(self) -> bool:
        """Whether this experiment runs as a Tune experiment: it sets ``num_samples`` or its
        config holds search spaces."""
        return self.num_samples is not None or bool(search_space_paths(self.config.to_dict()))


@dataclass(frozen=True)
class Overrides:
    """The flags of ``rlconf train``; None (or empty) where a flag was not given."""

    config: Mapping[str, Any] = field(default_factory=dict)
    stop: Mapping[str, Any] = field(default_factory=dict)
    env: str | None = None
    framework: str | None = None
    local_dir: str | None = None
    checkpoint_freq: int | None = None
    checkpoint_at_end: bool | None = None
    num_samples: int | None = None
    keep_checkpoints_num: int | None = None
    checkpoint_score_attr: str | None = None


def make_experiment(
    name: str,
    spec: Mapping[str, Any],
    flags: Overrides | None = None,
    where: str | None = None,
    run_field: str = "run",
) -> Experiment:
    """A validated experiment from ``spec`` (the keys of EXPERIMENT_KEYS, ``run`` required) with
    ``flags`` applied on top; a ConfigError from ``where`` (default: the name) names every
    problem, the flags' as ``--config.lr``, ``--stop.<key>``, ``--checkpoint-freq``, and the
    algorithm as ``run_field`` (``--run`` where the command line names it)."""
    flags = flags or Overrides()
    issues: list[FieldIssue] = []
    run_problem = algorithm_issue(spec["run"], run_field)
    if run_problem is not None:
        issues.append(run_problem)
    config_class = None if run_problem else get_config_class(spec["run"])

    file_values = dict(spec.get("config") or {})
    if spec.get("env") is not None:
        file_values["env"] = spec["env"]
    if spec.get("local_dir") is not None:
        file_values["logger_config"] = _with_local_dir(file_values, spec["local_dir"])
    flag_values = dict(flags.config)
    if flags.env is not None:
        flag_values["env"] = flags.env
    if flags.local_dir is not None:
        flag_values["logger_config"] = _with_local_dir(
            flag_values if "logger_config" in flag_values else file_values, flags.local_dir
        )
    if flags.framework is not None:
        # Before validation: the reference's files say framework: tf, which is refused.
        file_values["framework"] = flag_values["framework"] = flags.framework

    config: AlgorithmConfig | None = None
    if config_class is not None:
        try:
            config = config_class.from_dict(file_values)
        except ConfigError as exc:
            issues += exc.issues
    if flag_values and config_class is not None:
        try:
            (config or config_class()).update_from_dict(flag_values)
        except ConfigError as exc:
            issues += [_prefixed("--config.", i) for i in exc.issues]
            config = None
    if config is not None and not issues:
        try:
            config.validate()
        except ConfigError as exc:
            issues += exc.issues
            config = None

    env = flag_values.get("env", file_values.get("env"))
    if env is None:
        issues.append(
            FieldIssue(
                "env",
                "is not set",
                has_value=False,
                allowed="--env ID, env: in the experiment, or env in its config",
            )
        )
    else:
        env_field = (
            "--env" if flags.env is not None else "--config.env" if "env" in flags.config else "env"
        )
        problem = env_issue(env, env_field) or env_import_issue(env, env_field)
        if problem is not None:
            issues.append(problem)

    issues += stop_issues(spec.get("stop") or {}, "stop.", config)
    issues += stop_issues(flags.stop, "--stop.", config)
    checkpoint_freq = spec.get("checkpoint_freq", 0)
    issues += _checkpoint_freq_issues(checkpoint_freq, "checkpoint_freq")
    if flags.checkpoint_freq is not None:
        checkpoint_freq = flags.checkpoint_freq
        issues += _checkpoint_freq_issues(checkpoint_freq, "--checkpoint-freq")
    checkpoint_at_end = bool(spec.get("checkpoint_at_end", False))
    if flags.checkpoint_at_end is not None:
        checkpoint_at_end = flags.checkpoint_at_end
    num_samples = spec.get("num_samples")
    if num_samples is not None:
        issues += _num_samples_issues(num_samples, "num_samples")
    if flags.num_samples is not None:
        num_samples = flags.num_samples
        issues += _num_samples_issues(num_samples, "--num-samples")
    keep_num = spec.get("keep_checkpoints_num")
    issues += keep_num_issues(keep_num, "keep_checkpoints_num")
    if flags.keep_checkpoints_num is not None:
        keep_num = flags.keep_checkpoints_num
        issues += keep_num_issues(keep_num, "--keep-checkpoints-num")
    score_attr, score_name = spec.get("checkpoint_score_attr"), "checkpoint_score_attr"
    issues += score_attr_issues(score_attr, score_name, config)
    if flags.checkpoint_score_attr is not None:
        score_attr, score_name = flags.checkpoint_score_attr, "--checkpoint-score-attr"
        issues += score_attr_issues(score_attr, score_name, config)
    issues += unsaved_score_issues(score_attr, score_name, checkpoint_freq, checkpoint_at_end)
    if issues or config is None:
        raise ConfigError(where or name, [_framework_hint(i) for i in issues])
    return Experiment(
        name,
        str(spec["run"]),
        config,
        {**flat_stop(spec.get("stop") or {}), **flat_stop(flags.stop)},
        checkpoint_freq,
        checkpoint_at_end,
        flags.local_dir if flags.local_dir is not None else spec.get("local_dir"),
        num_samples,
        keep_checkpoints_num=keep_num,
        checkpoint_score_attr=score_attr,
    )


def _with_local_dir(values: Mapping[str, Any], local_dir: Any) -> dict[str, Any]:
    return {**dict(values.get("logger_config") or {}), "local_dir": local_dir}


def _prefixed(prefix: str, issue: FieldIssue) -> FieldIssue:
    return replace(issue, field=prefix + issue.field)


def _framework_hint(issue: FieldIssue) -> FieldIssue:
    if issue.field not in ("framework", "--config.framework"):
        return issue
    return replace(issue, allowed=f"{issue.allowed} (rlconf train --framework torch overrides it)")


def located(issue: FieldIssue, name: str, key_lines: KeyLines | None) -> FieldIssue:
    """``issue`` of experiment ``name`` (its field relative to the experiment: ``lr``,
    ``model.fcnet_hiddens``, ``stop.<key>``, ``checkpoint_freq``) with the file's line of that
    key; a flag's issue (``--config.lr``) and one the file has no line for are left as they
    are."""
    if key_lines is None or issue.location or issue.field.startswith("--"):
        return issue
    keys = tuple(issue.field.split("."))
    config_first = keys[0] not in EXPERIMENT_KEYS or (name, keys[0]) not in key_lines.lines
    scopes = [(name, "config"), (name,)] if config_first else [(name,), (name, "config")]
    for scope in scopes:
        line = key_lines.find(scope, keys)
        if line is not None:
            break
    else:
        line = key_lines.nearest(scopes[0] + keys)
    return issue if line is None else replace(issue, location=key_lines.location(line))


def _checkpoint_freq_issues(value: Any, name: str) -> list[FieldIssue]:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return [FieldIssue(name, "must be an integer >= 0", value)]
    return []


def _num_samples_issues(value: Any, name: str) -> list[FieldIssue]:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return [FieldIssue(name, "must be an integer >= 1", value)]
    return []


def load_experiments(path: str | Path, flags: Overrides | None = None) -> list[Experiment]:
    """The experiments of a YAML file with ``flags`` applied to each, all validated; each
    problem is named with the line of the file that gives it."""
    where = f"rlconf train -f {path}"
    data, key_lines = read_yaml(path, where)
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
            experiment = _experiment_from_spec(str(name), spec, flags)
        except ConfigError as exc:
            issues.extend(
                _prefixed(f"{name}.", located(i, str(name), key_lines)) for i in exc.issues
            )
        else:
            experiment.key_lines = key_lines
            experiments.append(experiment)
    if issues:
        raise ConfigError(where, issues)
    return experiments


def _experiment_from_spec(name: str, spec: Any, flags: Overrides | None) -> Experiment:
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
    return make_experiment(name, spec, flags)
