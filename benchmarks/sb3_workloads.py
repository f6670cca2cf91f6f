"""Stable-Baselines3's side of ``real_workloads.py``, run under an interpreter that has it (the
benchmark-only ``sb3`` extra): each row's settings (``workload_settings.py``) as SB3 takes them,
and ``learn()`` stopped by a callback once the timed window is complete.

- Atari: ``make_atari_env`` (``AtariWrapper``: no-ops, max-pooled frame skip, episodic life,
  FIRE reset, 84x84 grayscale, clipped rewards; a ``DummyVecEnv``) and ``VecFrameStack(4)``,
  ``CnnPolicy`` (``NatureCNN``, frames divided by 255 in the network). DQN with
  ``optimize_memory_usage=True`` (each frame stack stored once, the next observation read from
  the following slot), which needs ``handle_timeout_termination=False``.
- MuJoCo: ``MlpPolicy``; SAC and TD3 on the env SB3 wraps itself (``DummyVecEnv``, ``Monitor``),
  TD3 with Gaussian action noise of 0.1 (the zoo's); PPO on ``make_vec_env`` under
  ``VecNormalize`` (observations and rewards, the zoo's ``normalize: true``).

The window is observed at every env step for the off-policy algorithms (a gradient step follows
each ``train_freq`` env steps) and at the start of every rollout for PPO (after the previous
iteration's epochs).
"""

from __future__ import annotations

from typing import Any

from workload_settings import (
    ATARI_ENV,
    DQN,
    MUJOCO_ENV,
    SAC,
    TD3,
    TD3_EXPLORATION_STD,
    TD3_POLICY_DELAY,
    TD3_TARGET_NOISE,
    TD3_TARGET_NOISE_CLIP,
    ZOO_LOG_STD_INIT,
    Window,
    ppo_settings,
)

#: ``learn()``'s budget: more than any window needs; the callback stops it.
NO_LIMIT = 10**9


def atari_env(num_envs: int, seed: int) -> Any:
    import ale_py
    import gymnasium as gym
    from stable_baselines3.common.env_util import make_atari_env  # type: ignore[import-not-found]
    from stable_baselines3.common.vec_env import VecFrameStack  # type: ignore[import-not-found]

    gym.register_envs(ale_py)  # the ALE ids exist once ale-py has registered them
    return VecFrameStack(make_atari_env(ATARI_ENV, n_envs=num_envs, seed=seed), n_stack=4)


def timing_callback(window: Window, on_policy: bool, updates_per_train: int) -> Any:
    """A callback that feeds ``window`` and stops ``learn()`` once it is complete. On-policy:
    observed at each rollout's start; SB3 counts PPO's updates in epochs, so
    ``updates_per_train`` turns them into gradient steps."""
    from stable_baselines3.common.callbacks import BaseCallback  # type: ignore[import-not-found]

    class Timing(BaseCallback):  # type: ignore[misc]
        def _updates(self) -> int:
            return int(getattr(self.model, "_n_updates", 0)) * updates_per_train

        def _on_rollout_start(self) -> None:
            if on_policy:
                window.observe(int(self.model.num_timesteps), self._updates())

        def _on_step(self) -> bool:
            if not on_policy:
                window.observe(int(self.model.num_timesteps), self._updates())
            return not window.done

    return Timing()


