"""``rlconf.sweep.run``: run configs (or one config holding search spaces) as a Ray Tune
experiment and return a typed summary.

Everything that can be checked without Ray is checked here first (every config, the env, the
stop criteria, the metric and the numbers), so a typo fails before Ray starts. The Tune
experiment itself is run by ``runtime.sweeps.tune_run``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.checkpoint_keeper import keep_num_issues, score_attr_issues, unsaved_score_issues
from rlconf.env_ids import env_issue
from rlconf.errors import ConfigError, FieldIssue
from rlconf.result_keys import describe, known_names
from rlconf.search_space import search_space_paths
from rlconf.stop_criteria import callbacks_add_result_keys, flat_stop, stop_issues
from rlconf.sweep_summary import SweepSummary
from rlconf.unknown_keys import did_you_mean

C = TypeVar("C", bound=AlgorithmConfig)

DEFAULT_METRIC = "episode_reward_mean"
_WHERE = "rlconf.sweep.run()"


@dataclass(frozen=True)
class SweepPlan:
    """A checked sweep, as the runtime runs it."""

    config_class: type[AlgorithmConfig]
    #: The param space: the config's dict, search spaces included.
    param_space: dict[str, Any]
    #: For a list of configs: each config's dict, one trial each (None for one config).
    points: list[dict[str, Any]] | None
    #: The dotted keys that differ between trials (shown in the trial table).
    searched: list[str]
    base: AlgorithmConfig
    #: Every config given (one for a config with search spaces).
    configs: list[AlgorithmConfig]
    num_samples: int
    stop: dict[str, float]
    metric: str
    mode: Literal["max", "min"]
    max_concurrent: int | None
    scheduler: Any
    name: str | None
    local_dir: Path | None
    checkpoint_freq: int
    checkpoint_at_end: bool
    #: Checkpoints each trial keeps (and its latest); None: all.
    keep_checkpoints_num: int | None
    #: The result key that ranks a trial's checkpoints (``min-KEY``: lower is better); None:
    #: recency.
    checkpoint_score_attr: str | None
    reuse_actors: bool | None
    progress: bool
    address: str | None


def run(
    configs: C | Sequence[C],
    *,
    stop: Mapping[str, Any] | None = None,
    metric: str = DEFAULT_METRIC,
    mode: Literal["max", "min"] = "max",
    num_samples: int = 1,
    max_concurrent: int | None = None,
    scheduler: Any = None,
    name: str | None = None,
    local_dir: str | os.PathLike[str] | None = None,
    checkpoint_freq: int = 0,
    checkpoint_at_end: bool = False,
    keep_checkpoints_num: int | None = None,
    checkpoint_score_attr: str | None = None,
    reuse_actors: bool | None = None,
    progress: bool = True,
    address: str | None = None,
) -> SweepSummary[C]:
    """Train every trial of a sweep with Ray Tune and return the summary.

    ``configs`` is one config, whose search spaces (``sweep.grid_search``, ``sweep.uniform``
    and the other ``sweep`` domains, or Tune's own) Tune resolves into trials - each sampled
    domain ``num_samples`` times, every grid point ``num_samples`` times -, or a list of
    plain configs of one algorithm (``sweep.grid(...)``, ``sweep.random(...)``), one trial
    each. Trials run side by side as the cluster's resources allow (at most
    ``max_concurrent``), each until a ``stop`` criterion is met (``{result key: number}``,
    as ``rlconf train --stop``; nested keys joined with ``/`` or as nested dicts) or the
    ``scheduler`` (a Tune scheduler such as
    ``ASHAScheduler`` or ``PopulationBasedTraining``) stops it.

    Each trial writes its results folder (params.json, result.json, progress.csv,
    TensorBoard events, checkpoints every ``checkpoint_freq`` iterations and at the end
    with ``checkpoint_at_end``, named ``checkpoint_<iteration>``) under
    ``<local_dir>/<name>/``; ``local_dir`` defaults to
    the config's ``logger_config["local_dir"]``, ``$RLCONF_RESULTS_DIR`` or
    ``~/rlconf_results``. ``progress`` prints a live table of the trials. Ray is started
    when it is not running (``address`` or ``$RAY_ADDRESS`` connect to a cluster instead)
    and stopped again at the end.

    ``keep_checkpoints_num`` keeps only that many checkpoints per trial (and always its
    latest), the best by ``checkpoint_score_attr`` (a numeric result key, nested keys joined
    with ``/``, ``min-KEY`` when lower is better; the rules of ``rlconf.checkpoint_keeper``)
    or else the newest. Each trial's summary names its best checkpoint by that key (its latest
    without one) and every checkpoint it kept.

    The best trial is the one whose last result has the highest (``mode="max"``) or lowest
    ``metric``; a trial that fails is reported in ``summary.errors``. No trial reaching the
    metric raises ``SweepError``.
    """
    plan = make_plan(
        configs,
        stop=stop,
        metric=metric,
        mode=mode,
        num_samples=num_samples,
        max_concurrent=max_concurrent,
        scheduler=scheduler,
        name=name,
        local_dir=local_dir,
        checkpoint_freq=checkpoint_freq,
        checkpoint_at_end=checkpoint_at_end,
        keep_checkpoints_num=keep_checkpoints_num,
        checkpoint_score_attr=checkpoint_score_attr,
        reuse_actors=reuse_actors,
        progress=progress,
        address=address,
    )
    from runtime.sweeps.tune_run import run_sweep

    summary: SweepSummary[C] = run_sweep(plan)
    return summary


def make_plan(
    configs: AlgorithmConfig | Sequence[AlgorithmConfig],
    *,
    stop: Mapping[str, Any] | None,
    metric: str,
    mode: str,
    num_samples: int,
    max_concurrent: int | None,
    scheduler: Any,
    name: str | None,
    local_dir: str | os.PathLike[str] | None,
    checkpoint_freq: int,
    checkpoint_at_end: bool,
    reuse_actors: bool | None,
    progress: bool,
    address: str | None,
    keep_checkpoints_num: int | None = None,
    checkpoint_score_attr: str | None = None,
    where: str = _WHERE,
) -> SweepPlan:
    """Check every argument of ``run`` and return the plan, or raise one ConfigError that
    lists every problem."""
    issues: list[FieldIssue] = []
    listed = _as_list(configs, where)
    base = listed[0]
    for index, config in enumerate(listed):
        label = f"configs[{index}]." if len(listed) > 1 else ""
        if type(config) is not type(base):
            issues.append(
                FieldIssue(
                    f"configs[{index}]",
                    f"is a {type(config).__name__}; every config of a sweep must be of one "
                    f"class (configs[0] is a {type(base).__name__})",
                    type(config).__name__,
                )
            )
            continue
        if config.algo_name is None:
            issues.append(
                FieldIssue(
                    f"{label}algorithm",
                    "is not set: a plain AlgorithmConfig has no algorithm to run",
                    has_value=False,
                    allowed="an algorithm's config class, e.g. PPOConfig",
                )
            )
        try:
            config.validate()
        except ConfigError as exc:
            issues += [_prefixed(label, i) for i in exc.issues]
        env = config["env"]
        if env is None:
            issues.append(
                FieldIssue(
                    f"{label}env",
                    "is not set",
                    has_value=False,
                    allowed="config.environment(env=...)",
                )
            )
        elif isinstance(env, str) and (problem := env_issue(env)) is not None:
            issues.append(_prefixed(label, problem))
        if len(listed) > 1:
            for path in search_space_paths(config.to_dict()):
                issues.append(
                    FieldIssue(
                        f"{label}{path}",
                        "holds a search space; in a list of configs each config is one trial",
                        has_value=False,
                        allowed="plain values (sweep.grid / sweep.random give such lists), "
                        "or pass one config with search spaces",
                    )
                )
    issues += stop_issues(stop or {}, "stop.", base)
    issues += _metric_issues(metric, mode, base)
    issues += _count_issues("num_samples", num_samples, minimum=1)
    if max_concurrent is not None:
        issues += _count_issues("max_concurrent", max_concurrent, minimum=1)
    issues += _count_issues("checkpoint_freq", checkpoint_freq, minimum=0)
    issues += keep_num_issues(keep_checkpoints_num, "keep_checkpoints_num")
    issues += score_attr_issues(checkpoint_score_attr, "checkpoint_score_attr", base)
    issues += unsaved_score_issues(
        checkpoint_score_attr, "checkpoint_score_attr", checkpoint_freq, checkpoint_at_end
    )
    if name is not None and (not name or "/" in name or name in (".", "..")):
        issues.append(
            FieldIssue("name", "must be a folder name", name, allowed="a non-empty name, no '/'")
        )
    if issues:
        raise ConfigError(where, issues)

    dicts = [c.to_dict() for c in listed]
    if len(listed) > 1:
        searched = [k for k in dicts[0] if any(d.get(k) != dicts[0].get(k) for d in dicts)]
    else:
        searched = search_space_paths(dicts[0])
    return SweepPlan(
        config_class=type(base),
        param_space=dicts[0],
        points=[d for d in dicts for _ in range(num_samples)] if len(listed) > 1 else None,
        searched=searched,
        base=base,
        configs=listed,
        num_samples=num_samples if len(listed) == 1 else len(listed) * num_samples,
        stop=flat_stop(stop or {}),
        metric=metric,
        mode=mode,  # type: ignore[arg-type]  # checked above
        max_concurrent=max_concurrent,
        scheduler=scheduler,
        name=name,
        local_dir=Path(local_dir).expanduser().resolve() if local_dir is not None else None,
        checkpoint_freq=checkpoint_freq,
        checkpoint_at_end=checkpoint_at_end,
        keep_checkpoints_num=keep_checkpoints_num,
        checkpoint_score_attr=checkpoint_score_attr,
        reuse_actors=reuse_actors,
        progress=progress,
        address=address,
    )


def _as_list(
    configs: AlgorithmConfig | Sequence[AlgorithmConfig], where: str
) -> list[AlgorithmConfig]:
    if isinstance(configs, AlgorithmConfig):
        return [configs]
    if isinstance(configs, list | tuple):
        listed = list(configs)
        bad = [i for i, c in enumerate(listed) if not isinstance(c, AlgorithmConfig)]
        if listed and not bad:
            return listed
        if bad:
            raise ConfigError.single(
                where,
                f"configs[{bad[0]}]",
                "is not a config",
                value=listed[bad[0]],
                has_value=True,
                allowed="an AlgorithmConfig such as PPOConfig()",
            )
        raise ConfigError.single(
            where, "configs", "is empty", allowed="one config, or a non-empty list of configs"
        )
    raise ConfigError.single(
        where,
        "configs",
        "is not a config or a list of configs",
        value=configs,
        has_value=True,
        allowed="a config (search spaces allowed), or a list of configs such as sweep.grid() "
        "returns",
    )


def _metric_issues(metric: Any, mode: Any, config: AlgorithmConfig) -> list[FieldIssue]:
    issues: list[FieldIssue] = []
    if mode not in ("max", "min"):
        issues.append(FieldIssue("mode", "must be 'max' or 'min'", mode, allowed="max, min"))
    if not isinstance(metric, str) or not metric:
        issues.append(
            FieldIssue("metric", "must be a result key", metric, allowed="e.g. " + DEFAULT_METRIC)
        )
        return issues
    entry = describe(metric)
    if entry is None and not callbacks_add_result_keys(config, metric):
        hint = did_you_mean(metric, known_names())
        issues.append(
            FieldIssue(
                "metric",
                "is not a result key" + (f" ({hint})" if hint else ""),
                metric,
                allowed="a numeric result key, nested keys joined with '/' "
                "(`rlconf result-keys` lists them)",
            )
        )
    elif entry is not None and entry.kind != "number":
        issues.append(FieldIssue("metric", "is not a number in the result", metric))
    return issues


def _count_issues(name: str, value: Any, *, minimum: int) -> list[FieldIssue]:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return [FieldIssue(name, f"must be an integer >= {minimum}", value)]
    return []


def _prefixed(prefix: str, issue: FieldIssue) -> FieldIssue:
    if not prefix:
        return issue
    return FieldIssue(
        prefix + issue.field, issue.problem, issue.value, issue.has_value, issue.allowed
    )
