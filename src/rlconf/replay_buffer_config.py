"""``replay_buffer_config``: which replay buffer an off-policy algorithm keeps per policy, and
its settings.

``ReplayBufferConfig`` is the field type (a TypedDict: mypy checks the keys of a literal dict,
pydantic checks each value strictly and refuses unknown keys, and the config's JSON Schema gets
its entry from it); ``REPLAY_BUFFER_DEFAULTS`` is the default value.

A partial dict is valid: the keys it leaves out take their ``REPLAY_BUFFER_DEFAULTS`` value
when the buffer is made (``complete_replay_buffer_config``). It replaces the field's current
value as a whole, as any dict field does unless ``field_validation.MERGED_FIELDS`` names it
(``model``, ``exploration_config``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from rlconf.field_types import NonNegFloat, PosFloat, PosInt, UnitFloat
from rlconf.section import STRICT
from rlconf.unknown_keys import did_you_mean

ReplayBufferType = Literal["ReplayBuffer", "PrioritizedReplayBuffer"]


class ReplayBufferConfig(TypedDict, total=False):
    """Keys of ``replay_buffer_config``; the ``prioritized_replay_*`` keys matter only to
    ``PrioritizedReplayBuffer``."""

    type: Annotated[
        ReplayBufferType,
        Field(
            description="ReplayBuffer draws rows uniformly; PrioritizedReplayBuffer in "
            "proportion to priority**alpha, the priority being the row's last |TD error| + eps."
        ),
    ]
    capacity: Annotated[
        PosInt, Field(description="Rows kept per policy; the oldest are overwritten first.")
    ]
    prioritized_replay_alpha: Annotated[
        NonNegFloat, Field(description="How much priorities count: 0 draws uniformly.")
    ]
    prioritized_replay_beta: Annotated[
        UnitFloat,
        Field(description="Importance-weight exponent: 1 fully corrects for the prioritized draw."),
    ]
    prioritized_replay_eps: Annotated[
        PosFloat, Field(description="Added to |TD error| so that no row's priority is 0.")
    ]


REPLAY_BUFFER_DEFAULTS: ReplayBufferConfig = {
    "type": "ReplayBuffer",
    "capacity": 50000,
    "prioritized_replay_alpha": 0.6,
    "prioritized_replay_beta": 0.4,
    "prioritized_replay_eps": 1e-6,
}

REPLAY_BUFFER_KEYS: tuple[str, ...] = tuple(ReplayBufferConfig.__annotations__)


@functools.cache
def _adapter() -> TypeAdapter[Any]:
    # The same strictness the config sections give every TypedDict they reach: no int for a
    # bool, no float for an int, no unknown key.
    ReplayBufferConfig.__pydantic_config__ = STRICT  # type: ignore[attr-defined]
    return TypeAdapter(ReplayBufferConfig)


def validate_replay_buffer_config(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` checked (keys, types, ranges); raises ``ValueError`` naming every problem,
    an unknown key with the allowed ones."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"replay_buffer_config must be a dict with keys {', '.join(REPLAY_BUFFER_KEYS)}; "
            f"got a {type(value).__name__}"
        )
    try:
        checked: dict[str, Any] = _adapter().validate_python(dict(value))
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(map(str, error["loc"]))
            if error["type"] == "extra_forbidden":
                hint = did_you_mean(key, REPLAY_BUFFER_KEYS)
                problems.append(
                    f"{key!r} is not a key of replay_buffer_config"
                    + (f" ({hint})" if hint else "")
                    + f"; its keys: {', '.join(REPLAY_BUFFER_KEYS)}"
                )
            else:
                problems.append(f"{key}={error['input']!r}: {error['msg']}")
        raise ValueError("replay_buffer_config: " + "; ".join(problems)) from None
    return checked


def complete_replay_buffer_config(value: Mapping[str, Any] | None) -> dict[str, Any]:
    """``value`` checked and completed from ``REPLAY_BUFFER_DEFAULTS`` (None: the defaults)."""
    return {**REPLAY_BUFFER_DEFAULTS, **validate_replay_buffer_config(value or {})}


def replay_buffer_config_schema() -> dict[str, Any]:
    """The JSON Schema of a ``replay_buffer_config`` value (the one a config's schema holds
    under ``$defs/ReplayBufferConfig``)."""
    schema: dict[str, Any] = _adapter().json_schema(mode="validation")
    return schema
