"""Stop criteria of ``rlconf train``: ``{result key: number}``, met once any key's value in a
result reaches its number. Nested keys are joined with ``/``
(``{"env_runners/episode_return_mean": 150}``), or given as nested dicts
(``{"env_runners": {"episode_return_mean": 150}}``), as RLlib's examples write them either way
(``flat_stop``).

A key is checked twice. At start, against the static description of the result
(``rlconf.result_keys``): an unknown key, or one that is not a number, is refused with a
did-you-mean. Keys whose names depend on the run (a custom metric, a policy id, a learner
statistic, a key added by the callbacks' ``on_train_result`` or logged by a hook through its
``metrics_logger``, or by a custom evaluation function) are then looked for in the first result
that can hold them; one that is missing there stops the run with an error naming the keys the
result does have, so no criterion is silently never met.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.callback_hooks import CALLBACK_HOOKS
from rlconf.errors import ConfigError, FieldIssue
from rlconf.result_keys import EVALUATION_PREFIX, KIND_NAMES, ResultKey, describe, known_names
from rlconf.unknown_keys import did_you_mean

_ALLOWED = (
    "a numeric result key, nested keys joined with '/': episode_reward_mean, timesteps_total, "
    "training_iteration, time_total_s, evaluation/episode_reward_mean, "
    "sampler_results/episode_reward_mean, env_runners/episode_return_mean, "
    "num_env_steps_sampled_lifetime, evaluation/env_runners/episode_return_mean, "
    "custom_metrics/<metric>_mean, info/learner/<policy id>/learner_stats/<stat>, ... "
    "(`rlconf result-keys` lists them all)"
)
_MAX_LISTED = 12


def flat_stop(stop: Mapping[Any, Any]) -> dict[str, Any]:
    """``stop`` with its nested dicts flattened into ``/``-joined keys, in order:
    ``{"env_runners": {"episode_return_mean": 150}}`` is
    ``{"env_runners/episode_return_mean": 150}``."""
    flat: dict[str, Any] = {}
    for key, value in stop.items():
        if isinstance(value, Mapping):
            for inner, leaf in flat_stop(value).items():
                flat[f"{key}/{inner}"] = leaf
        else:
            flat[str(key)] = value
    return flat


def lookup(result: Mapping[str, Any], key: str) -> Any:
    """``result["a"]["b"]`` for ``key="a/b"``; None when a part is missing."""
    value: Any = result
    for part in key.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


#: Hooks run by the algorithm: what they add to the result (or log to its metrics_logger) may
#: be any key.
_ALGORITHM_HOOKS = frozenset(
    {
        "on_algorithm_init",
        "on_train_result",
        "on_evaluate_start",
        "on_evaluate_end",
        "on_checkpoint_loaded",
        "on_workers_recreated",
        "on_env_runners_recreated",
    }
)
#: Where what the rollout (and evaluation) workers' hooks log lands.
_WORKER_LOGGED = ("env_runners/", "evaluation/env_runners/")


def callbacks_add_result_keys(config: AlgorithmConfig, key: str) -> bool:
    """Whether the config's callbacks may add ``key`` to the result: any key where a hook the
    algorithm runs is overridden (``on_train_result`` may add any key to the result, and what
    ``on_algorithm_init``, ``on_evaluate_end``, ... log to their ``metrics_logger`` lands at its
    top level) or given as a function, a key under ``env_runners/`` (or
    ``evaluation/env_runners/``) where a rollout worker's hook is (what it logs lands there).
    Walks the classes' bases by name, so the runtime is not imported."""
    given = config["callbacks"]
    hooks = {hook for hook in CALLBACK_HOOKS if config[hook] is not None}
    for cls in given if isinstance(given, list) else [given]:
        hooks |= _hooks_overridden(cls)
    if hooks & _ALGORITHM_HOOKS:
        return True
    return bool(hooks) and key.startswith(_WORKER_LOGGED)


def _hooks_overridden(cls: Any) -> set[str]:
    found: set[str] = set()
    for klass in getattr(cls, "__mro__", ()):
        if klass.__name__ == "DefaultCallbacks" and klass.__module__ == "runtime.callbacks":
            break
        found |= {name for name in vars(klass) if name.startswith("on_")}
    return found


def _custom_evaluation(key: str, config: AlgorithmConfig | None) -> bool:
    return (
        config is not None
        and key.startswith(EVALUATION_PREFIX)
        and config["custom_eval_function"] is not None
    )


