"""``TaskSettableEnv``: an env whose task (difficulty, level, ...) can be read and set, for
curriculum learning through ``env_task_fn``."""

from __future__ import annotations

import abc
from typing import Any

import gymnasium as gym


class TaskSettableEnv(gym.Env[Any, Any], abc.ABC):
    @abc.abstractmethod
    def get_task(self) -> Any:
        """The task the env is set to now."""

    @abc.abstractmethod
    def set_task(self, task: Any) -> None:
        """Switch the env to ``task``; takes effect from the next reset at the latest."""
