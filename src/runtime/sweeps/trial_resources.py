"""What each trial of a sweep asks the cluster for, known before Tune starts any, and the
refusal of trials no node set of the cluster can hold (Tune would leave them PENDING forever,
with a warning after 60 s and nothing else).

A trial's placement group (``Algorithm.default_resource_request``: the driver's bundle and one
per rollout, evaluation and learner worker) depends on the resource settings alone
(``ResourceSettings``, and ``EvaluationSettings`` for the evaluation workers). A config whose
search spaces touch none of them makes trials of one plan; otherwise each combination of the
searched resource values is a plan of its own: every grid value and choice, and a numeric
range's bounds (the smallest and the largest trial it can draw). A ``sample_from`` function
on a resource setting can't be known before Tune calls it; such a config is left unchecked.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.errors import ConfigError, FieldIssue
from rlconf.policy_spec import PolicySpec
from rlconf.search_space import candidates, find_search_spaces, is_search_space
from runtime.cluster.fitting_values import fitting_values
from runtime.cluster.placement import ResourceError, check_plan_fits
from runtime.cluster.ray_session import AUTOSCALING_ENV, cluster_autoscales
from runtime.cluster.resources import ResourcePlan, ResourceSettings, resource_plan
from runtime.core.settings import setting_keys
from runtime.training.evaluation_config import EvaluationSettings

#: The config keys a trial's resource plan is made from.
RESOURCE_KEYS = frozenset(setting_keys(ResourceSettings) + setting_keys(EvaluationSettings))


@dataclass(frozen=True)
class TrialPlan:
    """The resources of some trials of a sweep."""

    #: Which trials: ``configs[1]`` for a list of configs, the searched resource values
    #: (``num_workers=3``), both, or ``""`` for a single config that searches none.
    label: str
    plan: ResourcePlan


def sweep_trial_plans(configs: list[AlgorithmConfig]) -> list[TrialPlan]:
    """The distinct resource plans of the trials ``configs`` make (one config with search
    spaces, or a list of plain configs), each labelled by the first trial that has it."""
    found: dict[str, TrialPlan] = {}
    for index, config in enumerate(configs):
        prefix = f"configs[{index}]" if len(configs) > 1 else ""
        for trial in config_trial_plans(config) or []:
            label = ", ".join(part for part in (prefix, trial.label) if part)
            found.setdefault(repr(trial.plan), TrialPlan(label, trial.plan))
    return list(found.values())


def config_trial_plans(config: AlgorithmConfig) -> list[TrialPlan] | None:
    """The distinct resource plans of the trials ``config`` (which may hold search spaces)
    makes; None when a searched resource setting is a ``sample_from`` function."""
    values = config.to_dict()
    searched = [
        key
        for key, value in values.items()
        if key in RESOURCE_KEYS and next(find_search_spaces(value), None) is not None
    ]
    spaces = [space for key in searched for space in find_search_spaces(values[key], key)]
    if not spaces:
        return [TrialPlan("", resource_plan(config.copy().freeze()))]
    options = [candidates(space) for _, space in spaces]
    if not all(options):
        return None
    found: dict[str, TrialPlan] = {}
    for combination in itertools.product(*options):
        chosen = iter(combination)
        trial = config.copy()
        try:
            trial.update_from_dict({key: _substitute(values[key], chosen) for key in searched})
            plan = resource_plan(trial.freeze())
        except ConfigError:
            continue  # a combination the trial's own build refuses, saying why
        label = ", ".join(
            f"{path}={value!r}" for (path, _), value in zip(spaces, combination, strict=True)
        )
        found.setdefault(repr(plan), TrialPlan(label, plan))
    return list(found.values())


def _substitute(value: Any, chosen: Iterator[Any]) -> Any:
    """``value`` with each search space replaced by the next of ``chosen``, in the order
    ``find_search_spaces`` finds them."""
    if is_search_space(value):
        return next(chosen)
    if isinstance(value, Mapping):
        return {key: _substitute(item, chosen) for key, item in value.items()}
    if isinstance(value, list | tuple):
        items = [_substitute(item, chosen) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, PolicySpec) and value.config is not None:
        return dataclasses.replace(value, config=_substitute(value.config, chosen))
    return value


def local_sweep_cpus(trials: list[TrialPlan]) -> int:
    """CPUs for a Ray a sweep starts itself: the machine's, or the largest trial's if more
    (the trials then share the cores, as a single run's workers do)."""
    needs = [math.ceil(t.plan.totals(driver=True).get("CPU", 0.0)) for t in trials]
    return max([os.cpu_count() or 1, *needs])


def refuse_unplaceable_trials(
    trials: list[TrialPlan], algo_name: str, where: str, *, own_ray: bool
) -> None:
    """Raise one ``ConfigError`` naming every trial plan the alive nodes can never hold (what
    it needs, what the cluster has, the settings to lower): more than the cluster's totals, a
    bundle no node can hold, a STRICT_ strategy the nodes can't meet (``check_plan_fits``).

    ``own_ray``: whether the sweep started this Ray itself; such a Ray has fixed resources.
    On a cluster connected to, an autoscaler may add nodes for such trials
    (``cluster_autoscales``): then nothing is refused."""
    if not own_ray and cluster_autoscales():
        return
    issues = []
    for trial in trials:
        try:
            check_plan_fits(trial.plan, f"{algo_name} trial", driver=True)
        except ResourceError as exc:
            cluster = (
                "the Ray this sweep started has fixed resources" + _oversubscribed(trial.plan)
                if own_ray
                else f"this cluster has no autoscaler (if it has one, set {AUTOSCALING_ENV}=1)"
            )
            issues.append(
                FieldIssue(
                    trial.label or "resources",
                    f"{exc}. Tune would leave such trials PENDING forever: {cluster}",
                    has_value=False,
                )
            )
    if issues:
        raise ConfigError(where, issues)


def _oversubscribed(plan: ResourcePlan) -> str:
    """On a Ray the sweep started (as many logical CPUs as its largest trial asks for), what a
    trial asking for more CPUs than the machine's cores does there, and what gives each of its
    actors a core: said beside a refusal, so that one fix covers both."""
    cores = os.cpu_count() or 1
    need = plan.totals(driver=True).get("CPU", 0.0)
    if need <= cores:
        return ""
    fits = fitting_values(plan, {"CPU": need}, {"CPU": float(cores)}, driver=True)
    return (
        f". Its {need:g} CPUs would share this machine's {cores} cores (oversubscribed: that "
        f"Ray has as many CPUs as the largest trial asks for); a core each: {fits}"
    )
