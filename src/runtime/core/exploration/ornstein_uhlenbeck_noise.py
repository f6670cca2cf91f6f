"""``OrnsteinUhlenbeckNoise``: temporally correlated (Ornstein-Uhlenbeck) noise added to a
deterministic actor's actions, after a phase of uniformly random actions (``GaussianNoise``'s
``random_timesteps`` and scale schedule).

Each sub-env has its own noise state ``x`` (one row, as wide as the actions). On each exploring
step past the random phase a sub-env's row moves ``x += ou_theta * (0 - x) + ou_sigma * N(0, 1)``
and its action is ``actions + scale(t) * ou_base_scale * x * (high - low)`` clipped to the
bounds (a dimension with infinite bounds counts ``high - low`` as 1). ``stddev`` is accepted
for the config's sake and not used: the OU process has its own ``ou_sigma``.

A sub-env's row is reset to zero when an episode starts on it (``on_episode_start``, which the
single-agent env runner calls; the multi-agent runner does not, there each policy's rows are
its batch's rows and are never reset). The rows of a batch are the sub-envs in
``env_indices`` (``0..B-1`` when None). The noise state is not checkpointed.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from runtime.core.exploration.gaussian_noise import GaussianNoise


class OrnsteinUhlenbeckNoise(GaussianNoise):
    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        ou_theta: float = 0.15,
        ou_sigma: float = 0.2,
        ou_base_scale: float = 0.1,
        **kwargs: Any,
    ) -> None:
        super().__init__(action_space, **kwargs)
        self.ou_theta = float(ou_theta)
        self.ou_sigma = float(ou_sigma)
        self.ou_base_scale = float(ou_base_scale)
        #: The noise state, one row per sub-env (made, and grown, as rows are acted on).
        #: Replaced rather than written in place: it is updated under ``torch.inference_mode``
        #: and reset outside it.
        self.ou_state: torch.Tensor | None = None
        width = np.asarray(self.box.high, dtype=np.float64) - np.asarray(
            self.box.low, dtype=np.float64
        )
        self._range = np.where(np.isfinite(width), width, 1.0).astype(np.float32)
        self._range_tensors: dict[tuple[torch.device, torch.Size], torch.Tensor] = {}

    def noise(self, actions: torch.Tensor) -> torch.Tensor:
        x = self._advance(actions)
        return self.cur_scale * self.ou_base_scale * x * self._width(actions)

    def _advance(self, actions: torch.Tensor) -> torch.Tensor:
        """One OU step of the noise of the sub-envs whose rows ``actions`` are; their new
        noise state, row for row."""
        state = self.ou_state
        if self.env_indices is None and state is not None and len(state) == len(actions):
            # All the sub-envs, in order (the common step): the whole state at once.
            self.ou_state = self._ou_step(state.to(actions))
            return self.ou_state
        rows = self._rows(actions)
        state = self._state(int(rows.max()) + 1, actions)
        x = self._ou_step(state[rows])
        self.ou_state = state.index_put((rows,), x)
        return x

    def _ou_step(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ou_theta * (0.0 - x) + self.ou_sigma * torch.randn_like(x)

    def on_episode_start(
        self,
        policy: Any = None,
        *,
        environment: Any = None,
        episode: Any = None,
        tf_sess: Any = None,
    ) -> None:
        """Zero the noise of the episode's sub-env (``episode.env_id``; every sub-env's when the
        episode does not say)."""
        if self.ou_state is None:
            return
        env_index = getattr(episode, "env_id", None)
        if env_index is None:
            self.ou_state = torch.zeros_like(self.ou_state)
        elif int(env_index) < len(self.ou_state):
            row = torch.tensor([int(env_index)], device=self.ou_state.device)
            self.ou_state = self.ou_state.index_fill(0, row, 0.0)

    def _rows(self, actions: torch.Tensor) -> torch.Tensor:
        if self.env_indices is None:
            return torch.arange(len(actions), device=actions.device)
        if len(self.env_indices) != len(actions):
            raise ValueError(
                f"env_indices names {len(self.env_indices)} sub-envs for {len(actions)} rows"
            )
        return torch.as_tensor(list(self.env_indices), dtype=torch.long, device=actions.device)

    def _state(self, rows: int, like: torch.Tensor) -> torch.Tensor:
        """The noise state with at least ``rows`` rows, on ``like``'s device."""
        state = self.ou_state
        if state is None:
            state = torch.zeros((rows, *like.shape[1:]), dtype=like.dtype, device=like.device)
        state = state.to(like)
        if len(state) < rows:
            more = torch.zeros((rows - len(state), *state.shape[1:]), dtype=state.dtype)
            state = torch.cat([state, more.to(state.device)])
        return state

    def _width(self, like: torch.Tensor) -> torch.Tensor:
        key = (like.device, like.shape[1:])
        width = self._range_tensors.get(key)
        if width is None:
            width = torch.as_tensor(self._range, device=like.device).reshape(key[1])
            self._range_tensors[key] = width
        return width
