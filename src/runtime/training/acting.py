"""Acting with a trained ``Algorithm``: its policies and their weights (those of the local
worker, sent on to the rollout workers when set), and actions for raw observations, computed
on the local worker's policy with the observations preprocessed and filtered as in training and
the actions unsquashed and clipped as the env receives them."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.unknown_keys import did_you_mean
from runtime.core.learner_group import LearnerGroup
from runtime.core.policy import TorchPolicy
from runtime.env.action_processing import action_processor
from runtime.env.worker_set import WorkerSet
from runtime.training.algorithm_settings import AlgorithmSettings
from runtime.training.trainable import Trainable

#: The keywords of ``compute_single_action`` / ``compute_actions``.
_KEYWORDS = (
    "state",
    "policy_id",
    "explore",
    "full_fetch",
    "unsquash_action",
    "clip_action",
    "timestep",
)
#: The reference's keywords for inputs this runtime's models do not take (previous action and
#: reward, env info, episode, an input dict): accepted when not given (None).
_UNUSED_INPUTS = ("prev_action", "prev_reward", "info", "episode", "input_dict")


def check_call_keywords(method: str, kwargs: Mapping[str, Any]) -> None:
    """A ``TypeError`` (with did-you-mean) for a keyword ``method`` does not take; a
    ``ValueError`` for a reference input given that no model here reads."""
    for key, value in kwargs.items():
        if key in _UNUSED_INPUTS:
            if value is None:
                continue
            raise ValueError(
                f"{method}({key}=...): this runtime's models read the observation alone (no "
                f"previous actions or rewards, infos, episodes or input dicts); leave {key} out"
            )
        hint = did_you_mean(key, (*_KEYWORDS, *_UNUSED_INPUTS))
        raise TypeError(
            f"{method}() got an unexpected keyword argument {key!r}" + (f"; {hint}" if hint else "")
        )


class Acting(Trainable):
    """The policy and ``compute_*`` part of ``Algorithm`` (mixed into it)."""

    config: AlgorithmConfig
    settings: AlgorithmSettings
    workers: WorkerSet
    learner_group: LearnerGroup

    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID) -> TorchPolicy:
        policy = self.workers.local_worker().get_policy(policy_id)
        policy.pull_weights_if_stale()
        return policy

    def get_weights(self, policies: list[str] | None = None) -> dict[str, dict[str, Any]]:
        self.workers.local_worker().pull_learned_weights()
        return self.workers.local_worker().get_weights(policies)

    def set_weights(self, weights: Mapping[str, Mapping[str, Any]]) -> None:
        """Set the weights of the given policies: their learners', and every worker's."""
        self.workers.local_worker().set_weights(weights)
        self.learner_group.set_weights(weights)
        self.workers.sync_weights()

    def compute_single_action(
        self,
        observation: Any,
        state: list[Any] | None = None,
        *,
        policy_id: str = DEFAULT_POLICY_ID,
        explore: bool | None = None,
        full_fetch: bool = False,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
        timestep: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """The action for one raw observation (preprocessed and filtered as in training).

        Returns the action, or ``(action, state, extra)`` with ``full_fetch`` or a ``state``.
        ``timestep`` sets the exploration's timestep (the policy's global one by default).
        A keyword this method does not take is a ``TypeError`` naming it: a misspelt
        ``explore`` would otherwise keep exploring.
        """
        check_call_keywords("compute_single_action", kwargs)
        actions, states, extra = self._compute(
            [observation], policy_id, explore, unsquash_action, clip_action, timestep
        )
        action = actions[0]
        if full_fetch or state:
            return action, states, {k: v[0] for k, v in extra.items()}
        return action

    def compute_action(self, *args: Any, **kwargs: Any) -> Any:
        """The reference's old name of ``compute_single_action`` (deprecated)."""
        warnings.warn(
            "compute_action() is deprecated: use compute_single_action()",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.compute_single_action(*args, **kwargs)

    def compute_actions(
        self,
        observations: Mapping[Any, Any] | Any,
        *,
        policy_id: str = DEFAULT_POLICY_ID,
        explore: bool | None = None,
        full_fetch: bool = False,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
        timestep: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """Actions for a dict ``{key: obs}`` (returns ``{key: action}``) or a list of
        observations (returns a list of actions). Unknown keywords are a ``TypeError``."""
        check_call_keywords("compute_actions", kwargs)
        if isinstance(observations, Mapping):
            keys = list(observations)
            actions, states, extra = self._compute(
                [observations[k] for k in keys],
                policy_id,
                explore,
                unsquash_action,
                clip_action,
                timestep,
            )
            out: Any = dict(zip(keys, actions, strict=True))
        else:
            actions, states, extra = self._compute(
                list(observations), policy_id, explore, unsquash_action, clip_action, timestep
            )
            out = list(actions)
        if full_fetch:
            return out, states, extra
        return out

    def _compute(
        self,
        observations: list[Any],
        policy_id: str,
        explore: bool | None,
        unsquash_action: bool | None,
        clip_action: bool | None,
        timestep: int | None = None,
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        worker = self.workers.local_worker()
        policy = worker.get_policy(policy_id)
        obs = worker.filters[policy_id](
            worker.preprocessors[policy_id].transform_many(observations), update=False
        )
        actions, states, extra = policy.compute_actions(obs, explore=explore, timestep=timestep)
        settings = self.settings
        unsquash = settings.normalize_actions if unsquash_action is None else unsquash_action
        clip = settings.clip_actions if clip_action is None else clip_action
        processed = action_processor(policy.action_space, bool(unsquash), bool(clip))(actions)
        return processed, states, extra