def stop_issues(
    stop: Mapping[Any, Any], prefix: str, config: AlgorithmConfig | None
) -> list[FieldIssue]:
    """Every problem of ``stop``; ``config`` (None when it is invalid itself) tells which
    evaluation runs and whether callbacks or a custom evaluation function add keys."""
    issues: list[FieldIssue] = []
    for key, value in flat_stop(stop).items():
        name = f"{prefix}{key}"
        if not _is_number(value):
            issues.append(
                FieldIssue(
                    name, "must be a number (training stops once the result reaches it)", value
                )
            )
        issues += result_key_issues(key, name, config)
    return issues


def result_key_issues(
    key: str,
    name: str,
    config: AlgorithmConfig | None,
    *,
    value: Any = None,
    has_value: bool = False,
    use: str = "compared with a stop value",
    allowed: str = _ALLOWED,
) -> list[FieldIssue]:
    """The problems of ``key`` as a numeric result key, reported as field ``name`` (holding
    ``value`` when ``has_value``): not a key of the result (with a did-you-mean), not a number
    there (so it can't be ``use``d), or an evaluation key where no evaluation runs. Keys that
    callbacks or a custom evaluation function may add are left to the results."""
    issues: list[FieldIssue] = []
    open_ended = config is not None and callbacks_add_result_keys(config, key)
    entry = describe(key)
    if entry is None and not (open_ended or _custom_evaluation(key, config)):
        hint = did_you_mean(key, known_names())
        issues.append(
            FieldIssue(
                name,
                "is not a result key" + (f" ({hint})" if hint else ""),
                value,
                has_value,
                allowed,
            )
        )
    elif entry is not None and entry.kind != "number":
        issues.append(
            FieldIssue(
                name,
                f"is {KIND_NAMES[entry.kind]}, not a number, so it can't be {use}",
                value,
                has_value,
                allowed,
            )
        )
    if (
        key.startswith(EVALUATION_PREFIX)
        and config is not None
        and not config["evaluation_interval"]
    ):
        issues.append(
            FieldIssue(
                name,
                "is an evaluation result, but no evaluation runs "
                f"(evaluation_interval={config['evaluation_interval']!r})",
                value,
                has_value,
                "set evaluation_interval to evaluate every N iterations",
            )
        )
    return issues


class StopCriteria:
    """Decides, result by result, whether training is done."""

    def __init__(self, stop: Mapping[str, Any], config: AlgorithmConfig, where: str) -> None:
        self.stop: dict[str, float] = flat_stop(stop)
        self.where = where
        #: Keys whose presence only the results can tell, with their description (if any).
        self._unconfirmed: dict[str, ResultKey | None] = {}
        for key in self.stop:
            entry = describe(key)
            if _custom_evaluation(key, config):
                # The function decides what its metrics hold: look for the key as given.
                self._unconfirmed[key] = None
            elif entry is None or entry.dynamic:
                self._unconfirmed[key] = entry

    def reached(self, result: Mapping[str, Any]) -> bool:
        """Whether any key of ``result`` has reached its stop value."""
        self._confirm(result)
        for key, threshold in self.stop.items():
            value = lookup(result, key)
            if _is_number(value) and value >= threshold:
                return True
        return False

    def _confirm(self, result: Mapping[str, Any]) -> None:
        missing: list[FieldIssue] = []
        for key, entry in list(self._unconfirmed.items()):
            scope: Any = result
            if key.startswith(EVALUATION_PREFIX):
                scope = result.get("evaluation")
                if not isinstance(scope, Mapping):
                    continue  # no evaluation in this iteration
            if (
                entry is not None
                and entry.needs_episodes
                and not lookup(scope, "hist_stats/episode_reward")
            ):
                continue  # no episode has finished yet
            if lookup(result, key) is None:
                missing.append(self._missing(key, result))
            del self._unconfirmed[key]
        if missing:
            raise ConfigError(self.where, missing)

    def _missing(self, key: str, result: Mapping[str, Any]) -> FieldIssue:
        from runtime.results.result_logger import flatten  # the run is going: the runtime is loaded

        present = [k for k, _ in flatten(result) if k != "config"]
        hint = did_you_mean(key, present)
        parent = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
        siblings = [k for k in present if k.startswith(parent) and "/" not in k[len(parent) :]]
        more = ", ..." if len(siblings) > _MAX_LISTED else ""
        listed = ", ".join(siblings[:_MAX_LISTED]) + more
        return FieldIssue(
            f"stop.{key}",
            f"is not in the result of iteration {result.get('training_iteration')}"
            + (f" ({hint})" if hint else ""),
            has_value=False,
            allowed=listed or f"{parent.rstrip('/')} holds no keys",
        )
