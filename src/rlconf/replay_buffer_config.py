"""``replay_buffer_config``: which replay buffer an off-policy algorithm keeps per policy, and
its settings.

``ReplayBufferConfig`` is the field type (a TypedDict: mypy checks the keys of a literal dict,
pydantic checks each value strictly and refuses unknown keys, and the config's JSON Schema gets
its entry from it); ``REPLAY_BUFFER_DEFAULTS`` is the default value.

A partial dict is valid: the keys it leaves out take their ``REPLAY_BUFFER_DEFAULTS`` value
when the buffer is made (``complete_replay_buffer_config``). Given to a config, it updates the
field's current value (``field_validation.MERGED_FIELDS``).

RLlib 2.x's other keys are each accepted where their value asks for what the buffers here do
anyway (``storage_unit: timesteps``, ``replay_sequence_length: 1``, ...: named in a warning at
build, ``rlconf.inert_keys``) or refused with the reason (``buffer_size``, ``replay_mode:
lockstep``, buffer types that are not available here); ``learning_starts`` is the RLlib 2.x name
of the top-level ``num_steps_sampled_before_learning_starts`` and sets it
(``rlconf.key_aliases.NESTED_KEY_ALIASES``). ``type`` also takes RLlib's classes and their
import paths (``"ray.rllib.utils.replay_buffers.MultiAgentPrioritizedReplayBuffer"``), kept as
the class's name.

RLlib's new API stack buffers (``EpisodeReplayBuffer``, ``PrioritizedEpisodeReplayBuffer`` and
their multi-agent twins) are the buffers here under other names (``BUFFER_TYPE_ALIASES``), and
their ``alpha`` and ``beta`` are ``prioritized_replay_alpha`` and ``prioritized_replay_beta``
(``NEW_STACK_BUFFER_KEYS``, renamed as the dict is given: ``with_buffer_key_names``). RLlib's
episode buffers store whole episodes and cut each replayed row's n-step return out of them as
it is drawn; the buffers here store rows whose n-step returns the rollout workers added
(``n_step``), with the same sampling (uniform, or by priority**alpha with importance weights of
exponent beta).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from rlconf.field_types import NonNegFloat, NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.inert_keys import INERT_REPLAY_BUFFER_KEYS as _INERT
from rlconf.inert_keys import REFUSED_REPLAY_BUFFER_KEYS as _REFUSED
from rlconf.section import STRICT
from rlconf.unknown_keys import did_you_mean

ReplayBufferType = Literal[
    "ReplayBuffer",
    "PrioritizedReplayBuffer",
    "MultiAgentReplayBuffer",
    "MultiAgentPrioritizedReplayBuffer",
    "EpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
]

#: RLlib's multi-agent and new API stack buffer names -> the buffer they are here (one buffer
#: per policy; rows with their n-step returns in place of episodes).
BUFFER_TYPE_ALIASES: dict[str, str] = {
    "MultiAgentReplayBuffer": "ReplayBuffer",
    "MultiAgentPrioritizedReplayBuffer": "PrioritizedReplayBuffer",
    "EpisodeReplayBuffer": "ReplayBuffer",
    "MultiAgentEpisodeReplayBuffer": "ReplayBuffer",
    "PrioritizedEpisodeReplayBuffer": "PrioritizedReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer": "PrioritizedReplayBuffer",
}

#: RLlib's new API stack names of keys of ``replay_buffer_config`` -> the key here.
NEW_STACK_BUFFER_KEYS: dict[str, str] = {
    "alpha": "prioritized_replay_alpha",
    "beta": "prioritized_replay_beta",
}

#: Where the classes ``type`` may be given as (or by import path) live: RLlib's buffers and
#: rlconf's own (``runtime.buffers``, named here only: rlconf never imports the runtime).
_BUFFER_PACKAGES = ("ray.rllib.utils.replay_buffers", "runtime.buffers")

#: RLlib's other buffer types, and why none of them is available.
UNAVAILABLE_BUFFER_TYPES: dict[str, str] = {
    "ReservoirReplayBuffer": "the buffers here keep the newest rows (overwriting the oldest), "
    "not a uniform sample of every row added",
    "MultiAgentMixInReplayBuffer": "no replay-buffer algorithm here mixes fresh rows into its "
    "replayed batches (IMPALA and APPO do, with replay_proportion)",
    "FifoReplayBuffer": "it is a queue of RLlib's, not a replay buffer of the off-policy "
    "algorithms",
    "SimpleReplayBuffer": "it is a test helper of RLlib's; ReplayBuffer draws rows the same way",
}


def _in_buffer_package(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _BUFFER_PACKAGES)


def buffer_type_name(value: Any) -> Any:
    """``type`` as a buffer's name: a class (RLlib's or ``runtime.buffers``') or an import
    path of one as its name; any other value as it is, for the type check. Raises
    ``ValueError`` for a class of another package and for RLlib's types that are not
    available here."""
    if isinstance(value, type):
        if not _in_buffer_package(value.__module__):
            raise ValueError(
                f"{value.__module__}.{value.__qualname__} is not one of RLlib's replay "
                "buffers: buffer classes of your own are not supported (rlconf makes each "
                "policy's buffer itself)"
            )
        value = value.__qualname__
    elif isinstance(value, str) and "." in value:
        module, _, name = value.rpartition(".")
        if not _in_buffer_package(module):
            raise ValueError(
                f"{value!r} is not the path of one of RLlib's replay buffers "
                f"({_BUFFER_PACKAGES[0]}.<class>): buffer classes of your own are not "
                "supported (rlconf makes each policy's buffer itself)"
            )
        value = name
    if isinstance(value, str) and value in UNAVAILABLE_BUFFER_TYPES:
        raise ValueError(f"{value} is not available here: {UNAVAILABLE_BUFFER_TYPES[value]}")
    return value


class ReplayBufferConfig(TypedDict, total=False):
    """Keys of ``replay_buffer_config``; the ``prioritized_replay_*`` keys matter only to
    ``PrioritizedReplayBuffer``; RLlib 2.x's other keys are accepted at the value that asks for
    what rlconf does, with a note at build, or refused (``rlconf.inert_keys``)."""

    type: Annotated[
        ReplayBufferType,
        BeforeValidator(buffer_type_name),
        Field(
            description="ReplayBuffer draws rows uniformly; PrioritizedReplayBuffer in "
            "proportion to priority**alpha, the priority being the row's last |TD error| + eps. "
            "Every policy has a buffer of its own already, so RLlib's MultiAgentReplayBuffer "
            "and MultiAgentPrioritizedReplayBuffer are the same as ReplayBuffer and "
            "PrioritizedReplayBuffer, and its new API stack's EpisodeReplayBuffer and "
            "PrioritizedEpisodeReplayBuffer (and their MultiAgent twins) too (rows with the "
            "n-step returns the workers added, not episodes). RLlib's classes and import paths "
            "('ray.rllib.utils.replay_buffers.MultiAgentReplayBuffer') name the same buffers."
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
    worker_side_prioritization: Annotated[bool, _INERT["worker_side_prioritization"]]
    # RLlib 2.x's MultiAgentReplayBuffer arguments and algorithm switches (rlconf.inert_keys).
    storage_unit: Annotated[str, _INERT["storage_unit"]]
    replay_sequence_length: Annotated[int, _INERT["replay_sequence_length"]]
    replay_burn_in: Annotated[int, _INERT["replay_burn_in"]]
    replay_zero_init_states: Annotated[bool, _INERT["replay_zero_init_states"]]
    replay_sequence_override: Annotated[bool, _INERT["replay_sequence_override"]]
    replay_mode: Annotated[str, _INERT["replay_mode"]]
    num_shards: Annotated[int, _INERT["num_shards"]]
    replay_buffer_shards_colocated_with_driver: Annotated[
        bool, _INERT["replay_buffer_shards_colocated_with_driver"]
    ]
    no_local_replay_buffer: Annotated[bool, _INERT["no_local_replay_buffer"]]
    underlying_buffer_config: Annotated[dict[str, Any] | None, _INERT["underlying_buffer_config"]]
    _enable_replay_buffer_api: Annotated[bool, _INERT["_enable_replay_buffer_api"]]
    prioritized_replay: Annotated[int | bool, _INERT["prioritized_replay"]]
    buffer_size: Annotated[Any, _REFUSED["buffer_size"]]
    replay_batch_size: Annotated[Any, _REFUSED["replay_batch_size"]]
    replay_ratio: Annotated[Any, _REFUSED["replay_ratio"]]
    alpha: Annotated[Any, _REFUSED["alpha"]]
    beta: Annotated[Any, _REFUSED["beta"]]


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


def with_buffer_key_names(value: Any) -> Any:
    """A given ``replay_buffer_config`` dict with RLlib's new API stack keys (``alpha``,
    ``beta``) renamed to the keys here; a key given beside its twin with another value stays,
    to be refused as such. Anything but a dict is returned as it is."""
    if not isinstance(value, Mapping) or not any(k in value for k in NEW_STACK_BUFFER_KEYS):
        return value
    renamed = dict(value)
    for name, key in NEW_STACK_BUFFER_KEYS.items():
        if name in renamed and (key not in renamed or renamed[key] == renamed[name]):
            renamed[key] = renamed.pop(name)
    return renamed


def validate_replay_buffer_config(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` checked (keys, types, ranges); raises ``ValueError`` naming every problem,
    an unknown key with the allowed ones."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"replay_buffer_config must be a dict with keys {', '.join(REPLAY_BUFFER_KEYS)}; "
            f"got a {type(value).__name__}"
        )
    try:
        checked: dict[str, Any] = _adapter().validate_python(with_buffer_key_names(dict(value)))
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
