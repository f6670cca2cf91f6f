"""The limit of the ``atari_ppo`` row of ``real_workloads.py``: PPO on Atari written out as a
single-file loop in the style of CleanRL's ``ppo_atari.py`` (plain PyTorch, nothing between
the env and the network but a tensor), with the row's settings (``workload_settings.ATARI_PPO``).

The envs: a gymnasium ``SyncVectorEnv`` of 8 copies of the same wrapped env our side steps
(``runtime.env.atari.wrap_deepmind`` over the same id, rewards clipped to their sign), resetting
a finished sub-env in the same step as SB3's vector env does. The network: the Nature CNN
("valid" convolutions, 512 ReLU units) shared by a policy and a value layer, frames divided by
255 in the network. Per iteration: 128 steps of the 8 envs (one forward pass each), GAE, then 4
epochs of shuffled minibatches of 256 (clipped surrogate, clipped value loss, entropy bonus,
gradients clipped to a norm of 0.5, Adam with eps 1e-5). No learning-rate annealing, no logging:
the other sides have neither. The window is observed before each iteration.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical
from workload_settings import ATARI_ENV, ATARI_PPO, NATURE_CONV, NATURE_HIDDEN, Window


def make_env() -> Any:
    def thunk() -> Any:
        import ale_py
        import gymnasium as gym

        from runtime.env.atari import wrap_deepmind

        gym.register_envs(ale_py)
        env = wrap_deepmind(gym.make(ATARI_ENV))
        return gym.wrappers.TransformReward(env, lambda r: float(np.sign(float(r))))

    return thunk


def init(layer: nn.Module, gain: float = float(np.sqrt(2))) -> nn.Module:
    assert isinstance(layer, nn.Conv2d | nn.Linear)
    nn.init.orthogonal_(layer.weight, gain)
    assert layer.bias is not None
    nn.init.constant_(layer.bias, 0.0)
    return layer


class Agent(nn.Module):
    def __init__(self, num_actions: int, channels: int = 4) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        frames = torch.zeros(1, channels, 84, 84)
        for out_channels, kernel, stride, padding in NATURE_CONV:
            conv = nn.Conv2d(channels, out_channels, kernel, stride=stride, padding=padding)
            layers += [init(conv), nn.ReLU()]
            channels = out_channels
        with torch.no_grad():
            flat = nn.Sequential(*layers, nn.Flatten())(frames).shape[1]
        self.network = nn.Sequential(
            *layers, nn.Flatten(), init(nn.Linear(flat, NATURE_HIDDEN)), nn.ReLU()
        )
        self.actor = init(nn.Linear(NATURE_HIDDEN, num_actions), 0.01)
        self.critic = init(nn.Linear(NATURE_HIDDEN, 1), 1.0)

    def features(self, frames: torch.Tensor) -> torch.Tensor:
        # The envs give N x 84 x 84 x 4 frames; the convolutions take N x 4 x 84 x 84.
        hidden: torch.Tensor = self.network(frames.permute(0, 3, 1, 2) / 255.0)
        return hidden

    def value(self, frames: torch.Tensor) -> torch.Tensor:
        value: torch.Tensor = self.critic(self.features(frames))
        return value

    def act(
        self, frames: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.features(frames)
        dist = Categorical(logits=self.actor(hidden))
        if action is None:
            action = dist.sample()  # type: ignore[no-untyped-call]
        logp = dist.log_prob(action)  # type: ignore[no-untyped-call]
        return action, logp, dist.entropy(), self.critic(hidden)  # type: ignore[no-untyped-call]


def run(seed: int, window: Window) -> dict[str, Any]:
    import gymnasium as gym

    s = ATARI_PPO
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    envs = gym.vector.SyncVectorEnv(
        [make_env() for _ in range(s.num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    space = envs.single_action_space
    assert isinstance(space, gym.spaces.Discrete)
    agent = Agent(int(space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=s.lr, eps=s.adam_eps)
    shape = (s.num_steps, s.num_envs)
    obs = torch.zeros(shape + tuple(envs.single_observation_space.shape or ()))
    actions = torch.zeros(shape, dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros(shape) for _ in range(4))

    next_obs = torch.Tensor(envs.reset(seed=seed)[0])
    next_done = torch.zeros(s.num_envs)
    global_step = updates = 0
    while not window.observe(global_step, updates):
        for step in range(s.num_steps):
            global_step += s.num_envs
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            frames, reward, terminated, truncated, _ = envs.step(action.numpy())
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.Tensor(frames)
            next_done = torch.Tensor(np.logical_or(terminated, truncated))

        with torch.no_grad():
            next_value = agent.value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            last = torch.zeros(s.num_envs)
            for t in reversed(range(s.num_steps)):
                if t == s.num_steps - 1:
                    not_done, following = 1.0 - next_done, next_value
                else:
                    not_done, following = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + s.gamma * following * not_done - values[t]
                last = delta + s.gamma * s.gae_lambda * not_done * last
                advantages[t] = last
            returns = advantages + values

        b_obs = obs.reshape((-1, *obs.shape[2:]))
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        b_values = values.reshape(-1)
        for _ in range(s.epochs):
            order = rng.permutation(s.batch)
            for start in range(0, s.batch, s.minibatch):
                mb = torch.as_tensor(order[start : start + s.minibatch])
                _, logprob, entropy, value = agent.act(b_obs[mb], b_actions[mb])
                ratio = (logprob - b_logprobs[mb]).exp()
                adv = b_advantages[mb]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(
                    -adv * ratio, -adv * torch.clamp(ratio, 1 - s.clip, 1 + s.clip)
                ).mean()
                value = value.view(-1)
                clipped = b_values[mb] + torch.clamp(value - b_values[mb], -s.clip, s.clip)
                v_loss = (
                    0.5
                    * torch.max((value - b_returns[mb]) ** 2, (clipped - b_returns[mb]) ** 2).mean()
                )
                loss = pg_loss - s.ent_coef * entropy.mean() + s.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()  # type: ignore[no-untyped-call]
                nn.utils.clip_grad_norm_(agent.parameters(), s.max_grad_norm)
                optimizer.step()
                updates += 1
    envs.close()
    return {
        **window.result(),
        "threads": torch.get_num_threads(),
        "params": sum(p.numel() for p in agent.parameters()),
    }
