"""A worker's policies as the config describes them: the specs (``multiagent.policies``, or the
one ``default_policy``), their spaces (given, or inferred from the env through the mapping
function), each policy's config (the algorithm's, with the spec's overrides), the mapping
function and which policies train."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import warnings
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any

import gymnasium as gym

from rlconf.algorithm_config import AlgorithmConfig
from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.policy_spec import PolicySpec
from runtime.core.policy import PolicyBuilder, TorchPolicy
from runtime.env.episode import MultiAgentEpisode
from runtime.env.multi_agent_env import MultiAgentEnv

Spaces = tuple[gym.Space[Any], gym.Space[Any]]
#: ``policies_to_train``: ids, ``fn(policy_id, batch) -> bool``, or None for all.
ToTrain = Collection[str] | Callable[..., bool] | None


def configured_policies(policies: Mapping[str, PolicySpec]) -> dict[str, PolicySpec]:
    """``multiagent.policies``, or ``{"default_policy": PolicySpec()}`` when none are set."""
    return dict(policies) or {DEFAULT_POLICY_ID: PolicySpec()}


def is_multi_agent(policies: Mapping[str, PolicySpec], env: Any) -> bool:
    """Whether a worker samples with the multi-agent runner: a MultiAgentEnv, or policies
    (``multiagent.policies``) other than the default one (which then need a MultiAgentEnv)."""
    if isinstance(env, MultiAgentEnv):
        return True
    return set(configured_policies(policies)) != {DEFAULT_POLICY_ID}


def default_mapping(agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any) -> str:
    """Without a ``policy_mapping_fn`` every agent acts with ``default_policy``."""
    return DEFAULT_POLICY_ID


def mapping_fn_of(fn: Callable[..., str] | None) -> Callable[..., str]:
    """``policy_mapping_fn``, or ``default_mapping`` when none is set."""
    return fn if fn is not None else default_mapping


#: Mapping functions already inspected by ``takes_agent_only`` (each is inspected, and warned
#: about, once: the workers of a process share them).
_AGENT_ONLY: weakref.WeakKeyDictionary[Callable[..., str], bool] = weakref.WeakKeyDictionary()


def takes_agent_only(fn: Callable[..., str]) -> bool:
    """Whether ``fn`` is a mapping function of the reference's older form ``fn(agent_id)``: it
    can't be called as ``fn(agent_id, episode, worker=...)`` but can with the agent id alone.
    Such a function keeps working (called with the agent id only), with a DeprecationWarning
    naming the form to use, as the reference accepted it with a warning."""
    try:
        return _AGENT_ONLY[fn]
    except (KeyError, TypeError):  # (TypeError: not weakly referable or not hashable)
        pass
    found = _inspect_agent_only(fn)
    with contextlib.suppress(TypeError):
        _AGENT_ONLY[fn] = found
    return found


def _inspect_agent_only(fn: Callable[..., str]) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (some builtins): call it in full
        return False
    try:
        signature.bind(None, None, worker=None)
        return False
    except TypeError:
        pass
    try:
        signature.bind(None)
    except TypeError:  # neither form: the call raises its own TypeError
        return False
    warnings.warn(
        f"policy_mapping_fn {getattr(fn, '__qualname__', fn)!r} takes only agent_id, the "
        "reference's older signature; write it as fn(agent_id, episode, worker, **kwargs)",
        DeprecationWarning,
        stacklevel=3,
    )
    return True


def call_mapping_fn(
    fn: Callable[..., str], agent_only: bool, agent_id: Any, episode: Any, worker: Any, **kw: Any
) -> str:
    """``fn``'s policy id for ``agent_id`` (``agent_only``: ``takes_agent_only(fn)``)."""
    if agent_only:
        return fn(agent_id)
    return fn(agent_id, episode, worker=worker, **kw)


