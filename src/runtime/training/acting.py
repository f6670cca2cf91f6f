"""Acting with a trained ``Algorithm``: its policies and their weights (those of the local
worker, sent on to the rollout workers when set), and actions for raw observations, computed
on the local worker's policy with the observations preprocessed and filtered as in training and
the actions unsquashed and clipped as the env receives them."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.unknown_keys import did_you_mean
from runtime.core.acting_inputs import InputDict, single_call_inputs
from runtime.core.learner_group import LearnerGroup
from runtime.core.policy import TorchPolicy
from runtime.core.rl_module_calls import UserModuleCalls
from runtime.env.action_processing import action_processor
from runtime.env.worker_set import WorkerSet
from runtime.training.algorithm_settings import AlgorithmSettings
from runtime.training.trainable import Trainable

#: The keywords of ``compute_single_action`` (the reference's).
_SINGLE_KEYWORDS = (
    "observation",
    "state",
    "prev_action",
    "prev_reward",
    "info",
    "input_dict",
    "policy_id",
    "full_fetch",
    "explore",
    "timestep",
    "episode",
    "unsquash_action",
    "clip_action",
)
#: The keywords of ``compute_actions``: the reference's, and the singular names
#: ``compute_single_action`` has for its unsquash and clip switches.
_BATCH_KEYWORDS = (
    "observations",
    "state",
    "prev_action",
    "prev_reward",
    "info",
    "policy_id",
    "full_fetch",
    "explore",
    "timestep",
    "episodes",
    "unsquash_actions",
    "clip_actions",
    "unsquash_action",
    "clip_action",
)


def check_call_keywords(method: str, kwargs: Mapping[str, Any], known: Sequence[str]) -> None:
    """A ``TypeError`` (with did-you-mean among ``known``) for a keyword ``method`` does not
    take."""
    for key in kwargs:
        hint = did_you_mean(key, known)
        raise TypeError(
            f"{method}() got an unexpected keyword argument {key!r}" + (f"; {hint}" if hint else "")
        )


def one_of(method: str, names: tuple[str, str], first: Any, second: Any) -> Any:
    """The value given under either of two names of one switch (None: neither); both given
    and different is a ``TypeError`` naming both."""
    if first is not None and second is not None and first != second:
        raise TypeError(
            f"{method}({names[0]}={first!r}, {names[1]}={second!r}): two names of one switch "
            "given different values; give one of them"
        )
    return second if first is None else first


def _refuse_state(method: str, state: Any) -> None:
    """A state given to a policy without memory is a ``ValueError``: it has none to act from
    (previous actions and rewards, inputs of every call, it ignores as the reference does)."""
    if state:
        raise ValueError(
            f"{method}(state=...): this policy's model has no memory (use_lstm, use_attention) "
            "and so no state; leave state out (None)"
        )


def policy_actions(action_space: Any, settings: AlgorithmSettings, env_actions: Any) -> Any:
    """Actions as an env took them, in the policy's coordinates: rescaled from the bounds of a
    Box into [-1, 1] under ``normalize_actions`` (what the policy acts in and remembers)."""
    import gymnasium as gym

    actions = np.asarray(env_actions)
    if not (settings.normalize_actions and isinstance(action_space, gym.spaces.Box)):
        return actions
    low, high = action_space.low, action_space.high
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        return actions
    return (2.0 * (actions - low) / (high - low) - 1.0).astype(np.float32)


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

    def get_module(self, module_id: str = DEFAULT_POLICY_ID) -> torch.nn.Module:
        """RLlib's new API stack name: policy ``module_id``'s module with the trained weights,
        the ``TorchRLModule`` of its ``rl_module_spec`` (else the algorithm's own module)."""
        module = self.get_policy(module_id).module
        return module.user_module if isinstance(module, UserModuleCalls) else module

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
        observation: Any = None,
        state: list[Any] | None = None,
        *,
        prev_action: Any = None,
        prev_reward: Any = None,
        info: Any = None,
        input_dict: InputDict | None = None,
        policy_id: str = DEFAULT_POLICY_ID,
        full_fetch: bool = False,
        explore: bool | None = None,
        timestep: int | None = None,
        episode: Any = None,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """The action for one raw observation (preprocessed and filtered as in training).

        Returns the action, or ``(action, state_out, extra)`` with ``full_fetch`` or a
        ``state`` (a policy with memory: ``state`` is its state, each array without a batch
        dimension, as ``get_policy().get_initial_state()`` gives it; a policy without memory
        refuses one). ``prev_action`` and ``prev_reward`` (those of the step before, as the env
        took and gave them) and ``info`` are taken always, as in the reference, and reach the
        models that read them: a model with memory reads the previous action and reward where
        configured to (``lstm_use_prev_action``, ...); no model here reads infos.
        ``input_dict`` (the reference's column dict: ``obs``, ``state_in_<i>``,
        ``prev_actions``, ``prev_rewards``, ``infos``) replaces the observation and those inputs.
        ``episode`` is taken as the reference takes it, for models that read episodes: none
        here does. ``timestep`` sets the exploration's timestep (the policy's global one by
        default). ``unsquash_action`` / ``clip_action`` (None: ``normalize_actions`` /
        ``clip_actions``) map the action into the env's Box. A keyword this method does not
        take is a ``TypeError`` naming it: a misspelt ``explore`` would otherwise keep
        exploring.
        """
        check_call_keywords("compute_single_action", kwargs, _SINGLE_KEYWORDS)
        del episode  # the reference's input of models that read episodes; none here does
        given = single_call_inputs(
            "compute_single_action",
            input_dict,
            "observation",
            observation=observation,
            state=state,
            prev_action=prev_action,
            prev_reward=prev_reward,
            info=info,
        )
        state, prev_action, prev_reward = given.state, given.prev_actions, given.prev_rewards
        policy = self.workers.local_worker().get_policy(policy_id)
        if not policy.is_recurrent():
            _refuse_state("compute_single_action", state)
            prev_action = prev_reward = None  # read only by a model with memory
        actions, states, extra = self._compute(
            [given.obs],
            policy_id,
            explore,
            unsquash_action,
            clip_action,
            timestep,
            [np.asarray(s)[None] for s in state] if state else None,
            None if prev_action is None else np.asarray(prev_action)[None],
            None if prev_reward is None else np.asarray([prev_reward], dtype=np.float32),
        )
        action = actions[0]
        if full_fetch or state:
            return action, [s[0] for s in states], {k: v[0] for k, v in extra.items()}
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
        state: Mapping[Any, Any] | list[Any] | None = None,
        *,
        prev_action: Mapping[Any, Any] | Any = None,
        prev_reward: Mapping[Any, Any] | Any = None,
        info: Any = None,
        policy_id: str = DEFAULT_POLICY_ID,
        explore: bool | None = None,
        full_fetch: bool = False,
        timestep: int | None = None,
        episodes: Any = None,
        unsquash_actions: bool | None = None,
        clip_actions: bool | None = None,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Actions for a dict ``{key: obs}`` (returns ``{key: action}``) or a list of
        observations (returns a list of actions). Unknown keywords are a ``TypeError``.
        ``unsquash_actions`` / ``clip_actions`` (the reference's names; ``compute_single_action``'s
        singular ones are taken too) as in ``compute_single_action``; ``episodes`` is taken
        as the reference takes it, for models that read episodes: none here does.

        A policy with memory takes ``state`` (and ``prev_action`` / ``prev_reward``) in the
        layout of the observations: a dict keyed as they are of each one's state (a list of
        arrays without a batch dimension), or for a list of observations the list of state
        arrays with one row per observation; then (or with ``full_fetch``) it returns
        ``(actions, state_out, extra)`` in the same layout. ``prev_action``, ``prev_reward``
        and ``info`` are taken by every policy, as in ``compute_single_action``."""
        method = "compute_actions"
        check_call_keywords(method, kwargs, _BATCH_KEYWORDS)
        del episodes  # the reference's input of models that read episodes; none here does
        unsquash = one_of(
            method, ("unsquash_actions", "unsquash_action"), unsquash_actions, unsquash_action
        )
        clip = one_of(method, ("clip_actions", "clip_action"), clip_actions, clip_action)
        policy = self.workers.local_worker().get_policy(policy_id)
        if not policy.is_recurrent():
            _refuse_state("compute_actions", state)
            prev_action = prev_reward = None  # read only by a model with memory
        keyed = isinstance(observations, Mapping)
        keys = list(observations) if keyed else []
        rows = [observations[k] for k in keys] if keyed else list(observations)

        def batched(value: Any) -> Any:
            if value is None:
                return None
            return np.stack([np.asarray(value[k]) for k in keys]) if keyed else np.asarray(value)

        state_batches: list[Any] | None = None
        if state:
            if keyed:
                size = len(next(iter(state.values())))  # type: ignore[union-attr]
                by_key: Any = state
                state_batches = [np.stack([by_key[k][i] for k in keys]) for i in range(size)]
            else:
                state_batches = [np.asarray(s) for s in state]
        prev_rewards = batched(prev_reward)
        actions, states, extra = self._compute(
            rows,
            policy_id,
            explore,
            unsquash,
            clip,
            timestep,
            state_batches,
            batched(prev_action),
            None if prev_rewards is None else prev_rewards.astype(np.float32),
        )
        if keyed:
            out: Any = dict(zip(keys, actions, strict=True))
            state_out: Any = {k: [s[j] for s in states] for j, k in enumerate(keys)}
            extra_out: Any = {k: {n: v[j] for n, v in extra.items()} for j, k in enumerate(keys)}
        else:
            out, state_out, extra_out = list(actions), states, extra
        if full_fetch or state:
            return out, state_out, extra_out
        return out

    def _compute(
        self,
        observations: list[Any],
        policy_id: str,
        explore: bool | None,
        unsquash_action: bool | None,
        clip_action: bool | None,
        timestep: int | None = None,
        state_batches: list[Any] | None = None,
        prev_actions: Any = None,
        prev_rewards: Any = None,
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        worker = self.workers.local_worker()
        policy = worker.get_policy(policy_id)
        obs = worker.filters[policy_id](
            worker.preprocessors[policy_id].transform_many(observations), update=False
        )
        if prev_actions is not None:
            # The env's actions back into the policy's coordinates (normalize_actions).
            prev_actions = policy_actions(policy.action_space, self.settings, prev_actions)
        actions, states, extra = policy.compute_actions(
            obs, state_batches, prev_actions, prev_rewards, explore=explore, timestep=timestep
        )
        # As in the reference, every observation acted on advances the policy's timestep, so
        # an exploration's random_timesteps and schedules run on between training rounds (the
        # next round sets it from the env steps sampled again).
        policy.global_timestep += len(observations)
        settings = self.settings
        unsquash = settings.normalize_actions if unsquash_action is None else unsquash_action
        clip = settings.clip_actions if clip_action is None else clip_action
        processed = action_processor(policy.action_space, bool(unsquash), bool(clip))(actions)
        return processed, states, extra
