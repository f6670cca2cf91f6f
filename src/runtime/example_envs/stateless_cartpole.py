"""``StatelessCartPole``: CartPole-v1 without its velocities - the cart's position and the
pole's angle only, so that a policy has to infer the motion from what it saw before."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class StatelessCartPole(gym.ObservationWrapper[Any, Any, Any]):
    """gymnasium's ``CartPole-v1`` (500 steps at most) observed as ``[x, theta]``.
    ``env_config`` takes no keys."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        if config:
            raise ValueError(
                f"StatelessCartPole: unknown env_config keys {sorted(config)}; it takes none"
            )
        super().__init__(gym.make("CartPole-v1"))
        full = self.env.observation_space
        assert isinstance(full, gym.spaces.Box)
        keep = [0, 2]
        self.observation_space = gym.spaces.Box(full.low[keep], full.high[keep], dtype=np.float32)

    def observation(self, observation: Any) -> Any:
        return np.asarray(observation, dtype=np.float32)[[0, 2]]
