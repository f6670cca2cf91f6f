"""``ParameterNoise``: exploration by noise on the policy network's weights (Plappert et al.
2018, "Parameter Space Noise for Exploration"), as the reference's ``ParameterNoise``.

While exploring, the module acts with Gaussian noise of ``stddev`` added to every weight (layer
norms excepted), the same noise for a whole episode: fresh noise is drawn when an episode
starts (on any sub-env of the worker: its sub-envs act in one batch) and added to the module's
current weights at each pass (weights learned mid-episode carry it too). The module's own
weights are never changed (the noisy pass is a ``torch.func.functional_call``), so learning,
weight syncs and checkpoints only ever see the clean weights. Greedy acting (``explore=False``) uses
the clean weights.

The actions are then chosen by a sub-exploration: for Discrete actions epsilon-greedy with
epsilon 1 for ``random_timesteps`` steps and 0.01 after; for Box actions Ornstein-Uhlenbeck
noise after ``random_timesteps`` uniformly random steps (or the ``sub_exploration`` given).
After each sampled fragment the stddev adapts (x1.01 or /1.01) so that the distance between
the noisy and the clean policies' actions on the fragment's observations stays at the target:
KL(clean || noisy) of the Q-value softmaxes against ``-log(1 - eps + eps / n)``, or the RMS
difference of a deterministic actor's actions against ``ou_sigma * cur_scale``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from runtime.core.exploration.epsilon_greedy import EpsilonGreedy
from runtime.core.exploration.exploration import Exploration
from runtime.core.exploration.gaussian_noise import GaussianNoise
from runtime.core.exploration.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise

Tensors = dict[str, torch.Tensor]

#: The sub-explorations it can delegate the action choice to.
SUB_EXPLORATIONS: dict[str, type[Exploration]] = {
    "EpsilonGreedy": EpsilonGreedy,
    "OrnsteinUhlenbeckNoise": OrnsteinUhlenbeckNoise,
    "GaussianNoise": GaussianNoise,
}


class _Exploring(nn.Module):
    """The module's exploring pass as a plain ``forward`` (what ``functional_call`` calls)."""

    def __init__(self, module: Any) -> None:
        super().__init__()
        self.module = module

    def forward(self, batch: Tensors) -> Tensors:
        out: Tensors = self.module.forward_exploration(batch)
        return out


