"""Building a policy's exploration strategy from ``exploration_config``.

``type`` is the name of a built-in strategy the algorithm allows, or a user class (or its
import path) that subclasses ``runtime.Exploration``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError
from rlconf.importpath import resolve
from runtime.core.exploration.exploration import Exploration
from runtime.core.exploration.random_actions import Random
from runtime.core.exploration.stochastic_sampling import StochasticSampling

BUILTIN: dict[str, type[Exploration]] = {
    "StochasticSampling": StochasticSampling,
    "Random": Random,
}


def exploration_class(kind: Any, allowed: Sequence[str], algorithm: str) -> type[Exploration]:
    """The class ``exploration_config["type"]`` names; a ConfigError naming what ``algorithm``
    allows when it is not one of ``allowed`` or a subclass of ``Exploration``."""
    if isinstance(kind, str) and kind in allowed and kind in BUILTIN:
        return BUILTIN[kind]
    where = f"{algorithm} (build)"
    accepted = ", ".join(allowed) + ", or a subclass of runtime.Exploration"
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
    raise ConfigError.single(
        where,
        "exploration_config.type",
        f"is not available to {algorithm}",
        value=kind,
        has_value=True,
        allowed=accepted,
    )


def check_exploration(config: Any, allowed: Sequence[str], algorithm: str) -> None:
    """Refuse an exploration type ``algorithm`` cannot use, before any worker is made."""
    settings = dict(config.get("exploration_config") or {})
    exploration_class(settings.get("type", "StochasticSampling"), allowed, algorithm)


def build_exploration(
    config: Any,
    action_space: gym.Space[Any],
    *,
    allowed: Sequence[str],
    algorithm: str,
    model: Any = None,
    worker_index: int = 0,
) -> Exploration:
    settings = dict(config.get("exploration_config") or {"type": "StochasticSampling"})
    kind = settings.pop("type", "StochasticSampling")
    cls = exploration_class(kind, allowed, algorithm)
    return cls(
        action_space,
        framework="torch",
        policy_config=config,
        model=model,
        num_workers=int(config.get("num_workers", 0) or 0),
        worker_index=worker_index,
        **settings,
    )
