"""``make_replay_buffer``: a policy's replay buffer from ``replay_buffer_config``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlconf.replay_buffer_config import complete_replay_buffer_config
from runtime.buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from runtime.buffers.replay_buffer import ReplayBuffer


def make_replay_buffer(
    replay_buffer_config: Mapping[str, Any] | None, seed: int | None = None
) -> ReplayBuffer:
    """The buffer ``replay_buffer_config`` names (``{"type": "ReplayBuffer" |
    "PrioritizedReplayBuffer", "capacity": ..., "prioritized_replay_alpha" / "_beta" /
    "_eps": ...}``); keys left out take ``rlconf.replay_buffer_config.REPLAY_BUFFER_DEFAULTS``.
    The dict is checked again here because configs that declare the field as a plain dict
    (user algorithms) reach the runtime unchecked."""
    settings = complete_replay_buffer_config(replay_buffer_config)
    capacity = int(settings["capacity"])
    if settings["type"] == "PrioritizedReplayBuffer":
        return PrioritizedReplayBuffer(
            capacity,
            alpha=float(settings["prioritized_replay_alpha"]),
            beta=float(settings["prioritized_replay_beta"]),
            eps=float(settings["prioritized_replay_eps"]),
            seed=seed,
        )
    return ReplayBuffer(capacity, seed=seed)
