"""What happens to actions on their way to the env and to rewards on their way into a batch:
``action_processor`` (unsquash ``normalize_actions`` or clip ``clip_actions`` to a Box space)
and ``reward_clipper`` (``clip_rewards``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def reward_clipper(setting: Any) -> Any:
    """``clip_rewards``: True -> sign, a number c -> [-c, c], a list -> [low, high], else none;
    the rewards come out as float32."""
    if setting is True:
        return lambda r: np.sign(r).astype(np.float32)
    if setting is None or setting is False:
        return lambda r: r.astype(np.float32)
    low, high = (-float(setting), float(setting)) if not isinstance(setting, list) else setting
    return lambda r: np.clip(r, low, high).astype(np.float32)


def action_processor(space: gym.Space[Any], normalize: bool, clip: bool) -> Any:
    """Policy actions -> env actions: for a bounded Box, ``normalize`` maps [-1, 1] onto the
    bounds, else ``clip`` clips to them; other spaces pass through."""
    if isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
        if normalize and np.all(np.isfinite(low)) and np.all(np.isfinite(high)):
            return lambda a: (low + (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * (high - low)).astype(
                space.dtype
            )
        if clip:
            return lambda a: np.clip(a, low, high).astype(space.dtype)
    return lambda a: a