def ppo(row: str, seed: int, window: Window) -> tuple[Any, Any]:
    from stable_baselines3 import PPO  # type: ignore[import-not-found]
    from torch import nn

    s = ppo_settings(row)
    kwargs: dict[str, Any] = {}
    if row == "atari_ppo":
        policy, env = "CnnPolicy", atari_env(s.num_envs, seed)
    else:
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import VecNormalize

        policy = "MlpPolicy"
        env = make_vec_env(MUJOCO_ENV, n_envs=s.num_envs, seed=seed)
        if s.normalize:
            env = VecNormalize(env, gamma=s.gamma)
        kwargs["policy_kwargs"] = {
            "log_std_init": ZOO_LOG_STD_INIT,
            "ortho_init": False,
            "activation_fn": nn.ReLU,
            "net_arch": {"pi": list(s.hiddens), "vf": list(s.hiddens)},
        }
    model = PPO(
        policy,
        env,
        n_steps=s.num_steps,
        batch_size=s.minibatch,
        n_epochs=s.epochs,
        learning_rate=s.lr,
        clip_range=s.clip,
        ent_coef=s.ent_coef,
        vf_coef=s.vf_coef,
        max_grad_norm=s.max_grad_norm,
        gamma=s.gamma,
        gae_lambda=s.gae_lambda,
        seed=seed,
        device="cpu",
        verbose=0,
        **kwargs,
    )
    return model, timing_callback(window, True, s.batch // s.minibatch)


def sac(seed: int, window: Window) -> tuple[Any, Any]:
    import gymnasium as gym
    from stable_baselines3 import SAC as SB3SAC

    model = SB3SAC(
        "MlpPolicy",
        gym.make(MUJOCO_ENV),
        learning_rate=SAC.actor_lr,
        buffer_size=SAC.buffer,
        learning_starts=SAC.learning_starts,
        batch_size=SAC.batch,
        tau=SAC.tau,
        gamma=SAC.gamma,
        policy_kwargs={"net_arch": list(SAC.hiddens)},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    return model, timing_callback(window, False, 1)


def td3(seed: int, window: Window) -> tuple[Any, Any]:
    import gymnasium as gym
    import numpy as np
    from stable_baselines3 import TD3 as SB3TD3
    from stable_baselines3.common.noise import NormalActionNoise  # type: ignore[import-not-found]

    env = gym.make(MUJOCO_ENV)
    actions = int(np.prod(env.action_space.shape or (1,)))
    noise = NormalActionNoise(np.zeros(actions), TD3_EXPLORATION_STD * np.ones(actions))
    model = SB3TD3(
        "MlpPolicy",
        env,
        learning_rate=TD3.actor_lr,
        buffer_size=TD3.buffer,
        learning_starts=TD3.learning_starts,
        batch_size=TD3.batch,
        tau=TD3.tau,
        gamma=TD3.gamma,
        action_noise=noise,
        policy_delay=TD3_POLICY_DELAY,
        target_policy_noise=TD3_TARGET_NOISE,
        target_noise_clip=TD3_TARGET_NOISE_CLIP,
        policy_kwargs={"net_arch": list(TD3.hiddens)},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    return model, timing_callback(window, False, 1)


def dqn(seed: int, window: Window) -> tuple[Any, Any, int]:
    """The model, its callback, and ``learn()``'s budget: the window's end (SB3's epsilon
    decays over a fraction of the budget, set here to ``DQN.exploration_steps``)."""
    from stable_baselines3 import DQN as SB3DQN

    total = window.start + window.length + 100
    model = SB3DQN(
        "CnnPolicy",
        atari_env(1, seed),
        learning_rate=DQN.lr,
        buffer_size=DQN.buffer,
        learning_starts=DQN.learning_starts,
        batch_size=DQN.batch,
        gamma=DQN.gamma,
        train_freq=DQN.train_freq,
        gradient_steps=1,
        target_update_interval=DQN.target_update,
        # Past 1 when the budget is shorter than the decay: epsilon is then still decaying
        # at the end, as ours is.
        exploration_fraction=DQN.exploration_steps / total,
        exploration_final_eps=DQN.final_eps,
        max_grad_norm=DQN.max_grad_norm,
        optimize_memory_usage=True,
        replay_buffer_kwargs={"handle_timeout_termination": False},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    return model, timing_callback(window, False, 1), total


def replay_bytes_per_transition(buffer: Any) -> float:
    """The bytes of every array SB3's replay buffer holds, over the transitions it holds when
    full (its arrays are allocated whole when it is made)."""
    import numpy as np

    arrays = [v for v in vars(buffer).values() if isinstance(v, np.ndarray)]
    return sum(int(a.nbytes) for a in arrays) / int(buffer.buffer_size * buffer.n_envs)


def run(row: str, seed: int, window: Window) -> dict[str, Any]:
    import torch

    total = NO_LIMIT
    if row == "sac_halfcheetah":
        model, callback = sac(seed, window)
    elif row == "td3_halfcheetah":
        model, callback = td3(seed, window)
    elif row == "dqn_atari":
        model, callback, total = dqn(seed, window)
    else:
        model, callback = ppo(row, seed, window)
    model.learn(total_timesteps=total, callback=callback)
    out: dict[str, Any] = {**window.result(), "threads": torch.get_num_threads()}
    if row == "atari_ppo":
        out["params"] = sum(p.numel() for p in model.policy.parameters())
    if row == "dqn_atari":
        out["params"] = sum(p.numel() for p in model.q_net.parameters())
        out["bytes_per_transition"] = round(replay_bytes_per_transition(model.replay_buffer), 1)
        out["bytes_measure"] = "array nbytes / buffer_size"
    return out
