"""The limits of the ``sac_halfcheetah`` and ``td3_halfcheetah`` rows of ``real_workloads.py``:
SAC and TD3 written out as single-file loops in the style of CleanRL's
``sac_continuous_action.py`` and ``td3_continuous_action.py`` (plain PyTorch, a NumPy replay
buffer, one env stepped directly), with the rows' settings (``workload_settings.SAC``/``TD3``):
SB3's defaults, so one gradient step of each network per env step (CleanRL's own defaults
update the actor every other step, twice).

- SAC: a tanh-squashed Gaussian actor (log-std squashed into [-5, 2]), twin Q-networks and their
  polyak-averaged targets, the entropy coefficient tuned towards -dim(actions); each step one
  actor pass on the replayed observations serves the entropy and the actor losses, as SB3's.
- TD3: a deterministic tanh actor, twin Q-networks, Gaussian exploration noise, clipped target
  noise, the actor and every target network updated every second step.

Random actions until learning starts, then one gradient step per env step. The window is
observed after every env step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn
from workload_settings import (
    MUJOCO_ENV,
    SAC,
    TD3,
    TD3_EXPLORATION_STD,
    TD3_POLICY_DELAY,
    TD3_TARGET_NOISE,
    TD3_TARGET_NOISE_CLIP,
    ActorCriticSettings,
    Window,
)

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


def mlp(inputs: int, hiddens: tuple[int, ...], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hiddens:
        layers += [nn.Linear(inputs, size), nn.ReLU()]
        inputs = size
    return nn.Sequential(*layers, nn.Linear(inputs, outputs))


class QNetwork(nn.Module):
    def __init__(self, obs_size: int, act_size: int, hiddens: tuple[int, ...]) -> None:
        super().__init__()
        self.net = mlp(obs_size + act_size, hiddens, 1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        q: torch.Tensor = self.net(torch.cat([obs, act], 1))
        return q


class GaussianActor(nn.Module):
    def __init__(self, obs_size: int, act_size: int, hiddens: tuple[int, ...]) -> None:
        super().__init__()
        self.trunk = mlp(obs_size, hiddens[:-1], hiddens[-1])
        self.mean = nn.Linear(hiddens[-1], act_size)
        self.log_std = nn.Linear(hiddens[-1], act_size)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A sampled action in [-1, 1] and its log-probability (HalfCheetah's actions are
        [-1, 1])."""
        hidden = F.relu(self.trunk(obs))
        log_std = torch.tanh(self.log_std(hidden))
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
        normal = torch.distributions.Normal(self.mean(hidden), log_std.exp())
        sample = normal.rsample()
        action = torch.tanh(sample)
        log_prob = normal.log_prob(sample)  # type: ignore[no-untyped-call]
        log_prob = log_prob - torch.log(1 - action.pow(2) + 1e-6)
        return action, log_prob.sum(1, keepdim=True)


class Replay:
    """Preallocated NumPy columns written as a ring, sampled uniformly."""

    def __init__(self, capacity: int, obs_size: int, act_size: int, seed: int) -> None:
        self.capacity, self.size, self.next = capacity, 0, 0
        self.obs = np.zeros((capacity, obs_size), np.float32)
        self.next_obs = np.zeros((capacity, obs_size), np.float32)
        self.actions = np.zeros((capacity, act_size), np.float32)
        self.rewards = np.zeros(capacity, np.float32)
        self.terminated = np.zeros(capacity, np.float32)
        self.rng = np.random.default_rng(seed)

    def add(self, obs: Any, next_obs: Any, action: Any, reward: float, done: bool) -> None:
        i = self.next
        self.obs[i], self.next_obs[i], self.actions[i] = obs, next_obs, action
        self.rewards[i], self.terminated[i] = reward, float(done)
        self.next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch: int) -> tuple[torch.Tensor, ...]:
        idx = self.rng.integers(0, self.size, batch)
        columns: list[npt.NDArray[np.float32]] = [
            self.obs[idx],
            self.actions[idx],
            self.rewards[idx],
            self.next_obs[idx],
            self.terminated[idx],
        ]
        return tuple(torch.as_tensor(c) for c in columns)


def polyak(source: nn.Module, target: nn.Module, tau: float) -> None:
    with torch.no_grad():
        for p, t in zip(source.parameters(), target.parameters(), strict=True):
            t.mul_(1 - tau).add_(p, alpha=tau)


