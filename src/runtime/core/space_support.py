"""The observation and action spaces an algorithm declares it supports, checked against each
policy's spaces where the policy is made (on the worker that has the env: nothing is built in
the driver just to check)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError

#: Space classes; empty: any space.
SpaceTypes = tuple[type[gym.Space[Any]], ...]


def check_spaces(
    algorithm: str,
    observation_space: gym.Space[Any],
    action_space: gym.Space[Any],
    observation_spaces: SpaceTypes,
    action_spaces: SpaceTypes,
) -> None:
    """A ``ConfigError`` naming the algorithm, the space and what it supports when a policy's
    space is not one of the declared kinds."""
    for kind, space, allowed in (
        ("action", action_space, action_spaces),
        ("observation", observation_space, observation_spaces),
    ):
        if allowed and not isinstance(space, allowed):
            names = " or ".join(cls.__name__ for cls in allowed)
            raise ConfigError.single(
                f"{algorithm} (build)",
                f"{kind}_space",
                f"{algorithm} needs a {names} {kind} space",
                value=type(space).__name__,
                has_value=True,
                allowed=names,
            )
