"""Building a policy's exploration strategy from ``exploration_config``.

``type`` is the name of a built-in strategy the algorithm allows, or a user class (or its
import path) that subclasses ``runtime.Exploration``. Every type rlconf validates
(``rlconf.exploration_types.BUILTIN_EXPLORATION``) is either in ``BUILTIN`` or in
``NOT_AVAILABLE`` with the reason it is refused (none is today).

The strategy acts in the policy's coordinates: ``build_exploration`` gives it the action space
the policy's actions live in (``policy_action_space``), ``Box(-1, 1)`` under
``normalize_actions`` for a bounded Box, whose random actions the env runner then maps onto the
env's bounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf.algorithms.dqn import DQNConfig
from rlconf.errors import ConfigError
from rlconf.importpath import resolve
from rlconf.registry import get_algorithm_class, list_algorithms
from runtime.core.exploration.epsilon_greedy import EpsilonGreedy, epsilon_points
from runtime.core.exploration.exploration import Exploration
from runtime.core.exploration.gaussian_noise import GaussianNoise
from runtime.core.exploration.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise
from runtime.core.exploration.parameter_noise import ParameterNoise
from runtime.core.exploration.per_worker_epsilon_greedy import PerWorkerEpsilonGreedy
from runtime.core.exploration.per_worker_noise import (
    PerWorkerGaussianNoise,
    PerWorkerOrnsteinUhlenbeckNoise,
)
from runtime.core.exploration.random_actions import Random
from runtime.core.exploration.soft_q import SoftQ
from runtime.core.exploration.stochastic_sampling import StochasticSampling
from runtime.core.settings import settings_of

BUILTIN: dict[str, type[Exploration]] = {
    "StochasticSampling": StochasticSampling,
    "Random": Random,
    "EpsilonGreedy": EpsilonGreedy,
    "PerWorkerEpsilonGreedy": PerWorkerEpsilonGreedy,
    "SoftQ": SoftQ,
    "GaussianNoise": GaussianNoise,
    "PerWorkerGaussianNoise": PerWorkerGaussianNoise,
    "OrnsteinUhlenbeckNoise": OrnsteinUhlenbeckNoise,
    "PerWorkerOrnsteinUhlenbeckNoise": PerWorkerOrnsteinUhlenbeckNoise,
    "ParameterNoise": ParameterNoise,
}


@dataclass(frozen=True)
class ExplorationSettings:
    """What a policy's exploration strategy is built from: ``exploration_config`` (``type`` and
    the strategy's arguments), ``num_workers`` (for per-worker strategies), ``normalize_actions``
    (the coordinates of the policy's actions) and ``seed`` (of the random actions in them)."""

    exploration_config: Mapping[str, Any]
    num_workers: int
    normalize_actions: bool
    seed: int | None


@dataclass(frozen=True)
class EpsilonSettings:
    """DQN's ``epsilon``: the EpsilonGreedy schedule in place of the strategy's own (None: its
    own). Read from a ``DQNConfig`` only: IMPALA's ``epsilon`` is RMSProp's."""

    epsilon: Any


#: Types the config accepts that no runtime strategy implements yet, with the reason (none).
NOT_AVAILABLE: dict[str, str] = {}


def policy_action_space(
    action_space: gym.Space[Any], normalize_actions: bool, seed: int | None
) -> gym.Space[Any]:
    """The space of the policy's actions: with ``normalize_actions`` a bounded Box becomes
    ``Box(-1, 1)`` of its shape (the env runner maps [-1, 1] onto the bounds), seeded with
    ``seed`` (its random actions then repeat from run to run); any other space is
    ``action_space`` itself (seeded by the env runner, as the env's)."""
    if (
        normalize_actions
        and isinstance(action_space, gym.spaces.Box)
        and np.all(np.isfinite(action_space.low))
        and np.all(np.isfinite(action_space.high))
    ):
        unit = gym.spaces.Box(-1.0, 1.0, action_space.shape, np.float32)
        if seed is not None:
            unit.seed(seed)
        return unit
    return action_space


def algorithms_allowing(kind: str) -> list[str]:
    """The registered algorithms whose ``explorations`` include ``kind``."""
    names = []
    for name in list_algorithms():
        try:
            algorithm_class = get_algorithm_class(name)
        except Exception:  # a user entry that does not import must not hide the real error
            continue
        if kind in getattr(algorithm_class, "explorations", ()):
            names.append(name)
    return names


def exploration_class(kind: Any, allowed: Sequence[str], algorithm: str) -> type[Exploration]:
    """The class ``exploration_config["type"]`` names; a ConfigError naming what ``algorithm``
    allows when it is not one of ``allowed`` or a subclass of ``Exploration``."""
    where = f"{algorithm} (build)"
    accepted = ", ".join(a for a in allowed if a in BUILTIN)
    accepted = (accepted + ", or " if accepted else "") + "a subclass of runtime.Exploration"
    if isinstance(kind, str) and kind in NOT_AVAILABLE:
        raise ConfigError.single(
            where,
            "exploration_config.type",
            f"{kind} {NOT_AVAILABLE[kind]}",
            value=kind,
            has_value=True,
            allowed=accepted,
        )
    if isinstance(kind, str) and kind in allowed and kind in BUILTIN:
        return BUILTIN[kind]
    user = kind
    if isinstance(kind, str) and ("." in kind or ":" in kind):
        try:
            user = resolve(kind)
        except ValueError as exc:
            raise ConfigError.single(
                where,
                "exploration_config.type",
                str(exc),
                value=kind,
                has_value=True,
                allowed=accepted,
            ) from None
    if isinstance(user, type) and issubclass(user, Exploration):
        return user
    problem = f"is not available to {algorithm}"
    if isinstance(kind, str) and kind in BUILTIN:
        users = algorithms_allowing(kind)
        problem += (
            f" ({kind} is a strategy of {', '.join(users)})"
            if users
            else f" (no registered algorithm uses {kind})"
        )
    raise ConfigError.single(
        where,
        "exploration_config.type",
        problem,
        value=kind,
        has_value=True,
        allowed=accepted,
    )


def check_exploration(config: Any, allowed: Sequence[str], algorithm: str) -> None:
    """Refuse an exploration type ``algorithm`` cannot use, before any worker is made."""
    built = settings_of(ExplorationSettings, config, f"{algorithm} (exploration)")
    exploration_config = dict(built.exploration_config or {})
    exploration_class(exploration_config.get("type", "StochasticSampling"), allowed, algorithm)


def build_exploration(
    config: Any,
    action_space: gym.Space[Any],
    *,
    allowed: Sequence[str],
    algorithm: str,
    model: Any = None,
    worker_index: int = 0,
) -> Exploration:
    """The strategy ``exploration_config`` names, over the action space in the policy's
    coordinates (``policy_action_space``; a new space is seeded from the config's ``seed`` and
    ``worker_index``, as the env runner seeds a worker's first sub-env)."""
    built = settings_of(ExplorationSettings, config, f"{algorithm} (exploration)")
    exploration_config = dict(built.exploration_config or {"type": "StochasticSampling"})
    kind = exploration_config.pop("type", "StochasticSampling")
    cls = exploration_class(kind, allowed, algorithm)
    seed = None if built.seed is None else int(built.seed) + 1000 * worker_index
    if isinstance(config, DQNConfig):
        epsilon = settings_of(EpsilonSettings, config, f"{algorithm} (exploration)").epsilon
        if epsilon is not None:
            # The config checked that the strategy is EpsilonGreedy (DQNConfig's
            # epsilon_issues).
            exploration_config["epsilon_schedule"] = epsilon_points(epsilon)
    return cls(
        policy_action_space(action_space, bool(built.normalize_actions), seed),
        framework="torch",
        policy_config=config,
        model=model,
        num_workers=int(built.num_workers),
        worker_index=worker_index,
        **exploration_config,
    )
