"""Building a policy's exploration strategy from ``exploration_config``.

``type`` is the name of a built-in strategy the algorithm allows, or a user class (or its
import path) that subclasses ``runtime.Exploration``. Every type rlconf validates
(``rlconf.exploration_types.BUILTIN_EXPLORATION``) is either in ``BUILTIN`` or in
``NOT_AVAILABLE`` with the reason it is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError
from rlconf.importpath import resolve
from rlconf.registry import get_algorithm_class, list_algorithms
from runtime.core.exploration.epsilon_greedy import EpsilonGreedy
from runtime.core.exploration.exploration import Exploration
from runtime.core.exploration.per_worker_epsilon_greedy import PerWorkerEpsilonGreedy
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
}


@dataclass(frozen=True)
class ExplorationSettings:
    """What a policy's exploration strategy is built from: ``exploration_config`` (``type`` and
    the strategy's arguments) and ``num_workers`` (for per-worker strategies)."""

    exploration_config: Mapping[str, Any]
    num_workers: int


_NEEDS_ACTOR = (
    "perturbs the actions of a deterministic actor and needs a deterministic-actor algorithm "
    "(DDPG/TD3), which is not available yet"
)
#: Types the config accepts that no runtime strategy implements yet, with the reason.
NOT_AVAILABLE: dict[str, str] = {
    "GaussianNoise": _NEEDS_ACTOR,
    "PerWorkerGaussianNoise": _NEEDS_ACTOR,
    "OrnsteinUhlenbeckNoise": _NEEDS_ACTOR,
    "PerWorkerOrnsteinUhlenbeckNoise": _NEEDS_ACTOR,
}


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
    built = settings_of(ExplorationSettings, config, f"{algorithm} (exploration)")
    exploration_config = dict(built.exploration_config or {"type": "StochasticSampling"})
    kind = exploration_config.pop("type", "StochasticSampling")
    cls = exploration_class(kind, allowed, algorithm)
    return cls(
        action_space,
        framework="torch",
        policy_config=config,
        model=model,
        num_workers=int(built.num_workers),
        worker_index=worker_index,
        **exploration_config,
    )
