"""An env with just enough of ale-py's ``AtariEnv`` for the DeepMind wrappers, for tests that
need no Atari ROM: 210x160x3 frames, an ALE with lives and screens, action meanings, and no
frame skipping of its own."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

FRAME_SHAPE = (210, 160, 3)


class FakeAle:
    """The part of ``ale_py.ALEInterface`` that gymnasium's ``AtariPreprocessing`` and the
    episodic-life wrapper read."""

    def __init__(self, env: FakeAtariEnv) -> None:
        self.env = env

    def lives(self) -> int:
        return self.env.lives

    def getScreenRGB(self, out: npt.NDArray[np.uint8]) -> None:
        out[...] = self.env.frame_image()

    def getScreenGrayscale(self, out: npt.NDArray[np.uint8]) -> None:
        out[...] = self.env.frame_image()[..., 0]


class FakeAtariEnv(gym.Env[Any, Any]):
    """Every pixel of a frame holds the frame's number (mod 256); each step earns a reward of
    3 and loses a life every ``life_every`` frames (``env_config``); the game is over with the
    last of 3 lives. ``actions`` and ``resets`` record what the wrappers did."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.observation_space = gym.spaces.Box(0, 255, FRAME_SHAPE, np.uint8)
        self.action_space = gym.spaces.Discrete(4)
        self._frameskip = 1
        self.ale = FakeAle(self)
        self.life_every = int((config or {}).get("life_every", 40))
        self.lives = 3
        self.frame = 0
        self.actions: list[int] = []
        self.resets = 0

    def get_action_meanings(self) -> list[str]:
        return ["NOOP", "FIRE", "RIGHT", "LEFT"]

    def frame_image(self) -> npt.NDArray[np.uint8]:
        return np.full(FRAME_SHAPE, self.frame % 256, np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.uint8], dict[str, Any]]:
        super().reset(seed=seed)
        self.lives, self.frame = 3, 0
        self.resets += 1
        return self.frame_image(), {}

    def step(self, action: int) -> tuple[npt.NDArray[np.uint8], float, bool, bool, dict[str, Any]]:
        self.actions.append(int(action))
        self.frame += 1
        if self.frame % self.life_every == 0:
            self.lives -= 1
        return self.frame_image(), 3.0, self.lives == 0, False, {}
