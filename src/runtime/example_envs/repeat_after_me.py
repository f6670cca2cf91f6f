"""``RepeatAfterMeEnv``: each step shows a random token (0 or 1); the reward is +1 for acting
the token shown ``repeat_delay`` steps before, -1 otherwise."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class RepeatAfterMeEnv(gym.Env[Any, Any]):
    """``env_config``: ``repeat_delay`` (default 1; 0 repeats the token just shown),
    ``episode_len`` (default 100 steps), ``continuous`` (tokens and actions in ``Box(-1, 1,
    (2,))``; the reward is then +1 for the same sign). The reference's tuned file nests them
    under a ``config`` key: read from there too."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        options = dict(config or {})
        options.update(options.pop("config", None) or {})
        unknown = set(options) - {"repeat_delay", "episode_len", "continuous"}
        if unknown:
            raise ValueError(
                f"RepeatAfterMeEnv: unknown env_config keys {sorted(unknown)}; allowed: "
                "repeat_delay, episode_len, continuous"
            )
        self.delay = int(options.get("repeat_delay", 1))
        self.episode_len = int(options.get("episode_len", 100))
        if self.delay < 0 or self.episode_len < 1:
            raise ValueError(
                f"RepeatAfterMeEnv: repeat_delay={self.delay}, episode_len={self.episode_len}; "
                "allowed: repeat_delay >= 0, episode_len >= 1"
            )
        self.continuous = bool(options.get("continuous", False))
        space: gym.Space[Any] = (
            gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
            if self.continuous
            else gym.spaces.Discrete(2)
        )
        self.observation_space = space
        self.action_space = space
        self.history: list[Any] = []
        self.steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.history = [self._zero()] * self.delay
        self.steps = 0
        return self._next_token(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        target = self.history[-(1 + self.delay)]
        if self.continuous:
            same = bool(np.all(np.sign(np.asarray(action)) == np.sign(target)))
        else:
            same = int(action) == int(target)
        self.steps += 1
        truncated = self.steps >= self.episode_len
        return self._next_token(), 1.0 if same else -1.0, False, truncated, {}

    def _zero(self) -> Any:
        return np.zeros(2, np.float32) if self.continuous else 0

    def _next_token(self) -> Any:
        if self.continuous:
            token: Any = self.np_random.uniform(-1.0, 1.0, 2).astype(np.float32)
        else:
            token = int(self.np_random.integers(2))
        self.history.append(token)
        return token
