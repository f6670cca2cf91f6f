"""Making an env from its class. RLlib's contract is that an env class takes the
``env_config`` (an ``EnvContext``); a class whose constructor takes no argument is made without
one, as its author would call it, and then refuses a non-empty ``env_config``, which would
never reach it."""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping
from typing import Any

from rlconf.errors import ConfigError

#: The parameter kinds that can receive the env_config positionally.
_POSITIONAL = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.VAR_POSITIONAL,
)


def takes_env_config(env_class: type[Any]) -> bool:
    """False when ``env_class``'s constructor takes no positional argument (``__init__(self)``,
    or none of its own); True otherwise, and when its signature can't be read."""
    try:
        parameters = inspect.signature(env_class).parameters.values()
    except (TypeError, ValueError):
        # No signature to read (a class implemented in C): RLlib's contract holds.
        return True
    return any(p.kind in _POSITIONAL for p in parameters)


def refuse_unread_env_config(
    env_class: type[Any], env_config: Mapping[str, Any], where: str, read: Collection[str] = ()
) -> None:
    """A ``ConfigError`` naming ``env_class`` when ``env_config`` holds keys (other than those
    ``read`` elsewhere) that its argument-less constructor would never see."""
    unread = {key: value for key, value in env_config.items() if key not in read}
    if unread:
        raise ConfigError.single(
            where,
            "env_config",
            f"{env_class.__module__}.{env_class.__qualname__}'s constructor takes no "
            "env_config, so these keys would never reach the env",
            value=unread,
            has_value=True,
            allowed=(f"only {', '.join(map(repr, read))}" if read else "an empty env_config")
            + ", or a constructor taking it: def __init__(self, env_config)",
        )


class EnvClassCreator:
    """The creator of an env class: ``env_class(ctx)``, or ``env_class()`` for a class whose
    constructor takes no argument (refusing a non-empty ``env_config``)."""

    def __init__(self, env_class: type[Any]) -> None:
        self.env_class = env_class
        self.takes_env_config = takes_env_config(env_class)

    def __call__(self, ctx: Mapping[str, Any]) -> Any:
        if self.takes_env_config:
            return self.env_class(ctx)
        refuse_unread_env_config(self.env_class, ctx, f"environment({self.env_class.__name__})")
        return self.env_class()

    def __repr__(self) -> str:
        return f"EnvClassCreator({self.env_class.__qualname__})"
