"""``ConfigChecks``: the cross-field checks of ``validate()``, and values derived from several
fields (``get_rollout_fragment_length()``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Self

from rlconf import search_space
from rlconf.config_mapping import ConfigMapping
from rlconf.errors import ConfigError, FieldIssue
from rlconf.fluent import NOT_SET
from rlconf.input_paths import input_issues
from rlconf.layer_init_keys import model_init_issues
from rlconf.rl_module_spec import module_spec_issues

DEFAULT_POLICY_ID = "default_policy"


class ConfigChecks(ConfigMapping):
    """Checks between fields, which the per-field validation of each setter can't make."""

    __slots__ = ()

    def validate(self) -> Self:
        """Run the cross-field checks; raise one ConfigError listing every violation."""
        issues = self._cross_field_issues()
        if issues:
            raise ConfigError(f"{type(self).__name__}.validate()", issues)
        return self

    def _plain(self, key: str) -> Any:
        """The value of ``key``, or NOT_SET when it holds a search space (skip such checks)."""
        value = self._values[key]
        return NOT_SET if search_space.is_search_space(value) else value

    def _cross_field_issues(self) -> list[FieldIssue]:
        v = self._plain
        issues: list[FieldIssue] = []
        train, fragment = v("train_batch_size"), v("rollout_fragment_length")
        # "auto" is never longer than train_batch_size. Off-policy algorithms replay minibatches
        # of train_batch_size rows, whatever the fragments they sample.
        on_policy = not self._replays
        if (
            on_policy
            and NOT_SET not in (train, fragment)
            and fragment != "auto"
            and train < fragment
        ):
            issues.append(
                FieldIssue(
                    "train_batch_size",
                    f"must be >= rollout_fragment_length ({fragment})",
                    train,
                )
            )
        duration, parallel = v("evaluation_duration"), v("evaluation_parallel_to_training")
        if duration == "auto" and parallel is False:
            issues.append(
                FieldIssue(
                    "evaluation_duration",
                    "'auto' needs evaluation_parallel_to_training=True",
                    duration,
                )
            )
        eval_workers = v("evaluation_num_workers")
        if parallel is True and eval_workers == 0:
            issues.append(
                FieldIssue(
                    "evaluation_parallel_to_training",
                    "needs evaluation_num_workers > 0 (evaluation can't overlap training in "
                    "the training process)",
                    parallel,
                )
            )
        if v("ignore_worker_failures") is True and v("recreate_failed_workers") is True:
            issues.append(
                FieldIssue(
                    "recreate_failed_workers",
                    "can't be combined with ignore_worker_failures=True; "
                    "choose one way of handling failed workers",
                    True,
                )
            )
        issues.extend(self._n_step_issues())
        if v("lr") is None and not self._own_learning_rates:
            issues.append(
                FieldIssue(
                    "lr",
                    f"is None, but {type(self).__name__}'s optimizer learns at lr (None is "
                    "for SAC, DDPG and TD3, whose optimizers take their rates from keys of "
                    "their own)",
                    None,
                    allowed="float > 0",
                )
            )
        if v("_fake_gpus") is True and v("num_gpus") == 0:
            issues.append(FieldIssue("_fake_gpus", "only has an effect with num_gpus > 0", True))
        issues.extend(self._multi_agent_issues())
        issues.extend(model_init_issues(v("model")))
        if "rl_module_spec" in self._values and NOT_SET not in (v("rl_module_spec"), v("policies")):
            issues.extend(module_spec_issues(v("rl_module_spec"), v("policies"), DEFAULT_POLICY_ID))
        return issues

    def check_input_paths(self) -> Self:
        """Refuse an ``input`` (or an ``evaluation_config`` override of it) that names no
        readable local file (``rlconf.input_paths``): made where a run starts (the algorithm's
        build, ``rlconf train``'s checks), not by ``validate()``, so that a config or an RLlib
        file naming data that lives elsewhere still loads and validates."""
        issues = self.input_path_issues()
        if issues:
            raise ConfigError(f"{type(self).__name__}: input", issues)
        return self

    def input_path_issues(self) -> list[FieldIssue]:
        """What ``check_input_paths`` refuses, as issues."""
        if "input" not in self._values:
            return []
        source, options = self._plain("input"), self._plain("input_config")
        issues = [] if source is NOT_SET else input_issues(source, options)
        overrides = self._plain("evaluation_config")
        if isinstance(overrides, Mapping) and "input" in overrides:
            value = overrides["input"]
            if not search_space.is_search_space(value):
                issues += input_issues(
                    value,
                    overrides.get("input_config", options),
                    "evaluation_config.input",
                    "evaluation_config.input_config",
                )
        return issues

    def _n_step_issues(self) -> list[FieldIssue]:
        """n-step returns sum rewards within one sampled fragment (the reference's too): a
        fragment shorter than ``n_step`` would cut every row's sum short, so the setting would
        not act as set."""
        if "n_step" not in self._values:
            return []
        n_step, batch_mode = self._plain("n_step"), self._plain("batch_mode")
        if n_step is NOT_SET or batch_mode != "truncate_episodes":
            return []
        # A range (low, high) sums up to high - 1 steps.
        n = int(n_step[1]) - 1 if isinstance(n_step, tuple) else int(n_step)
        if n <= 1:
            return []
        if self._plain("rollout_fragment_length") is NOT_SET:
            return []  # a search space: each sampled value is checked when its trial builds
        try:
            fragment = self.get_rollout_fragment_length()
        except ConfigError:  # "auto" over a search space: checked once it is sampled
            return []
        if fragment >= int(n):
            return []
        return [
            FieldIssue(
                "n_step",
                f"sums the rewards of up to n_step steps within one sampled fragment, and "
                f"rollout_fragment_length={fragment} cuts every such sum to {fragment} "
                f"step(s); set rollout_fragment_length >= {n} (training_intensity keeps the "
                f"updates per sampled step) or batch_mode='complete_episodes'",
                n_step,
                allowed=f"n_step <= rollout_fragment_length ({fragment})",
            )
        ]

    def _multi_agent_issues(self) -> list[FieldIssue]:
        policies = self._plain("policies")
        if policies is NOT_SET:
            return []
        issues = []
        to_train = self._plain("policies_to_train")
        if isinstance(to_train, list):
            unknown = [p for p in to_train if p not in policies]
            if unknown and policies:
                issues.append(
                    FieldIssue(
                        "policies_to_train",
                        f"names policies that are not in policies: {unknown}",
                        to_train,
                        allowed="ids among " + ", ".join(map(repr, policies)),
                    )
                )
            elif unknown:
                issues.append(
                    FieldIssue(
                        "policies_to_train",
                        f"names {unknown} but policies is empty "
                        f"(the only policy is {DEFAULT_POLICY_ID!r})",
                        to_train,
                    )
                )
        if (
            policies
            and self._plain("policy_mapping_fn") is None
            and (DEFAULT_POLICY_ID not in policies)
        ):
            issues.append(
                FieldIssue(
                    "policy_mapping_fn",
                    "is None, which maps every agent to "
                    f"{DEFAULT_POLICY_ID!r}, but policies has no such policy",
                    None,
                    allowed="a function agent_id -> policy id",
                )
            )
        return issues

    def get_rollout_fragment_length(self) -> int:
        """Steps per sub-env in each ``sample()`` fragment: ``rollout_fragment_length``, or for
        ``"auto"`` ``ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker)``, so
        that one round of fragments from every worker fills a train batch; for DQN and SAC
        (``_auto_fragment_is_n_step``) ``"auto"`` is ``n_step`` (the high end of a range
        ``(low, high)``), RLlib's rule for them, so that every n-step sum fits a fragment."""
        fragment = self["rollout_fragment_length"]
        if fragment != "auto":
            return int(fragment)
        if self._auto_fragment_is_n_step:
            n_step = self["n_step"]
            if search_space.is_search_space(n_step):
                raise ConfigError.single(
                    f"{type(self).__name__}.get_rollout_fragment_length()",
                    "rollout_fragment_length",
                    "'auto' (n_step) can't be resolved while n_step is a search space",
                    value=fragment,
                    has_value=True,
                )
            return int(n_step[1]) if isinstance(n_step, tuple) else int(n_step)
        sizes = {k: self[k] for k in ("train_batch_size", "num_workers", "num_envs_per_worker")}
        spaces = [k for k, value in sizes.items() if search_space.is_search_space(value)]
        if spaces:
            raise ConfigError.single(
                f"{type(self).__name__}.get_rollout_fragment_length()",
                "rollout_fragment_length",
                f"'auto' can't be resolved while {', '.join(spaces)} is a search space",
                value=fragment,
                has_value=True,
            )
        per_round = max(1, int(sizes["num_workers"])) * int(sizes["num_envs_per_worker"])
        return math.ceil(int(sizes["train_batch_size"]) / per_round)
