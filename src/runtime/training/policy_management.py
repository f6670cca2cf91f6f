"""Adding and removing policies of a running ``Algorithm``: on every worker (the evaluation
workers included), trained from the next iteration when among the policies to train."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.frozen import freeze
from rlconf.policy_spec import PolicySpec
from runtime.core.policy import TorchPolicy
from runtime.env.policy_setup import ToTrain
from runtime.env.rollout_worker import RolloutWorker
from runtime.env.worker_set import WorkerSet
from runtime.training.trainable import Trainable

#: What ``add_policy`` takes positionally, in RLlib 1.x's order.
_POSITIONAL_ORDER = "policy_id, policy_cls, observation_space, action_space, config"


def check_add_policy_arguments(
    policy_cls: Any, observation_space: Any, action_space: Any, config: Any, policy: Any
) -> None:
    """A ``TypeError`` naming the argument of ``add_policy`` that is not of its kind: most
    often one given in another RLlib version's positional order (RLlib 2.x's third positional
    argument is a policy instance, 1.x's the observation space)."""
    if policy is not None or isinstance(observation_space, TorchPolicy):
        instance = policy if policy is not None else observation_space
        raise TypeError(
            f"add_policy(policy={type(instance).__name__} instance): adding a policy instance "
            "(RLlib 2.x's policy=) is not supported here; give its class, spaces and state: "
            "add_policy(policy_id, type(p), p.observation_space, p.action_space, "
            "policy_state=p.get_state())"
        )
    if policy_cls is not None and not (
        isinstance(policy_cls, type) and issubclass(policy_cls, TorchPolicy)
    ):
        raise TypeError(
            f"add_policy(policy_cls={policy_cls!r}): not a policy class; allowed: None (the "
            "algorithm's policy) or a runtime.TorchPolicy subclass (positionally: "
            f"{_POSITIONAL_ORDER})"
        )
    for name, space in (("observation_space", observation_space), ("action_space", action_space)):
        if space is not None and not isinstance(space, gym.Space):
            raise TypeError(
                f"add_policy({name}={space!r}): not a gymnasium space; allowed: a "
                f"gymnasium.spaces.Space or None (positionally: {_POSITIONAL_ORDER})"
            )
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(
            f"add_policy(config={config!r}): not a dict; allowed: a dict of overrides of the "
            f"algorithm's config, or None (positionally: {_POSITIONAL_ORDER})"
        )