class Loop(ABC):
    """What both loops share: the env, the replay buffer, twin critics and their targets."""

    def __init__(self, s: ActorCriticSettings, seed: int) -> None:
        import gymnasium as gym

        torch.manual_seed(seed)
        self.s = s
        self.env = gym.make(MUJOCO_ENV)
        self.obs_size = int(np.prod(self.env.observation_space.shape or (1,)))
        self.act_size = int(np.prod(self.env.action_space.shape or (1,)))
        self.replay = Replay(s.buffer, self.obs_size, self.act_size, seed)
        self.q1, self.q2, self.q1_target, self.q2_target = (
            QNetwork(self.obs_size, self.act_size, s.hiddens) for _ in range(4)
        )
        self.q1_target.load_state_dict(self.q1.state_dict())
        self.q2_target.load_state_dict(self.q2.state_dict())
        critics = [*self.q1.parameters(), *self.q2.parameters()]
        self.q_optimizer = torch.optim.Adam(critics, lr=s.critic_lr)
        self.seed = seed

    def critic_step(self, obs: torch.Tensor, act: torch.Tensor, target: torch.Tensor) -> None:
        loss = F.mse_loss(self.q1(obs, act).view(-1), target) + F.mse_loss(
            self.q2(obs, act).view(-1), target
        )
        self.q_optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        self.q_optimizer.step()

    def run(self, window: Window) -> dict[str, Any]:
        obs, _ = self.env.reset(seed=self.seed)
        step = updates = 0
        while not window.observe(step, updates):
            if step < self.s.learning_starts:
                action = self.env.action_space.sample()
            else:
                with torch.no_grad():
                    action = self.act(torch.as_tensor(obs, dtype=torch.float32)[None])[0]
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            self.replay.add(obs, next_obs, action, float(reward), bool(terminated))
            obs = self.env.reset()[0] if terminated or truncated else next_obs
            step += 1
            if step > self.s.learning_starts:
                self.update(step)
                updates += 1
        self.env.close()
        return {**window.result(), "threads": torch.get_num_threads()}

    @abstractmethod
    def act(self, obs: torch.Tensor) -> npt.NDArray[np.float32]:
        """The exploring action for one observation (a batch of one)."""

    @abstractmethod
    def update(self, step: int) -> None:
        """The gradient steps after env step ``step``."""


class SACLoop(Loop):
    def __init__(self, seed: int) -> None:
        super().__init__(SAC, seed)
        self.actor = GaussianActor(self.obs_size, self.act_size, SAC.hiddens)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=SAC.actor_lr)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=SAC.actor_lr)
        self.target_entropy = -float(self.act_size)

    def act(self, obs: torch.Tensor) -> npt.NDArray[np.float32]:
        action: npt.NDArray[np.float32] = self.actor(obs)[0].numpy()
        return action

    def update(self, step: int) -> None:
        obs, act, rew, next_obs, terminated = self.replay.sample(SAC.batch)
        pi, log_pi = self.actor(obs)
        alpha_loss = -(self.log_alpha * (log_pi + self.target_entropy).detach()).mean()
        self.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.alpha_optimizer.step()
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_act, next_log_pi = self.actor(next_obs)
            next_q = torch.min(
                self.q1_target(next_obs, next_act), self.q2_target(next_obs, next_act)
            )
            next_q = (next_q - alpha * next_log_pi).view(-1)
            target = rew + (1 - terminated) * SAC.gamma * next_q
        self.critic_step(obs, act, target)
        actor_loss = (alpha * log_pi - torch.min(self.q1(obs, pi), self.q2(obs, pi))).mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        polyak(self.q1, self.q1_target, SAC.tau)
        polyak(self.q2, self.q2_target, SAC.tau)


class TD3Loop(Loop):
    def __init__(self, seed: int) -> None:
        super().__init__(TD3, seed)
        self.actor = nn.Sequential(mlp(self.obs_size, TD3.hiddens, self.act_size), nn.Tanh())
        self.actor_target = nn.Sequential(mlp(self.obs_size, TD3.hiddens, self.act_size), nn.Tanh())
        self.actor_target.load_state_dict(self.actor.state_dict())
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=TD3.actor_lr)
        self.rng = np.random.default_rng(seed)

    def act(self, obs: torch.Tensor) -> npt.NDArray[np.float32]:
        action = self.actor(obs).numpy()
        noise = self.rng.normal(0.0, TD3_EXPLORATION_STD, action.shape)
        clipped: npt.NDArray[np.float32] = np.clip(action + noise, -1.0, 1.0).astype(np.float32)
        return clipped

    def update(self, step: int) -> None:
        obs, act, rew, next_obs, terminated = self.replay.sample(TD3.batch)
        with torch.no_grad():
            noise = (torch.randn_like(act) * TD3_TARGET_NOISE).clamp(
                -TD3_TARGET_NOISE_CLIP, TD3_TARGET_NOISE_CLIP
            )
            next_act = (self.actor_target(next_obs) + noise).clamp(-1.0, 1.0)
            next_q = torch.min(
                self.q1_target(next_obs, next_act), self.q2_target(next_obs, next_act)
            )
            target = rew + (1 - terminated) * TD3.gamma * next_q.view(-1)
        self.critic_step(obs, act, target)
        if step % TD3_POLICY_DELAY == 0:
            actor_loss = -self.q1(obs, self.actor(obs)).mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            polyak(self.actor, self.actor_target, TD3.tau)
            polyak(self.q1, self.q1_target, TD3.tau)
            polyak(self.q2, self.q2_target, TD3.tau)


def run(row: str, seed: int, window: Window) -> dict[str, Any]:
    loop: Loop = SACLoop(seed) if row == "sac_halfcheetah" else TD3Loop(seed)
    return loop.run(window)