def policy_config(config: AlgorithmConfig, overrides: Mapping[str, Any] | None) -> AlgorithmConfig:
    """The config a policy runs with: ``config`` with the spec's (validated) overrides."""
    if not overrides:
        return config
    merged = config.copy()
    merged.update_from_dict(dict(overrides))
    return merged.freeze()


def infer_spaces(
    specs: Mapping[str, PolicySpec],
    env: Any,
    mapping_fn: Callable[..., str],
    worker: Any,
    given: Mapping[str, Spaces] | None = None,
) -> dict[str, Spaces]:
    """Each policy's (observation, action) space: the spec's, else ``given`` (from another
    worker), else the env's shared spaces, else those of the env's agents the mapping function
    maps to it. A policy left without spaces is a ValueError naming it."""
    by_agents: dict[str, Spaces] = {}
    if isinstance(env, MultiAgentEnv):
        probe = MultiAgentEpisode(-1, 0, getattr(worker, "worker_index", 0), mapping_fn, worker)
        agent_only = takes_agent_only(mapping_fn)
        for agent in env.get_agent_ids():
            try:
                policy_id = call_mapping_fn(mapping_fn, agent_only, agent, probe, worker)
            except Exception:  # a mapping fn may need a live episode; the spaces must be given
                continue
            if policy_id not in by_agents:
                by_agents[policy_id] = (
                    env.get_observation_space(agent),
                    env.get_action_space(agent),
                )
    shared: Spaces | None = None
    if env is not None:
        obs_space = getattr(env, "observation_space", None)
        act_space = getattr(env, "action_space", None)
        if isinstance(obs_space, gym.Space) and isinstance(act_space, gym.Space):
            shared = (obs_space, act_space)
        elif isinstance(env, MultiAgentEnv):
            shared = _common_spaces(env)
    out: dict[str, Spaces] = {}
    for policy_id, spec in specs.items():
        found = (given or {}).get(policy_id) or by_agents.get(policy_id) or shared
        obs_space = spec.observation_space or (found[0] if found else None)
        act_space = spec.action_space or (found[1] if found else None)
        if obs_space is None or act_space is None:
            raise ValueError(
                f"policy {policy_id!r}: its observation and action spaces can't be inferred "
                "(the env has no shared spaces and the policy_mapping_fn maps none of its "
                f"agents {list(env.get_agent_ids()) if isinstance(env, MultiAgentEnv) else []} "
                "to it, and its agents' spaces differ); give them in its PolicySpec("
                "observation_space=..., action_space=...) or to add_policy(observation_space=..., "
                "action_space=...)"
            )
        out[policy_id] = (obs_space, act_space)
    return out


def _common_spaces(env: MultiAgentEnv) -> Spaces | None:
    """The spaces every agent of ``env`` has, when they all have the same ones (a league
    snapshot no agent is mapped to yet gets them)."""
    agents = list(env.get_agent_ids())
    if not agents:
        return None
    try:
        first = (env.get_observation_space(agents[0]), env.get_action_space(agents[0]))
        same = all(
            env.get_observation_space(a) == first[0] and env.get_action_space(a) == first[1]
            for a in agents[1:]
        )
    except ValueError:
        return None
    return first if same else None


def builder_for(spec: PolicySpec, default: PolicyBuilder) -> PolicyBuilder:
    """The algorithm's builder, with the spec's ``policy_class`` (a TorchPolicy subclass) in
    place of TorchPolicy."""
    policy_class = spec.policy_class
    if policy_class is None or policy_class is TorchPolicy:
        return default
    if isinstance(policy_class, type) and issubclass(policy_class, TorchPolicy):
        return dataclasses.replace(default, policy_type=policy_class)
    raise ValueError(
        f"PolicySpec.policy_class {policy_class!r} is not a runtime.TorchPolicy subclass; "
        "leave it None for the algorithm's policy, or subclass TorchPolicy"
    )


def wants_training(to_train: ToTrain, policy_id: str, batch: Any = None) -> bool:
    if to_train is None:
        return True
    if callable(to_train):
        return bool(to_train(policy_id, batch))
    return policy_id in to_train