class PolicyManagement(Trainable):
    """The ``add_policy`` / ``remove_policy`` part of ``Algorithm`` (mixed into it)."""

    config: AlgorithmConfig
    workers: WorkerSet
    evaluation_workers: WorkerSet | None

    def add_policy(
        self,
        policy_id: str,
        policy_cls: type[TorchPolicy] | None = None,
        observation_space: gym.Space[Any] | None = None,
        action_space: gym.Space[Any] | None = None,
        config: Mapping[str, Any] | None = None,
        *,
        policy_state: Mapping[str, Any] | None = None,
        policy_mapping_fn: Callable[..., str] | None = None,
        policies_to_train: ToTrain = None,
        evaluation_workers: bool = True,
        policy: TorchPolicy | None = None,
    ) -> TorchPolicy:
        """Add a policy to every worker and return the local worker's copy.

        Positionally as in RLlib 1.x, ``add_policy(policy_id, policy_cls, observation_space,
        action_space, config)``; the arguments after ``config`` by keyword only, as their
        order differs between RLlib's versions. ``policy_cls``: None (or ``TorchPolicy``) for
        the algorithm's policy, or a ``TorchPolicy`` subclass. RLlib 2.x's ``policy`` (an
        instance to add) is refused: give its class, spaces and ``policy_state``.
        ``config``: overrides of the algorithm's config for this policy (validated like
        ``PolicySpec.config``). ``policy_state``: what ``get_policy(pid).get_state()`` returns
        (``weights`` and the JSON state), to start from another policy (a league snapshot).
        Spaces left out are inferred from the env through the (new) mapping function.
        ``policy_mapping_fn`` / ``policies_to_train`` replace the current ones when given;
        running episodes keep their mapping to the end.
        """
        if not isinstance(policy_id, str) or not policy_id:
            raise ValueError(f"add_policy: policy_id must be a non-empty string, got {policy_id!r}")
        check_add_policy_arguments(policy_cls, observation_space, action_space, config, policy)
        local = self.workers.local_worker()
        if policy_id in local.policy_map:
            raise ValueError(
                f"add_policy: there is already a policy {policy_id!r}; remove_policy() it first "
                f"or choose another id (policies: {', '.join(local.policy_map)})"
            )
        overrides = type(self.config).overrides(**config) if config else None
        spec = PolicySpec(
            policy_cls, observation_space, action_space, freeze(overrides) if overrides else None
        )
        state = dict(policy_state or {})
        weights = state.pop("weights", None)
        spaces = None
        if (observation_space is None or action_space is None) and not local.envs:
            spaces = self._remote_spaces(policy_id, spec, policy_mapping_fn)
        policy = local.add_policy(
            policy_id,
            spec,
            spaces=spaces,
            weights=weights,
            state=state,
            policy_mapping_fn=policy_mapping_fn,
            policies_to_train=policies_to_train,
        )
        spaces = local.policy_spaces[policy_id]
        weights = policy.get_weights()
        filter_state = local.filters[policy_id].get_state()
        # The other workers only act: the learner state stays with the learner group.
        acting_state = {k: v for k, v in state.items() if k != "learner"}

        def add(worker: RolloutWorker) -> None:
            worker.add_policy(
                policy_id,
                spec,
                spaces=spaces,
                weights=weights,
                state=acting_state,
                policy_mapping_fn=policy_mapping_fn,
                policies_to_train=policies_to_train,
                filter_state=filter_state,
            )

        for workers in self._worker_sets(evaluation_workers):
            workers.foreach_worker(add, local=workers is not self.workers)
        return policy

    def remove_policy(
        self,
        policy_id: str,
        *,
        policy_mapping_fn: Callable[..., str] | None = None,
        policies_to_train: ToTrain = None,
        evaluation_workers: bool = True,
    ) -> None:
        """Remove a policy from every worker (and its replay buffer, if any). Give a
        ``policy_mapping_fn`` that no longer maps agents to it."""
        local = self.workers.local_worker()
        if policy_id not in local.policy_map:
            raise KeyError(
                f"remove_policy: no policy {policy_id!r}; policies: {', '.join(local.policy_map)}"
            )

        def remove(worker: RolloutWorker) -> None:
            if policy_id in worker.policy_map:
                worker.remove_policy(
                    policy_id,
                    policy_mapping_fn=policy_mapping_fn,
                    policies_to_train=policies_to_train,
                )

        for workers in self._worker_sets(evaluation_workers):
            workers.foreach_worker(remove)
        buffers = getattr(self, "replay_buffers", None)
        if isinstance(buffers, dict):
            buffers.pop(policy_id, None)

    def _worker_sets(self, evaluation_workers: bool) -> list[WorkerSet]:
        sets = [self.workers]
        if evaluation_workers and self.evaluation_workers is not None:
            sets.append(self.evaluation_workers)
        return sets

    def _remote_spaces(
        self, policy_id: str, spec: PolicySpec, mapping_fn: Callable[..., str] | None
    ) -> Any:
        """Spaces inferred by a remote worker (the local one has no env)."""
        ids = self.workers.remote_worker_ids()
        if not ids:
            return None

        def infer(worker: RolloutWorker) -> Any:
            return worker.infer_policy_spaces(policy_id, spec, mapping_fn)

        found = self.workers.call_remote(infer, indices=ids[:1])
        return found[0][1] if found else None
