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

from rlconf.field_types import NonNegFloat, NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.inert_keys import INERT_REPLAY_BUFFER_KEYS
from rlconf.section import STRICT
from rlconf.unknown_keys import did_you_mean

ReplayBufferType = Literal[
    "ReplayBuffer",
    "PrioritizedReplayBuffer",
    "MultiAgentReplayBuffer",
    "MultiAgentPrioritizedReplayBuffer",
]

#: RLlib's multi-agent buffer names -> the buffer they are here (one buffer per policy).
BUFFER_TYPE_ALIASES: dict[str, str] = {
    "MultiAgentReplayBuffer": "ReplayBuffer",
    "MultiAgentPrioritizedReplayBuffer": "PrioritizedReplayBuffer",
}


class ReplayBufferConfig(TypedDict, total=False):
    """Keys of ``replay_buffer_config``; the ``prioritized_replay_*`` keys matter only to
    ``PrioritizedReplayBuffer``; RLlib's ``worker_side_prioritization`` is accepted at False
    only, with a note at build (``rlconf.inert_keys``)."""

    type: Annotated[
        ReplayBufferType,
        Field(
            description="ReplayBuffer draws rows uniformly; PrioritizedReplayBuffer in "
            "proportion to priority**alpha, the priority being the row's last |TD error| + eps. "
            "Every policy has a buffer of its own already, so RLlib's MultiAgentReplayBuffer "
            "and MultiAgentPrioritizedReplayBuffer are the same as ReplayBuffer and "
            "PrioritizedReplayBuffer."
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
    min_size_for_sampling: Annotated[
        NonNegInt,
        Field(
            description="No minibatch is replayed from a policy's buffer until it holds at "
            "least this many rows (num_steps_sampled_before_learning_starts must be reached "
            "too)."
        ),
    ]
    worker_side_prioritization: Annotated[
        bool, INERT_REPLAY_BUFFER_KEYS["worker_side_prioritization"]
    ]


REPLAY_BUFFER_DEFAULTS: ReplayBufferConfig = {
    "type": "ReplayBuffer",
    "capacity": 50000,
    "prioritized_replay_alpha": 0.6,
    "prioritized_replay_beta": 0.4,
    "prioritized_replay_eps": 1e-6,
    "min_size_for_sampling": 0,
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
    """``value`` checked and completed from ``REPLAY_BUFFER_DEFAULTS`` (None: the defaults),
    its ``type`` by the name of the buffer here (``MultiAgentReplayBuffer`` -> ``ReplayBuffer``)."""
    settings = {**REPLAY_BUFFER_DEFAULTS, **validate_replay_buffer_config(value or {})}
    settings["type"] = BUFFER_TYPE_ALIASES.get(settings["type"], settings["type"])
    return settings


def replay_buffer_config_schema() -> dict[str, Any]:
    """The JSON Schema of a ``replay_buffer_config`` value (the one a config's schema holds
    under ``$defs/ReplayBufferConfig``)."""
    schema: dict[str, Any] = _adapter().json_schema(mode="validation")
    return schema