class ParameterNoise(Exploration):
    def __init__(
        self,
        action_space: gym.Space[Any],
        *,
        initial_stddev: float = 1.0,
        random_timesteps: int = 10000,
        sub_exploration: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(action_space, **kwargs)
        if self.model is None:
            raise ValueError("ParameterNoise needs the policy's module (model=...)")
        self.stddev = float(initial_stddev)
        self.random_timesteps = int(random_timesteps)
        sub = dict(sub_exploration or self._default_sub_exploration())
        kind = sub.pop("type", None)
        if kind not in SUB_EXPLORATIONS:
            raise ValueError(
                f"ParameterNoise(sub_exploration={{'type': {kind!r}, ...}}): allowed types: "
                f"{', '.join(SUB_EXPLORATIONS)}"
            )
        self.sub_exploration = SUB_EXPLORATIONS[kind](action_space, **sub, **kwargs)
        self._exploring = _Exploring(self.model)
        #: The episode's noise on each weight, by its name in ``_exploring``; None: draw anew.
        self._noise: Tensors | None = None

    def _default_sub_exploration(self) -> dict[str, Any]:
        if isinstance(self.action_space, gym.spaces.Discrete):
            # Epsilon 1 through the random phase, then a step down to 0.01.
            return {
                "type": "EpsilonGreedy",
                "initial_epsilon": 1.0,
                "final_epsilon": 0.01,
                "warmup_timesteps": self.random_timesteps + 1,
                "epsilon_timesteps": 1,
            }
        if isinstance(self.action_space, gym.spaces.Box):
            return {"type": "OrnsteinUhlenbeckNoise", "random_timesteps": self.random_timesteps}
        space = type(self.action_space).__name__
        raise ValueError(
            f"ParameterNoise has no default sub-exploration for a {space} action space; give "
            "sub_exploration"
        )

    # ------------------------------------------------------------------ acting

    def forward_module(self, module: Any, batch: Tensors, explore: bool) -> Tensors:
        if not explore:
            clean: Tensors = super().forward_module(module, batch, explore)
            return clean
        out: Tensors = functional_call(self._exploring, self._noisy_weights(), (batch,))
        return out

    def _noisy_weights(self) -> Tensors:
        """The module's current weights plus the episode's noise (drawn when missing): the
        weights a learning step changed mid-episode carry the same noise."""
        if self._noise is None:
            with torch.no_grad():
                self._noise = {
                    name: torch.zeros_like(param)
                    if "LayerNorm" in name or "layer_norm" in name
                    else self.stddev * torch.randn_like(param)
                    for name, param in self._exploring.named_parameters()
                }
        noise = self._noise
        with torch.no_grad():
            return {name: param + noise[name] for name, param in self._exploring.named_parameters()}

    def get_exploration_action(
        self, *, action_distribution: Any, timestep: int, explore: bool = True
    ) -> Any:
        self.sub_exploration.env_indices = self.env_indices
        return self.sub_exploration.get_exploration_action(
            action_distribution=action_distribution, timestep=timestep, explore=explore
        )

    def on_episode_start(
        self,
        policy: Any = None,
        *,
        environment: Any = None,
        episode: Any = None,
        tf_sess: Any = None,
    ) -> None:
        # New noise for the next exploring pass.
        self._noise = None
        self.sub_exploration.on_episode_start(
            policy, environment=environment, episode=episode, tf_sess=tf_sess
        )

    def on_timestep(self, timestep: int) -> None:
        self.sub_exploration.on_timestep(timestep)

    # ------------------------------------------------------------------ adapting the noise

    @torch.no_grad()
    def postprocess_fragment(self, policy: Any, columns: dict[str, Any]) -> None:
        """Adapt ``stddev`` to the distance between the noisy and the clean policy on the
        fragment's observations."""
        obs = np.asarray(columns["obs"])
        obs = obs.reshape(-1, *obs.shape[2:]).astype(np.float32)
        if not len(obs):
            return
        batch = {"obs": torch.as_tensor(obs, device=policy.device)}
        clean = self.model.forward_inference(batch)
        noisy: Tensors = functional_call(self._exploring, self._noisy_weights(), (batch,))
        if isinstance(self.action_space, gym.spaces.Discrete):
            log_clean = torch.log_softmax(clean["action_dist_inputs"], dim=-1)
            log_noisy = torch.log_softmax(noisy["action_dist_inputs"], dim=-1)
            distance = float((log_clean.exp() * (log_clean - log_noisy)).sum(-1).mean())
            epsilon = float(self.sub_exploration.stats().get("cur_epsilon", 0.0))
            n = int(self.action_space.n)
            target = -float(np.log(1.0 - epsilon + epsilon / n))
        else:
            key = "actions" if "actions" in clean else "action_dist_inputs"
            distance = float(torch.sqrt(((clean[key] - noisy[key]) ** 2).mean()))
            scale = float(self.sub_exploration.stats().get("cur_scale", 1.0))
            target = float(getattr(self.sub_exploration, "ou_sigma", 0.2)) * scale
        self.stddev = self.stddev * 1.01 if distance <= target else self.stddev / 1.01

    # ------------------------------------------------------------------ state

    def get_state(self) -> dict[str, Any]:
        return {"stddev": self.stddev, "sub_exploration": self.sub_exploration.get_state()}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.stddev = float(state.get("stddev", self.stddev))
        self.sub_exploration.set_state(state.get("sub_exploration", {}))

    def stats(self) -> dict[str, float]:
        return {"cur_stddev": self.stddev, **self.sub_exploration.stats()}
