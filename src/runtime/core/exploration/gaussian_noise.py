"""``GaussianNoise``: Gaussian noise added to a deterministic actor's actions (the reference's
semantics), after a phase of uniformly random actions.

While exploring, at global timestep ``t``:

- ``t < random_timesteps``: uniformly random actions within the bounds of the action space;
- else ``actions + scale(t) * N(0, stddev^2)``, clipped to the bounds, where ``scale(t)`` moves
  linearly from ``initial_scale`` (at ``random_timesteps``) to ``final_scale`` over
  ``scale_timesteps`` and stays there (``initial_scale`` before ``random_timesteps``, where it
  is not used).

Not exploring, the deterministic actions unchanged. The bounds are those of ``action_space``,
the policy's coordinates (``[-1, 1]`` under ``normalize_actions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.errors import ConfigError
from runtime.core.distributions import ActionDistribution
from runtime.core.exploration.exploration import Exploration


def require_box(action_space: gym.Space[Any], strategy: str) -> gym.spaces.Box:
    """``action_space`` as a Box; a ConfigError for any other space (noise is added to
    continuous actions)."""
    if not isinstance(action_space, gym.spaces.Box):
        raise ConfigError.single(
            f"{strategy} (build)",
            "exploration_config.type",
            f"adds noise to continuous actions and needs a Box action space, not {action_space}",
            value=strategy,
            has_value=True,
        )
    return action_space


class GaussianNoise(Exploration):
    """Uniformly random actions for ``random_timesteps``, then the actor's actions plus
    ``scale(t) * N(0, stddev^2)`` noise, clipped to the action space's bounds."""

    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        random_timesteps: int = 1000,
        stddev: float = 0.1,
        initial_scale: float = 1.0,
        final_scale: float = 0.02,
        scale_timesteps: int = 10000,
        **kwargs: Any,
    ) -> None:
        super().__init__(action_space, **kwargs)
        self.box = require_box(action_space, type(self).__name__)
        self.random_timesteps = int(random_timesteps)
        self.stddev = float(stddev)
        self.initial_scale = float(initial_scale)
        self.final_scale = float(final_scale)
        self.scale_timesteps = int(scale_timesteps)
        self.last_timestep = 0
        self.cur_scale = self.scale_at(0)
        #: The bounds as tensors shaped like one row of actions, per device (made on first use).
        self._bounds: dict[tuple[torch.device, torch.Size], tuple[torch.Tensor, torch.Tensor]] = {}

    def scale_at(self, timestep: int) -> float:
        """The scheduled noise scale at global ``timestep``."""
        if timestep < self.random_timesteps:
            return self.initial_scale
        progress = min(1.0, (timestep - self.random_timesteps) / max(1, self.scale_timesteps))
        return self.initial_scale + progress * (self.final_scale - self.initial_scale)

    def on_timestep(self, timestep: int) -> None:
        self.last_timestep = int(timestep)
        self.cur_scale = self.scale_at(self.last_timestep)

    def get_exploration_action(
        self,
        *,
        action_distribution: ActionDistribution,
        timestep: int,
        explore: bool = True,
    ) -> torch.Tensor:
        actions = action_distribution.deterministic_sample()
        if not explore:
            return actions
        self.on_timestep(timestep)
        if self.last_timestep < self.random_timesteps:
            return self.random_actions(len(actions), actions).reshape(actions.shape).to(actions)
        low, high = self.bounds(actions)
        return torch.clamp(actions + self.noise(actions), low, high)

    def noise(self, actions: torch.Tensor) -> torch.Tensor:
        """The noise added to ``actions`` (past the random phase, at ``cur_scale``)."""
        return self.cur_scale * self.stddev * torch.randn_like(actions)

    def bounds(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The action space's low and high, shaped like one row of ``like`` and on its device
        (infinite where the space is unbounded)."""
        key = (like.device, like.shape[1:])
        bounds = self._bounds.get(key)
        if bounds is None:
            low, high = (
                torch.as_tensor(np.asarray(b, dtype=np.float32), device=like.device).reshape(key[1])
                for b in (self.box.low, self.box.high)
            )
            bounds = self._bounds[key] = (low, high)
        return bounds

    def get_state(self) -> dict[str, Any]:
        return {"cur_scale": self.cur_scale, "last_timestep": self.last_timestep}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.last_timestep = int(state.get("last_timestep", self.last_timestep))
        self.cur_scale = float(state.get("cur_scale", self.scale_at(self.last_timestep)))

    def stats(self) -> dict[str, float]:
        return {"cur_scale": self.cur_scale}
