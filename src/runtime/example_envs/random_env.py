"""``RandomEnv`` and its large-observation variants: RLlib's test envs of those names, whose
observations and rewards are samples of their spaces (the same sample every step with
``static_samples``), an episode ending with probability ``p_terminated`` each step or at
``max_episode_len``. RLlib's memory-leak tuned files train on them: nothing is learnt, so any
growth of memory is the runtime's own.

``env_config`` keys, as RLlib's: ``action_space`` and ``observation_space`` (default
``Discrete(2)``), ``reward_space`` (a scalar ``Box(-1, 1)``), ``static_samples``,
``p_terminated`` (or its older name ``p_done``; default 0.1), ``max_episode_len`` (0 or None: no
limit), ``check_action_bounds``. Samples come from the env's own generator, seeded by
``reset(seed=...)``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np


class RandomEnv(gym.Env[Any, Any]):
    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        env_config = dict(config or {})
        self.action_space = env_config.get("action_space", gym.spaces.Discrete(2))
        self.observation_space = env_config.get("observation_space", gym.spaces.Discrete(2))
        self.reward_space = env_config.get(
            "reward_space", gym.spaces.Box(-1.0, 1.0, shape=(), dtype=np.float32)
        )
        self.static_samples = bool(env_config.get("static_samples", False))
        chance = env_config.get("p_terminated")
        self.p_terminated = float(env_config.get("p_done", 0.1) if chance is None else chance)
        self.max_episode_len = env_config.get("max_episode_len") or 0
        self.check_action_bounds = bool(env_config.get("check_action_bounds", False))
        self.steps = 0
        self._static: tuple[Any, Any] | None = None

    def _samples(self) -> tuple[Any, Any]:
        if self.static_samples:
            if self._static is None:
                self._static = (self.observation_space.sample(), self.reward_space.sample())
            return copy.deepcopy(self._static)
        return self.observation_space.sample(), self.reward_space.sample()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            for offset, space in enumerate((self.observation_space, self.reward_space)):
                space.seed(seed + offset)
            self.action_space.seed(seed + 2)
        self.steps = 0
        return self._samples()[0], {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.check_action_bounds and not self.action_space.contains(action):
            raise ValueError(f"RandomEnv: action {action!r} is outside {self.action_space}")
        self.steps += 1
        truncated = bool(self.max_episode_len) and self.steps >= self.max_episode_len
        terminated = (
            not truncated
            and self.p_terminated > 0.0
            and bool(self.np_random.random() < self.p_terminated)
        )
        observation, reward = self._samples()
        return observation, float(np.asarray(reward)), terminated, truncated, {}


class RandomLargeObsSpaceEnv(RandomEnv):
    """``RandomEnv`` with 5,000-float observations in ``[-1, 1]``."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(
            {**(config or {}), "observation_space": gym.spaces.Box(-1.0, 1.0, (5000,))}
        )


class RandomLargeObsSpaceEnvContActions(RandomEnv):
    """``RandomLargeObsSpaceEnv`` with five continuous actions in ``[-1, 1]``."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(
            {
                **(config or {}),
                "observation_space": gym.spaces.Box(-1.0, 1.0, (5000,)),
                "action_space": gym.spaces.Box(-1.0, 1.0, (5,)),
            }
        )
