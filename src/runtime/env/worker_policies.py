"""``WorkerPolicies``: the policy part of a ``RolloutWorker`` (mixed into it): making policies
from their specs, the policy map, weights and global vars, the mapping of agents to policies,
which policies train, and adding and removing policies while running."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium as gym

from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.policy_spec import PolicySpec
from runtime.core.policy import PolicyBuilder, TorchPolicy
from runtime.core.policy_map import PolicyMap
from runtime.core.rl_module_adapter import module_policy_config
from runtime.core.settings import settings_of
from runtime.env.filters import ObservationFilter, filtered_space, get_filter
from runtime.env.multi_agent_runner import MultiAgentRunner
from runtime.env.policy_setup import (
    Spaces,
    ToTrain,
    builder_for,
    call_mapping_fn,
    infer_spaces,
    policy_config,
    takes_agent_only,
    wants_training,
)
from runtime.env.preprocessors import Preprocessor, get_preprocessor

if TYPE_CHECKING:
    from runtime.core.learner_group import LearnerGroup

T = TypeVar("T")


@dataclass(frozen=True)
class PolicyPartsSettings:
    """What a policy's preprocessor and observation filter are made from, read from the
    policy's config (the algorithm's, with its spec's overrides) when the policy is added."""

    model: Mapping[str, Any]
    observation_filter: str


@dataclass(frozen=True)
class PolicySetup:
    """A worker's policies (id -> spec and spaces), mapping function and policies to train:
    what another worker adopts with ``set_policy_setup``."""

    policies: dict[str, tuple[PolicySpec, Spaces]]
    mapping_fn: Callable[..., str]
    policies_to_train: ToTrain


