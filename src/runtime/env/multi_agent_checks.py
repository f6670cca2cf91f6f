"""Checks of what a ``MultiAgentEnv``'s ``reset()`` and ``step()`` return.

Unless the checks are disabled, the sampler calls :func:`check_reset` on every reset, and
:func:`check_step` and :func:`check_observations` on the output of a sub-env's first
``multi_agent_runner.FULLY_CHECKED_STEPS`` steps (later steps are only tested for what the
sampler relies on). The good path is kept short: a few ``type`` tests, two ``in`` tests, a
type test per reward and, with spaces, one ``space.contains`` per observation (for a Box, one
vectorised test of the batch). Only a failure builds a message; each one names the env, the
agent id (its repr), the key of the returned dict (``"obs"``, ``"rewards"``,
``"terminateds"``, ``"truncateds"``), the bad value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from numbers import Real
from typing import Any, NoReturn, TypeAlias

import gymnasium as gym
import numpy as np

__all__ = ["MultiAgentEnvError", "check_observations", "check_reset", "check_step"]

#: Returns the observation space of an agent id, or None for "do not check this agent".
SpaceOf: TypeAlias = Callable[[Any], "gym.Space[Any] | None"]

#: What ``terminateds`` and ``truncateds`` must hold besides the agents.
ALL = "__all__"

_STEP_PARTS = ("obs", "rewards", "terminateds", "truncateds", "infos")
_RESET_PARTS = ("obs", "infos")
_MAX_REPR = 120
_MAX_KEYS = 10
#: Reward types accepted without the slower ``isinstance`` test.
_FAST_REWARD_TYPES = frozenset({float, int, np.float32, np.float64, np.int32, np.int64})


class MultiAgentEnvError(ValueError):
    """A multi-agent env broke the ``MultiAgentEnv`` contract (what ``reset()`` or ``step()``
    returned, an agent without a space, an action for an agent that cannot act)."""


def check_reset(
    env_label: str, output: Any, space_of: SpaceOf | None
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """Check ``reset()``'s ``output`` and return it as ``(obs, infos)``.

    ``output`` must be a 2-tuple of dicts keyed by agent id; with ``space_of``, each
    observation must be in ``space_of(agent_id)`` (agents whose space is None are not
    checked). Raises :class:`MultiAgentEnvError`.
    """
    if not isinstance(output, tuple) or len(output) != 2:
        raise MultiAgentEnvError(
            f"env {env_label!r}: reset() returned {_describe_container(output)}; it must return "
            "a tuple of 2 dicts keyed by agent id: (obs, infos)"
        )
    obs, infos = output
    if type(obs) is not dict or type(infos) is not dict:
        _raise_not_dicts(env_label, "reset()", output, _RESET_PARTS)
    if space_of is not None:
        _check_obs(env_label, "reset()", obs, space_of)
    return obs, infos


def check_step(
    env_label: str, output: Any, space_of: SpaceOf | None
) -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
    """Check ``step()``'s ``output`` and return it as ``(obs, rewards, terminateds,
    truncateds, infos)``.

    ``output`` must be a 5-tuple of dicts keyed by agent id; ``terminateds`` and
    ``truncateds`` must each hold the key ``"__all__"``; rewards must be real numbers (for any
    agent: one that has not acted yet may be rewarded too); with ``space_of``, each
    observation must be in ``space_of(agent_id)`` (agents whose space is None are not
    checked). Raises :class:`MultiAgentEnvError`.
    """
    if not isinstance(output, tuple) or len(output) != 5:
        raise MultiAgentEnvError(
            f"env {env_label!r}: step() returned {_describe_container(output)}; it must return "
            "a tuple of 5 dicts keyed by agent id: "
            "(obs, rewards, terminateds, truncateds, infos)"
        )
    obs, rewards, terminateds, truncateds, infos = output
    if (
        type(obs) is not dict
        or type(rewards) is not dict
        or type(terminateds) is not dict
        or type(truncateds) is not dict
        or type(infos) is not dict
    ):
        # A dict subclass (defaultdict, OrderedDict) is fine: only the slow path looks.
        _raise_not_dicts(env_label, "step()", output, _STEP_PARTS)
    if ALL not in terminateds:
        _raise_missing_all(env_label, "terminateds", terminateds)
    if ALL not in truncateds:
        _raise_missing_all(env_label, "truncateds", truncateds)
    if rewards:
        fast = _FAST_REWARD_TYPES
        for agent, reward in rewards.items():
            if type(reward) not in fast and not _is_real(reward):
                raise MultiAgentEnvError(
                    f"env {env_label!r}: step() returned rewards[{agent!r}] = "
                    f"{_short_repr(reward)} ({type(reward).__name__}); a reward must be a real "
                    "number (int, float or a numpy number; not bool)"
                )
    if space_of is not None and obs:
        _check_obs(env_label, "step()", obs, space_of)
    return obs, rewards, terminateds, truncateds, infos


def _check_obs(env_label: str, call: str, obs: dict[Any, Any], space_of: SpaceOf) -> None:
    for agent, ob in obs.items():
        space = space_of(agent)
        if space is None:
            continue
        try:
            inside = space.contains(ob)
        except Exception as exc:  # a space may raise on a value of the wrong kind
            _raise_obs_outside(env_label, call, agent, ob, space, f"{type(exc).__name__}: {exc}")
        if not inside:
            _raise_obs_outside(env_label, call, agent, ob, space, None)


def check_observations(
    space: gym.Space[Any],
    observations: list[Any],
    owners: Callable[[int], tuple[str, str, Any]],
) -> Any:
    """Check a batch of observations of one space at once (the sampler's path: one policy's
    observations of one step); ``owners(k)`` names the env label, the call and the agent of
    observation ``k`` for the message. A Box is checked with one vectorised shape and bounds
    test; other spaces observation by observation.

    Returns the observations: for a Box that passed the vectorised test, stacked into the one
    array it tested (so the caller need not stack them again), else as given."""
    if isinstance(space, gym.spaces.Box):
        try:
            batch = np.asarray(observations)
        except ValueError:
            batch = None
        if (
            batch is not None
            and batch.shape[1:] == space.shape
            and np.can_cast(batch.dtype, space.dtype)
            # (ndarray.all rather than np.all: this runs every step)
            and bool((batch >= space.low).all())
            and bool((batch <= space.high).all())
        ):
            return batch
    for k, ob in enumerate(observations):
        try:
            inside = space.contains(ob)
        except Exception as exc:  # a space may raise on a value of the wrong kind
            label, call, agent = owners(k)
            _raise_obs_outside(label, call, agent, ob, space, f"{type(exc).__name__}: {exc}")
        if not inside:
            label, call, agent = owners(k)
            _raise_obs_outside(label, call, agent, ob, space, None)
    return observations


# --- the failure paths -----------------------------------------------------------------------


def _raise_obs_outside(
    env_label: str, call: str, agent: Any, ob: Any, space: gym.Space[Any], error: str | None
) -> NoReturn:
    why = f" ({space!r}.contains raised {error})" if error else ""
    hint = ""
    if isinstance(space, gym.spaces.Box) and isinstance(ob, np.ndarray):
        if ob.shape != space.shape:
            hint = f"; the shape is {ob.shape}, the space's is {space.shape}"
        elif ob.dtype != space.dtype:
            hint = (
                f"; the dtype is {ob.dtype}, the space's is {space.dtype} (cast it, e.g. "
                f"obs.astype(np.{space.dtype}))"
            )
    raise MultiAgentEnvError(
        f"env {env_label!r}: {call} returned obs[{agent!r}] = {_short_repr(ob)}, which is "
        f"outside the agent's observation space{why}; allowed: values in {space!r}{hint}"
    )


def _raise_missing_all(env_label: str, key: str, flags: dict[Any, Any]) -> NoReturn:
    raise MultiAgentEnvError(
        f"env {env_label!r}: step() returned {key} without the key {ALL!r} "
        f"(got keys {_keys(flags)}); terminateds and truncateds must each hold {ALL!r}: "
        "whether the episode ended for every agent"
    )


def _raise_not_dicts(
    env_label: str, call: str, output: tuple[Any, ...], parts: Iterable[str]
) -> None:
    for name, part in zip(parts, output, strict=True):
        if not isinstance(part, dict):
            raise MultiAgentEnvError(
                f"env {env_label!r}: {call} returned {name} = {_short_repr(part)} "
                f"({type(part).__name__}); {name} must be a dict keyed by agent id"
            )


def _describe_container(output: Any) -> str:
    if isinstance(output, tuple | list):
        kinds = ", ".join(type(part).__name__ for part in output[:_MAX_KEYS])
        more = ", ..." if len(output) > _MAX_KEYS else ""
        return f"a {type(output).__name__} of {len(output)} ({kinds}{more})"
    return f"{_short_repr(output)} ({type(output).__name__})"


def _is_real(value: Any) -> bool:
    return isinstance(value, Real | np.number) and not isinstance(value, bool | np.bool_)


def _keys(keys: Iterable[Any]) -> str:
    listed = list(keys)
    head = ", ".join(repr(key) for key in listed[:_MAX_KEYS])
    more = f", ... ({len(listed)} in all)" if len(listed) > _MAX_KEYS else ""
    return f"[{head}{more}]"


def _short_repr(value: Any) -> str:
    """A repr of at most ~120 characters; arrays show a few items, their shape and dtype."""
    if isinstance(value, np.ndarray):
        with np.printoptions(threshold=6, edgeitems=2, precision=4):
            body = np.array2string(value, separator=", ")
        text = f"array({body}, shape={value.shape}, dtype={value.dtype})"
    else:
        try:
            text = repr(value)
        except Exception as exc:  # a broken __repr__ must not hide the real error
            text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    if len(text) > _MAX_REPR:
        text = text[: _MAX_REPR - 5] + " ...>"
    return text