class WorkerPolicies:
    config: Any
    worker_index: int
    device: Any
    envs: list[Any]
    runner: Any
    policy_class: PolicyBuilder
    policy_map: PolicyMap
    policy_specs: dict[str, PolicySpec]
    policy_spaces: dict[str, Spaces]
    preprocessors: dict[str, Preprocessor]
    filters: dict[str, ObservationFilter]
    policy_mapping_fn: Callable[..., str]
    policies_to_train: ToTrain
    _global_vars: dict[str, Any]
    #: The algorithm's learner group (the driver's local worker only): its policies learn there.
    learner_group: LearnerGroup | None = None

    def attach_learner_group(self, group: LearnerGroup) -> None:
        """Let the policies that learn (those with a learner class) learn in ``group``, now and
        when made again (added, or reloaded after eviction); ``group`` follows this worker's
        global timestep."""
        self.learner_group = group
        group.on_timestep(int(self._global_vars.get("timestep", group.timestep)))
        for pid in self.policy_map.in_memory():
            policy = self.policy_map.peek(pid)
            if policy is not None and policy.learner_class is not None:
                policy.attach_learner_group(group, pid)

    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID) -> TorchPolicy:
        try:
            return self.policy_map[policy_id]
        except KeyError:
            raise KeyError(
                f"no policy {policy_id!r}; policies: {', '.join(self.policy_map)}"
            ) from None

    def foreach_policy(self, func: Callable[..., T], **kwargs: Any) -> list[T]:
        return [func(policy, pid, **kwargs) for pid, policy in self.policy_map.items()]

    def for_policy(
        self, func: Callable[..., T], policy_id: str = DEFAULT_POLICY_ID, **kwargs: Any
    ) -> T:
        """``func(policy, **kwargs)`` of the policy ``policy_id`` (the reference's)."""
        return func(self.get_policy(policy_id), **kwargs)

    def get_weights(self, policies: list[str] | None = None) -> dict[str, dict[str, Any]]:
        return {
            pid: policy.get_weights()
            for pid, policy in self.policy_map.items()
            if policies is None or pid in policies
        }

    def set_weights(
        self, weights: Mapping[str, Mapping[str, Any]], global_vars: Mapping[str, Any] | None = None
    ) -> None:
        for pid, policy_weights in weights.items():
            self.get_policy(pid).set_weights(policy_weights)
        if global_vars:
            self.set_global_vars(global_vars)

    def pull_learned_weights(self) -> None:
        """Give the policies in memory that learned since they last took the learner group's
        weights those weights (evicted ones took them when they were saved)."""
        for pid in self.policy_map.in_memory():
            policy = self.policy_map.peek(pid)
            if policy is not None:
                policy.pull_weights_if_stale()

    def set_global_vars(self, global_vars: Mapping[str, Any]) -> None:
        """Hand the policies in memory the global vars; evicted ones get them when reloaded."""
        self._global_vars = dict(global_vars)
        if self.learner_group is not None and "timestep" in global_vars:
            self.learner_group.on_timestep(int(global_vars["timestep"]))
        for pid in self.policy_map.in_memory():
            policy = self.policy_map.peek(pid)
            if policy is not None:
                policy.on_global_var_update(global_vars)

    # ------------------------------------------------------------------ policy making

    def _add_policy_parts(self, policy_id: str) -> None:
        """The preprocessor and observation filter of a policy (kept when it is evicted)."""
        obs_space = self.policy_spaces[policy_id][0]
        settings = settings_of(
            PolicyPartsSettings,
            self._policy_config(policy_id),
            f"{type(self).__name__} (policy {policy_id!r})",
        )
        preprocessor = get_preprocessor(obs_space, dict(settings.model))
        self.preprocessors[policy_id] = preprocessor
        self.filters[policy_id] = get_filter(settings.observation_filter, preprocessor.shape)

    def _make_policy(self, policy_id: str) -> TorchPolicy:
        spec = self.policy_specs[policy_id]
        builder = builder_for(spec, self.policy_class)
        # What the filter makes of the preprocessed observations (uint8 images stay uint8
        # unless a MeanStdFilter normalizes them).
        preprocessed = self.preprocessors[policy_id].observation_space
        policy = builder(
            filtered_space(preprocessed, self.filters[policy_id]),
            self.policy_spaces[policy_id][1],
            self._policy_config(policy_id),
            self.device,
            worker_index=self.worker_index,
        )
        if self.learner_group is not None and policy.learner_class is not None:
            policy.attach_learner_group(self.learner_group, policy_id)
        return policy

    def _policy_config(self, policy_id: str) -> Any:
        """The algorithm's config with the policy spec's overrides and its own module spec."""
        config = policy_config(self.config, self.policy_specs[policy_id].config)
        return module_policy_config(config, policy_id)

    def _policy_reloaded(self, policy_id: str, policy: TorchPolicy) -> None:
        if self._global_vars:
            policy.on_global_var_update(self._global_vars)

    def map_agent(self, agent_id: Any, episode: Any, worker: Any = None, **kwargs: Any) -> str:
        """The policy id of ``agent_id`` by the current mapping function (one of the older form
        ``fn(agent_id)`` is called with the agent id only); an id that is not a policy is a
        ValueError naming the agent and the id."""
        fn = self.policy_mapping_fn
        policy_id = call_mapping_fn(fn, takes_agent_only(fn), agent_id, episode, self, **kwargs)
        if policy_id not in self.policy_specs:
            known = ", ".join(map(repr, self.policy_specs))
            raise ValueError(
                f"policy_mapping_fn mapped agent {agent_id!r} to policy {policy_id!r}, which is "
                f"not a policy; policies: {known}"
            )
        return policy_id

    # ------------------------------------------------------------------ multi-agent

    def is_policy_to_train(self, policy_id: str, batch: Any = None) -> bool:
        """Whether ``policy_id`` learns (``policies_to_train``: ids, a function, or all)."""
        return wants_training(self.policies_to_train, policy_id, batch)

    def get_policies_to_train(self, batch: Any = None) -> set[str]:
        """The ids of the policies that learn (RLlib's name), for ``batch`` where
        ``policies_to_train`` is a function of the batch."""
        return {pid for pid in self.policy_specs if self.is_policy_to_train(pid, batch)}

    def set_is_policy_to_train(self, policies_to_train: ToTrain) -> None:
        self.policies_to_train = policies_to_train

    def get_policy_spaces(self) -> dict[str, tuple[gym.Space[Any], gym.Space[Any]]]:
        """Each policy's raw (observation, action) spaces."""
        return dict(self.policy_spaces)

    def add_policy(
        self,
        policy_id: str,
        spec: PolicySpec,
        *,
        spaces: tuple[gym.Space[Any], gym.Space[Any]] | None = None,
        weights: Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        policy_mapping_fn: Callable[..., str] | None = None,
        policies_to_train: ToTrain = None,
        filter_state: Mapping[str, Any] | None = None,
    ) -> TorchPolicy:
        """Add (or replace) a policy: made from ``spec`` (its spaces, else ``spaces``, else
        inferred from the env), then given ``weights`` and the JSON ``state``. The mapping
        function and ``policies_to_train`` change when given."""
        if policy_id in self.policy_map:
            del self.policy_map[policy_id]
        if self.learner_group is not None:
            # A replaced policy learns from scratch, with a learner made from its new spec.
            self.learner_group.remove_policy(policy_id)
        self.policy_specs[policy_id] = spec
        if spec.observation_space is None or spec.action_space is None:
            given = {policy_id: spaces} if spaces is not None else None
            env = self.envs[0] if self.envs else None
            mapping = policy_mapping_fn or self.policy_mapping_fn
            try:
                found = infer_spaces({policy_id: spec}, env, mapping, self, given)
            except ValueError:
                del self.policy_specs[policy_id]
                raise
            self.policy_spaces[policy_id] = found[policy_id]
        else:
            self.policy_spaces[policy_id] = (spec.observation_space, spec.action_space)
        self._add_policy_parts(policy_id)
        if filter_state:
            self.filters[policy_id].set_state(dict(filter_state))
        policy = self._make_policy(policy_id)
        if weights is not None:
            policy.set_weights(weights)
        if state:
            policy.set_state(state)
        elif self._global_vars:
            policy.on_global_var_update(self._global_vars)
        self.policy_map[policy_id] = policy
        if policy_mapping_fn is not None:
            self.policy_mapping_fn = policy_mapping_fn
        if policies_to_train is not None:
            self.policies_to_train = policies_to_train
        if isinstance(self.runner, MultiAgentRunner):
            self.runner.policies_changed()
        return policy

    def remove_policy(
        self,
        policy_id: str,
        *,
        policy_mapping_fn: Callable[..., str] | None = None,
        policies_to_train: ToTrain = None,
    ) -> None:
        """Remove a policy (its batches, filter and preprocessor go with it)."""
        if policy_id not in self.policy_map:
            raise KeyError(f"no policy {policy_id!r}; policies: {', '.join(self.policy_map)}")
        del self.policy_map[policy_id]
        if self.learner_group is not None:
            self.learner_group.remove_policy(policy_id)
        for table in (self.policy_specs, self.policy_spaces, self.preprocessors, self.filters):
            table.pop(policy_id, None)
        if policy_mapping_fn is not None:
            self.policy_mapping_fn = policy_mapping_fn
        if policies_to_train is not None:
            self.policies_to_train = policies_to_train
        if isinstance(self.runner, MultiAgentRunner):
            self.runner.policy_removed(policy_id)

    def infer_policy_spaces(
        self, policy_id: str, spec: PolicySpec, mapping_fn: Callable[..., str] | None = None
    ) -> Spaces:
        """The spaces a policy would get here (from its spec or this worker's env)."""
        env = self.envs[0] if self.envs else None
        found = infer_spaces({policy_id: spec}, env, mapping_fn or self.policy_mapping_fn, self)
        return found[policy_id]

    def get_policy_setup(self) -> PolicySetup:
        return PolicySetup(
            {pid: (spec, self.policy_spaces[pid]) for pid, spec in self.policy_specs.items()},
            self.policy_mapping_fn,
            self.policies_to_train,
        )

    def set_policy_setup(self, setup: PolicySetup) -> None:
        """Add the policies of ``setup`` this worker lacks and remove those it has not; take its
        mapping function and policies to train. Weights come with the next weight sync."""
        # The mapping first: removing a policy restarts the episodes that used it, and their
        # agents must map to the policies of the setup.
        self.policy_mapping_fn = setup.mapping_fn
        self.policies_to_train = setup.policies_to_train
        for policy_id, (spec, spaces) in setup.policies.items():
            if policy_id not in self.policy_specs:
                self.add_policy(policy_id, spec, spaces=spaces)
        for policy_id in [p for p in self.policy_specs if p not in setup.policies]:
            self.remove_policy(policy_id)
